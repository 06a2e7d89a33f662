"""Scenario drivers: C workloads on pthreads bound to vCPUs, with their results.

``hackbench(k, groups, fds, loops, msg_size)`` is the hackbench pattern on the
slab (each message an skbuff_head_cache object plus a kmalloc, allocated by a
sender on its vCPU, freed by a receiver on another); ``runs=N`` repeats it and
reports mean, variance and stdev as the 2016 SLUB series did.  By default the
senders and receivers run on their vCPUs (one host thread per vCPU switches
between its tasks where one blocks, as a CPU does: no lock holder is preempted
by the host); ``run_on="threads"`` gives each task a pthread of its own.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from . import _core
from .kernel import check_int

if TYPE_CHECKING:  # pragma: no cover
    from .kernel import Kernel

#: scenario limits (the C core's, checked first here to name the parameter)
HACKBENCH_MAX_TASKS = 4096        # groups * fds
HACKBENCH_MAX_LOOPS = 1 << 24
MAX_RUNS = 10_000


@dataclass
class HackbenchResult:
    """Seconds per run and what the allocator did: ``cpu_times`` (seconds the vCPU
    threads were on a CPU, per run; tasks on vCPUs only), ``list_lock_acquired`` /
    ``list_lock_contended`` (acquisitions of the two caches' list_lock, and those
    that waited for another holder, over all runs)."""
    times: List[float]
    messages: int
    alloc_failures: int
    slab_stats: Dict[str, Dict[str, int]] = field(default_factory=dict)
    cpu_times: List[float] = field(default_factory=list)
    list_lock_acquired: int = 0
    list_lock_contended: int = 0

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def variance(self) -> float:
        return statistics.pvariance(self.times) if len(self.times) > 1 else 0.0

    @property
    def stdev(self) -> float:
        return statistics.pstdev(self.times) if len(self.times) > 1 else 0.0

    def __str__(self) -> str:
        return f"mean {self.mean:.3f}\nvariance {self.variance:.3f}\nstdev {self.stdev:.3f}"


def hackbench(k: "Kernel", groups: int = 10, fds: int = 20, loops: int = 100, msg_size: int = 100,
              mode: str = "processes", runs: int = 1, queue_depth: int = 64,
              run_on: str = "vcpus") -> HackbenchResult:
    """Run hackbench ``runs`` times on kernel ``k`` (2*groups*fds tasks each).

    ``mode`` is ``"processes"`` (hackbench -P, the default) or ``"threads"`` (-T):
    it names the tasks.  ``run_on`` is ``"vcpus"`` (default: one host thread per
    vCPU runs its tasks, switching where one blocks) or ``"threads"`` (a pthread
    per task, hundreds of them on a few cores)."""
    if mode not in ("processes", "threads"):
        raise _core.InvalidArgument(f"mode: 'processes' or 'threads', not {mode!r}")
    if run_on not in ("vcpus", "threads"):
        raise _core.InvalidArgument(f"run_on: 'vcpus' or 'threads', not {run_on!r}")
    check_int("groups", groups, 1, HACKBENCH_MAX_TASKS)
    check_int("fds", fds, 1, HACKBENCH_MAX_TASKS)
    if groups * fds > HACKBENCH_MAX_TASKS:
        raise _core.InvalidArgument(f"groups * fds: must be <= {HACKBENCH_MAX_TASKS}, "
                                    f"not {groups} * {fds}")
    check_int("loops", loops, 1, HACKBENCH_MAX_LOOPS)
    check_int("msg_size", msg_size, 0, 65536)
    check_int("queue_depth", queue_depth, 1, 65536)
    check_int("runs", runs, 1, MAX_RUNS)
    times, cpu, msgs, fails, acq, cont = [], [], 0, 0, 0, 0
    for _ in range(runs):
        r = _core.hackbench(k, groups=groups, fds=fds, loops=loops, msg_size=msg_size,
                            queue_depth=queue_depth, processes=mode == "processes",
                            on_threads=run_on == "threads")
        times.append(r["elapsed_ns"] / 1e9)
        if run_on == "vcpus":
            cpu.append(r["cpu_ns"] / 1e9)
        msgs += r["messages"]
        fails += r["alloc_failures"]
        acq += r["list_lock_acquired"]
        cont += r["list_lock_contended"]
    stats = {}
    for name in ("skbuff_head_cache", _kmalloc_name(msg_size + 320)):
        try:
            stats[name] = k.cache(name).stats()
        except _core.NotFound:
            pass
    return HackbenchResult(times, msgs, fails, stats, cpu, acq, cont)


def _kmalloc_name(size: int) -> str:
    for s in (8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192):
        if size <= s:
            return f"kmalloc-{s}"
    return "kmalloc-large"


@dataclass
class ChurnResult:
    """The debug-objects churn: its numbers and the stats file before and after."""
    cycles: int
    ns_per_cycle: float
    peak_live: int
    stats_before: str
    stats_after: str
    stats: Dict[str, int] = field(default_factory=dict)


def object_churn(k: "Kernel", rounds: int = 200, wave: int = 400, lifetime: int = 3, *,
                 threads: bool = False, advance_ms: float = 10.0, seed: int = 0,
                 phase_rounds: int = 25) -> ChurnResult:
    """The debugobjects workload (the seed's "boot + 3 parallel kernel builds"):
    waves of init/activate/deactivate/free on every vCPU, the live count rising and
    falling, time advancing.  ``threads=True`` runs one pthread per vCPU (on a
    ``clock="real"`` kernel the freeing work then runs on the worker meanwhile)."""
    d = k.debug_objects
    before = d.stats_text()
    r = d.churn(rounds, wave, lifetime, threads=threads,
                advance_ms=0 if threads else advance_ms, seed=seed, phase_rounds=phase_rounds)
    return ChurnResult(r["cycles"], r["ns_per_cycle"], r["peak_live"], before, d.stats_text(),
                       dict(d.stats()))


#: trackers the debug-objects pool starts with (ODEBUG_POOL_SIZE): taken from
#: the tracker cache at boot, when the static pool is replaced
ODEBUG_POOL_SIZE = 1024


class InvariantError(AssertionError):
    """An invariant a scenario must leave behind does not hold."""


def accounting(k: "Kernel") -> Dict[str, Dict[str, int]]:
    """Per cache: ``allocated`` and ``freed`` (the slab's statistics), ``held``
    (the objects its slabs hold, counted after a flush of every vCPU slab, i.e.
    after ``validate``), ``quarantined`` (objects in the KASAN quarantine),
    ``pooled`` (debug-objects trackers: the pool, the per-CPU lists, the to-free
    list and the hashed ones) and ``live`` = held - quarantined - pooled (what
    the kernel's users still hold).  Meant for a quiescent kernel."""
    return _accounting(k, k.kasan.quarantine.count() if k.kasan.enabled else {})


def _accounting(k: "Kernel", q: Dict[Optional[str], Tuple[int, int]]) -> Dict[str, Dict[str, int]]:
    """accounting() with the quarantine's count(), ``q``, already taken."""
    d = k.debug_objects
    pooled = 0
    if d.enabled:
        i = d.internals()
        if i["obj_cache"]:
            pooled = i["obj_pool_free"] + sum(i["pcp_free"]) + i["obj_nr_tofree"] + i["hashed"]
    out: Dict[str, Dict[str, int]] = {}
    for c in k.caches():
        if c.validatable:
            errors = c.validate()              # flushes every vCPU slab first
        else:
            c.flush()                          # v6.1+ validates debug caches only
            errors = 0
        st = c.stats()
        row = {"allocated": st["alloc_fastpath"] + st["alloc_slowpath"],
               "freed": st["free_fastpath"] + st["free_slowpath"],
               "held": c.info()["active_objs"],
               "quarantined": q.get(c.name, (0, 0))[0],
               "quarantined_bytes": q.get(c.name, (0, 0))[1],
               "pooled": pooled if c.name == "debug_objects_cache" else 0,
               "validate_errors": errors}
        row["live"] = row["held"] - row["quarantined"] - row["pooled"]
        out[c.name] = row
    return out


def _problems(k: "Kernel") -> Tuple[List[str], Dict[str, Dict[str, int]]]:
    """What does not hold, and the accounting it was checked on (one validate
    pass and one walk of the quarantine per check)."""
    bad: List[str] = []
    count = k.kasan.quarantine.count() if k.kasan.enabled else {}
    acct = _accounting(k, count)
    for name, a in acct.items():
        if a["validate_errors"]:
            bad.append(f"validate({name}) found {a['validate_errors']} errors")
        if a["allocated"] - a["freed"] != a["held"]:
            bad.append(f"{name}: allocated - freed = {a['allocated'] - a['freed']}, "
                       f"its slabs hold {a['held']}")
        if a["live"] < 0:
            bad.append(f"{name}: slabs hold {a['held']} < quarantined {a['quarantined']} "
                       f"+ pooled {a['pooled']}")
    if k.kasan.enabled:
        st = k.kasan.quarantine.stats()
        if None in count:
            bad.append(f"quarantine holds objects of unlisted caches: {count[None]}")
        objs = sum(o for o, _ in count.values())
        nbytes = sum(b for _, b in count.values())
        if nbytes != st["ring_bytes"] + st["percpu_total"]:
            bad.append(f"quarantine: lists hold {nbytes} bytes, counters say ring "
                       f"{st['ring_bytes']} + per-CPU {st['percpu_total']}")
        inside = (st["put_calls"] - st["evicted_objects"] - st["remove_cache_objects"]
                  - st["offline_objects"])
        if inside != objs:
            bad.append(f"quarantine: {objs} objects in its lists, put - evicted - removed "
                       f"- offline = {inside}")
        if st["in_flight"]:
            bad.append(f"quarantine: {st['in_flight']} bytes still in flight")
        if st["policy"] == "batched" and st["size"] < st["ring_bytes"]:
            bad.append(f"quarantine: quarantine_size {st['size']} < ring bytes {st['ring_bytes']}")
    d = k.debug_objects
    if d.enabled and "debug_objects_cache" in acct:
        i, s = d.internals(), d.stats()
        t = acct["debug_objects_cache"]
        if t["live"]:
            bad.append(f"debug_objects_cache: {t['live']} trackers outside the pool "
                       f"(held {t['held']}, quarantined {t['quarantined']}, pooled {t['pooled']})")
        if t["allocated"] != s["objs_allocated"] + ODEBUG_POOL_SIZE:
            bad.append(f"debug objects: objs_allocated {s['objs_allocated']} + {ODEBUG_POOL_SIZE} "
                       f"!= tracker cache allocations {t['allocated']}")
        # v5.3's CPU offline gives per-CPU trackers back to the slab uncounted
        off = i.get("offline_freed", 0)
        if s["objs_allocated"] + ODEBUG_POOL_SIZE - s["objs_freed"] - off != t["pooled"]:
            bad.append(f"debug objects: allocated - freed = "
                       f"{s['objs_allocated'] + ODEBUG_POOL_SIZE - s['objs_freed'] - off}, pool holds {t['pooled']}")
        if s["pool_used"] - off != i["hashed"]:
            bad.append(f"debug objects: pool_used {s['pool_used'] - off} != hashed trackers {i['hashed']}")
        if s["pool_free"] != i["obj_pool_free"] + sum(i["pcp_free"]):
            bad.append("debug objects: pool_free != global + per-CPU free lists")
    if k.reports:
        bad.append(f"reports: {[r.kind for r in k.reports]}")
    return bad, acct


def check_invariants(k: "Kernel", *, drain: bool = True, retries: Optional[int] = None) -> Dict[str, int]:
    """The invariants every scenario must leave behind; raises InvariantError
    (an AssertionError) naming each one that does not hold.

    * no report was made, and validate() finds nothing in any cache;
    * per cache, the statistics add up with the slabs: allocated - freed == the
      objects its slabs hold == live + quarantined + pooled (``accounting``);
    * the quarantine's lists hold what its counters say (bytes: ring + per-CPU;
      objects: put - evicted - removed - offline), nothing in flight;
    * the tracker cache holds exactly the debug-objects pool (free, per-CPU,
      to-free, hashed), objs_allocated + ODEBUG_POOL_SIZE is its allocation
      count, allocated - freed is the pool, pool_used is the hashed trackers;
    * with ``drain`` (default): the quarantine is drained and every cache is
      checked again: what was quarantined is back in the slabs, live unchanged.

    Returns the live objects per cache (what the caller should still hold).
    On a ``clock="real"`` kernel the worker may be freeing trackers meanwhile:
    the checks are retried (``retries``, default 40, 50 ms apart) until they
    hold on a quiet moment."""
    if retries is None:
        retries = 40 if k.clock == "real" else 0
    for attempt in range(retries + 1):
        bad, acct = _problems(k)
        if not bad or attempt == retries:
            break
        time.sleep(0.05)
    if bad:
        raise InvariantError("; ".join(bad))
    live = {name: a["live"] for name, a in acct.items()}
    if drain and k.kasan.enabled:
        k.kasan.quarantine.drain()
        # the real clock's worker may be freeing trackers meanwhile: the same retries
        for attempt in range(retries + 1):
            bad, acct = _problems(k)
            for name, a in acct.items():
                if a["quarantined"]:
                    bad.append(f"{name}: {a['quarantined']} objects still quarantined after drain")
                if name in live and a["live"] != live[name]:
                    bad.append(f"{name}: live {live[name]} before the drain, {a['live']} after")
            if not bad or attempt == retries:
                break
            time.sleep(0.05)
        if bad:
            raise InvariantError("after drain: " + "; ".join(bad))
        live = {name: a["live"] for name, a in acct.items()}
    return live


@dataclass
class StormResult:
    """The quarantine storm: throughput, latencies, the longest reduce, and the
    time threads spent waiting on quarantine_lock and on the shared mutex."""
    ops: int
    elapsed_s: float
    throughput: float                 # kmalloc+kfree pairs per second
    kmalloc_ns: Dict[str, int]        # p50, p99, max
    kfree_ns: Dict[str, int]
    longest_reduce_bytes: int
    longest_reduce_ms: float
    quarantine_lock_wait_ms: float    # total, over every thread, during this storm
    quarantine_lock_wait_max_ms: float  # the kernel's longest wait (this storm's on a fresh kernel)
    mutex_ops: int
    mutex_wait_ms: float
    mutex_wait_max_ms: float
    quarantine: Dict[str, object] = field(default_factory=dict)
    quarantine_lock_waits: int = 0    # contended acquisitions during this storm
    evicting_reduces: int = 0         # during this storm


def quarantine_storm(k: "Kernel", ops: int = 200_000, *, threads: int = 2, live: int = 256,
                     min_size: int = 16, max_size: int = 512, mutex_every: int = 4,
                     seed: int = 0) -> StormResult:
    """A syzkaller-like load on the KASAN quarantine: ``threads`` pthreads (one
    per vCPU) kmalloc and kfree random sizes, every ``mutex_every``-th step
    while holding a mutex they all share; ``ops`` pairs per thread.

    Totals (lock waits, evicting reduces) are this storm's; the maxima (longest
    reduce, longest quarantine_lock wait) are the kernel's since boot, i.e. this
    storm's on a fresh kernel."""
    q0 = k.kasan.quarantine.stats()
    r = k.kasan.quarantine.storm(ops, threads=threads, live=live, min_size=min_size,
                                 max_size=max_size, seed=seed, mutex_every=mutex_every)
    q = k.kasan.quarantine.stats()
    secs = r["elapsed_ns"] / 1e9
    return StormResult(
        ops=r["ops"], elapsed_s=secs, throughput=r["ops"] / secs if secs else 0.0,
        kmalloc_ns={"p50": r["alloc_p50"], "p99": r["alloc_p99"], "max": r["alloc_max"]},
        kfree_ns={"p50": r["free_p50"], "p99": r["free_p99"], "max": r["free_max"]},
        longest_reduce_bytes=q["max_evict_bytes"], longest_reduce_ms=q["free_ns_max"] / 1e6,
        quarantine_lock_wait_ms=(q["lock_wait_ns_total"] - q0["lock_wait_ns_total"]) / 1e6,
        quarantine_lock_wait_max_ms=q["lock_wait_ns_max"] / 1e6,
        mutex_ops=r["mutex_ops"], mutex_wait_ms=r["mutex_wait_ns_total"] / 1e6,
        mutex_wait_max_ms=r["mutex_wait_ns_max"] / 1e6, quarantine=q,
        quarantine_lock_waits=q["lock_waits"] - q0["lock_waits"],
        evicting_reduces=q["reduce_evicting"] - q0["reduce_evicting"])
