"""A Python model of debugobjects (Linux v5.3) (odebug.testing.DebugObjectsMachine and the tests).

The pool part follows the reference model of the spec
(shared/spec/debugobjects_model.py, classes ``M`` for v5.3 and ``L`` for the
state after patches 1-3), re-written here because shared/ is not available in
CI.  Where that model is silent this one extends it, following the spec:

* several vCPUs (a per-CPU list each), CPU-scaled thresholds or a given start
  state (a kernel after its selftest);
* the tracker state machine of spec 4.2 with warnings, fixups (descriptor
  behaviours are Python objects shared with the tests), static objects, OOM
  (5.6) and the range check (6) over a simulated hash (3) -- including
  odebug's bound on the endless rescan;
* the freeing work on a clock: lazy = delayed by ceil(HZ/10) jiffies and
  guarded by obj_freeing, eager = queued at once; work runs inside advance()
  when due; a trylock that can be made to fail.

Trackers are anonymous (the pools are counters plus lists of ints), which is
all the observable counters depend on.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

POOL_SIZE = 1024
MIN_LEVEL = 256
PCPU_SIZE = 64
BATCH = 16
WORK_MAX = 1024
HASH_BITS = 14
CHUNK_SHIFT = 12
CHUNK_SIZE = 1 << CHUNK_SHIFT
GOLDEN_RATIO_64 = 0x61C8864680B583EB

NONE, INIT, INACTIVE, ACTIVE, DESTROYED, NOTAVAILABLE = range(6)
STATE_NAMES = ["none", "initialized", "inactive", "active", "destroyed", "not available"]
EINVAL = 22


def get_bucket(addr: int) -> int:
    """hash_long(addr >> ODEBUG_CHUNK_SHIFT, 14) on 64-bit."""
    return (((addr >> CHUNK_SHIFT) * GOLDEN_RATIO_64) & ((1 << 64) - 1)) >> (64 - HASH_BITS)


class Pool:
    """The tracker pool (spec 5.1-5.5, 5.8).  Like the reference model's M/L."""

    def __init__(self, ncpus: int = 1, eager: bool = False, static: int = POOL_SIZE,
                 scale: bool = True, start: Optional[Dict[str, Any]] = None) -> None:
        self.eager = eager
        self.ncpus = ncpus
        self.next = static
        self.pool: List[int] = list(range(static))
        self.pool_free = static
        self.min_free = POOL_SIZE
        self.used = 0
        self.max_used = 0
        self.tofree: List[int] = []
        self.nr_tofree = 0
        self.freeing = False
        self.pending = False          # the work item is queued
        self.due = 0
        self.pool_size = POOL_SIZE + (ncpus * BATCH if scale else 0)
        self.min_level = MIN_LEVEL + (ncpus * BATCH if scale else 0)
        self.pcp: List[List[int]] = [[] for _ in range(ncpus)]
        self.allocated = 0
        self.freed = 0
        self.fail_trylock = 0
        self.work_runs = 0
        if start is not None:           # a booted kernel's internals()
            n_pcp = sum(start["pcp_free"])
            self.pool = list(range(start["obj_pool_free"]))
            self.pool_free = start["obj_pool_free"]
            self.next = self.pool_free
            self.pcp = []
            for c in start["pcp_free"]:
                self.pcp.append(list(range(self.next, self.next + c)))
                self.next += c
            self.tofree = list(range(self.next, self.next + start["obj_nr_tofree"]))
            self.next += start["obj_nr_tofree"] + 100000
            self.nr_tofree = start["obj_nr_tofree"]
            self.min_free = start["obj_pool_min_free"]
            self.used = start["obj_pool_used"]
            self.max_used = start["obj_pool_max_used"]
            self.pool_size = start["pool_size"]
            self.min_level = start["pool_min_level"]
            assert n_pcp <= self.used

    # spec 5.1
    def fill_pool(self) -> None:
        if self.pool_free >= self.min_level:
            return
        while self.nr_tofree and self.pool_free < self.min_free:
            self.pool.append(self.tofree.pop())
            self.nr_tofree -= 1
            self.pool_free += 1
        while self.pool_free < self.min_level:
            for _ in range(BATCH):
                self.pool.append(self.next)
                self.next += 1
                self.allocated += 1
                self.pool_free += 1

    # spec 5.2
    def alloc(self, cpu: int = 0) -> Optional[int]:
        p = self.pcp[cpu]
        if p:
            return p.pop()
        if not self.pool:
            return None
        o = self.pool.pop()
        self.used += 1
        self.pool_free -= 1
        for _ in range(BATCH):
            if not self.pool:
                break
            p.append(self.pool.pop())
            self.used += 1
            self.pool_free -= 1
        self.max_used = max(self.max_used, self.used)
        self.min_free = min(self.min_free, self.pool_free)
        return o

    # spec 5.3 (and 5.8): returns the eager policy's "work"
    def _free(self, o: int, cpu: int = 0) -> bool:
        la = []
        p = self.pcp[cpu]
        if len(p) < PCPU_SIZE:
            p.append(o)
            return False
        for _ in range(BATCH):
            if not p:
                break
            la.append(p.pop())
        work = self.pool_free > self.pool_size
        if not self.eager:
            work = work and self.nr_tofree < WORK_MAX
        self.used -= 1 + len(la)
        if work:
            self.tofree.append(o)
            self.tofree.extend(reversed(la))
            self.nr_tofree += 1 + len(la)
            if not self.eager and self.pool_free > self.pool_size and self.nr_tofree < WORK_MAX:
                for _ in range(BATCH):
                    self.tofree.append(self.pool.pop())
                    self.pool_free -= 1
                    self.nr_tofree += 1
        else:
            self.pool.append(o)
            self.pool.extend(reversed(la))
            self.pool_free += 1 + len(la)
        return work and self.eager

    def schedule(self, eager_work: bool, now: int, delay_due: int) -> None:
        if self.eager:
            if eager_work and not self.pending:
                self.pending, self.due = True, now
            return
        if not self.freeing and self.nr_tofree:
            self.freeing = True
            if not self.pending:
                self.pending, self.due = True, delay_due

    # spec 5.5 / 5.8
    def work(self) -> None:
        self.pending = False
        self.work_runs += 1
        if not self.eager:
            self.freeing = False
        if self.fail_trylock:
            self.fail_trylock -= 1
            return
        lazy_full = not self.eager and self.pool_free >= self.pool_size
        if not lazy_full:
            while self.nr_tofree and self.pool_free < self.pool_size:
                self.pool.append(self.tofree.pop())
                self.pool_free += 1
                self.nr_tofree -= 1
            if not self.eager:
                return
        if self.nr_tofree:
            self.freed += self.nr_tofree
            self.tofree = []
            self.nr_tofree = 0

    def stats(self) -> Dict[str, int]:
        P = sum(len(p) for p in self.pcp)
        return dict(pool_free=self.pool_free + P, pool_pcp_free=P, pool_min_free=self.min_free,
                    pool_used=self.used - P, pool_max_used=self.max_used,
                    on_free_list=self.nr_tofree, objs_allocated=self.allocated,
                    objs_freed=self.freed)

    def check(self, hashed: int) -> None:
        """The invariants of spec 2.2."""
        assert len(self.pool) == self.pool_free
        assert len(self.tofree) == self.nr_tofree
        for p in self.pcp:
            assert 0 <= len(p) <= PCPU_SIZE
        P = sum(len(p) for p in self.pcp)
        assert self.used - P == hashed
        if not self.eager:
            assert self.nr_tofree <= WORK_MAX + BATCH


