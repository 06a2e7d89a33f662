"""Concurrency that hypothesis drives: schedules as drawn data, and state machines
whose steps run as concurrent tasks under the controlled scheduler.

Both are re-exported by :mod:`odebug.testing`::

    from odebug.testing import SlabConcurrentMachine
    TestSlabRaces = SlabConcurrentMachine.TestCase      # finds, shrinks, prints a reproducer

* :func:`schedules` draws a schedule as a list of preemptions (``(gap, who)``
  pairs, see :func:`odebug.sched.preemptions`): hypothesis shrinks it to fewer
  preemptions, placed earlier.
* :class:`ConcurrentMachine` runs each step as 2-4 task programs of a few
  operations each, one per vCPU, under a drawn schedule, then checks the model's
  invariants.  A failing example is printed as a standalone script: the boot,
  the sequential calls, each step's task programs as functions, the spawns and
  ``k.run(odebug.sched.replay("<schedule>"))``, then the reports.
* Ready machines: :class:`SlabConcurrentMachine` (alloc / free / validate of debug
  caches), :class:`QuarantineConcurrentMachine` (alloc / free / bulk / reduce /
  destroy / CPU hotplug with KASAN's quarantine), :class:`DebugObjectsConcurrentMachine`
  (static and private tracked objects, freeing work, KCSAN).  Their class
  attributes pick the design under test (``slub_path``, ``quarantine_fixes``,
  ``objects_fixes``): on the designs that had the historical races they fail
  (see ``tests/test_sched_races.py``), on the designs that fixed them they hold.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from . import sched as _sched
from .debugobjects import ObjectDescr
from .testing import KernelMachine, RecordingKernel

__all__ = ["schedules", "TaskOp", "ConcurrentMachine", "SlabConcurrentMachine",
           "QuarantineConcurrentMachine", "DebugObjectsConcurrentMachine"]


# ---- schedules as data ----------------------------------------------------------------------------
def schedules(max_preemptions: int = 3, max_gap: int = 300) -> st.SearchStrategy:
    """A hypothesis strategy of schedulers, for finding races and shrinking them.

    Either a list of at most ``max_preemptions`` preemptions (see
    :func:`odebug.sched.preemptions`): each ``gap`` decisions after the previous
    one (small gaps drawn more often), switching to the ``who``-th other runnable
    task; hypothesis shrinks it to fewer preemptions, placed earlier.  Or PCT
    (:func:`odebug.sched.pct`) with a drawn seed, depth 2-3 and a guess of the
    run's length: PCT finds a race of depth d in 1 run out of about n*k^(d-1),
    far more often than preemptions placed blindly.  A failing example found
    under PCT is shrunk by the machines themselves (see
    :class:`ConcurrentMachine`): the preemptions of its failing step, replayed
    from a fresh kernel, are cut down to the fewest that still fail."""
    gap = st.one_of(st.integers(0, 4), st.integers(0, 24), st.integers(0, max_gap))
    pairs = st.lists(st.tuples(gap, st.integers(0, 3)), max_size=max_preemptions)
    pct = st.builds(_sched.pct, st.integers(0, 1 << 16), st.integers(2, 3),
                    st.sampled_from([16, 64, 256, 1024]))
    return st.one_of(pairs.map(_sched.preemptions), pct)


# ---- the machine -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskOp:
    """One operation of a task program: a name and its arguments."""
    name: str
    args: Tuple[Any, ...] = ()

    def __repr__(self) -> str:
        return f"{self.name}{self.args!r}"


class ConcurrentMachine(KernelMachine):
    """A :class:`odebug.testing.KernelMachine` whose steps are concurrent.  The kernel boots with ``odebug.sched=controlled``.

    Each ``concurrently`` step draws 2..``max_tasks`` task programs (1..``max_ops``
    operations each, from :meth:`draw_op`), spawns program i on vCPU i mod ``cpus``
    and runs them under a schedule from :func:`schedules`; then :meth:`after_step`
    updates the model with the results and the invariants run.  Subclasses define
    :meth:`draw_op` (given the objects claimed so far in this step, so that two
    programs never free the same object), :meth:`do` (run an operation on the real
    kernel, inside the task: return its result) and :meth:`source` (the operation
    as a line of Python, its result bound to ``var`` when given)."""

    max_tasks = 3
    max_ops = 3
    max_preemptions = 3
    run_timeout = 60.0

    def boot(self) -> RecordingKernel:
        line = f"{self.cmdline} odebug.sched=controlled".strip()
        return RecordingKernel(line, cpus=self.cpus, ram=self.ram, seed=self.seed,
                               recorder=self.recorder)

    # -- subclass interface --------------------------------------------------------------------
    def draw_op(self, data: Any, task: int, claims: Set[Any]) -> Optional[TaskOp]:
        raise NotImplementedError

    def do(self, k: Any, op: TaskOp) -> Any:
        raise NotImplementedError

    def source(self, op: TaskOp, result: Any) -> str:
        raise NotImplementedError

    def after_step(self, programs: List[List[TaskOp]], results: List[List[Any]]) -> None:
        """Update the model from the step's results (main thread, after the run)."""

    def can_step(self) -> bool:
        """Whether a concurrent step has anything to work on (default: always)."""
        return True

    # -- the step ----------------------------------------------------------------------------------
    @precondition(lambda self: self.can_step())
    @rule(data=st.data())
    def concurrently(self, data: Any) -> None:
        n = data.draw(st.integers(2, self.max_tasks), label="tasks")
        claims: Set[Any] = set()
        programs: List[List[TaskOp]] = []
        for i in range(n):
            ops = []
            for _ in range(data.draw(st.integers(1, self.max_ops), label=f"t{i} ops")):
                op = self.draw_op(data, i, claims)
                if op is not None:
                    ops.append(op)
            programs.append(ops)
        schedule = data.draw(schedules(self.max_preemptions), label="schedule")
        real = self.kernel
        results: List[List[Any]] = [[None] * len(p) for p in programs]
        with self.quietly():
            for i, prog in enumerate(programs):
                def body(i: int = i, prog: List[TaskOp] = prog) -> None:
                    for j, op in enumerate(prog):
                        results[i][j] = self.do(real, op)
                real.spawn(body, cpu=i % self.cpus, name=f"t{i}")
            run = real.run(schedule, check=False, timeout=self.run_timeout)
        self.last_run = run
        self._emit_step(programs, results, run)
        if run.status != "done":
            raise AssertionError(f"the step ended in a {run.status} (schedule {run.schedule})")
        run.raise_errors()
        self.after_step(programs, results)

    #: operations whose result is a new object (named after the others are written,
    #: which refer to the objects of the step's start: an address freed and handed
    #: out again in the same step is two objects)
    producing = frozenset({"alloc"})

    def _emit_step(self, programs: List[List[TaskOp]], results: List[List[Any]],
                   run: "_sched.Run") -> None:
        rec = self.recorder
        rec.setup("from odebug import sched")
        lines: Dict[Tuple[int, int], str] = {}
        for phase in (False, True):
            for i, prog in enumerate(programs):
                for j, op in enumerate(prog):
                    if (op.name in self.producing) == phase:
                        lines[i, j] = self.source(op, results[i][j])
        step = _Step([[ln for j in range(len(prog)) for ln in lines[i, j].split("\n")]
                      for i, prog in enumerate(programs)],
                     [i % self.cpus for i in range(len(programs))], run.schedule,
                     _preemptions(run.preemptions))
        steps = self.__dict__.setdefault("_steps", [])
        steps.append((len(rec.lines), step))
        rec.lines.extend(step.render())

    def _name(self, addr: int) -> str:
        """A fresh reproducer name for an address a task returned."""
        return self.recorder.name_addr(addr)

    # -- the failing example, shrunk further ----------------------------------------------------
    #: runs the final failing example may spend on shrinking its operations and the
    #: interleaving of its failing step
    shrink_runs = 1500
    #: PCT runs tried on an example with an operation less, when its preemptions no longer hit
    shrink_pct = 8

    def teardown(self) -> None:
        from .testing import _should_note
        try:
            if not self.kernel.closed and _should_note():
                self._shrink_example()
        except Exception:   # pragma: no cover - shrinking is best effort
            pass
        super().teardown()

    def _units(self) -> Optional[List[Any]]:
        """The example as units: top-level lines and steps; None if its last line is
        not a concurrent step's run (the failure came from elsewhere)."""
        rec = self.recorder
        steps = dict(self.__dict__.get("_steps", []))
        units: List[Any] = []
        i = 0
        while i < len(rec.lines):
            if i in steps:
                units.append(steps[i])
                i += len(steps[i].render())
            else:
                units.append(rec.lines[i])
                i += 1
        return units if units and isinstance(units[-1], _Step) else None

    def _shrink_example(self) -> None:
        """Hypothesis shrinks the drawn data; a race found under a PCT schedule does
        not survive that (any change moves PCT's preemptions), so the final example
        is shrunk here too, by replaying it from a fresh kernel: first its
        operations (a top-level call, an earlier step, a task's operation at a
        time), then the fewest preemptions of its failing step, keeping the same
        failure.  The reproducer is rewritten with the result."""
        units = self._units()
        if units is None:
            return
        prelude = list(self.recorder.prelude)
        budget = [self.shrink_runs]

        def attempt_units(us: List[Any], scheduler: "_sched.Scheduler"
                          ) -> Tuple[Optional["_sched.Run"], Optional[str]]:
            if budget[0] <= 0:
                return None, None
            budget[0] -= 1
            body: List[str] = []
            for u in us[:-1]:
                body += u.render() if isinstance(u, _Step) else [u]
            body += us[-1].render(last=True)
            ns: Dict[str, Any] = {"__name__": "__odebug_shrink__", "SCHED": scheduler}
            try:
                exec(compile("\n".join(prelude + body) + "\n", "<odebug shrink>", "exec"), ns)
                run, k = ns["run"], ns["k"]
                return run, _signature(k, run)
            except Exception:
                return None, None
            finally:
                k = ns.get("k")
                if k is not None:
                    k.close()

        last = units[-1]
        base_run, base = attempt_units(units, _sched.replay(last.schedule))
        if base is None or base_run is None:
            return
        found = base_run.preemptions
        # 1. operations: drop whatever still fails the same way, with no more
        #    preemptions (a replayed schedule over fewer operations can take
        #    other decisions: the reproducer must not get harder to read)
        cur, pairs = base_run.preemptions, list(base_run.pairs)
        units[-1] = units[-1].with_schedule(base_run.schedule, cur)

        # A race passes when its step runs without preemptions.  Then so must every
        # smaller example: an operation less can make the program wrong on its own
        # (a free dropped before a destroy leaks, which fails the same way, on
        # every schedule) and that is not the race any more.
        racy = attempt_units(units, _sched.preemptions([]))[1] is None

        def still_fails(cand: List[Any]) -> Optional["_sched.Run"]:
            # the same preemptions at the same decision indices (no preemption
            # anywhere else, where a replayed text would go random), then a few
            # PCT runs of the same depth: an operation less shifts the decisions
            tries = [_sched.preemptions(pairs)]
            tries += [_sched.pct(seed, depth=max(cur, 1) + 1) for seed in range(self.shrink_pct)]
            for sc in tries:
                run, sig = attempt_units(cand, sc)
                if sig == base and run is not None and run.preemptions <= cur:
                    if racy:
                        seq, seq_sig = attempt_units(cand, _sched.preemptions([]))
                        if seq is None or seq_sig is not None:
                            return None
                    return run
            return None

        changed = True
        while changed and budget[0] > 0:
            changed = False
            for cand in _smaller(units):
                run = still_fails(cand)
                if run is not None:
                    units = cand
                    cur, pairs = run.preemptions, list(run.pairs)
                    units[-1] = units[-1].with_schedule(run.schedule, cur)
                    changed = True
                    break
        # 2. the failing step's interleaving: the fewest preemptions
        if cur and budget[0] > 0:
            final_run, sig = attempt_units(units, _sched.replay(units[-1].schedule))
            if final_run is not None and sig == base:
                run, _ = _sched.shrink_run(final_run, base,
                                           lambda sc: attempt_units(units, sc),
                                           max(budget[0], 0))
                if run is not None and run.preemptions < cur:
                    units[-1] = units[-1].with_schedule(run.schedule, run.preemptions)
        body: List[str] = []
        for u in units[:-1]:
            body += u.render() if isinstance(u, _Step) else [u]
        body += units[-1].render(note=f"found with {found}")
        self.recorder.lines[:] = body
        self.__dict__["_steps"] = []


