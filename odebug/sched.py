"""The controlled scheduler: concurrency that is deterministic, explorable,
shrinkable and replayable.

A kernel booted with ``sched="controlled"`` (``odebug.sched=controlled`` on the
command line) runs its tasks one at a time.  Every scheduling point of the C
core -- each lock acquire and release, interrupts off, each cmpxchg of a slab
freelist, each racy ``READ_ONCE``/``WRITE_ONCE``, each work item's start and the
kernel's racy windows -- asks a *scheduler* which task goes on::

    import odebug
    from odebug import sched

    k = odebug.Kernel("slub_debug=FZ kasan=off", sched="controlled", cpus=2)
    c = k.kmem_cache_create("foo", 64)
    p = c.alloc()
    k.spawn(lambda: c.free(p), cpu=0)
    k.spawn(lambda: c.validate(), cpu=1)
    run = k.run(sched.random(seed=3))
    run.schedule          # 'v1:0*12,1*40,0*9;h=...': replays the same interleaving
    k.reports             # what the kernel found under that interleaving

Schedulers (this module): :func:`random`, :func:`pct` (probabilistic
concurrency testing), :func:`dfs` (exhaustive up to a preemption bound),
:func:`replay` (a schedule text) and :func:`preemptions` (the form hypothesis
draws and shrinks, see :func:`odebug.testing.schedules`).  :func:`explore`
searches for a failing schedule of a program and shrinks it.

A schedule text lists the task chosen at each *decision* (a point where more
than one task could run).  It is stable across processes and builds of the same
commit: the same text gives byte-identical dmesg, reports, stats and
``k.trace_hash()``.  Replaying a stale text follows it as far as it fits, then
continues under a fixed seed, and the run says where it diverged.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, List, NamedTuple, Optional,
                    Sequence, Tuple)

from . import _core
from ._kbase import KernelBase

if TYPE_CHECKING:  # pragma: no cover
    from .kernel import Kernel
    from .report import Report

__all__ = [
    "Scheduler", "random", "pct", "dfs", "replay", "preemptions", "Task", "Run", "Event",
    "Site", "SchedError", "Deadlock", "Stall", "explore", "Exploration", "FoundSchedule",
]

_STATUS = {_core.SCHED_DONE: "done", _core.SCHED_DEADLOCK: "deadlock",
           _core.SCHED_STALL: "stall"}


class SchedError(_core.Error):
    """A controlled run that did not end with every task returning (``.run``)."""

    def __init__(self, msg: str, run: "Run") -> None:
        super().__init__(msg)
        self.run = run


class Deadlock(SchedError):
    """No task of the run could go on; the kernel made a ``deadlock`` report and is closed."""


class Stall(SchedError):
    """The running task reached no scheduling point in time (it waited on something
    odebug does not control, e.g. a Python lock); the kernel is closed."""


class Scheduler:
    """A scheduling strategy.  One scheduler may drive many runs (on fresh kernels:
    exploration); :meth:`next` moves it to its next schedule."""

    __slots__ = ("_s", "description")

    def __init__(self, core: "_core.SchedStrategy", description: str) -> None:
        self._s = core
        self.description = description

    def next(self) -> bool:
        """Move to the next schedule; False when there is none (``dfs`` explored every
        schedule within its bound; ``replay``/``preemptions`` have one)."""
        return self._s.next()

    @property
    def info(self) -> Dict[str, Any]:
        """``kind``, ``runs`` driven, ``distinct`` schedules among them, ``bound`` and
        ``exhausted`` (dfs), ``steps`` (pct)."""
        return self._s.info()

    def __repr__(self) -> str:
        return f"<odebug.sched.{self.description}>"


def random(seed: int = 0) -> Scheduler:
    """At every decision, a task chosen uniformly among those that can run."""
    return Scheduler(_core.sched_random(_u64(seed, "seed")), f"random(seed={seed})")


def pct(seed: int = 0, depth: int = 2, steps: Optional[int] = None) -> Scheduler:
    """PCT (Burckhardt et al., ASPLOS 2010): random priorities, ``depth - 1`` change
    points among ``steps`` decisions (None: the most seen in earlier runs, 100 at
    first).  Finds a bug of depth d with probability >= 1/(n k^(d-1)) per run."""
    if not isinstance(depth, int) or not 1 <= depth <= 17:
        raise ValueError(f"pct: depth must be 1..17, not {depth!r}")
    return Scheduler(_core.sched_pct(_u64(seed, "seed"), depth, _u64(steps or 0, "steps")),
                     f"pct(seed={seed}, depth={depth}{'' if steps is None else f', steps={steps}'})")


def dfs(preemption_bound: int = 2) -> Scheduler:
    """Every schedule with at most ``preemption_bound`` preemptions, with 0 first, then
    1, ... (CHESS's iterative preemption bounding: the fewest-preemption bug first)."""
    if not isinstance(preemption_bound, int) or preemption_bound < 0:
        raise ValueError(f"dfs: preemption_bound must be an int >= 0, not {preemption_bound!r}")
    return Scheduler(_core.sched_dfs(preemption_bound), f"dfs(preemption_bound={preemption_bound})")


def replay(schedule: str, seed: int = 0) -> Scheduler:
    """The choices of a schedule text; where it stops fitting, ``random(seed)``."""
    if isinstance(schedule, Run):
        schedule = schedule.schedule
    if not isinstance(schedule, str):
        raise TypeError(f"replay: expected a schedule text, not {type(schedule).__name__}")
    return Scheduler(_core.sched_replay(schedule, _u64(seed, "seed")), f"replay({schedule!r})")


def preemptions(pairs: Iterable[Tuple[int, int]]) -> Scheduler:
    """No preemption but the listed ones: each ``(gap, who)`` comes ``gap`` decisions
    after the previous one and switches to the ``who``-th (modulo their number) of
    the other tasks that can run.  Between them every decision keeps the running
    task (or, when it cannot go on, takes the lowest task id)."""
    pairs = [(int(g), int(w)) for g, w in pairs]
    for g, w in pairs:
        if g < 0 or w < 0:
            raise ValueError(f"preemptions: gaps and whos are >= 0, not ({g}, {w})")
    return Scheduler(_core.sched_preemptions(pairs), f"preemptions({pairs!r})")


def _u64(v: Any, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << 64:
        raise ValueError(f"{what}: expected an int in 0..2**64-1, not {v!r}")
    return v


class Site(NamedTuple):
    """A scheduling point's site: what happens there, the C file and line, the kind."""
    what: str
    file: str
    line: int
    kind: int

    def __str__(self) -> str:
        return f"{self.what} ({self.file}:{self.line})"


class Event(NamedTuple):
    """One scheduling point of a recorded run (``k.run(..., record=True)``)."""
    step: int
    task: int
    cpu: int
    site: Site
    next: int          #: the task that runs after the point
    decision: bool     #: more than one task could run
    preempted: bool    #: the task could go on but another one was chosen
    blocked: bool      #: the task waits for a lock another task holds
    ended: bool        #: the task returned


@dataclass
class Task:
    """A task of a controlled run: a callable on a thread of its own, bound to a vCPU."""
    id: int
    name: str
    cpu: Optional[int]
    fn: Callable[[], Any]
    _box: List[Any] = field(repr=False, default_factory=list)

    @property
    def exception(self) -> Optional[BaseException]:
        """What the callable raised, if anything (after the run)."""
        return self._box[1] if self._box else None


@dataclass
class Run:
    """The result of ``k.run()``."""
    status: str                      #: "done", "deadlock" or "stall"
    schedule: str                    #: the schedule text (replay(schedule) repeats the run)
    tasks: List[Task]
    points: int                      #: scheduling points passed
    decisions: int                   #: points where more than one task could run
    preemptions: int                 #: decisions that switched away from a task that could go on
    switches: int
    trace_hash: int                  #: of this run's points and choices
    pairs: List[Tuple[int, int]]     #: the schedule as preemptions() takes it
    diverged_at: Optional[int] = None    #: replay: first decision that did not fit
    divergence: str = ""
    reports: List["Report"] = field(default_factory=list)   #: reports made during the run
    events: Optional[List[Event]] = None

    @property
    def errors(self) -> List[Tuple[Task, BaseException]]:
        """(task, exception) of each task that raised."""
        return [(t, t.exception) for t in self.tasks if t.exception is not None]

    @property
    def ok(self) -> bool:
        """Every task returned without raising, and no report was made."""
        return self.status == "done" and not self.errors and not self.reports

    def raise_errors(self) -> None:
        """Raise Deadlock/Stall, or the first task's exception (with a note naming the
        task and the schedule that replays it)."""
        if self.status == "deadlock":
            raise Deadlock(f"deadlock under schedule {self.schedule}", self)
        if self.status == "stall":
            raise Stall(f"stall under schedule {self.schedule}", self)
        for t, e in self.errors:
            e.add_note(f"odebug: raised in task {t.id} ({t.name}) under schedule {self.schedule}")
            raise e

    def timeline(self) -> List[Tuple[int, int, int, int]]:
        """The run as segments ``(task, cpu, first_step, last_step)`` of consecutive
        points of one task (needs ``record=True``): what a plot per vCPU draws."""
        if self.events is None:
            raise ValueError("timeline: the run was not recorded (k.run(..., record=True))")
        segs: List[Tuple[int, int, int, int]] = []
        for e in self.events:
            if segs and segs[-1][0] == e.task and segs[-1][3] == e.step - 1:
                t, c, a, _ = segs[-1]
                segs[-1] = (t, c, a, e.step)
            else:
                segs.append((e.task, e.cpu, e.step, e.step))
        return segs

    def __repr__(self) -> str:
        extra = f", diverged at {self.diverged_at}" if self.diverged_at is not None else ""
        return (f"<odebug.sched.Run {self.status}: {len(self.tasks)} tasks, {self.decisions} "
                f"decisions, {self.preemptions} preemptions, {len(self.reports)} reports{extra}>")


class SchedMixin(KernelBase):
    """The Kernel's controlled-scheduler methods."""

    def _sched_pending(self) -> List[Task]:
        tasks: List[Task] = self.__dict__.setdefault("_sched_tasks", [])
        return tasks

    def spawn(self, fn: Callable[..., Any], *args: Any, cpu: Optional[int] = None,
              name: Optional[str] = None, **kwargs: Any) -> Task:
        """Add a task to the next run: ``fn(*args, **kwargs)`` on a thread of its own,
        bound to vCPU ``cpu`` (None: unbound, i.e. CPU 0), with task name ``name``.
        From inside a running task the new task joins the run at once."""
        if not callable(fn):
            raise TypeError(f"spawn: fn must be callable, not {type(fn).__name__}")
        if cpu is not None and (not isinstance(cpu, int) or isinstance(cpu, bool)):
            raise TypeError(f"spawn: cpu must be an int or None, not {type(cpu).__name__}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"spawn: name must be a str or None, not {type(name).__name__}")
        call = (lambda: fn(*args, **kwargs)) if args or kwargs else fn
        box: List[Any] = [call, None]
        tid = _core.sched_spawn(self, box, -1 if cpu is None else cpu, name)
        tname: str = name if name else getattr(fn, "__name__", f"task{tid}")
        task = Task(tid, tname, cpu, fn, box)
        self._sched_pending().append(task)
        return task

    def run(self, scheduler: Optional[Scheduler] = None, *, timeout: float = 30.0,
            record: bool = False, check: bool = True) -> Run:
        """Run the spawned tasks to the end, one at a time, under ``scheduler`` (None:
        ``random(seed)`` of the kernel's seed).  ``timeout``: seconds without any
        scheduling point before the run is declared stalled.  ``record``: keep every
        point (``Run.events``, ``Run.timeline()``).  ``check``: raise what a task
        raised (or Deadlock/Stall) after the run; otherwise look at the returned Run."""
        if scheduler is not None and not isinstance(scheduler, Scheduler):
            raise TypeError(f"run: expected a scheduler from odebug.sched, not {type(scheduler).__name__}")
        if not isinstance(timeout, (int, float)) or not 0 < timeout <= 86400:
            raise ValueError(f"run: timeout must be 0 < seconds <= 86400, not {timeout!r}")
        start = self.report_count
        tasks = list(self._sched_pending())
        r = _core.sched_run(self, None if scheduler is None else scheduler._s,
                            int(timeout * 1000), bool(record))
        self._sched_pending().clear()
        events = None
        if r["events"] is not None:
            sites: Dict[int, Site] = {}
            events = []
            for i, (task, cpu, site, nxt, flags) in enumerate(r["events"]):
                s = sites.get(site)
                if s is None:
                    s = sites[site] = Site(*_core.sched_site_info(self, site))
                events.append(Event(i, task, cpu, s, nxt, bool(flags & _core.SCHED_EV_DECISION),
                                    bool(flags & _core.SCHED_EV_PREEMPT),
                                    bool(flags & _core.SCHED_EV_BLOCK),
                                    bool(flags & _core.SCHED_EV_END)))
        run = Run(_STATUS.get(r["status"], str(r["status"])), r["schedule"], tasks, r["points"],
                  r["decisions"], r["preemptions"], r["switches"], r["trace_hash"],
                  [tuple(p) for p in r["pairs"]],
                  None if r["diverged_at"] < 0 else r["diverged_at"], r["divergence"],
                  _core.Kernel.reports(self, start), events)
        if check:
            run.raise_errors()
        return run

    def trace_hash(self) -> int:
        """Every scheduling point since boot (what, where, which task) and every choice,
        hashed: equal in every replay of the same schedules."""
        return _core.sched_trace_hash(self)


# ---- exploration --------------------------------------------------------------------------
@dataclass
class FoundSchedule:
    """A failing schedule of a program, shrunk."""
    schedule: str                    #: the schedule text (replay it with replay())
    pairs: List[Tuple[int, int]]     #: as preemptions() takes it
    preemptions: int
    reason: str                      #: what failed
    run: Run                         #: the shrunk run
    found_at: int                    #: schedules run until the first failure
    original: Run                    #: the run as found, before shrinking
    shrink_runs: int = 0

    @property
    def reports(self) -> List["Report"]:
        return self.run.reports

    def __str__(self) -> str:
        lines = [f"failing schedule (found after {self.found_at} schedules, {self.preemptions} "
                 f"preemptions after shrinking): {self.schedule}", f"why: {self.reason}"]
        for r in self.reports:
            lines.append(r.text)
        return "\n".join(lines)


@dataclass
class Exploration:
    """What :func:`explore` did."""
    found: Optional[FoundSchedule]
    schedules_run: int
    distinct: int                    #: distinct interleavings among them
    exhausted: bool                  #: the scheduler had no schedule left (dfs)
    elapsed: float                   #: seconds, shrinking included
    scheduler: str

    def __repr__(self) -> str:
        what = "no failure" if self.found is None else f"a failure after {self.found.found_at}"
        return (f"<odebug.sched.Exploration {what}: {self.schedules_run} schedules "
                f"({self.distinct} distinct{', exhausted' if self.exhausted else ''}) in "
                f"{self.elapsed:.2f} s under {self.scheduler}>")


def _default_failure(k: "Kernel", run: Run) -> Optional[str]:
    if run.status != "done":
        return run.status
    if run.errors:
        t, e = run.errors[0]
        return f"task {t.id} raised {type(e).__name__}: {e}"
    if run.reports:
        return f"report: {run.reports[0].message}"
    return None


def explore(program: Callable[["Kernel"], Any], scheduler: Optional[Scheduler] = None,
            budget: int = 1000, *, cmdline: str = "", cpus: int = 2, ram: Any = "64M",
            seed: int = 0, failure: Optional[Callable[["Kernel", Run], Optional[str]]] = None,
            shrink: bool = True, timeout: float = 30.0) -> Exploration:
    """Search the interleavings of ``program`` for a failing one.

    ``program(k)`` is called on a fresh controlled kernel (booted with ``cmdline``,
    ``cpus``, ``ram``, ``seed``) for every schedule: it sets up what it needs and
    spawns the tasks.  Then the tasks run under ``scheduler`` (default
    ``random(seed)``) and ``failure(k, run)`` decides: a reason string, or None for
    a pass (default: a deadlock or stall, a task that raised, or any report made
    during the run).  Stops at the first failure, after ``budget`` schedules, or
    when the scheduler has none left; with ``shrink``, the failing schedule is
    shrunk (fewest preemptions) keeping the same reason.
    """
    from .kernel import Kernel
    if scheduler is None:
        scheduler = random(seed)
    if not isinstance(budget, int) or budget < 1:
        raise ValueError(f"explore: budget must be an int >= 1, not {budget!r}")
    failure = failure or _default_failure
    line = f"{cmdline} odebug.sched=controlled".strip()

    def attempt(sch: Scheduler) -> Tuple[Run, Optional[str]]:
        with Kernel(line, cpus=cpus, ram=ram, seed=seed) as k:
            program(k)
            run = k.run(sch, timeout=timeout, check=False)
            return run, failure(k, run)

    t0 = time.perf_counter()
    found = None
    n = 0
    exhausted = False
    while n < budget:
        run, why = attempt(scheduler)
        n += 1
        if why is not None:
            found = FoundSchedule(run.schedule, list(run.pairs), run.preemptions, why, run, n, run)
            break
        if not scheduler.next():
            exhausted = True
            break
    info = scheduler.info
    if found is not None and shrink:
        found = _shrink(found, attempt)
    return Exploration(found, n, info["distinct"], exhausted, time.perf_counter() - t0,
                       scheduler.description)


def _same_failure(a: str, b: Optional[str]) -> bool:
    return b is not None and (a == b or a.split(":")[0] == b.split(":")[0] and
                              a.startswith("report") == b.startswith("report") and
                              (not a.startswith("report") or a == b))


def _shrink(found: FoundSchedule, attempt: Callable[[Scheduler], Tuple[Run, Optional[str]]],
            max_runs: int = 2000) -> FoundSchedule:
    """:func:`shrink_run` on an exploration's find."""
    run, runs = shrink_run(found.run, found.reason, attempt, max_runs)
    return FoundSchedule(run.schedule, list(run.pairs), run.preemptions, found.reason, run,
                         found.found_at, found.original, runs)


def shrink_run(run: Run, reason: str,
               attempt: Callable[[Scheduler], Tuple[Optional[Run], Optional[str]]],
               max_runs: int = 2000) -> Tuple[Run, int]:
    """Shrink a failing schedule to fewer preemptions, keeping the same failure.

    1. Greedy, in preemptions() space: drop pairs (whole tails, then chunks, then
       single pairs, each time keeping the later preemptions at the same decision
       index), then lower whos and gaps.  Every accepted step re-reads the pairs of
       the run it produced (later choices shift when an earlier one changes).
    2. Iterative preemption bounding: dfs with bound 0, 1, ... below what the greedy
       pass left, within what remains of ``max_runs``: the first failure it finds
       has the fewest preemptions there are (CHESS's guarantee), then step 1 again."""
    best_run, best_pairs, why = run, list(run.pairs), reason
    runs = 0

    def try_pairs(pairs: List[Tuple[int, int]]) -> bool:
        nonlocal best_run, best_pairs, runs
        if runs >= max_runs:
            return False
        runs += 1
        run, w = attempt(preemptions(pairs))
        # (an attempt's run is None only with no failure: w is None then)
        if _same_failure(why, w) and run is not None and len(run.pairs) <= len(best_pairs):
            best_run, best_pairs = run, list(run.pairs)
            return True
        return False

    def drop(pairs: List[Tuple[int, int]], i: int, n: int) -> List[Tuple[int, int]]:
        """pairs without pairs[i:i+n], the next one kept at its decision index."""
        out = pairs[:i]
        if i + n < len(pairs):
            skipped = sum(g + 1 for g, _ in pairs[i:i + n])
            g, w = pairs[i + n]
            out.append((g + skipped, w))
            out.extend(pairs[i + n + 1:])
        return out

    def greedy() -> None:
        changed = True
        while changed and runs < max_runs:
            changed = False
            # tails first: what comes after the failure rarely matters
            while best_pairs and try_pairs(best_pairs[:-1]):
                changed = True
            size = max(1, len(best_pairs) // 2)
            while size >= 1 and runs < max_runs:
                i = 0
                while i < len(best_pairs) and runs < max_runs:
                    if try_pairs(drop(best_pairs, i, size)):
                        changed = True
                    else:
                        i += size
                size //= 2
            for i in range(len(best_pairs)):
                if i < len(best_pairs) and best_pairs[i][1] and runs < max_runs:
                    cand = list(best_pairs)
                    cand[i] = (cand[i][0], 0)
                    changed |= try_pairs(cand)

    greedy()
    for bound in range(len(best_pairs)):
        if runs >= max_runs or bound >= best_run.preemptions:
            break
        dfs_sched = dfs(bound)
        while runs < max_runs:
            runs += 1
            got, w = attempt(dfs_sched)
            if _same_failure(why, w) and got is not None:
                best_run, best_pairs = got, list(got.pairs)
                greedy()
                break
            if not dfs_sched.next():
                break
        else:
            continue
        if best_run.preemptions <= bound:
            break
    return best_run, runs
