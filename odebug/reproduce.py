"""``python -m odebug reproduce``: every seed's published numbers beside the
numbers just measured, as ratios of the two policies run side by side.

    python -m odebug reproduce [debugobjects|quarantine|slub|all] [--quick]
                               [--json FILE] [--runs N]

Embedded defaults run in a few minutes on 2 cores; ``--quick`` in under one.
Progress goes to stderr, the tables to stdout; ``--json`` writes every number
(top-level keys ``debugobjects``, ``quarantine``, ``slub``, each with its
headline ratio: ``objs_allocated_ratio`` (eager / lazy), ``largest_reduce_ratio``
(quarter / batched), ``relaxed_speedup`` (locked time / relaxed time)).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from . import bench, bench_kasan
from .kasan import quarantine_geometry
from .kernel import Kernel
from .scenarios import hackbench

#: the seeds' published figures
SEEDS: Dict[str, Dict[str, Any]] = {
    "debugobjects": {"objs_allocated_eager": 39_268_280, "objs_allocated_lazy": 5_796_864,
                     "objs_freed_eager": 39_160_031, "objs_freed_lazy": 5_687_182,
                     "pool_max_used_eager": 171_920, "pool_max_used_lazy": 168_081,
                     "pool_min_free_eager": 220, "pool_min_free_lazy": 1022,
                     "objs_allocated_ratio": 39_268_280 / 5_796_864},
    "quarantine": {"machines": [("4G", 4, 1 << 20, 124), ("128G", 32, 8 << 20, 508),
                                ("1T", 4096, 4 << 20, 7168)],
                   "old_reduce_4G": 32 << 20, "throughput_ratio": 1.2},
    "slub": {"locked_mean": 15.607, "locked_variance": 0.086, "locked_stdev": 0.294,
             "relaxed_mean": 10.836, "relaxed_variance": 0.155, "relaxed_stdev": 0.394,
             "relaxed_speedup": 15.607 / 10.836},
}


def _progress(msg: str) -> None:
    print(f"[odebug reproduce] {msg}", file=sys.stderr, flush=True)


def _ratio(a: float, b: float) -> Optional[float]:
    return a / b if b else None


# ---- debugobjects ------------------------------------------------------------------------
def debugobjects(quick: bool = False) -> Dict[str, Any]:
    """eager (patches 1-3/5) vs lazy (v5.3) under the object churn."""
    kw = dict(cpus=8, rounds=300 if quick else 2000, wave=800, lifetime=3, advance_ms=10.0,
              phase_rounds=25)
    _progress(f"debugobjects: object churn, {kw['rounds']} rounds x {kw['cpus']} vCPUs, eager then lazy")
    res = bench.compare(**kw)
    e, lz = res["eager"], res["lazy"]
    return {
        "workload": kw,
        "eager": e, "lazy": lz,
        "objs_allocated_ratio": _ratio(e["objs_allocated"], lz["objs_allocated"]),
        "objs_freed_ratio": _ratio(e["objs_freed"], lz["objs_freed"]),
        "pool_max_used_ratio": _ratio(e["pool_max_used"], lz["pool_max_used"]),
        "stats_text_eager": e.get("stats_text", ""), "stats_text_lazy": lz.get("stats_text", ""),
    }


def _fmt_int(v: float) -> str:
    return f"{int(v):,}"


def format_debugobjects(r: Dict[str, Any]) -> str:
    s = SEEDS["debugobjects"]
    e, lz = r["eager"], r["lazy"]
    lines = ["== debugobjects: less aggressive freeing (v5.3) -- eager vs lazy ==",
             f"{'':16}{'seed eager':>14}{'seed lazy':>14}{'seed ratio':>11}"
             f"{'eager':>14}{'lazy':>14}{'ratio':>9}"]
    for f in ("objs_allocated", "objs_freed", "pool_max_used", "pool_min_free"):
        se, sl = s[f + "_eager"], s[f + "_lazy"]
        a, b = e[f], lz[f]
        lines.append(f"{f:16}{_fmt_int(se):>14}{_fmt_int(sl):>14}{se / sl:>10.2f}x"
                     f"{_fmt_int(a):>14}{_fmt_int(b):>14}"
                     + (f"{a / b:>8.2f}x" if b else f"{'-':>9}"))
    lines.append("stats files side by side (eager | lazy):")
    te = str(r.get("stats_text_eager", "")).splitlines()
    tl = str(r.get("stats_text_lazy", "")).splitlines()
    for a, b in zip(te, tl):
        lines.append(f"  {a:<28}| {b}")
    return "\n".join(lines)


# ---- quarantine ------------------------------------------------------------------------------
def quarantine(quick: bool = False) -> Dict[str, Any]:
    """The seed's three machines (exact geometry), then quarter vs batched under a
    kmalloc/kfree storm on a 4 GB / 4 vCPU kernel."""
    machines = []
    for ram, cpus, batch, slots in SEEDS["quarantine"]["machines"]:
        g = quarantine_geometry(ram, cpus)
        machines.append({"ram": ram, "cpus": cpus, **g,
                         "seed_batch_size": batch, "seed_slots": slots,
                         "exact": g["batch_size"] == batch and g["slots_used"] == slots})
    ops = 800_000 if quick else 3_000_000
    _progress(f"quarantine: storm of {ops:,} kmalloc+kfree on 4G/4 vCPUs, quarter then batched")
    rows = bench_kasan.compare("4G", 4, ops)
    q = next(r for r in rows if r["policy"] == "quarter")
    b = next(r for r in rows if r["policy"] == "batched")
    return {
        "machines": machines, "storm_ops": ops, "quarter": q, "batched": b,
        "largest_reduce_ratio": _ratio(q["largest_reduce_bytes"], b["largest_reduce_bytes"]),
        "largest_reduce_ms_ratio": _ratio(q["largest_reduce_free_ms"], b["largest_reduce_free_ms"]),
        "kmalloc_max_ratio": _ratio(q["kmalloc_max_ms"], b["kmalloc_max_ms"]),
        "throughput_ratio_1thr": _ratio(b["ops_per_s_1thr"], q["ops_per_s_1thr"]),
        "throughput_ratio": _ratio(b["ops_per_s_2thr"], q["ops_per_s_2thr"]),
        "mutex_wait_max_ratio": _ratio(q["mutex_wait_max_ms_2thr"], b["mutex_wait_max_ms_2thr"]),
        "qlock_wait_ratio": _ratio(q["qlock_wait_ms_2thr"], b["qlock_wait_ms_2thr"]),
    }


def format_quarantine(r: Dict[str, Any]) -> str:
    lines = ["== KASAN quarantine: FIFO of batches (2016) -- quarter vs batched ==",
             f"{'machine':14}{'max size':>14}{'batch':>10}{'slots':>7}{'of':>7}"
             f"{'seed batch':>12}{'seed slots':>11}  exact"]
    for m in r["machines"]:
        lines.append(f"{m['ram'] + '/' + str(m['cpus']):14}{m['max_size']:>14,}"
                     f"{m['batch_size'] >> 20:>8}MiB{m['slots_used']:>7}{m['batches']:>7}"
                     f"{m['seed_batch_size'] >> 20:>10}MiB{m['seed_slots']:>11}  "
                     f"{'yes' if m['exact'] else 'NO'}")
    q = {k: (v if v is not None else 0) for k, v in r["quarter"].items()}
    b = {k: (v if v is not None else 0) for k, v in r["batched"].items()}
    lines += [f"4G / 4 vCPUs, {r['storm_ops']:,} kmalloc+kfree:",
              f"{'':26}{'quarter':>14}{'batched':>14}{'ratio':>9}   seed",
              f"{'largest reduce (bytes)':26}{q['largest_reduce_bytes']:>14,}"
              f"{b['largest_reduce_bytes']:>14,}{(r['largest_reduce_ratio'] or 0):>8.1f}x"
              f"   32 MiB vs 1 MiB (32x)",
              f"{'largest reduce (ms)':26}{q['largest_reduce_free_ms']:>14.3f}"
              f"{b['largest_reduce_free_ms']:>14.3f}{(r['largest_reduce_ms_ratio'] or 0):>8.1f}x",
              f"{'quarantine_lock max (ms)':26}{q['lock_hold_max_ms']:>14.3f}{b['lock_hold_max_ms']:>14.3f}",
              f"{'kmalloc p99 (ns)':26}{q['kmalloc_p99_ns']:>14,}{b['kmalloc_p99_ns']:>14,}",
              f"{'kmalloc max (ms)':26}{q['kmalloc_max_ms']:>14.3f}{b['kmalloc_max_ms']:>14.3f}"
              f"{(r['kmalloc_max_ratio'] or 0):>8.1f}x",
              f"{'2 thr: mutex wait (ms)':26}{q['mutex_wait_ms_2thr']:>14.3f}{b['mutex_wait_ms_2thr']:>14.3f}   (in all)",
              f"{'2 thr: max mutex wait (ms)':26}{q['mutex_wait_max_ms_2thr']:>14.3f}{b['mutex_wait_max_ms_2thr']:>14.3f}"
              f"{(r['mutex_wait_max_ratio'] or 0):>8.1f}x   others stall on the mutex while one reduces",
              f"{'2 thr: quarantine_lock wait':26}{q['qlock_wait_ms_2thr']:>14.3f}{b['qlock_wait_ms_2thr']:>14.3f}   (ms in all)",
              f"{'throughput 2 thr (ops/s)':26}{q['ops_per_s_2thr']:>14,.0f}{b['ops_per_s_2thr']:>14,.0f}"
              f"{(r['throughput_ratio'] or 0):>8.2f}x   ~1.2x (syzkaller, 4 CPUs)"]
    return "\n".join(lines)


# ---- slub ------------------------------------------------------------------------------------
_CALLGRIND_SCRIPT = """
import odebug
from odebug import _core
with odebug.Kernel({cmdline!r}, cpus=2, ram="256M") as k:
    for _ in range(2):
        r = _core.hackbench(k, groups=2, fds=10, loops=20, msg_size=100)
