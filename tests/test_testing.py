"""odebug.testing as a user meets it: machines that catch a planted use-after-free
and double free, the reproducer script (replayed in a fresh interpreter), the
operation-sequence strategies, and the recorder."""
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis.stateful import precondition, rule

import odebug
from odebug_lab_planted import Planted as PlantedDoubleFree   # also lab.fuzz_task's target
from odebug.testing import (DebugObjectsMachine, Op, QuarantineMachine, RecordingKernel,
                            SlabMachine, find_failure, operations, run_ops)

pytest_plugins = ["pytester"]


class PlantedUAF(QuarantineMachine):
    """A user's rule with a use-after-free in it."""

    @precondition(lambda self: len(self.live) >= 2)
    @rule()
    def buggy(self):
        p = max(self.live)
        self.kernel.kfree(p)
        del self.live[p]
        self.kernel.read(p + 4, 2)


def _run_script(script):
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_planted_uaf_caught_shrunk_and_reproduced():
    f = find_failure(PlantedUAF)
    assert f is not None
    assert [r["kind"] for r in f.unexpected] == ["slab-use-after-free"]
    assert "did not expect: kasan:slab-use-after-free" in f.error
    # shrunk: two allocations (the rule's precondition), the free, the read
    body = [line for line in f.script.splitlines() if line.startswith(("p", "k."))]
    assert body == ["p1 = k.kmalloc(8, cpu=0)", "p2 = k.kmalloc(8, cpu=0)", "k.kfree(p2)",
                    "k.read(p2 + 4, 2)"], f.script
    text = str(f)
    assert "odebug reproducer (PlantedUAF" in text and "Read of size 2 at addr" in text
    out = _run_script(f.script)
    assert out.startswith("kasan slab-use-after-free\n")
    assert "BUG: KASAN: slab-use-after-free" in out
    assert f.replay().startswith("kasan slab-use-after-free\n")


def test_planted_double_free_caught_and_reproduced():
    f = find_failure(PlantedDoubleFree)
    assert f is not None and [r["kind"] for r in f.unexpected] == ["double-free"]
    assert "p1 = k.kmalloc(100)" in f.script and f.script.count("k.kfree(p1)") == 2
    assert _run_script(f.script).startswith("kasan double-free\n")


def test_the_ready_machines_find_nothing_by_themselves():
    for m in (QuarantineMachine, SlabMachine, DebugObjectsMachine):
        assert find_failure(m, max_examples=5, steps=15) is None, m


class SlabDoubleFree(SlabMachine):
    """A double free on a cache with consistency checks (F): SLUB reports it."""

    @rule()
    def buggy(self):
        c = self.kernel.kmem_cache_create("user", 64, flags="FZPU")
        p = c.alloc()
        c.free(p)
        c.free(p)


def test_slab_machine_catches_a_double_free():
    f = find_failure(SlabDoubleFree, max_examples=20)
    assert f is not None
    kinds = [r["kind"] for r in f.unexpected]
    assert kinds and "Object already free" in kinds[0], kinds
    assert "k.kmem_cache_create('user', 64, flags='FZPU')" in f.script
    assert "Object already free" in _run_script(f.script)


def test_failure_shown_under_pytest(pytester):
    """Under pytest, the failing example shows the reproducer and the report."""
    pytester.makepyfile(test_user="""
        from hypothesis import settings
        from hypothesis.stateful import rule
        from odebug.testing import QuarantineMachine

        class Mine(QuarantineMachine):
            @rule()
            def oops(self):
                p = self.kernel.kmalloc(24)
                self.kernel.kfree(p)
                self.kernel.write(p, b"x")

        TestMine = Mine.TestCase
        TestMine.settings = settings(max_examples=20, deadline=None, database=None)
    """)
    r = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    r.assert_outcomes(failed=1)
    out = r.stdout.str()
    assert "odebug reproducer (Mine" in out
    assert "p1 = k.kmalloc(24)" in out and "k.write(p1, b'x')" in out
    assert "BUG: KASAN: slab-use-after-free" in out and "Write of size 1" in out


