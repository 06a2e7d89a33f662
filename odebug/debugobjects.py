"""Debug objects: the object lifetime tracker of lib/debugobjects.c (Linux v5.3).

``k.debug_objects`` is a :class:`DebugObjects` bound to one kernel::

    t = odebug.ObjectDescr("timer_list", fixup_activate=lambda addr, state: False)
    d = k.debug_objects
    d.init(p, t); d.activate(p, t)            # activate -> 0 or -EINVAL
    d.lookup(p)                               # (State.ACTIVE, 0)
    d.free(p, t)                              # "ODEBUG: free active ..." warning + report
    d.stats(); print(d.stats_text())          # /sys/kernel/debug/debug_objects/stats

Addresses are ints: arena addresses from the slab or the page allocator, or any
64-bit value standing for a static object.  Descriptors (:class:`ObjectDescr`)
give the type's name and its callbacks, all optional:

* ``fixup_init`` / ``fixup_activate`` / ``fixup_destroy`` / ``fixup_free`` /
  ``fixup_assert_init`` ``(addr, state) -> bool``: called after a warning with the
  tracked state (:attr:`State.NOTAVAILABLE` for an untracked object); return True
  when the fixup repaired something (counted in ``fixups``).  They run with no
  odebug lock held and may call ``k.debug_objects`` again, as the kernel's do.
* ``is_static_object(addr) -> bool``: an untracked object that is statically
  initialised is tracked silently on its first ``activate`` / ``assert_init``.
* ``debug_hint(addr) -> int | str``: what the warning prints after ``hint:``.

An exception raised in a callback makes the callback count as having returned
False, and is re-raised from the call that ran it once the core is done.

Warnings are the kernel's (``ODEBUG: <op> <state> (active state N) object: <addr>
object type: <name> hint: <hint>``, or the v5.3 text without ``object:`` under
``odebug.objects_warn=v5.3``).  The first five since boot are printed to dmesg
as a WARN; every one is counted in ``warnings`` and becomes a report
(subsystem ``"odebug"``, kind ``"<op> <state>"``, e.g. ``"activate active"``);
the ones past five are quiet (not printed).

Boot parameters: ``debug_objects`` / ``no_debug_objects`` (default: on),
``odebug.objects_free=lazy|eager`` (v5.3 "less aggressive freeing", the default,
or the state before it), ``odebug.objects_warn=v6.2|v5.3``,
``odebug.objects_selftest=on|off``.
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from . import _core

if TYPE_CHECKING:  # pragma: no cover
    from .kernel import Kernel
    from .report import Report

__all__ = ["DebugObjects", "ObjectDescr", "State", "EINVAL", "STATS_FIELDS"]

#: The descriptor type (``struct debug_obj_descr``); see the module docstring.
ObjectDescr = _core.ObjectDescr

#: ``-EINVAL``, what :meth:`DebugObjects.activate` returns on failure.
EINVAL = 22

#: The twelve lines of the v5.3 stats file, in order.
STATS_FIELDS: Tuple[str, ...] = (
    "max_chain", "max_checked", "warnings", "fixups", "pool_free", "pool_pcp_free",
    "pool_min_free", "pool_used", "pool_max_used", "on_free_list", "objs_allocated",
    "objs_freed",
)


class State(enum.IntEnum):
    """``enum debug_obj_state`` (values as in the kernel; ``str()`` is the name the
    warnings print)."""
    NONE = 0
    INIT = 1
    INACTIVE = 2
    ACTIVE = 3
    DESTROYED = 4
    NOTAVAILABLE = 5

    def __str__(self) -> str:
        return _STATE_NAMES[self]


_STATE_NAMES = {State.NONE: "none", State.INIT: "initialized", State.INACTIVE: "inactive",
                State.ACTIVE: "active", State.DESTROYED: "destroyed",
                State.NOTAVAILABLE: "not available"}


class DebugObjects:
    """The debug-objects API of one kernel (``k.debug_objects``).

    Every method takes an optional ``cpu=`` to run on that vCPU (else the calling
    thread's).  All calls are no-ops while debug objects are disabled
    (``no_debug_objects``, after an out-of-memory or a failed selftest);
    ``activate`` then returns 0.
    """

    __slots__ = ("_k",)

    def __init__(self, kernel: "Kernel") -> None:
        self._k = kernel

    def __repr__(self) -> str:
        return f"<odebug.DebugObjects of {self._k!r}>"

    # -- the API of include/linux/debugobjects.h ----------------------------------
    def init(self, addr: int, descr: ObjectDescr, *, cpu: Optional[int] = None) -> None:
        """debug_object_init(): start tracking addr (INIT), or re-initialise."""
        with self._k._cpu(cpu):
            _core.debug_object_init(self._k, addr, descr)

    def init_on_stack(self, addr: int, descr: ObjectDescr, *, cpu: Optional[int] = None) -> None:
        """debug_object_init_on_stack(): as init, for an object on the calling
        thread's stack (see :meth:`stack_bounds`); a mismatch is warned about."""
        with self._k._cpu(cpu):
            _core.debug_object_init_on_stack(self._k, addr, descr)

    def activate(self, addr: int, descr: ObjectDescr, *, cpu: Optional[int] = None) -> int:
        """debug_object_activate(): 0, or -EINVAL (-22) when the object cannot be
        activated (destroyed, or a warning whose fixup did not repair it)."""
        with self._k._cpu(cpu):
            return _core.debug_object_activate(self._k, addr, descr)

    def deactivate(self, addr: int, descr: ObjectDescr, *, cpu: Optional[int] = None) -> None:
        """debug_object_deactivate()."""
        with self._k._cpu(cpu):
            _core.debug_object_deactivate(self._k, addr, descr)

    def destroy(self, addr: int, descr: ObjectDescr, *, cpu: Optional[int] = None) -> None:
        """debug_object_destroy(): DESTROYED (the tracker stays)."""
        with self._k._cpu(cpu):
            _core.debug_object_destroy(self._k, addr, descr)

    def free(self, addr: int, descr: ObjectDescr, *, cpu: Optional[int] = None) -> None:
        """debug_object_free(): stop tracking (an ACTIVE object is warned about
        and kept unless its fixup_free frees it)."""
        with self._k._cpu(cpu):
            _core.debug_object_free(self._k, addr, descr)

    def assert_init(self, addr: int, descr: ObjectDescr, *, cpu: Optional[int] = None) -> None:
        """debug_object_assert_init(): warn if addr is not tracked (unless static)."""
        with self._k._cpu(cpu):
            _core.debug_object_assert_init(self._k, addr, descr)

    def active_state(self, addr: int, descr: ObjectDescr, expect: int, next: int, *,
                     cpu: Optional[int] = None) -> None:
        """debug_object_active_state(): astate expect -> next on an ACTIVE object."""
        with self._k._cpu(cpu):
            _core.debug_object_active_state(self._k, addr, descr, expect, next)

    def check_no_obj_freed(self, addr: int, size: int, *, cpu: Optional[int] = None) -> None:
        """debug_check_no_obj_freed(): the check the slab and page allocator make on
        every free: trackers starting in [addr, addr+size) are dropped; ACTIVE ones
        are warned about and their (stored descriptor's) fixup_free is called.
        (odebug bounds the kernel's endless rescan: one warning per object per call.)"""
        if not isinstance(size, int) or isinstance(size, bool):
            raise TypeError(f"size: expected int, not {type(size).__name__}")
        if size < 0:
            raise _core.InvalidArgument(f"size: negative size {size}")
        with self._k._cpu(cpu):
            _core.debug_check_no_obj_freed(self._k, addr, size)

    # -- inspection ------------------------------------------------------------------
    def lookup(self, addr: int) -> Optional[Tuple[State, int]]:
        """The tracker of addr as (state, astate), or None if untracked.  A test
        helper: no warning, no counter change."""
        r = _core.debug_object_lookup(self._k, addr)
        return None if r is None else (State(r[0]), r[1])

    def state(self, addr: int) -> State:
        """The tracked state of addr (State.NONE when untracked)."""
        r = self.lookup(addr)
        return State.NONE if r is None else r[0]

    def stats(self) -> Dict[str, int]:
        """The twelve stats values (:data:`STATS_FIELDS`), per-CPU corrected as the
        v5.3 file shows them."""
        return _core.debug_objects_stats(self._k)

    def stats_text(self) -> str:
        """/sys/kernel/debug/debug_objects/stats, byte-identical to v5.3."""
        return _core.debug_objects_stats_text(self._k)

    def internals(self) -> Dict[str, Any]:
        """Raw pool state for tests and models: obj_pool_free, obj_pool_used,
        obj_pool_min_free, obj_pool_max_used, obj_nr_tofree, pcp_free (per vCPU),
        pool_size, pool_min_level, hashed, obj_freeing, work_pending, work_runs,
        trylock_failed, enabled, obj_cache, eager, selftest_passed."""
        return _core.debug_objects_internals(self._k)

    @property
    def enabled(self) -> bool:
        """debug_objects_enabled."""
        enabled: bool = self.internals()["enabled"]
        return enabled

    @property
    def policy(self) -> str:
        """The freeing policy: "lazy" (v5.3) or "eager"."""
        return "eager" if self.internals()["eager"] else "lazy"

    def stack_bounds(self) -> Tuple[int, int]:
        """[lo, hi) of the calling thread's stack, as init_on_stack checks it."""
        return _core.debug_objects_stack_bounds(self._k)

    def fail_trylock(self, n: int = 1) -> None:
        """Test hook: the next n trylocks of pool_lock in free_obj_work fail."""
        _core.debug_objects_fail_trylock(self._k, n)

    def reports(self) -> List["Report"]:
        """This kernel's debug-objects reports."""
        return [r for r in self._k.reports if r.subsystem == "odebug"]

    def churn(self, rounds: int, wave: int, lifetime: int, *, threads: bool = False,
              advance_ms: float = 0, seed: int = 0, phase_rounds: int = 0) -> Dict[str, Any]:
        """Run the C object-churn scenario (see odebug.bench): per round and vCPU,
        retire the wave made ``lifetime`` rounds ago and make a new one of
        wave/2..3*wave/2 objects; the virtual clock advances ``advance_ms`` per
        round; ``phase_rounds`` > 0 modulates the wave size by a triangle of that
        period (0.25x..1.75x).  Returns cycles, elapsed_ns, ns_per_cycle,
        peak_live, virtual_ns.

        Every parameter is range-checked first (:class:`odebug.InvalidArgument`
        naming it): rounds 0..2**24, wave 0..300000, lifetime 1..256,
        phase_rounds 0..2**24.  Ctrl-C stops a long churn within a few tens of
        milliseconds: what it made is retired and KeyboardInterrupt raised."""
        from .kernel import check_int
        check_int("rounds", rounds, 0, 1 << 24)
        check_int("wave", wave, 0, 300_000)
        check_int("lifetime", lifetime, 1, 256)
        check_int("phase_rounds", phase_rounds, 0, 1 << 24)
        check_int("seed", seed, 0, (1 << 64) - 1)
        if not isinstance(advance_ms, (int, float)) or not 0 <= advance_ms <= 1e12:
            raise _core.InvalidArgument(f"advance_ms: must be 0..1e12, not {advance_ms!r}")
        return _core.debug_objects_churn(self._k, rounds, wave, lifetime, threads,
                                         int(advance_ms * 1_000_000), seed, phase_rounds)