@dataclass
class _Step:
    """A concurrent step of an example: the task programs (lines of Python), their
    vCPUs, and the schedule that ran them."""
    tasks: List[List[str]]
    cpus: List[int]
    schedule: str
    comment: str = ""

    def with_schedule(self, schedule: str, preemptions: int) -> "_Step":
        return _Step(self.tasks, self.cpus, schedule, _preemptions(preemptions))

    def render(self, last: bool = False, note: str = "") -> List[str]:
        out = []
        for i, (body, cpu) in enumerate(zip(self.tasks, self.cpus)):
            names = sorted({b.split(" = ")[0] for b in body if " = " in b.split("(")[0]})
            out.append(f"def t{i}():")
            if names:
                out.append(f"    global {', '.join(names)}")
            out += [f"    {b}" for b in body or ["pass"]]
            out.append(f"k.spawn(t{i}, cpu={cpu})")
        if last:
            out.append("run = k.run(SCHED, check=False)")
        else:
            extra = f" ({note})" if note else ""
            out.append(f"run = k.run(sched.replay({self.schedule!r}), check=False)   "
                       f"# {self.comment}{extra}")
        return out


def _preemptions(n: int) -> str:
    return f"{n} preemption" + ("" if n == 1 else "s")


def _smaller(units: List[Any]) -> Iterator[List[Any]]:
    """Candidate examples with one thing less: a top-level line, an earlier step,
    a task of a step, an operation of a task."""
    for i, u in enumerate(units):
        if isinstance(u, str) and not u.startswith(("from ", "import ")):
            yield units[:i] + units[i + 1:]
        elif isinstance(u, _Step):
            if i < len(units) - 1:
                yield units[:i] + units[i + 1:]
            if len(u.tasks) > 1:
                for t in range(len(u.tasks)):
                    yield units[:i] + [_Step(u.tasks[:t] + u.tasks[t + 1:],
                                             u.cpus[:t] + u.cpus[t + 1:], u.schedule,
                                             u.comment)] + units[i + 1:]
            for t, body in enumerate(u.tasks):
                for j in range(len(body)):
                    tasks = [list(b) for b in u.tasks]
                    del tasks[t][j]
                    yield units[:i] + [_Step(tasks, u.cpus, u.schedule, u.comment)] + units[i + 1:]