def test_recorder_renders_offsets_blocks_and_stray_writes():
    k = RecordingKernel("kasan=off no_debug_objects slub_debug=FZPU", cpus=2, ram="64M")
    try:
        c = k.kmem_cache_create("foo", 64)
        p = c.alloc()
        with k.on_cpu(1):
            q = k.kmalloc(40)
        k.raw(p + 64, 1)[0] = 7
        k.raw(p - 1, 1)[0] = 8
        assert c.validate() > 0
        k.kfree(q)
        lines = k.recorder.lines
        assert lines == ["k.kmem_cache_create('foo', 64)", "p1 = k.cache('foo').alloc()",
                         "with k.on_cpu(1):", "    p2 = k.kmalloc(40)",
                         "k.raw(p1 + 64, 1)[0] = 7", "k.raw(p1 - 1, 1)[0] = 8",
                         "k.cache('foo').validate()", "k.kfree(p2)"], lines
        kinds = [r.kind for r in k.reports]
    finally:
        k.close()
    out = _run_script(k.recorder.script())
    assert [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("slub ")] == kinds


def test_recorder_records_a_call_that_raises():
    k = RecordingKernel("kasan=off", ram="32M")
    try:
        with pytest.raises(ValueError):
            k.kmalloc(-1)
        p = k.kmalloc(8)
    finally:
        k.close()
    script = k.recorder.script()
    assert "try:" in script and "except Exception as e:" in script
    assert "InvalidArgument size: must be 0..9223372036854775807, not -1" in _run_script(script)
    assert script.index("k.kmalloc(-1)") < script.index("p1 = k.kmalloc(8)")


@settings(max_examples=30, deadline=None)
@given(operations(max_ops=30, debug_objects=True))
def test_legal_operation_sequences_make_no_report(ops):
    with odebug.Kernel("slub_debug=FZPU kasan_multi_shot", cpus=2, ram="64M") as k:
        run = run_ops(k, ops)
        assert run.unexpected() == [], run.script


@settings(max_examples=20, deadline=None)
@given(operations(max_ops=25, stray=True, misuse=True))
def test_misuse_sequences_replay_identically(ops):
    """Any sequence (stray writes, double frees, UAFs included) replays from its
    script with the same report kinds."""
    with odebug.Kernel("slub_debug=FZPU kasan_multi_shot", cpus=2, ram="64M") as k:
        run = run_ops(k, ops)
        kinds = [r.kind for r in run.reports]
    ns = {}
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):
        exec(run.script, ns)
    try:
        assert [r.kind for r in ns["k"].reports] == kinds
    finally:
        ns["k"].close()


def test_run_ops_misuse_ops_report():
    ops = [Op("alloc", (24, 0)), Op("free", (0, 1)), Op("use_after_free", (0, 3)),
           Op("double_free", (0,))]
    with odebug.Kernel("kasan_multi_shot", cpus=2, ram="64M") as k:
        run = run_ops(k, ops)
    assert [r.kind for r in run.reports] == ["slab-use-after-free", "double-free"]
    assert run.unexpected() == []
    assert "k.read(p1 + 3, 1)" in run.script


@pytest.mark.parametrize("env, name, max_examples, derandomize", [
    ({"HYPOTHESIS_PROFILE": "fuzz"}, "fuzz", 20_000, False),
    # (under $CI hypothesis's own defaults may derandomize: not checked)
    ({"HYPOTHESIS_PROFILE": "dev", "CI": "true"}, "dev", 25, None),
    ({"CI": "true"}, "ci", 40, True),
    ({}, "dev", 25, False),
])
def test_profiles_selected_by_environment(env, name, max_examples, derandomize):
    """HYPOTHESIS_PROFILE picks dev/ci/fuzz; without it $CI means ci, else dev
    (in a child process: loading a profile changes hypothesis's defaults)."""
    code = ("from hypothesis import settings; from odebug.testing import register_profiles; "
            "n = register_profiles(); s = settings.default; "
            "print(n, s.max_examples, s.derandomize, s.database is None)")
    e = {k: v for k, v in os.environ.items() if k not in ("HYPOTHESIS_PROFILE", "CI")}
    e.update(env)
    out = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out[:2] == [name, str(max_examples)]
    if derandomize is not None:
        assert out[2] == str(derandomize)
    if name == "ci":
        assert out[3] == "True"          # no example database in CI
