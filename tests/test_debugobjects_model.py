"""A hypothesis state machine: the C debugobjects against tests/dobj_model.py,
step by step (states, return values, warnings in order, fixups, every pool
counter, the work's scheduling), under both freeing policies, several vCPUs,
static objects, re-entrant fixups, range checks, OOM and failed trylocks."""
import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import odebug

import dobj_model as model

BASE = 0xffff_c900_0000_0000
ADDRS = [BASE + c * 4096 + o * 64 for c in range(3) for o in range(3)]
STATIC = ADDRS[1::4]
BULK = BASE + (1 << 32)
ON_STACK_KINDS = ("object is on stack, but NOT annotated", "object is NOT on stack, but annotated")

BEHAVIOURS = [
    model.Behaviour("plain"),
    model.Behaviour("selftest", static_addrs=STATIC, fixups="selftest"),
    model.Behaviour("falsy", static_addrs=STATIC[:1], fixups="false", assert_fixup=True),
]


def kernel_descr(k, b):
    holder = {}

    def fx(which):
        def f(addr, state):
            return b.fixup(k.debug_objects, which, addr, state, holder["d"])
        return f if b.has(which) else None
    holder["d"] = odebug.ObjectDescr(
        b.name, is_static_object=lambda a: b.is_static_object(None, a),
        fixup_init=fx("init"), fixup_activate=fx("activate"), fixup_destroy=fx("destroy"),
        fixup_free=fx("free"), fixup_assert_init=fx("assert_init"))
    return holder["d"]