def _signature(k: Any, run: "_sched.Run") -> Optional[str]:
    """What a replayed step did wrong: its status, the kinds of the reports it made
    and the slab counts validate printed; None if nothing."""
    bad = [] if run.status == "done" else [run.status]
    bad += [f"{r.subsystem}:{r.kind}" for r in run.reports]
    bad += [ln.split("] ", 1)[-1] for ln in k.dmesg().splitlines() if "counted but counter" in ln]
    bad += [f"raised {type(e).__name__}" for _, e in run.errors]
    return "; ".join(bad) or None


def _claim(data: Any, pool: Sequence[Any], claims: Set[Any], label: str) -> Optional[Any]:
    free = [x for x in pool if x not in claims]
    if not free:
        return None
    x = data.draw(st.sampled_from(free), label=label)
    claims.add(x)
    return x


# ---- SLUB ---------------------------------------------------------------------------------------------
class SlabConcurrentMachine(ConcurrentMachine):
    """alloc / free / validate of debug caches, concurrently.  Every operation is
    legal (an object is freed once, by one task), so every report is a bug; a
    validate must find no error; the cache statistics add up.

    ``slub_path``: "relaxed" (the 2016 series, default), "locked" (before it) or
    "modern" (v6.2+ flows, which fixed the validate races of v6.1)."""

    slub_path = "relaxed"
    cpus = 3
    #: debug flags of the caches (validate works on debug caches only on modern)
    cache_flags = ("FZ", "FZPU", "ZPU", "U")
    cache_sizes = (16, 64, 200)

    @property
    def cmdline(self) -> str:  # type: ignore[override]
        return f"kasan=off no_debug_objects odebug.slub_path={self.slub_path}"

    def __init__(self) -> None:
        super().__init__()
        self.live: Dict[int, str] = {}
        self.counts: Dict[str, List[int]] = {}
        self._nc = 0

    @initialize(data=st.data())
    def first_cache(self, data: Any) -> None:
        self.create_cache(data)

    @precondition(lambda self: len(self.counts) < 3)
    @rule(data=st.data())
    def create_cache(self, data: Any) -> None:
        size = data.draw(st.sampled_from(self.cache_sizes), label="size")
        flags = data.draw(st.sampled_from(self.cache_flags), label="flags")
        self._nc += 1
        name = f"c{self._nc}"
        self.kernel.kmem_cache_create(name, size, flags=flags)
        self.counts[name] = [0, 0]

    def draw_op(self, data: Any, task: int, claims: Set[Any]) -> Optional[TaskOp]:
        kind = data.draw(st.sampled_from(["alloc", "free", "validate"]), label="op")
        if kind == "free":
            p = _claim(data, sorted(self.live), claims, "object")
            return None if p is None else TaskOp("free", (self.live[p], p))
        name = data.draw(st.sampled_from(sorted(self.counts)), label="cache")
        return TaskOp(kind, (name,))

    def do(self, k: Any, op: TaskOp) -> Any:
        c = k.cache(op.args[0])
        if op.name == "alloc":
            return c.alloc()
        if op.name == "free":
            c.free(op.args[1])
            return None
        return c.validate()

    def source(self, op: TaskOp, result: Any) -> str:
        c = f"k.cache({op.args[0]!r})"
        if op.name == "alloc":
            return f"{self._name(result)} = {c}.alloc()"
        if op.name == "free":
            return f"{c}.free({self.recorder.render(op.args[1])})"
        return f"{c}.validate()   # -> {result}"

    def after_step(self, programs: List[List[TaskOp]], results: List[List[Any]]) -> None:
        ops = [(op, r) for prog, res in zip(programs, results) for op, r in zip(prog, res)]
        for op, r in ops:                  # frees first: their objects may come back
            if op.name == "free":
                del self.live[op.args[1]]
                self.counts[op.args[0]][1] += 1
        for op, r in ops:
            if op.name == "alloc":
                assert r is not None and r not in self.live, "an object handed out twice"
                self.live[r] = op.args[0]
                self.counts[op.args[0]][0] += 1
            elif op.name == "validate" and r:
                with self.quietly():
                    said = [ln for ln in self.kernel.dmesg().splitlines() if op.args[0] in ln]
                raise AssertionError(f"validate of {op.args[0]} found {r} errors"
                                     + (f": {said[-1].split('] ', 1)[-1]}" if said else ""))

    @rule(data=st.data())
    def free_one(self, data: Any) -> None:
        """A sequential free, so that objects do not pile up."""
        if self.live:
            p = data.draw(st.sampled_from(sorted(self.live)), label="object")
            name = self.live.pop(p)
            self.kernel.cache(name).free(p)
            self.counts[name][1] += 1

    @invariant()
    def stats_add_up(self) -> None:
        with self.quietly():
            for name, (a, f) in self.counts.items():
                s = self.kernel.cache(name).stats()
                assert s["alloc_fastpath"] + s["alloc_slowpath"] == a, (name, s, a)
                assert s["free_fastpath"] + s["free_slowpath"] == f, (name, s, f)


