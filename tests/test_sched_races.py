"""The historical races (odebug.races) rediscovered by exploration on the designs
that had them, shrunk to their fewest preemptions, and absent from the designs
that fixed them; and the hypothesis machines of odebug.testing finding races
from drawn operations and schedules, with a reproducer that replays them.

Budgets here are CI's; ``python -m odebug bench races --fixed-schedules 100000``
is the long run on the fixed designs."""
import pytest

import odebug
from odebug import races, sched
from odebug.testing import (DebugObjectsConcurrentMachine, QuarantineConcurrentMachine,
                            SlabConcurrentMachine, find_failure)

pytestmark = pytest.mark.threads

NAMES = list(races.RACES)
SYMPTOMS = {
    "slub-validate-vs-free": "report: Left Redzone overwritten",
    "slub-nr-slabs-alloc": "validate: SLUB: foo 0 slabs counted but counter=1",
    "slub-nr-slabs-free": "validate: SLUB: foo 7 slabs counted but counter=8",
    "quarantine-put-vs-destroy": "report: Slab cache still has objects",
    "quarantine-reduce-vs-destroy": "report: Slab cache still has objects",
    "quarantine-offline": "report: Objects remaining in victim on __kmem_cache_shutdown()",
    "objects-freeing-vs-work": "report: data-race",
    "objects-static-init": "report: init active",
}


@pytest.mark.parametrize("name", NAMES)
def test_found_by_pct_and_dfs_and_shrunk(name):
    race = races.RACES[name]
    assert race.ops <= 6
    ex = race.explore(sched.pct(1, 3), budget=300)
    f = ex.found
    assert f is not None, ex
    assert f.reason == SYMPTOMS[name]
    assert f.preemptions <= 2
    # iterative preemption bounding finds it too, with no more preemptions
    d = race.explore(sched.dfs(2), budget=3000, shrink=False)
    assert d.found is not None and d.found.reason == SYMPTOMS[name]
    assert d.found.run.preemptions <= 2
    # the shrunk schedule replays it in a fresh kernel, byte for byte
    with odebug.Kernel(race.racy, sched="controlled", cpus=race.cpus, ram=race.ram) as k:
        race.program(k)
        run = k.run(sched.replay(f.schedule), check=False)
        assert run.diverged_at is None and run.trace_hash == f.run.trace_hash
        assert race.failure(k, run) == f.reason


# A sanitizer build runs each schedule 5-10x slower; the schedules themselves are
# the same on every build (test_sched.py checks the points of a slab update), so
# there the big dfs trees are left to the plain build and fewer random schedules
# run: what a sanitizer adds is the check of the threads' hand-offs, which any
# schedule exercises.
SANITIZER = bool(odebug.build_info().get("sanitizer"))
BIG_TREES = {"objects-freeing-vs-work", "quarantine-offline", "quarantine-reduce-vs-destroy"}


@pytest.mark.parametrize("name", NAMES)
def test_clean_on_the_design_that_fixed_it(name):
    race = races.RACES[name]
    budget = 40 if SANITIZER else 150
    ex = race.explore(sched.random(7), budget=budget, fixed=True, shrink=False)
    assert ex.found is None, ex.found and str(ex.found)
    assert ex.schedules_run == budget
    # objects-freeing-vs-work's tree is too big for CI on any build
    if name != "objects-freeing-vs-work" and not (SANITIZER and name in BIG_TREES):
        d = race.explore(sched.dfs(2), budget=3000, fixed=True, shrink=False)
        assert d.found is None and d.exhausted, d


# ---- hypothesis finds them from drawn operations and schedules ------------------------------------
class RelaxedSlab(SlabConcurrentMachine):
    slub_path = "relaxed"


class ModernSlab(SlabConcurrentMachine):
    slub_path = "modern"


class Quarantine410(QuarantineConcurrentMachine):
    quarantine_fixes = "v4.10"
    hotplug = False
    cache_sizes = (64, 524288)      # two frees pass a vCPU list's 1 MiB


class Quarantine510(QuarantineConcurrentMachine):
    quarantine_fixes = "v5.10"
    cache_sizes = (64, 524288)


class Objects53(DebugObjectsConcurrentMachine):
    objects_fixes = "v5.3"


class Objects64(DebugObjectsConcurrentMachine):
    objects_fixes = "v6.4"


def _ops(script):
    """Operations in a reproducer: the calls on the kernel (boot and runs aside)."""
    return sum(1 for ln in script.splitlines()
               if "k." in ln and "odebug.Kernel(" not in ln and "k.run(" not in ln
               and "k.spawn(" not in ln and "print(" not in ln and "for r in" not in ln)


def _replays(f):
    """The reproducer, run as a script, shows the failure again."""
    out = f.replay()
    return out


@pytest.mark.slow
def test_slab_machine_finds_a_race_on_the_2016_design_only():
    f = find_failure(RelaxedSlab, max_examples=400, steps=10)
    assert f is not None
    assert ("validate of c" in f.error and "errors" in f.error) or "Redzone" in f.error
    assert "sched.replay(" in f.script and "def t0():" in f.script
    assert _ops(f.script) <= 8
    # the failing step is the last; its comment says how many preemptions the
    # shrunk schedule has, and how many the one hypothesis found had
    last = [ln for ln in f.script.splitlines() if "(found with" in ln]
    assert len(last) == 1
    now = int(last[0].split("# ")[1].split()[0])
    found = int(last[0].split("found with ")[1].rstrip(")"))
    assert now <= found and now <= 3
    assert "Redzone" in _replays(f)
    assert find_failure(ModernSlab, max_examples=150, steps=10) is None


@pytest.mark.slow
def test_quarantine_machine_finds_the_destroy_races_on_v410_only():
    # (the path hypothesis takes changes with unrelated changes of odebug's Python
    # modules -- adding odebug/vmalloc.py moved it, with the same kernel behaviour
    # step for step -- so the budget is README's example's, not the least that
    # happened to do on one tree)
    f = find_failure(Quarantine410, max_examples=1600, steps=8)
    assert f is not None
    assert "Slab cache still has objects" in f.error or "Objects remaining" in f.error
    out = _replays(f)
    assert "Slab cache still has objects" in out or "Objects remaining" in out
    assert find_failure(Quarantine510, max_examples=300, steps=8) is None


@pytest.mark.slow
def test_objects_machine_finds_the_v53_data_race_not_v64():
    f = find_failure(Objects53, max_examples=200, steps=8)
    assert f is not None and "kcsan:data-race" in f.error
    assert "BUG: KCSAN: data-race in" in _replays(f)
    assert find_failure(Objects64, max_examples=60, steps=6) is None


def test_schedules_strategy_draws_schedulers():
    from hypothesis import given, settings
    from odebug.testing import schedules
    seen = []

    @settings(max_examples=30, deadline=None, database=None)
    @given(schedules(max_preemptions=2))
    def check(s):
        assert isinstance(s, sched.Scheduler)
        seen.append(s.info["kind"])
        with odebug.Kernel("kasan=off no_debug_objects", sched="controlled", cpus=2,
                           ram="64M") as k:
            c = k.kmem_cache_create("s", 64, flags="FZ")
            k.spawn(c.alloc, cpu=0)
            k.spawn(c.alloc, cpu=1)
            run = k.run(s)
            assert run.status == "done" and not run.reports

    check()
    assert set(seen) == {"preemptions", "pct"}
