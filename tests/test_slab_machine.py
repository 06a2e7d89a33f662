"""The hypothesis state machine of the debug slab (odebug.testing.SlabMachine),
for both debug paths."""
from odebug.testing import SlabMachine


class LockedSlabMachine(SlabMachine):
    """The same machine on the pre-2016 path.  Only the alloc-time rule differs:
    every debug cache checks a free object on alloc there, F or not."""
    cmdline = "kasan=off no_debug_objects odebug.slub_path=locked"
    locked = True


TestSlabMachine = SlabMachine.TestCase
TestLockedSlabMachine = LockedSlabMachine.TestCase


class ModernSlabMachine(SlabMachine):
    """The v6.2+ debug flows (relaxed rules for the checks)."""
    cmdline = "kasan=off no_debug_objects odebug.slub_path=modern"


TestModernSlabMachine = ModernSlabMachine.TestCase


def test_a_subclass_rule_overflowing_kmalloc_is_caught_by_the_default_boot():
    """Issue 19.7: SlabMachine's default boot checks the kmalloc caches, so a
    planted kmalloc overflow in a user's rule fails the example."""
    from hypothesis.stateful import rule
    from odebug.testing import SlabMachine, find_failure

    class Planted(SlabMachine):
        @rule()
        def overflow(self):
            p = self.kernel.kmalloc(20)
            self.kernel.raw(p + 20, 1)[0] = 0x41        # one byte past the request
            self.kernel.kfree(p)

    f = find_failure(Planted, max_examples=50)
    assert f is not None, "the planted kmalloc overflow was not found"
    assert "kmalloc Redzone overwritten" in str(f)
