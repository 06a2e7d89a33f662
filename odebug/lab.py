"""Experiments at scale: parameter sweeps on any ``concurrent.futures.Executor``.

    from odebug import lab
    t = lab.sweep(lab.quarantine_task, {"policy": ["quarter", "batched"], "ops": [50_000]},
                  seeds=3)
    print(t.to_text())
    print(t.summary(by=["policy"], value="largest_reduce_bytes").to_text())

``sweep`` only uses ``executor.submit`` and ``concurrent.futures.as_completed``,
so it runs on a local process pool (the default: ``ProcessPoolExecutor`` with the
``spawn`` context: never ``fork`` a process holding the C core's pthread locks),
a ``ThreadPoolExecutor`` (the C calls release the GIL), a Dask
``Client.get_executor(pure=False)``, loky's ``get_reusable_executor()``, or
mpi4py's ``MPIPoolExecutor``.  Tasks are plain module-level functions taking
plain keyword arguments (and ``seed``) that create their own kernels and return a
dict of plain data; C handles never cross a process boundary.

Ready tasks: :func:`quarantine_task`, :func:`churn_task`, :func:`hackbench_task`,
:func:`slab_pairs_task`, :func:`fuzz_task` (a hypothesis campaign of one
``odebug.testing`` machine, returning its shrunk failure as data).
"""
from __future__ import annotations

import concurrent.futures as cf
import itertools
import math
import multiprocessing
import os
import statistics
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union, cast

__all__ = ["sweep", "grid_points", "Table", "quarantine_task", "churn_task",
           "hackbench_task", "slab_pairs_task", "fuzz_task"]


