"""The historical races of the three pieces, as small programs for the controlled
scheduler: each runs on the design that had it and on the one that fixed it.

    from odebug import races, sched
    r = races.RACES["slub-validate-vs-free"]
    ex = r.explore(sched.pct(seed=1, depth=3), budget=1000)          # the 2016 design
    ex.found.schedule, ex.found.preemptions, ex.found.reports[0].kind
    r.explore(sched.dfs(2), budget=10_000, fixed=True).exhausted     # v6.1+: nothing

Each program is plain operations (alloc, free, validate, destroy, reduce,
CPU offline, debug-object calls) on at most 3 vCPUs; ``ops`` counts them.  The
facts behind each (commits, symptoms) are in ``shared/spec/historical-races.md``
of the project and in the docstrings below.  ``python -m odebug bench races``
measures how many schedules pct and dfs need on the racy designs and runs
random schedules on the fixed ones.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Dict, List, Optional

from . import sched as _sched
from .debugobjects import ObjectDescr

if TYPE_CHECKING:  # pragma: no cover
    from .kernel import Kernel

__all__ = ["Race", "RACES", "hunt"]


@dataclass(frozen=True)
class Race:
    """A historical race: the program, the designs (boot command lines)."""
    name: str
    story: str                      #: what happens, and the fix
    program: Callable[..., None]    #: program(k): set up, spawn the tasks
    racy: str                       #: the command line of the design that had it
    fixed: str                      #: the command line of the design that fixed it
    ops: int                        #: operations in the program (setup and tasks)
    symptom: str                    #: what the kernel says (a report kind or a printk)
    cpus: int = 2
    ram: str = "64M"
    kcsan: bool = False

    def failure(self, k: "Kernel", run: "_sched.Run") -> Optional[str]:
        """The symptom, if this run shows it (or any other report, or a task that
        raised: the program's operations are all legal)."""
        if run.status != "done":
            return run.status
        if run.errors:
            t, e = run.errors[0]
            return f"task {t.id} raised {type(e).__name__}: {e}"
        said: List[str] = [ln.split("] ", 1)[-1] for ln in k.dmesg().splitlines()
                           if "counted but counter" in ln]
        if said:
            return "validate: " + said[0]
        if run.reports:
            return f"report: {run.reports[0].message}"
        return None

    def explore(self, scheduler: Optional["_sched.Scheduler"] = None, budget: int = 1000, *,
                fixed: bool = False, shrink: bool = True) -> "_sched.Exploration":
        """:func:`odebug.explore` of the program on the racy (or the fixed) design."""
        return _sched.explore(self.program, scheduler, budget, cmdline=self.fixed if fixed else self.racy,
                              cpus=self.cpus, ram=self.ram, failure=self.failure, shrink=shrink)


# ---- SLUB ---------------------------------------------------------------------------------------------
SLUB_RACY = "kasan=off no_debug_objects odebug.slub_path=relaxed"
SLUB_FIXED = "kasan=off no_debug_objects odebug.slub_path=modern"


def slub_validate_vs_free(k: "Kernel") -> None:
    """CPU A frees an object of a debug cache: free_debug_processing checks it
    and re-poisons its red zone as free (0xbb) under list_lock, drops the lock;
    CPU B validates: the object is not on the freelist yet, so it is checked as
    allocated (0xcc expected); then A's cmpxchg puts it on the freelist."""
    c = k.kmem_cache_create("foo", 64, flags="FZ")
    p = c.alloc()
    assert p is not None
    c.alloc()
    k.spawn(lambda: c.free(p), cpu=0, name="free")
    k.spawn(c.validate, cpu=1, name="validate")


def slub_nr_slabs_alloc(k: "Kernel") -> None:
    """A new slab is counted in nr_slabs when allocated but listed only when the
    allocation deactivates it: validate counts the lists in between."""
    c = k.kmem_cache_create("foo", 64, flags="U")
    k.spawn(c.alloc, cpu=0, name="alloc")
    k.spawn(c.validate, cpu=1, name="validate")


def slub_nr_slabs_free(k: "Kernel") -> None:
    """A free empties a slab: it leaves its list under list_lock, and nr_slabs
    drops after the lock is gone (discard_slab): validate counts in between."""
    c = k.kmem_cache_create("foo", 64, flags="U")
    per = c.info()["objects_per_slab"]
    objs = c.alloc_bulk(8 * per)      # eight full slabs
    assert objs is not None
    keep = objs[::per]                # one object left in each: 8 partial slabs >= min_partial
    c.free_bulk([p for p in objs if p not in keep])
    k.spawn(lambda: c.free(keep[0]), cpu=0, name="free")   # empties its slab: discarded
    k.spawn(c.validate, cpu=1, name="validate")


# ---- KASAN quarantine ------------------------------------------------------------------------------------
Q_RACY = "no_debug_objects odebug.quarantine_fixes=v4.10"
Q_FIXED = "no_debug_objects odebug.quarantine_fixes=v4.11"


def quarantine_put_vs_destroy(k: "Kernel") -> None:
    """A kfree on vCPU 0 takes its per-CPU quarantine list past 1 MiB and moves
    it to the global quarantine with interrupts on (2016); a destroy of another
    cache, whose freed object is in that list, runs its per-CPU pass and the
    global scan in between: the list in flight is missed."""
    c = k.kmem_cache_create("victim", (1 << 20) - 8192)
    v = c.alloc()
    assert v is not None
    o = k.kmalloc(8192)
    c.free(v)                         # vCPU 0's list: just under 1 MiB
    k.spawn(lambda: k.kfree(o), cpu=0, name="kfree")   # past 1 MiB: the list moves
    k.spawn(c.destroy, cpu=1, name="destroy")


def quarantine_reduce_vs_destroy(k: "Kernel") -> None:
    """quarantine_reduce takes the oldest batch off the global quarantine, drops
    the lock and frees it; a cache destroy completes in between (2016: no SRCU
    section to wait for): the batch's objects of that cache are missed."""
    c = k.kmem_cache_create("victim", 512 << 10)
    objs = c.alloc_bulk(3)
    assert objs is not None
    c.free_bulk(objs)                 # past 1 MiB: into the global quarantine
    k.spawn(k.kasan.quarantine.reduce, cpu=0, name="reduce")
    k.spawn(c.destroy, cpu=1, name="destroy")


Q_OFFLINE_RACY = "no_debug_objects odebug.quarantine_fixes=v4.11"
Q_OFFLINE_FIXED = "no_debug_objects odebug.quarantine_fixes=v5.10"


def quarantine_offline(k: "Kernel") -> None:
    """kfree on vCPU 1 puts the object in its quarantine list; vCPU 1 goes
    offline; a cache destroy's per-CPU pass reaches online vCPUs only (before
    v5.10, nothing drained an offline vCPU's list)."""
    c = k.kmem_cache_create("victim", 64)
    p = c.alloc(cpu=1)
    assert p is not None
    c.free(p, cpu=1)
    k.spawn(lambda: k.cpu_offline(1), cpu=0, name="offline")
    k.spawn(c.destroy, cpu=0, name="destroy")


# ---- debugobjects ---------------------------------------------------------------------------------------------
_T = ObjectDescr("timer_list")
_BASE = 0xffffffff81000000


def objects_freeing_vs_work(k: "Kernel") -> None:
    """free_object's lock-free check-then-set of obj_freeing and obj_nr_tofree
    against free_obj_work writing them (v5.3: plain accesses; KCSAN reported
    the data races, v5.6 marked them)."""
    d = k.debug_objects
    for i in range(1500):             # the pool over its size: frees go to the to-free list
        d.init(_BASE + 64 * i, _T)
    for i in range(1500):
        d.free(_BASE + 64 * i, _T)
    k.spawn(lambda: (d.init(_BASE - 64, _T), d.free(_BASE - 64, _T)),  # type: ignore[func-returns-value]
            cpu=0, name="free")
    k.spawn(lambda: k.advance(ms=200), cpu=1, name="kworker")


_STATIC = 0xffffffff82000000
_STATIC_T = ObjectDescr("work_struct", is_static_object=lambda a: a == _STATIC)


def objects_static_init(k: "Kernel") -> None:
    """T0 assert_init on a static object: the lookup misses, the bucket lock
    goes; T1 activate: misses, sees a static object, tracks it and activates
    it; T0 then initialises it: 'ODEBUG: init active' (v6.4 closed the window:
    lookup_object_or_alloc)."""
    d = k.debug_objects
    k.spawn(lambda: d.assert_init(_STATIC, _STATIC_T), cpu=0, name="assert_init")
    k.spawn(lambda: d.activate(_STATIC, _STATIC_T), cpu=1, name="activate")


RACES: Dict[str, Race] = {r.name: r for r in [
    Race("slub-validate-vs-free", "validate racing with a debug free (c7323a5ad078, v6.1)",
         slub_validate_vs_free, f"slub_debug=FZ {SLUB_RACY}", f"slub_debug=FZ {SLUB_FIXED}", 5,
         "Left Redzone overwritten"),
    Race("slub-nr-slabs-alloc", "nr_slabs counted before the new slab is listed (c7323a5ad078)",
         slub_nr_slabs_alloc, SLUB_RACY, SLUB_FIXED, 3, "N slabs counted but counter=M"),
    Race("slub-nr-slabs-free", "nr_slabs dropped after the empty slab left its list (c7323a5ad078)",
         slub_nr_slabs_free, SLUB_RACY, SLUB_FIXED, 6, "N slabs counted but counter=M"),
    Race("quarantine-put-vs-destroy", "put moves a full list with irqs on (v4.11 fix)",
         quarantine_put_vs_destroy, Q_RACY, Q_FIXED, 6,
         "Slab cache still has objects (WARN: the victim's slabs are full)"),
    Race("quarantine-reduce-vs-destroy", "reduce frees a batch outside any SRCU section (v4.11 fix)",
         quarantine_reduce_vs_destroy, Q_RACY, Q_FIXED, 5,
         "Slab cache still has objects (WARN: the victim's slabs are full)"),
    Race("quarantine-offline", "an offline vCPU's list is never drained (6c82d45c7f03, v5.10)",
         quarantine_offline, Q_OFFLINE_RACY, Q_OFFLINE_FIXED, 6,
         "Objects remaining in victim on __kmem_cache_shutdown()"),
    Race("objects-freeing-vs-work", "obj_freeing/obj_nr_tofree data races (35fd7a637c42, v5.6)",
         objects_freeing_vs_work, "kasan=off odebug.kcsan=on odebug.objects_fixes=v5.3",
         "kasan=off odebug.kcsan=on odebug.objects_fixes=v5.6", 6, "data-race (KCSAN)",
         kcsan=True),
    Race("objects-static-init", "assert_init vs activate of a static object (63a759694eed, v6.4)",
         objects_static_init, "kasan=off odebug.objects_fixes=v5.3",
         "kasan=off odebug.objects_fixes=v6.4", 2, "init active"),
]}


def hunt(race: Race, *, pct_budget: int = 2000, dfs_bound: int = 2, dfs_budget: int = 20_000,
         fixed_random: int = 1000, seed: int = 1) -> Dict[str, object]:
    """The race's figures: schedules pct(seed, depth 3) and dfs(bound) need on the
    racy design, the shrunk failure (preemptions, schedule), and ``fixed_random``
    random schedules on the fixed design (failures found, and dfs within the
    bound there: exhausted or not)."""
    out: Dict[str, object] = {"race": race.name, "ops": race.ops}
    t0 = time.perf_counter()
    ex = race.explore(_sched.pct(seed, 3), pct_budget)
    out["pct_schedules"] = ex.found.found_at if ex.found else None
    if ex.found:
        out["shrunk_preemptions"] = ex.found.preemptions
        out["shrunk_schedule"] = ex.found.schedule
        out["symptom"] = ex.found.reason
    ex = race.explore(_sched.dfs(dfs_bound), dfs_budget, shrink=False)
    out["dfs_schedules"] = ex.found.found_at if ex.found else None
    out["dfs_preemptions"] = ex.found.run.preemptions if ex.found else None
    fx = race.explore(_sched.random(seed), fixed_random, fixed=True, shrink=False)
    out["fixed_random_schedules"] = fx.schedules_run
    out["fixed_failures"] = 0 if fx.found is None else 1
    out["fixed_failure"] = None if fx.found is None else fx.found.reason
    fd = race.explore(_sched.dfs(dfs_bound), dfs_budget, fixed=True, shrink=False)
    out["fixed_dfs_exhausted"] = fd.exhausted and fd.found is None
    out["fixed_dfs_schedules"] = fd.schedules_run
    out["seconds"] = time.perf_counter() - t0
    return out


def format_hunt(rows: List[Dict[str, object]]) -> str:
    """The table of :func:`hunt` rows."""
    lines = [f"{'race':30}{'ops':>4}{'pct':>6}{'dfs':>6}{'pre':>5}  {'fixed: random':>14}"
             f"{'dfs(2)':>16}  symptom"]
    for r in rows:
        fixed = f"{r['fixed_failures']}/{r['fixed_random_schedules']}"
        dfs = (f"all {r['fixed_dfs_schedules']}" if r["fixed_dfs_exhausted"]
               else f"{r['fixed_dfs_schedules']} run")
        lines.append(f"{r['race']:30}{r['ops']:>4}{str(r['pct_schedules']):>6}{str(r['dfs_schedules']):>6}"
                     f"{str(r.get('shrunk_preemptions')):>5}  {fixed:>14}{dfs:>16}  "
                     f"{r.get('symptom', '-')}")
    return "\n".join(lines)
