"""KASAN quarantine benchmark (reported, never asserted): the 2016 seed's claims
measured side by side, ``quarter`` (pre-2016: reduce frees ~1/4 of the
quarantine under the lock) vs ``batched`` (v4.10: one ~1 MiB batch per reduce).

``python -m odebug.bench_kasan [--ram 4G --cpus 4 --ops 700000 --quick]``

For each policy, on a fresh kernel: a kmalloc/kfree churn in C (every free
enters the quarantine; sizes 16..512) long enough to keep the quarantine full,
then the largest single reduce (bytes, objects, time spent freeing it), the
longest quarantine_lock hold, p50/p99/max latency of kmalloc and kfree, and
the throughput of the same churn on 2 threads (2 vCPUs).
"""
from __future__ import annotations

import argparse
from typing import Any, Dict, List, Optional, Sequence

from .kernel import Kernel, check_int
from .kasan import quarantine_geometry


def quarantine_churn(policy: str, *, ram: str = "4G", cpus: int = 4, ops: int = 700_000,
                     threads: int = 1, live: int = 256, min_size: int = 16,
                     max_size: int = 512, seed: int = 0, mutex_every: int = 0) -> Dict[str, float]:
    """One storm (``Quarantine.storm``) on a fresh kernel with ``odebug.quarantine=<policy>``:
    its result, the quarantine's stats (``q_*``) and ``ops_per_s``."""
    check_int("ops", ops, 0, 1 << 26)
    check_int("threads", threads, 1, cpus if isinstance(cpus, int) else 1)
    with Kernel(f"no_debug_objects odebug.quarantine={policy}", ram=ram, cpus=cpus,
                seed=seed) as k:
        r = k.kasan.quarantine.storm(ops, threads=threads, live=live, min_size=min_size,
                                     max_size=max_size, seed=seed, mutex_every=mutex_every)
        s = k.kasan.quarantine.stats()
    out: Dict[str, float] = dict(r)
    out.update({f"q_{key}": v for key, v in s.items() if not isinstance(v, list)})
    out["ops_per_s"] = r["ops"] / (r["elapsed_ns"] / 1e9)
    return out


def compare(ram: str = "4G", cpus: int = 4, ops: int = 700_000) -> List[Dict[str, Any]]:
    rows = []
    for policy in ("quarter", "batched"):
        one = quarantine_churn(policy, ram=ram, cpus=cpus, ops=ops, threads=1)
        # 2 threads, every 4th step under a shared mutex (kmalloc under a mutex)
        two = quarantine_churn(policy, ram=ram, cpus=cpus, ops=ops // 2, threads=2, mutex_every=4)
        rows.append({
            "policy": policy,
            "max_size": one["q_max_size"],
            "evicting_reduces": one["q_reduce_evicting"],
            "largest_reduce_bytes": one["q_max_evict_bytes"],
            "largest_reduce_objects": one["q_max_evict_objects"],
            "largest_reduce_free_ms": one["q_free_ns_max"] / 1e6,
            "lock_hold_max_ms": one["q_lock_ns_max"] / 1e6,
            "kmalloc_p50_ns": one["alloc_p50"], "kmalloc_p99_ns": one["alloc_p99"],
            "kmalloc_max_ms": one["alloc_max"] / 1e6,
            "kfree_p50_ns": one["free_p50"], "kfree_p99_ns": one["free_p99"],
            "kfree_max_ms": one["free_max"] / 1e6,
            "ops_per_s_1thr": one["ops_per_s"], "ops_per_s_2thr": two["ops_per_s"],
            "kmalloc_max_ms_2thr": two["alloc_max"] / 1e6,
            "mutex_wait_ms_2thr": two["mutex_wait_ns_total"] / 1e6,
            "mutex_wait_max_ms_2thr": two["mutex_wait_ns_max"] / 1e6,
            "qlock_wait_ms_2thr": two["q_lock_wait_ns_total"] / 1e6,
            "qlock_wait_max_ms_2thr": two["q_lock_wait_ns_max"] / 1e6,
        })
    return rows


def format_table(rows: List[Dict[str, Any]]) -> str:
    keys = list(rows[0])
    w = max(len(k) for k in keys)
    lines = [f"{'':{w}}  " + "  ".join(f"{r['policy']:>14}" for r in rows)]
    for key in keys[1:]:
        vals = []
        for r in rows:
            v = r[key]
            vals.append(f"{v:>14.3f}" if isinstance(v, float) else f"{v:>14}")
        lines.append(f"{key:{w}}  " + "  ".join(vals))
    return "\n".join(lines)


def description() -> str:
    """The docstring's first paragraph, on one line (the CLI's description)."""
    return " ".join(__doc__.split("\n\n")[0].split())


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--ram", default="4G", help="kernel RAM (default: %(default)s)")
    ap.add_argument("--cpus", type=int, default=4, help="vCPUs (default: %(default)s)")
    ap.add_argument("--ops", type=int, default=700_000,
                    help="kmalloc/kfree operations per policy (default: %(default)s)")
    ap.add_argument("--quick", action="store_true", help="64M kernel, 2 vCPUs, few ops (CI)")


def run(a: argparse.Namespace) -> None:
    if a.quick:
        a.ram, a.cpus, a.ops = "64M", 2, 40_000  # 2 vCPUs: the 2-thread row needs them
    g = quarantine_geometry(a.ram, a.cpus)
    print(f"geometry {a.ram}/{a.cpus} CPUs: max {g['max_size']} B, batch {g['batch_size']} B, "
          f"{g['batches']} batches, {g['slots_used']} slots used; "
          f"old policy frees ~{g['old_reduce_bytes']} B per reduce")
    print(format_table(compare(a.ram, a.cpus, a.ops)))


def main(argv: Optional[Sequence[str]] = None) -> None:
    """``python -m odebug.bench_kasan``: the same as ``python -m odebug bench quarantine``."""
    ap = argparse.ArgumentParser(prog="python -m odebug.bench_kasan", description=description())
    add_arguments(ap)
    run(ap.parse_args(argv))


if __name__ == "__main__":
    main()
