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
