"""Tools for testing and fuzzing with odebug: hypothesis settings profiles and
ready state machines with models and invariants that users subclass.

    from odebug.testing import SlabMachine
    class MyMachine(SlabMachine):
        ...                        # add @rule()s; self.kernel is a fresh kernel
    TestMine = MyMachine.TestCase

Profiles (``HYPOTHESIS_PROFILE=dev|ci|fuzz``, registered by
``register_profiles()``): ``dev`` small and fast, ``ci`` derandomized with no
database, ``fuzz`` long campaigns with the example database on.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Set, Tuple

try:
    from hypothesis import HealthCheck, settings
    from hypothesis import strategies as st
    from hypothesis.stateful import (Bundle, RuleBasedStateMachine, consumes, invariant,
                                     precondition, rule)
except ImportError as e:  # pragma: no cover - hypothesis is an extra
    raise ImportError("odebug.testing needs hypothesis: pip install 'odebug[test]'") from e

from . import _core
from .kernel import Kernel
from .slab import SLAB_NO_USER_FLAGS, SLAB_POISON, SLAB_RED_ZONE


def register_profiles() -> str:
    """Register the dev/ci/fuzz profiles and load HYPOTHESIS_PROFILE (or ``ci``
    when $CI is set, else ``dev``).  Returns the loaded profile's name."""
    settings.register_profile("dev", max_examples=25, stateful_step_count=30, deadline=None)
    settings.register_profile("ci", max_examples=40, stateful_step_count=40, deadline=None,
                              derandomize=True, database=None, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("fuzz", max_examples=20_000, stateful_step_count=200,
                              deadline=None, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow])
    name = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
    settings.load_profile(name)
    return name


# ---- strategies ----------------------------------------------------------------------------
#: cache configurations: (object size, debug flags)
cache_configs = st.tuples(st.sampled_from([8, 24, 64, 100, 192, 512]),
                          st.sampled_from(["-", "P", "Z", "ZP", "FZPU", "U"]))
vcpus = st.integers(min_value=0, max_value=1)