# ---- KASAN's quarantine ---------------------------------------------------------------------------------
class QuarantineConcurrentMachine(ConcurrentMachine):
    """Frees into KASAN's quarantine (objects up to 512 KiB, so that a per-CPU list
    passes its 1 MiB in a few frees), reduce, cache destroy and CPU hotplug,
    concurrently.  A destroy frees the cache's live objects first (as a module's
    exit does) and no other task of the step touches that cache, so "Objects
    remaining ... on __kmem_cache_shutdown()" is a bug of the quarantine.

    ``quarantine_fixes``: "v5.10" (default), "v4.11" or "v4.10" (see
    ``odebug.quarantine_fixes=``); ``quarantine``: "batched" or "quarter"."""

    quarantine_fixes = "v5.10"
    quarantine = "batched"
    cpus = 2
    cache_sizes = (64, 4096, 262144, 524288)
    #: CPU hotplug among the operations
    hotplug = True

    @property
    def cmdline(self) -> str:  # type: ignore[override]
        return (f"no_debug_objects odebug.quarantine={self.quarantine} "
                f"odebug.quarantine_fixes={self.quarantine_fixes}")

    def __init__(self) -> None:
        super().__init__()
        self.live: Dict[int, str] = {}
        self.caches: Set[str] = set()
        self.destroyed: Set[str] = set()
        self.offline: Set[int] = set()
        self._nc = 0

    def can_step(self) -> bool:
        return bool(self.caches)

    @initialize(data=st.data())
    def first_cache(self, data: Any) -> None:
        self.create_cache(data)

    @precondition(lambda self: len(self.caches) < 3)
    @rule(data=st.data())
    def create_cache(self, data: Any) -> None:
        size = data.draw(st.sampled_from(self.cache_sizes), label="size")
        self._nc += 1
        name = f"q{self._nc}"
        self.kernel.kmem_cache_create(name, size)
        self.caches.add(name)

    @precondition(lambda self: self.caches)
    @rule(data=st.data(), n=st.integers(1, 3), cpu=st.integers(0, 1))
    def alloc_free(self, data: Any, n: int, cpu: int) -> None:
        """Sequential frees on a vCPU: objects of a cache into its quarantine list."""
        name = data.draw(st.sampled_from(sorted(self.caches)), label="cache")
        c = self.kernel.cache(name)
        objs = c.alloc_bulk(n)
        assert objs is not None
        if cpu not in self.offline:
            with self.kernel.on_cpu(cpu):
                c.free_bulk(objs)
        else:
            c.free_bulk(objs)

    def draw_op(self, data: Any, task: int, claims: Set[Any]) -> Optional[TaskOp]:
        free_caches = [c for c in self.caches if ("cache", c) not in claims]
        kinds = ["reduce"]
        if any(p not in claims for p in self.live):
            kinds.append("free")
        if free_caches:
            kinds += ["alloc", "destroy"]
        if self.hotplug and "hotplug" not in claims:
            kinds.append("hotplug")
        kind = data.draw(st.sampled_from(kinds), label="op")
        if kind == "free":
            p = _claim(data, sorted(self.live), claims, "object")
            if p is None:
                return None
            claims.add(("cache", self.live[p]))
            return TaskOp("free", (self.live[p], p))
        if kind == "reduce":
            return TaskOp("reduce")
        if kind == "hotplug":
            if "hotplug" in claims:
                return None
            claims.add("hotplug")
            cpu = data.draw(st.integers(1, self.cpus - 1), label="cpu")
            return TaskOp("online" if cpu in self.offline else "offline", (cpu,))
        pool = sorted(c for c in self.caches if ("cache", c) not in claims
                      and (kind == "alloc" or not any(p in claims for p, n in self.live.items()
                                                      if n == c)))
        if not pool:
            return None
        name = data.draw(st.sampled_from(pool), label="cache")
        claims.add(("cache", name))
        if kind == "destroy":
            # as a module exit does: free what is left, then destroy (the frees go
            # to this vCPU's quarantine list: what destroy must find)
            objs = tuple(sorted(p for p, n in self.live.items() if n == name))
            claims.update(objs)
            return TaskOp("destroy", (name, objs))
        return TaskOp("alloc", (name,))

    def do(self, k: Any, op: TaskOp) -> Any:
        if op.name == "reduce":
            k.kasan.quarantine.reduce()
        elif op.name in ("offline", "online"):
            (k.cpu_offline if op.name == "offline" else k.cpu_online)(op.args[0])
        elif op.name == "destroy":
            c = k.cache(op.args[0])
            for p in op.args[1]:
                c.free(p)
            c.destroy()
        elif op.name == "alloc":
            return k.cache(op.args[0]).alloc()
        else:
            k.cache(op.args[0]).free(op.args[1])
        return None

    def source(self, op: TaskOp, result: Any) -> str:
        if op.name == "reduce":
            return "k.kasan.quarantine.reduce()"
        if op.name in ("offline", "online"):
            return f"k.cpu_{op.name}({op.args[0]})"
        c = f"k.cache({op.args[0]!r})"
        if op.name == "destroy":
            return "\n".join([f"{c}.free({self.recorder.render(p)})" for p in op.args[1]]
                             + [f"{c}.destroy()"])
        if op.name == "alloc":
            return f"{self._name(result)} = {c}.alloc()"
        return f"{c}.free({self.recorder.render(op.args[1])})"

    def after_step(self, programs: List[List[TaskOp]], results: List[List[Any]]) -> None:
        ops = [(op, r) for prog, res in zip(programs, results) for op, r in zip(prog, res)]
        # what the step freed first: its addresses may be handed out again in it
        for op, r in ops:
            if op.name == "free":
                del self.live[op.args[1]]
            elif op.name == "destroy":
                for p in op.args[1]:
                    del self.live[p]
        for op, r in ops:
            if op.name == "alloc":
                assert r not in self.live, "an object handed out twice"
                self.live[r] = op.args[0]
            elif op.name == "destroy":
                self.caches.discard(op.args[0])
                self.destroyed.add(op.args[0])
            elif op.name == "offline":
                self.offline.add(op.args[0])
            elif op.name == "online":
                self.offline.discard(op.args[0])