class DebugObjectsMachine(RuleBasedStateMachine):
    POLICY = "lazy"
    CPUS = 2

    @initialize(selftest=st.booleans())
    def boot(self, selftest):
        cmd = f"kasan=off odebug.objects_free={self.POLICY}"
        if not selftest:
            cmd += " odebug.objects_selftest=off"
        self.k = odebug.Kernel(cmd, cpus=self.CPUS, ram="32M")
        self.d = self.k.debug_objects
        self.k.set_fault("failslab", probability=0, verbose=0)
        start = self.d.internals() if selftest else None
        self.m = model.Model(ncpus=self.CPUS, eager=self.POLICY == "eager", start=start,
                             hz=self.k.hz, now_ns=self.k.now_ns)
        self.kd = [kernel_descr(self.k, b) for b in BEHAVIOURS]
        self.md = [model.MDescr(b) for b in BEHAVIOURS]
        self.nbulk = 0
        self.cpu = 0

    def teardown(self):
        if hasattr(self, "k"):
            self.k.close()

    def both(self, op, *args, descr=None):
        if descr is None:
            r1 = getattr(self.d, op)(*args)
            r2 = getattr(self.m, op)(*args)
        else:
            r1 = getattr(self.d, op)(*args[:1], self.kd[descr], *args[1:])
            r2 = getattr(self.m, op)(*args[:1], self.md[descr], *args[1:])
        return r1, r2

    addr = st.sampled_from(ADDRS)
    descr = st.integers(0, len(BEHAVIOURS) - 1)

    @rule(a=addr, i=descr)
    def init(self, a, i):
        self.both("init", a, descr=i)

    @rule(a=addr, i=descr)
    def activate(self, a, i):
        r1, r2 = self.both("activate", a, descr=i)
        assert r1 == r2

    @rule(a=addr, i=descr)
    def deactivate(self, a, i):
        self.both("deactivate", a, descr=i)

    @rule(a=addr, i=descr)
    def destroy(self, a, i):
        self.both("destroy", a, descr=i)

    @rule(a=addr, i=descr)
    def free(self, a, i):
        self.both("free", a, descr=i)

    @rule(a=addr, i=descr)
    def assert_init(self, a, i):
        self.both("assert_init", a, descr=i)

    @rule(a=addr, i=descr, expect=st.integers(0, 2), nxt=st.integers(0, 2))
    def active_state(self, a, i, expect, nxt):
        self.both("active_state", a, expect, nxt, descr=i)

    @rule(a=addr, delta=st.sampled_from([-8, 0, 8]),
          size=st.sampled_from([0, 64, 200, 4096, 3 * 4096 + 100]))
    def check_no_obj_freed(self, a, delta, size):
        self.both("check_no_obj_freed", a + delta, size)

    @rule(n=st.integers(1, 1500))
    def bulk_init(self, n):
        for j in range(self.nbulk, self.nbulk + n):
            self.both("init", BULK + 64 * j, descr=0)
        self.nbulk += n

    @rule(n=st.integers(1, 1500))
    def bulk_free(self, n):
        n = min(n, self.nbulk)
        for j in range(self.nbulk - n, self.nbulk):
            self.both("free", BULK + 64 * j, descr=0)
        self.nbulk -= n

    @rule(ms=st.sampled_from([0, 1, 50, 99, 100, 150, 1000]))
    def advance(self, ms):
        self.k.advance(ms=ms)
        self.m.advance(ms * 1_000_000)

    @rule(cpu=st.integers(0, CPUS - 1))
    def switch_cpu(self, cpu):
        self.k.bind_cpu(cpu)
        self.m.cpu = cpu

    @rule(n=st.integers(1, 2))
    def fail_trylock(self, n):
        self.d.fail_trylock(n)
        self.m.pool.fail_trylock = n

    @rule(on=st.booleans())
    def failslab(self, on):
        self.k.set_fault("failslab", probability=100 if on else 0, times=-1, verbose=0)
        self.m.oom_fail = on

    # -- comparisons ----------------------------------------------------------------
    @invariant()
    def same(self):
        if not hasattr(self, "k"):
            return
        ks, ms = self.d.stats(), self.m.stats()
        for f in ("max_chain", "max_checked"):     # page frees of the tracker slab add scans
            assert ks[f] >= ms[f], f
        for f in ms:
            if f not in ("max_chain", "max_checked"):
                assert ks[f] == ms[f], (f, ks, ms)
        i = self.d.internals()
        p = self.m.pool
        assert i["enabled"] == self.m.enabled
        assert i["pcp_free"] == [len(c) for c in p.pcp]
        assert (i["obj_pool_free"], i["obj_pool_used"], i["obj_nr_tofree"]) == \
            (p.pool_free, p.used, p.nr_tofree)
        assert i["work_pending"] == p.pending
        if self.POLICY == "lazy":
            assert i["obj_freeing"] == p.freeing
        assert i["hashed"] == len(self.m.objs)
        for a in ADDRS:
            assert self.d.lookup(a) == self.m.lookup(a), hex(a)
        kinds = [r.kind for r in self.k.reports if r.subsystem == "odebug"
                 and r.kind not in ON_STACK_KINDS]
        assert kinds == self.m.kinds
        self.m.check()
        # tracker conservation (spec 2.2)
        assert (i["obj_pool_free"] + sum(i["pcp_free"]) + i["obj_nr_tofree"] + i["hashed"]
                == 1024 + ks["objs_allocated"] - ks["objs_freed"])
        if self.POLICY == "lazy":
            assert i["obj_nr_tofree"] <= 1040


class EagerMachine(DebugObjectsMachine):
    POLICY = "eager"


SETTINGS = settings(max_examples=25, stateful_step_count=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

TestLazy = DebugObjectsMachine.TestCase
TestLazy.settings = SETTINGS
TestEager = EagerMachine.TestCase
TestEager.settings = SETTINGS


@pytest.mark.parametrize("selftest", [False, True])
def test_model_scaled_start_state(selftest):
    """The model's start state matches a booted kernel."""
    cmd = "" if selftest else "odebug.objects_selftest=off"
    with odebug.Kernel(cmd, cpus=3, ram="32M") as k:
        m = model.Model(ncpus=3, start=k.debug_objects.internals() if selftest else None)
        s = k.debug_objects.stats()
        assert {f: s[f] for f in m.pool.stats()} == m.pool.stats()
