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