class Behaviour:
    """What a descriptor's callbacks do, against any ``api`` with the
    DebugObjects methods (the kernel's k.debug_objects, or a Model)."""

    def __init__(self, name: str, *, static_addrs: Iterable[int] = (), fixups: str = "none",
                 assert_fixup: bool = False) -> None:
        self.name = name
        self.static_addrs = set(static_addrs)
        self.fixups = fixups          # "none" | "selftest" | "false"
        self.assert_fixup = assert_fixup

    def is_static_object(self, api: Any, addr: int) -> bool:
        return addr in self.static_addrs

    def fixup(self, api: Any, which: str, addr: int, state: int, descr: Any) -> bool:
        if which == "assert_init":
            return self.assert_fixup
        if self.fixups != "selftest":
            return False

        def deactivated() -> bool:
            # the selftest's fixups assume deactivate works; with astate != 0 it
            # does not, and re-doing the call would recurse forever (in the
            # kernel too): give up instead
            api.deactivate(addr, descr)
            r = api.lookup(addr)
            return r is None or r[0] != ACTIVE
        if which == "init" and state == ACTIVE:
            if not deactivated():
                return False
            api.init(addr, descr)
            return True
        if which == "activate":
            if state == NOTAVAILABLE:
                return True
            if state == ACTIVE:
                if not deactivated():
                    return False
                api.activate(addr, descr)
                return True
            return False
        if which == "destroy" and state == ACTIVE:
            if not deactivated():
                return False
            api.destroy(addr, descr)
            return True
        if which == "free" and state == ACTIVE:
            if not deactivated():
                return False
            api.free(addr, descr)
            return True
        return False

    def has(self, which: str) -> bool:
        if which == "assert_init":
            return self.assert_fixup
        return self.fixups != "none"