class Table(List[Dict[str, Any]]):
    """A list of row dicts with pandas-free formatting (``to_text``) and grouping
    (``summary``).  ``pandas.DataFrame(table)`` works too."""

    @property
    def columns(self) -> List[str]:
        """Column names in first-seen order."""
        cols: Dict[str, None] = {}
        for row in self:
            for key in row:
                cols.setdefault(key, None)
        return list(cols)

    def column(self, name: str) -> List[Any]:
        """The values of one column (None where a row lacks it)."""
        return [row.get(name) for row in self]

    def where(self, **equal: Any) -> "Table":
        """The rows whose columns equal the given values."""
        return Table(r for r in self if all(r.get(k) == v for k, v in equal.items()))

    def summary(self, by: Sequence[str], value: str) -> "Table":
        """Per group of ``by`` columns: n, mean, stdev, min, max of ``value``."""
        groups: Dict[Tuple[Any, ...], List[float]] = {}
        for r in self:
            if r.get(value) is None:
                continue
            groups.setdefault(tuple(r.get(b) for b in by), []).append(float(r[value]))
        out = Table()
        for key, vals in groups.items():
            row = dict(zip(by, key))
            row.update(n=len(vals), mean=statistics.fmean(vals),
                       stdev=statistics.stdev(vals) if len(vals) > 1 else 0.0,
                       min=min(vals), max=max(vals))
            out.append(row)
        return out

    def to_text(self, columns: Optional[Sequence[str]] = None, *, floatfmt: str = ".4g",
                max_width: int = 24) -> str:
        """A fixed-width text table (numbers right-aligned)."""
        cols = list(columns) if columns is not None else self.columns

        def fmt(v: Any) -> str:
            if isinstance(v, bool) or v is None:
                return "" if v is None else str(v)
            if isinstance(v, float):
                return format(v, floatfmt) if math.isfinite(v) else str(v)
            if isinstance(v, int):
                return f"{v:,}"
            s = str(v).replace("\n", " ")
            return s if len(s) <= max_width else s[:max_width - 1] + "…"
        cells = [[fmt(r.get(c)) for c in cols] for r in self]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
        numeric = [all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in self)
                   for c in cols]
        lines = ["  ".join(c.rjust(w) if n else c.ljust(w)
                           for c, w, n in zip(cols, widths, numeric)).rstrip()]
        for row in cells:
            lines.append("  ".join(v.rjust(w) if n else v.ljust(w)
                                   for v, w, n in zip(row, widths, numeric)).rstrip())
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def grid_points(grid: Union[Mapping[str, Iterable[Any]], Iterable[Mapping[str, Any]]]) -> List[Dict[str, Any]]:
    """The points of a grid: the cartesian product of a dict of value lists
    (``{"policy": ["lazy", "eager"], "rounds": [100, 200]}``), or a list of dicts
    taken as they are."""
    if isinstance(grid, Mapping):
        keys = list(grid)
        values = [list(grid[k]) if isinstance(grid[k], (list, tuple, range)) else [grid[k]]
                  for k in keys]
        return [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    return [dict(p) for p in grid]


def _run_task(fn: Callable[..., Any], params: Dict[str, Any]) -> Dict[str, Any]:
    r = fn(**params)
    if isinstance(r, Mapping):
        return dict(r)
    return {"value": r}


def sweep(fn: Callable[..., Any], grid: Union[Mapping[str, Iterable[Any]], Iterable[Mapping[str, Any]]],
          *, executor: Union[None, str, cf.Executor] = None,
          seeds: Union[None, int, Iterable[int]] = 1, max_workers: Optional[int] = None,
          errors: str = "raise") -> Table:
    """Run ``fn(**point, seed=s)`` for every point of ``grid`` and every seed.

    ``executor``: any ``concurrent.futures.Executor`` (not shut down here); None
    makes a local ``ProcessPoolExecutor`` (spawn context, ``max_workers``, at most
    one worker per task) for the sweep; ``"serial"`` runs in this process.
    ``seeds``: an int n (seeds 0..n-1), an iterable of seeds, or None (``fn`` gets no
    ``seed``).  ``fn`` must be a picklable module-level function returning a dict
    (or a value, stored as ``value``).  ``errors="record"`` stores a failed task's
    exception in an ``error`` column instead of raising.

    Returns a :class:`Table`: one row per task, in grid order then seed order, with
    the point's parameters, ``seed`` and the task's results."""
    if errors not in ("raise", "record"):
        raise ValueError(f"errors: 'raise' or 'record', not {errors!r}")
    points = grid_points(grid)
    if seeds is None:
        seed_list: List[Optional[int]] = [None]
    elif isinstance(seeds, int):
        if seeds < 1:
            raise ValueError(f"seeds: expected a positive count, not {seeds}")
        seed_list = list(range(seeds))
    else:
        seed_list = list(seeds)
    tasks = []
    for p in points:
        for s in seed_list:
            params = dict(p) if s is None else {**p, "seed": s}
            tasks.append(params)
    results: List[Optional[Dict[str, Any]]] = [None] * len(tasks)

    def record(i: int, fut_or_exc: Any) -> None:
        try:
            res = fut_or_exc.result() if isinstance(fut_or_exc, cf.Future) else fut_or_exc
            results[i] = {**tasks[i], **res}
        except Exception as e:
            if errors == "raise":
                raise
            results[i] = {**tasks[i], "error": f"{type(e).__name__}: {e}"}

    if executor == "serial":
        for i, params in enumerate(tasks):
            try:
                out: Any = _run_task(fn, params)
            except Exception as e:
                if errors == "raise":
                    raise
                results[i] = {**params, "error": f"{type(e).__name__}: {e}"}
                continue
            record(i, out)
        return Table(r for r in results if r is not None)

    own = executor is None
    if executor is None:
        n = max_workers or min(len(tasks), os.cpu_count() or 1) or 1
        executor = cf.ProcessPoolExecutor(max_workers=n,
                                          mp_context=multiprocessing.get_context("spawn"))
    # another str than "serial" fails at submit(), as it always did
    pool = cast(cf.Executor, executor)
    try:
        futs = {pool.submit(_run_task, fn, params): i for i, params in enumerate(tasks)}
        for fut in cf.as_completed(futs):
            record(futs[fut], fut)
    finally:
        if own:
            pool.shutdown(wait=True, cancel_futures=True)
    return Table(r for r in results if r is not None)


# ---- ready tasks (module-level, plain arguments, plain results) ----------------------------------
def quarantine_task(policy: str = "batched", ram: str = "256M", cpus: int = 2,
                    ops: int = 100_000, threads: int = 1, seed: int = 0) -> Dict[str, Any]:
    """One KASAN quarantine storm (kmalloc/kfree churn in C) on a fresh kernel:
    largest reduce (bytes, ms), lock hold, kmalloc p99/max, throughput."""
    from .kernel import Kernel
    with Kernel(f"no_debug_objects odebug.quarantine={policy}", ram=ram, cpus=cpus,
                seed=seed) as k:
        r = k.kasan.quarantine.storm(ops, threads=threads, seed=seed)
        s = k.kasan.quarantine.stats()
    return {"max_size": s["max_size"], "largest_reduce_bytes": s["max_evict_bytes"],
            "largest_reduce_ms": s["free_ns_max"] / 1e6, "lock_hold_max_ms": s["lock_ns_max"] / 1e6,
            "evicting_reduces": s["reduce_evicting"], "kmalloc_p99_ns": r["alloc_p99"],
            "kmalloc_max_ms": r["alloc_max"] / 1e6,
            "ops_per_s": r["ops"] / (r["elapsed_ns"] / 1e9) if r["elapsed_ns"] else 0.0}


def churn_task(policy: str = "lazy", cpus: int = 4, rounds: int = 200, wave: int = 400,
               lifetime: int = 3, advance_ms: float = 10.0, phase_rounds: int = 25,
               seed: int = 0) -> Dict[str, Any]:
    """The debug-objects churn (odebug.bench.debugobjects_churn) under one freeing
    policy: the stats file's numbers plus work runs and peak live objects."""
    from .bench import debugobjects_churn
    r = debugobjects_churn(policy, cpus=cpus, rounds=rounds, wave=wave, lifetime=lifetime,
                           advance_ms=advance_ms, seed=seed, phase_rounds=phase_rounds)
    r.pop("stats_text", None)
    r.pop("policy", None)
    return r


def hackbench_task(path: str = "relaxed", slub_debug: str = "P", groups: int = 4,
                   fds: int = 10, loops: int = 20, cpus: int = 2, seed: int = 0) -> Dict[str, Any]:
    """One hackbench run on the slab (odebug.scenarios.hackbench) with
    ``odebug.slub_path=<path> slub_debug=<slub_debug>``: seconds and messages."""
    from .kernel import Kernel
    from .scenarios import hackbench
    with Kernel(f"kasan=off no_debug_objects odebug.slub_path={path} slub_debug={slub_debug}",
                cpus=cpus, ram="256M", seed=seed) as k:
        r = hackbench(k, groups=groups, fds=fds, loops=loops)
    return {"seconds": r.times[0], "messages": r.messages, "alloc_failures": r.alloc_failures}


def slab_pairs_task(path: str = "relaxed", slub_debug: str = "-", pairs: int = 100_000,
                    size: int = 64, seed: int = 0) -> Dict[str, Any]:
    """ns per alloc+free pair of a C loop on one cache (no KASAN, no debug objects)."""
    from .kernel import Kernel
    with Kernel(f"kasan=off no_debug_objects odebug.slub_path={path} slub_debug={slub_debug},bench",
                cpus=2, ram="128M", seed=seed) as k:
        c = k.kmem_cache_create("bench", size)
        ns = c._c.bench_pairs(pairs) / pairs
    return {"ns_per_pair": ns}


def fuzz_task(machine: str = "odebug.testing:QuarantineMachine", max_examples: int = 100,
              steps: int = 30, seed: int = 0) -> Dict[str, Any]:
    """A hypothesis campaign of one state machine (``"module:Class"``), its random
    seed ``seed``: ``found`` and, if so, the shrunk failure as plain data (the
    reproducer ``script``, the unexpected report kinds, the error)."""
    import importlib
    from .testing import find_failure
    mod, _, name = machine.partition(":")
    cls = getattr(importlib.import_module(mod), name)
    f = find_failure(cls, max_examples=max_examples, steps=steps, derandomize=False, seed=seed)
    if f is None:
        return {"found": False, "script": "", "kinds": "", "error": ""}
    return {"found": True, "script": f.script, "kinds": ",".join(r["kind"] for r in f.unexpected),
            "error": f.error}