print(2 * r["messages"])
"""


def slub_instructions(slub_debug: str, path: str) -> Optional[float]:
    """Instructions the allocator ran per hackbench message (kmem_cache_alloc,
    kmalloc, kfree, kmem_cache_free, inclusive), counted by valgrind's callgrind
    in a subprocess: the same in every run of the same build, whatever the host
    is doing.  None when valgrind is not installed."""
    import os
    import shutil
    import subprocess
    import tempfile
    vg = shutil.which("valgrind")
    if vg is None:
        return None
    cmdline = f"kasan=off no_debug_objects slub_debug={slub_debug} odebug.slub_path={path}"
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "callgrind.out")
        fns = [f"--toggle-collect={f}" for f in ("kmem_cache_alloc", "kmalloc", "kfree",
                                                  "kmem_cache_free")]
        r = subprocess.run([vg, "--tool=callgrind", f"--callgrind-out-file={out}", *fns,
                            sys.executable, "-c", _CALLGRIND_SCRIPT.format(cmdline=cmdline)],
                           capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(out):
            return None
        total = None
        with open(out) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    total = int(line.split()[1])
                    break
        msgs = int(r.stdout.split()[-1]) if r.stdout.split() else 0
        return total / msgs if total is not None and msgs else None


def slub(quick: bool = False, runs: Optional[int] = None) -> Dict[str, Any]:
    """hackbench on the slab with slub_debug=P, locked vs relaxed (and - / FZPU).

    The senders and receivers run on their vCPUs (one host thread per vCPU, as a
    CPU runs tasks): no lock holder is preempted by the host, so the times measure
    the allocator.  Beside the times: the vCPU threads' CPU time, list_lock
    acquisitions and contended ones per message, and (with valgrind) the
    allocator's instructions per message, which do not depend on the host."""
    runs = runs or (3 if quick else 10)
    kw: Dict[str, Any] = dict(groups=4 if quick else 10, fds=20, loops=30 if quick else 100,
                              msg_size=100)
    out: Dict[str, Any] = {"hackbench": kw, "runs": runs, "run_on": "vcpus"}
    for fl in ("P", "-", "FZPU"):
        row: Dict[str, Any] = {}
        for path in ("locked", "relaxed"):
            _progress(f"slub: hackbench -g {kw['groups']} -f {kw['fds']} -l {kw['loops']}, "
                      f"slub_debug={fl}, {path}, {runs} runs, tasks on 2 vCPUs")
            with Kernel(f"kasan=off no_debug_objects slub_debug={fl} odebug.slub_path={path}",
                        cpus=2, ram="1G") as k:
                # the control's runs take a few milliseconds: 8x the loops for a steady time
                kwf = dict(kw, loops=kw["loops"] * 8) if fl == "-" else kw
                hackbench(k, runs=1, **kwf)       # warm-up: the slabs exist before the clock runs
                r = hackbench(k, runs=runs, **kwf)
                assert not k.reports and r.alloc_failures == 0
            msgs = r.messages or 1
            row[path] = {"mean": r.mean, "variance": r.variance, "stdev": r.stdev, "times": r.times,
                         "cpu_mean": statistics.fmean(r.cpu_times) if r.cpu_times else None,
                         "list_lock_per_msg": r.list_lock_acquired / msgs,
                         "list_lock_contended_per_msg": r.list_lock_contended / msgs}
            if fl in ("P", "-"):
                _progress(f"slub: instructions per message under callgrind, slub_debug={fl}, {path}")
                row[path]["instructions_per_msg"] = slub_instructions(fl, path)
        row["relaxed_speedup"] = _ratio(row["locked"]["mean"], row["relaxed"]["mean"])
        lc, rc = row["locked"]["cpu_mean"], row["relaxed"]["cpu_mean"]
        row["relaxed_cpu_speedup"] = _ratio(lc, rc) if lc and rc else None
        li, ri = row["locked"].get("instructions_per_msg"), row["relaxed"].get("instructions_per_msg")
        row["relaxed_instruction_ratio"] = _ratio(li, ri) if li and ri else None
        out["slub_debug=" + fl] = row
    out["relaxed_speedup"] = out["slub_debug=P"]["relaxed_speedup"]
    out["relaxed_instruction_ratio"] = out["slub_debug=P"]["relaxed_instruction_ratio"]
    return out