class MDescr:
    """A descriptor in the model: name + behaviour."""

    def __init__(self, b: Behaviour) -> None:
        self.b = b
        self.name = b.name


class Model:
    """Trackers + pool + clock: the whole room, one vCPU at a time."""

    def __init__(self, ncpus: int = 1, eager: bool = False, start: Optional[Dict[str, Any]] = None,
                 hz: int = 1000, now_ns: int = 0) -> None:
        self.pool = Pool(ncpus, eager, start=start)
        self.enabled = True
        self.buckets: Dict[int, List[int]] = {}
        self.objs: Dict[int, List[Any]] = {}      # addr -> [state, astate, descr]
        self.warnings = 0
        self.fixups = 0
        self.max_chain = 0
        self.max_checked = 0
        self.kinds: List[str] = []
        self.cpu = 0
        self.hz = hz
        self.now = now_ns
        self.oom_fail = False                # the slab refuses (failslab)

    # -- helpers ------------------------------------------------------------
    def _delay_due(self) -> int:
        delay = -(-self.hz // 10)
        rel = self.now * self.hz // 1_000_000_000
        return -(-(rel + delay) * 1_000_000_000 // self.hz)

    def _lookup(self, addr: int) -> Optional[List[Any]]:
        chain = self.buckets.get(get_bucket(addr), [])
        if addr in self.objs:
            return self.objs[addr]
        self.max_chain = max(self.max_chain, len(chain))
        return None

    def _warn(self, op: str, state: int) -> None:
        self.warnings += 1
        self.kinds.append(f"{op} {STATE_NAMES[state]}")

    def _fixup(self, descr: MDescr, which: str, addr: int, state: int) -> bool:
        if not descr.b.has(which):
            return False
        if descr.b.fixup(self, which, addr, state, descr):
            self.fixups += 1
            return True
        return False

    def _unhash(self, addr: int) -> None:
        self.buckets[get_bucket(addr)].remove(addr)
        del self.objs[addr]

    def _free_object(self, schedule: bool = True) -> bool:
        o = 0
        work = self.pool._free(o, self.cpu)
        if schedule:
            self.pool.schedule(work, self.now, self._delay_due())
        return work

    def _oom(self) -> None:
        for b in sorted(self.buckets):
            chain = self.buckets[b]
            self.buckets[b] = []
            for addr in chain:
                del self.objs[addr]
                self._free_object()

    # -- the API ------------------------------------------------------------
    def init(self, addr: int, descr: MDescr, onstack: bool = False) -> None:
        if not self.enabled:
            return
        if self.oom_fail:
            saved = self.pool.allocated, self.pool.next
            if self.pool.pool_free < self.pool.min_level:
                # only the to-free reuse can happen; the slab refuses
                while self.pool.nr_tofree and self.pool.pool_free < self.pool.min_free:
                    self.pool.pool.append(self.pool.tofree.pop())
                    self.pool.nr_tofree -= 1
                    self.pool.pool_free += 1
            assert (self.pool.allocated, self.pool.next) == saved
        else:
            self.pool.fill_pool()
        o = self._lookup(addr)
        if o is None:
            t = self.pool.alloc(self.cpu)
            if t is None:
                self.enabled = False
                self._oom()
                return
            self.buckets.setdefault(get_bucket(addr), []).insert(0, addr)
            o = self.objs[addr] = [NONE, 0, descr]
        st = o[0]
        if st in (NONE, INIT, INACTIVE):
            o[0] = INIT
        elif st == ACTIVE:
            self._warn("init", st)
            self._fixup(descr, "init", addr, ACTIVE)
        elif st == DESTROYED:
            self._warn("init", st)

    def activate(self, addr: int, descr: MDescr) -> int:
        if not self.enabled:
            return 0
        o = self._lookup(addr)
        if o is not None:
            st = o[0]
            if st in (INIT, INACTIVE):
                o[0] = ACTIVE
                return 0
            if st == ACTIVE:
                self._warn("activate", st)
                return 0 if self._fixup(descr, "activate", addr, ACTIVE) else -EINVAL
            if st == DESTROYED:
                self._warn("activate", st)
                return -EINVAL
            return 0
        if descr.b.is_static_object(self, addr):
            self.init(addr, descr)
            self.activate(addr, descr)
            return 0
        self._warn("activate", NOTAVAILABLE)
        return 0 if self._fixup(descr, "activate", addr, NOTAVAILABLE) else -EINVAL

    def deactivate(self, addr: int, descr: MDescr) -> None:
        if not self.enabled:
            return
        o = self._lookup(addr)
        if o is None:
            self._warn("deactivate", NOTAVAILABLE)
            return
        st = o[0]
        if st in (INIT, INACTIVE, ACTIVE):
            if o[1] == 0:
                o[0] = INACTIVE
            else:
                self._warn("deactivate", st)
        elif st == DESTROYED:
            self._warn("deactivate", st)

    def destroy(self, addr: int, descr: MDescr) -> None:
        if not self.enabled:
            return
        o = self._lookup(addr)
        if o is None:
            return
        st = o[0]
        if st in (NONE, INIT, INACTIVE):
            o[0] = DESTROYED
        elif st == ACTIVE:
            self._warn("destroy", st)
            self._fixup(descr, "destroy", addr, ACTIVE)
        elif st == DESTROYED:
            self._warn("destroy", st)

    def free(self, addr: int, descr: MDescr) -> None:
        if not self.enabled:
            return
        o = self._lookup(addr)
        if o is None:
            return
        if o[0] == ACTIVE:
            self._warn("free", ACTIVE)
            self._fixup(descr, "free", addr, ACTIVE)
            return
        self._unhash(addr)
        self._free_object()

    def assert_init(self, addr: int, descr: MDescr) -> None:
        if not self.enabled:
            return
        if self._lookup(addr) is not None:
            return
        if descr.b.is_static_object(self, addr):
            self.init(addr, descr)
            return
        self._warn("assert_init", NOTAVAILABLE)
        self._fixup(descr, "assert_init", addr, NOTAVAILABLE)

    def active_state(self, addr: int, descr: MDescr, expect: int, nxt: int) -> None:
        if not self.enabled:
            return
        o = self._lookup(addr)
        if o is None:
            self._warn("active_state", NOTAVAILABLE)
            return
        if o[0] == ACTIVE and o[1] == expect:
            o[1] = nxt
        else:
            self._warn("active_state", o[0])

    def check_no_obj_freed(self, saddr: int, size: int) -> None:
        if not self.enabled:
            return
        eaddr = saddr + size
        paddr = saddr & ~(CHUNK_SIZE - 1)
        chunks = ((eaddr - paddr) + CHUNK_SIZE - 1) >> CHUNK_SHIFT
        checked = 0
        work = False
        for _ in range(chunks):
            b = get_bucket(paddr)
            warned = set()
            while True:
                chain = list(self.buckets.get(b, []))
                cnt = 0
                restart = False
                for addr in chain:
                    cnt += 1
                    if addr < saddr or addr >= eaddr:
                        continue
                    o = self.objs[addr]
                    if o[0] == ACTIVE:
                        if addr in warned:
                            continue
                        warned.add(addr)
                        self._warn("free", ACTIVE)
                        self._fixup(o[2], "free", addr, ACTIVE)
                        restart = True
                        break
                    self._unhash(addr)
                    work |= self._free_object(schedule=False)
                if not restart:
                    break
            self.max_chain = max(self.max_chain, cnt)
            checked += cnt
            paddr += CHUNK_SIZE
        self.max_checked = max(self.max_checked, checked)
        self.pool.schedule(work, self.now, self._delay_due())

    def lookup(self, addr: int) -> Optional[Tuple[int, int]]:
        o = self.objs.get(addr)
        return None if o is None else (o[0], o[1])

    # -- time -------------------------------------------------------------------
    def advance(self, ns: int) -> None:
        target = self.now + ns
        while self.pool.pending and self.pool.due <= target:
            self.now = max(self.now, self.pool.due)
            self.pool.work()
        self.now = target

    def stats(self) -> Dict[str, int]:
        s = dict(max_chain=self.max_chain, max_checked=self.max_checked,
                 warnings=self.warnings, fixups=self.fixups)
        s.update(self.pool.stats())
        return s

    def check(self) -> None:
        self.pool.check(len(self.objs))
        assert sum(len(c) for c in self.buckets.values()) == len(self.objs)


# ---- the spec's section 12 scenarios (as in the reference model's __main__) ----
def scenario_burst(eager: bool, rounds: int, burst: int) -> Dict[str, int]:
    """C: `rounds` x {burst inits, burst frees, work} on one CPU (1040/272).
    eager: the work runs right after each free that queued it."""
    m = Pool(ncpus=1, eager=eager)
    for _ in range(rounds):
        objs = []
        for _ in range(burst):
            m.fill_pool()
            o = m.alloc()
            assert o is not None      # the pool was just filled
            objs.append(o)
        for o in objs:
            w = m._free(o)
            if eager:
                if w:
                    m.work()
            elif not m.freeing and m.nr_tofree:
                m.freeing = True
        if not eager and m.freeing:
            m.work()
    return m.stats()