class SlabMachine(RuleBasedStateMachine):
    """alloc / free / validate / stray writes over several caches with different
    debug flags, on two vCPUs, against a model of live objects.

    Invariants after every step: every live object lies inside a slab of its own
    cache, is aligned and is live once; validate() finds exactly the corruptions
    the model made (2 errors per corruption: the report and its FIX); the
    cache's statistics add up (allocations - frees == live objects).  The
    kernel boots with ``kasan=off no_debug_objects`` so that the slab alone is
    under test; ``self.kernel`` is fresh for each example.
    """

    cmdline = "kasan=off no_debug_objects"
    #: the pre-2016 path checks every debug cache (not only F) on alloc and free
    locked = False
    caches = Bundle("caches")
    objects = Bundle("objects")

    def __init__(self) -> None:
        super().__init__()
        self.kernel = Kernel(self.cmdline, cpus=2, ram="64M")
        self.live: Dict[int, str] = {}           # object -> cache name
        self.cache_flags: Dict[str, str] = {}
        self.allocs: Dict[str, int] = {}
        self.frees: Dict[str, int] = {}
        self.pending: Optional[Tuple[str, int, str]] = None   # (cache, object, where)
        self.freed: Dict[str, List[int]] = {}    # free objects we may poison-corrupt
        # caches with a slab abandoned by "Marking all objects used": its never
        # allocated objects now fail ACTIVE checks one by one on every validate,
        # so their validate counts are no longer predicted exactly
        self.unpredictable: Set[str] = set()
        self._n = 0

    def teardown(self) -> None:
        self.kernel.close()

    # -- rules ----------------------------------------------------------------------------
    @rule(target=caches, cfg=cache_configs)
    def create_cache(self, cfg):
        size, letters = cfg
        self._n += 1
        name = f"m{self._n}"
        flags = letters if letters != "-" else 0
        bits = flags if isinstance(flags, int) else _core.slab_flags_parse(self.kernel, flags)
        c = self.kernel.kmem_cache_create(name, size, flags=bits | SLAB_NO_USER_FLAGS)
        self.cache_flags[name] = c.flags
        self.allocs[name] = self.frees[name] = 0
        self.freed[name] = []
        return name

    @rule(target=objects, name=caches, cpu=vcpus)
    def alloc(self, name, cpu):
        c = self.kernel.cache(name)
        before = self.kernel.slab_errors
        p = c.alloc(cpu=cpu)
        assert p is not None
        assert p not in self.live, "an object handed out twice"
        errs = self.kernel.slab_errors - before
        pend = self.pending
        if name in self.unpredictable:
            self.kernel.clear_reports()
        elif errs:
            # F checks a free object on alloc: a poisoned one at the freelist head
            # gives the report + its FIX + "Marking all objects used", and the
            # allocation moves to another slab (whose old free objects now count
            # as used, so they are no longer free for write_after_free)
            assert pend is not None and pend[0] == name and pend[2] == "poison"
            assert errs == 3, errs
            assert "F" in self.cache_flags[name] or self.locked
            assert p != pend[1]
            self.pending = None
            self.freed[name] = []
            self.unpredictable.add(name)
            self.kernel.clear_reports()
        elif pend is not None and pend[1] == p:
            # without F (relaxed path), init_object() re-poisons it silently
            assert "F" not in self.cache_flags[name] and not self.locked
            self.pending = None
        if p in self.freed[name]:
            self.freed[name].remove(p)
        self.live[p] = name
        self.allocs[name] += 1
        return p

    @rule(p=consumes(objects), cpu=vcpus)
    def free(self, p, cpu):
        if self.pending is not None and self.pending[1] == p:
            self.live_only_validate()     # repair first: a corrupted object is not freed
        name = self.live.pop(p)
        self.kernel.cache(name).free(p, cpu=cpu)
        self.frees[name] += 1
        if name not in self.unpredictable:
            self.freed[name].append(p)

    @precondition(lambda self: self.pending is None)
    @rule(p=objects, where=st.sampled_from(["right", "left"]), val=st.integers(0, 255))
    def overflow_live(self, p, where, val):
        name = self.live[p]
        c = self.kernel.cache(name)
        if "Z" not in self.cache_flags[name] or val == 0xcc or name in self.unpredictable:
            return
        if where == "right":
            addr = p + c.object_size + (c.inuse - c.object_size) - 1
        else:
            addr = p - 1
        self.kernel.raw(addr, 1)[0] = val
        self.pending = (name, p, where)

    @precondition(lambda self: self.pending is None)
    @rule(data=st.data())
    def write_after_free(self, data):
        names = [n for n, objs in self.freed.items()
                 if objs and "P" in self.cache_flags[n] and n not in self.unpredictable]
        if not names:
            return
        name = data.draw(st.sampled_from(sorted(names)))
        p = data.draw(st.sampled_from(self.freed[name]))
        c = self.kernel.cache(name)
        off = data.draw(st.integers(0, c.object_size - 2))
        val = data.draw(st.integers(0, 255).filter(lambda v: v != 0x6b))
        self.kernel.raw(p + off, 1)[0] = val
        self.pending = (name, p, "poison")

    @rule()
    def validate_all(self):
        for name in self.cache_flags:
            errs = self.kernel.cache(name).validate()
            if name in self.unpredictable:
                continue
            expect = 2 if self.pending is not None and self.pending[0] == name else 0
            assert errs == expect, (name, errs, self.pending)
        self.pending = None
        self.kernel.clear_reports()

    def live_only_validate(self) -> None:
        name = self.pending[0]
        assert self.kernel.cache(name).validate() == 2
        self.pending = None
        self.kernel.clear_reports()

    # -- invariants ----------------------------------------------------------------------------
    @invariant()
    def objects_belong_to_their_cache(self):
        for p, name in self.live.items():
            assert self.kernel.slab_object(p) == (name, p)
            assert p % self.kernel.cache(name).align == 0

    @invariant()
    def stats_add_up(self):
        for name in self.cache_flags:
            s = self.kernel.cache(name).stats()
            assert s["alloc_fastpath"] + s["alloc_slowpath"] == self.allocs[name]
            assert s["free_fastpath"] + s["free_slowpath"] == self.frees[name]
            live = sum(1 for n in self.live.values() if n == name)
            assert self.allocs[name] - self.frees[name] == live

    @invariant()
    def no_unexpected_reports(self):
        if self.pending is None:
            bad = [r.kind for r in self.kernel.reports if r.cache not in self.unpredictable]
            assert not bad, bad


__all__ = ["register_profiles", "SlabMachine", "cache_configs", "vcpus",
           "SLAB_POISON", "SLAB_RED_ZONE"]
