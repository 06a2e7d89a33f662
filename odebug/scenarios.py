"""Scenario drivers: C workloads on pthreads bound to vCPUs, with their results.

``hackbench(k, groups, fds, loops, msg_size)`` is the hackbench pattern on the
slab (each message an skbuff_head_cache object plus a kmalloc, allocated by a
sender on its vCPU, freed by a receiver on another); ``runs=N`` repeats it and
reports mean, variance and stdev as the 2016 SLUB series did.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Dict, List

from . import _core


@dataclass
class HackbenchResult:
    """Seconds per run and what the allocator did."""
    times: List[float]
    messages: int
    alloc_failures: int
    slab_stats: Dict[str, Dict[str, int]] = field(default_factory=dict)

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


def hackbench(k, groups: int = 10, fds: int = 20, loops: int = 100, msg_size: int = 100,
              mode: str = "processes", runs: int = 1, queue_depth: int = 64) -> HackbenchResult:
    """Run hackbench ``runs`` times on kernel ``k`` (2*groups*fds pthreads each).

    ``mode`` is ``"processes"`` (hackbench -P, the default) or ``"threads"`` (-T):
    every task is a pthread either way; the mode names the tasks."""
    if mode not in ("processes", "threads"):
        raise ValueError(f"mode: 'processes' or 'threads', not {mode!r}")
    for name, v in (("groups", groups), ("fds", fds), ("loops", loops), ("runs", runs)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}: expected a positive int, not {v!r}")
    times, msgs, fails = [], 0, 0
    for _ in range(runs):
        r = _core.hackbench(k, groups=groups, fds=fds, loops=loops, msg_size=msg_size,
                            queue_depth=queue_depth, processes=mode == "processes")
        times.append(r["elapsed_ns"] / 1e9)
        msgs += r["messages"]
        fails += r["alloc_failures"]
    stats = {}
    for name in ("skbuff_head_cache", _kmalloc_name(msg_size + 320)):
        try:
            stats[name] = k.cache(name).stats()
        except _core.NotFound:
            pass
    return HackbenchResult(times, msgs, fails, stats)


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


def object_churn(k, rounds: int = 200, wave: int = 400, lifetime: int = 3, *,
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


def check_invariants(k) -> Dict[str, int]:
    """The invariants every scenario must leave behind; raises AssertionError.

    After draining the KASAN quarantine (every object back in its slab):
    * validate() finds nothing in any cache, and no report was made;
    * per cache, the statistics add up with the slabs: allocations - frees ==
      objects the slabs hold (after validate's flush of every vCPU slab);
    * the tracker cache holds exactly the debug-objects pool:
      pool_free (incl. the per-CPU lists) + pool_used + on_free_list.
    Returns the objects held per cache (the live ones, for the caller to compare
    with what it still holds)."""
    if k.kasan.enabled:
        k.kasan.quarantine.drain()
    held: Dict[str, int] = {}
    for c in k.caches():
        assert c.validate() == 0, f"validate({c.name}) found errors"
        st = c.stats()
        n = st["alloc_fastpath"] + st["alloc_slowpath"] - st["free_fastpath"] - st["free_slowpath"]
        active = c.info()["active_objs"]
        assert n == active, f"{c.name}: allocated - freed = {n}, slabs hold {active}"
        held[c.name] = n
    d = k.debug_objects
    if d.enabled and "debug_objects_cache" in held:
        s = d.stats()
        pool = s["pool_free"] + s["pool_used"] + s["on_free_list"]
        assert held["debug_objects_cache"] == pool, (held["debug_objects_cache"], pool)
    assert not k.reports, [r.kind for r in k.reports]
    return held


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
    quarantine_lock_wait_ms: float
    quarantine_lock_wait_max_ms: float
    mutex_ops: int
    mutex_wait_ms: float
    mutex_wait_max_ms: float
    quarantine: Dict[str, object] = field(default_factory=dict)


def quarantine_storm(k, ops: int = 200_000, *, threads: int = 2, live: int = 256,
                     min_size: int = 16, max_size: int = 512, mutex_every: int = 4,
                     seed: int = 0) -> StormResult:
    """A syzkaller-like load on the KASAN quarantine: ``threads`` pthreads (one
    per vCPU) kmalloc and kfree random sizes, every ``mutex_every``-th step
    while holding a mutex they all share; ``ops`` pairs per thread."""
    r = k.kasan.quarantine.storm(ops, threads=threads, live=live, min_size=min_size,
                                 max_size=max_size, seed=seed, mutex_every=mutex_every)
    q = k.kasan.quarantine.stats()
    secs = r["elapsed_ns"] / 1e9
    return StormResult(
        ops=r["ops"], elapsed_s=secs, throughput=r["ops"] / secs if secs else 0.0,
        kmalloc_ns={"p50": r["alloc_p50"], "p99": r["alloc_p99"], "max": r["alloc_max"]},
        kfree_ns={"p50": r["free_p50"], "p99": r["free_p99"], "max": r["free_max"]},
        longest_reduce_bytes=q["max_evict_bytes"], longest_reduce_ms=q["free_ns_max"] / 1e6,
        quarantine_lock_wait_ms=q["lock_wait_ns_total"] / 1e6,
        quarantine_lock_wait_max_ms=q["lock_wait_ns_max"] / 1e6,
        mutex_ops=r["mutex_ops"], mutex_wait_ms=r["mutex_wait_ns_total"] / 1e6,
        mutex_wait_max_ms=r["mutex_wait_ns_max"] / 1e6, quarantine=q)