# ---- debug objects ------------------------------------------------------------------------------------------
_STATIC_BASE = 0xffffffff82000000
_PRIVATE_BASE = 0xffffffff83000000


class DebugObjectsConcurrentMachine(ConcurrentMachine):
    """Two statically initialised objects that tasks share (first use tracks them),
    private objects each task takes through init / activate / deactivate / free,
    tracker churn that fills the pool's to-free list, and the freeing work (time
    advancing), concurrently, with KCSAN on.  Every operation is legal, so every
    ODEBUG warning and every KCSAN data race is a bug.

    ``objects_fixes``: "v5.3" (the seed's design, default), "v5.6", "v6.4", "v6.5"
    (see ``odebug.objects_fixes=``)."""

    objects_fixes = "v5.3"
    cpus = 3
    kcsan = True

    @property
    def cmdline(self) -> str:  # type: ignore[override]
        return (f"kasan=off odebug.objects_fixes={self.objects_fixes} "
                f"odebug.kcsan={'on' if self.kcsan else 'off'}")

    def __init__(self) -> None:
        super().__init__()
        statics = {_STATIC_BASE, _STATIC_BASE + 0x1000}
        self.descr = ObjectDescr("work_struct", is_static_object=lambda a: a in statics)
        self.recorder.setup("STATICS = {%s, %s}" % (hex(_STATIC_BASE), hex(_STATIC_BASE + 0x1000)))
        self.recorder.setup('descr = odebug.ObjectDescr("work_struct", '
                            'is_static_object=lambda a: a in STATICS)')
        self.recorder.alias(self.descr, "descr")
        self.active: Set[int] = set()          # static objects ACTIVE now
        self._next = _PRIVATE_BASE

    def _take(self, n: int) -> int:
        """n fresh private addresses (0x40 apart): no two programs share one."""
        a = self._next
        self._next += 0x40 * n
        return a

    def draw_op(self, data: Any, task: int, claims: Set[Any]) -> Optional[TaskOp]:
        kind = data.draw(st.sampled_from(["static", "private", "churn", "advance"]), label="op")
        if kind == "static":
            s = data.draw(st.sampled_from([_STATIC_BASE, _STATIC_BASE + 0x1000]), label="static")
            if s in self.active:
                # deactivate once, by one task, and nothing else on it this step
                if ("s", s) in claims:
                    return None
                claims.add(("s", s))
                return TaskOp("deactivate", (s,))
            what = data.draw(st.sampled_from(["assert_init", "activate", "untrack"]),
                             label="static op")
            if what == "untrack":
                # free of the inactive static object: its next first use tracks it again
                if ("s", s) in claims or ("activated", s) in claims:
                    return None
                claims.add(("s", s))
                return TaskOp("untrack", (s,))
            if what == "activate":
                if ("s", s) in claims or ("activated", s) in claims:
                    what = "assert_init"
                else:
                    claims.add(("activated", s))
            return TaskOp(what, (s,))
        if kind == "private":
            return TaskOp("cycle", (self._take(1),))
        if kind == "churn":
            n = data.draw(st.sampled_from([64, 1200]), label="trackers")
            return TaskOp("churn", (self._take(n), n))
        return TaskOp("advance", (data.draw(st.sampled_from([1, 100, 200]), label="ms"),))

    def do(self, k: Any, op: TaskOp) -> Any:
        d = k.debug_objects
        if op.name in ("assert_init", "activate", "deactivate"):
            return getattr(d, op.name)(op.args[0], self.descr)
        if op.name == "untrack":
            return d.free(op.args[0], self.descr)
        if op.name == "cycle":
            a = op.args[0]
            d.init(a, self.descr)
            d.activate(a, self.descr)
            d.deactivate(a, self.descr)
            d.free(a, self.descr)
        elif op.name == "churn":
            a, n = op.args
            for i in range(n):
                d.init(a + 0x40 * i, self.descr)
            for i in range(n):
                d.free(a + 0x40 * i, self.descr)
        else:
            k.advance(ms=op.args[0])
        return None

    def source(self, op: TaskOp, result: Any) -> str:
        d = "k.debug_objects"
        if op.name in ("assert_init", "activate", "deactivate"):
            return f"{d}.{op.name}({hex(op.args[0])}, descr)"
        if op.name == "untrack":
            return f"{d}.free({hex(op.args[0])}, descr)"
        if op.name == "cycle":
            a = hex(op.args[0])
            return "; ".join(f"{d}.{f}({a}, descr)" for f in ("init", "activate", "deactivate", "free"))
        if op.name == "churn":
            a, n = op.args
            return (f"[{d}.init({hex(a)} + 0x40 * i, descr) for i in range({n})]; "
                    f"[{d}.free({hex(a)} + 0x40 * i, descr) for i in range({n})]")
        return f"k.advance(ms={op.args[0]})"

    def after_step(self, programs: List[List[TaskOp]], results: List[List[Any]]) -> None:
        for prog, res in zip(programs, results):
            for op, r in zip(prog, res):
                if op.name == "activate":
                    assert r == 0, f"activate of a static object returned {r}"
                    self.active.add(op.args[0])
                elif op.name == "deactivate":
                    self.active.discard(op.args[0])