def format_slub(r: Dict[str, Any]) -> str:
    s = SEEDS["slub"]
    kw = r["hackbench"]
    lines = ["== SLUB debug paths (2016 series) -- locked vs relaxed ==",
             f"hackbench -g {kw['groups']} -f {kw['fds']} -l {kw['loops']} -s {kw['msg_size']} "
             f"on the slab, tasks on 2 vCPUs, {r['runs']} runs (seed: -g 20 -l 1000, 100 runs, seconds)",
             f"{'':18}{'mean':>9}{'variance':>10}{'stdev':>8}   {'seed mean':>9}{'variance':>10}{'stdev':>8}"]
    p = r["slub_debug=P"]
    for path in ("locked", "relaxed"):
        m = p[path]
        lines.append(f"{'P ' + path:18}{m['mean']:>9.3f}{m['variance']:>10.5f}{m['stdev']:>8.4f}   "
                     f"{s[path + '_mean']:>9.3f}{s[path + '_variance']:>10.3f}{s[path + '_stdev']:>8.3f}")
    lines.append(f"relaxed speedup (locked / relaxed): {p['relaxed_speedup']:.2f}x   "
                 f"(seed {s['relaxed_speedup']:.2f}x)")
    lines.append(f"{'per message':18}{'instr':>9}{'cpu us':>10}{'list_lock':>10}{'contended':>10}"
                 "   (instr: the allocator's, callgrind; cpu: vCPU threads on a CPU)")
    for fl in ("P", "-"):
        row = r["slub_debug=" + fl]
        for path in ("locked", "relaxed"):
            m = row[path]
            ins = m.get("instructions_per_msg")
            msgs = kw["groups"] * kw["fds"] * kw["fds"] * kw["loops"] * (8 if fl == "-" else 1)
            cpu = m["cpu_mean"] * 1e6 / msgs if m.get("cpu_mean") else float("nan")
            lines.append(f"{fl + ' ' + path:18}{(f'{ins:,.0f}' if ins else 'n/a'):>9}{cpu:>10.2f}"
                         f"{m['list_lock_per_msg']:>10.2f}{m['list_lock_contended_per_msg']:>10.3f}")
    if p.get("relaxed_instruction_ratio"):
        lines.append(f"P: locked / relaxed instructions per message: {p['relaxed_instruction_ratio']:.2f}x;"
                     f" control slub_debug=-: "
                     f"{(r['slub_debug=-'].get('relaxed_instruction_ratio') or float('nan')):.2f}x")
    for fl, note in (("-", f" (control, {kw['loops'] * 8} loops)"), ("FZPU", "")):
        row = r["slub_debug=" + fl]
        lines.append(f"context slub_debug={fl}: locked {row['locked']['mean']:.3f} s, relaxed "
                     f"{row['relaxed']['mean']:.3f} s, ratio {row['relaxed_speedup']:.2f}x{note}")
    return "\n".join(lines)


# ---- main -------------------------------------------------------------------------------------
def run(which: str = "all", quick: bool = False, runs: Optional[int] = None) -> Dict[str, Any]:
    """Run the reproductions; returns every number (the --json document)."""
    if which not in ("all", "debugobjects", "quarantine", "slub"):
        raise ValueError(f"reproduce: unknown part {which!r} (debugobjects, quarantine, slub, all)")
    out: Dict[str, Any] = {"quick": quick, "seeds": SEEDS}
    t0 = time.monotonic()
    if which in ("all", "debugobjects"):
        out["debugobjects"] = debugobjects(quick)
    if which in ("all", "quarantine"):
        out["quarantine"] = quarantine(quick)
    if which in ("all", "slub"):
        out["slub"] = slub(quick, runs)
    out["elapsed_s"] = time.monotonic() - t0
    return out


def format_all(res: Dict[str, Any]) -> str:
    parts: List[str] = []
    if "debugobjects" in res:
        parts.append(format_debugobjects(res["debugobjects"]))
    if "quarantine" in res:
        parts.append(format_quarantine(res["quarantine"]))
    if "slub" in res:
        parts.append(format_slub(res["slub"]))
    return "\n\n".join(parts)


def description() -> str:
    """The docstring's first paragraph, on one line (the CLI's description)."""
    first = " ".join(__doc__.split("\n\n")[0].split())
    first = first.replace("``python -m odebug reproduce``: ", "", 1)
    return first[:1].upper() + first[1:]


EPILOG = ("Embedded defaults run in a few minutes on 2 cores; --quick in under one. "
          "Progress goes to stderr, the tables to stdout.")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("which", nargs="?", default="all",
                    choices=["all", "debugobjects", "quarantine", "slub"])
    ap.add_argument("--quick", action="store_true", help="small workloads (< 1 minute)")
    ap.add_argument("--json", metavar="FILE", help="write every number as JSON")
    ap.add_argument("--runs", type=int, default=None, help="hackbench runs per configuration")


def run_cli(a: argparse.Namespace, ap: argparse.ArgumentParser) -> int:
    if a.runs is not None and a.runs < 1:
        ap.error("--runs must be >= 1")
    res = run(a.which, a.quick, a.runs)
    print(format_all(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2, default=str)
        _progress(f"wrote {a.json}")
    _progress(f"done in {res['elapsed_s']:.1f} s")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m odebug reproduce ...`` (the ``reproduce`` subcommand of
    odebug/__main__.py's parser)."""
    from .__main__ import _main
    return _main(["reproduce", *(argv or [])])
