"""Issue 18, "never crash, never escape the arena": unchecked numbers (range
checks naming the parameter, Ctrl-C stopping long C calls, a linear command
line), a closed kernel that is closed, and one error -> exception table."""
import gc
import os
import signal
import subprocess
import sys
import threading

import pytest

import odebug
from odebug import _core, scenarios
from odebug.scenarios import check_invariants

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def k():
    with odebug.Kernel(ram="128M", cpus=2) as k:
        yield k


# ---- 6. unchecked numbers: range checks -------------------------------------------------
def test_invalid_argument_is_a_value_error():
    assert issubclass(odebug.InvalidArgument, ValueError)
    assert issubclass(odebug.InvalidArgument, odebug.Error)


BAD_SCENARIO_CALLS = [
    ("loops", lambda k: scenarios.hackbench(k, loops=2 ** 31)),
    ("loops", lambda k: scenarios.hackbench(k, loops=0)),
    ("groups", lambda k: scenarios.hackbench(k, groups=-1)),
    ("fds", lambda k: scenarios.hackbench(k, groups=1, fds=2 ** 40)),
    ("groups * fds", lambda k: scenarios.hackbench(k, groups=100, fds=100)),
    ("msg_size", lambda k: scenarios.hackbench(k, msg_size=-5)),
    ("queue_depth", lambda k: scenarios.hackbench(k, queue_depth=2 ** 32)),
    ("runs", lambda k: scenarios.hackbench(k, runs=10 ** 9)),
    ("loops", lambda k: _core.hackbench(k, loops=2 ** 31)),
    ("groups", lambda k: _core.hackbench(k, groups=-1)),
    ("groups * fds", lambda k: _core.hackbench(k, groups=4096, fds=4096)),
    ("rounds", lambda k: k.debug_objects.churn(-1, 10, 1)),
    ("rounds", lambda k: _core.debug_objects_churn(k, -1, 10, 1)),
    ("rounds", lambda k: _core.debug_objects_churn(k, 2 ** 32 - 1, 10, 1)),
    ("wave", lambda k: scenarios.object_churn(k, wave=10 ** 7)),
    ("lifetime", lambda k: k.debug_objects.churn(1, 10, 0)),
    ("lifetime", lambda k: _core.debug_objects_churn(k, 1, 10, 100000)),
    ("phase_rounds", lambda k: k.debug_objects.churn(1, 10, 1, phase_rounds=-3)),
    ("advance_ms", lambda k: k.debug_objects.churn(1, 10, 1, advance_ms=-1.0)),
    ("ops", lambda k: scenarios.quarantine_storm(k, ops=-1)),
    ("ops", lambda k: _core.quarantine_storm(k, 2 ** 64 - 1, 1, 1, 16, 32, 0)),
    ("threads", lambda k: k.kasan.quarantine.storm(10, threads=99)),
    ("threads", lambda k: _core.quarantine_storm(k, 10, 2 ** 32 + 1, 1, 16, 32, 0)),
    ("live", lambda k: k.kasan.quarantine.storm(10, live=0)),
    ("max_size", lambda k: k.kasan.quarantine.storm(10, min_size=64, max_size=32)),
    ("max_size", lambda k: _core.quarantine_storm(k, 10, 1, 1, 64, 32, 0)),
    ("min_size", lambda k: _core.quarantine_storm(k, 10, 1, 1, -1, 32, 0)),
    ("n", lambda k: k.kmem_cache_create("b", 64)._c.bench_pairs(2 ** 64 - 1)),
    ("batch", lambda k: k.kmem_cache_create("b", 64)._c.bench_pairs(10, 0)),
    ("n", lambda k: _core.bench_malloc_pairs(64, 2 ** 40)),
    ("size", lambda k: _core.bench_malloc_pairs(-1, 10)),
    ("n", lambda k: odebug.bench.slab_pairs(n=2 ** 40)),
    ("ops", lambda k: odebug.bench_kasan.quarantine_churn("batched", ops=-1)),
    ("rounds", lambda k: odebug.bench.debugobjects_churn("lazy", rounds=-1)),
]


@pytest.mark.parametrize("name,call", BAD_SCENARIO_CALLS,
                         ids=[f"{i}-{n}" for i, (n, _) in enumerate(BAD_SCENARIO_CALLS)])
def test_scenario_parameters_are_range_checked(k, name, call):
    import odebug.bench  # noqa: F401
    import odebug.bench_kasan  # noqa: F401
    before = k.debug_objects.stats()["objs_allocated"], k.kasan.quarantine.stats()["put_calls"]
    with pytest.raises(odebug.InvalidArgument) as ei:
        call(k)
    assert str(ei.value).startswith(name + ":"), str(ei.value)
    # nothing ran: no C work before the check
    after = k.debug_objects.stats()["objs_allocated"], k.kasan.quarantine.stats()["put_calls"]
    assert before == after
    check_invariants(k)


def test_scenario_parameters_reject_non_ints(k):
    with pytest.raises(TypeError, match="loops"):
        scenarios.hackbench(k, loops=1.5)
    with pytest.raises(TypeError, match="rounds"):
        _core.debug_objects_churn(k, "3", 1, 1)


def test_hackbench_at_its_limits_still_runs(k):
    r = scenarios.hackbench(k, groups=1, fds=2, loops=3, queue_depth=1)
    assert r.messages == 1 * 2 * 2 * 3
    check_invariants(k)


# ---- 6. Ctrl-C stops long C calls --------------------------------------------------------------
def _interrupt_soon(delay=0.3):
    main = threading.main_thread().ident

    def fire():
        signal.pthread_kill(main, signal.SIGINT)
    t = threading.Timer(delay, fire)
    t.start()
    return t


LONG_CALLS = {
    "churn": lambda k: k.debug_objects.churn(1 << 24, 400, 3),
    "churn-threads": lambda k: k.debug_objects.churn(1 << 24, 400, 3, threads=True),
    "hackbench-vcpus": lambda k: scenarios.hackbench(k, groups=2, fds=4, loops=1 << 24),
    "hackbench-threads": lambda k: scenarios.hackbench(k, groups=2, fds=4, loops=1 << 24,
                                                       run_on="threads", queue_depth=4),
    "storm": lambda k: k.kasan.quarantine.storm(1 << 26, threads=2, live=512),
    "bench-pairs": lambda k: k.kmem_cache_create("bench", 64)._c.bench_pairs(1 << 40, 16),
}


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals go to the main thread")
@pytest.mark.parametrize("which", list(LONG_CALLS))
def test_ctrl_c_stops_a_long_call_and_the_kernel_still_works(k, which):
    # each call runs for hours uninterrupted: completing at all means it stopped
    t = _interrupt_soon()
    try:
        with pytest.raises(KeyboardInterrupt):
            LONG_CALLS[which](k)
    finally:
        t.cancel()
    # it freed what it made: the invariants hold, and the kernel goes on
    check_invariants(k)
    a = k.kmalloc(64)
    k.kfree(a)
    r = scenarios.hackbench(k, groups=1, fds=2, loops=5)
    assert r.messages == 20
    assert k.debug_objects.churn(3, 10, 1)["cycles"] > 0
    check_invariants(k)


def test_a_pending_exception_from_another_handler_propagates(k):
    class Stop(Exception):
        pass

    def handler(signum, frame):
        raise Stop()
    old = signal.signal(signal.SIGINT, handler)
    try:
        t = _interrupt_soon()
        with pytest.raises(Stop):
            k.debug_objects.churn(1 << 24, 400, 3)
        t.cancel()
    finally:
        signal.signal(signal.SIGINT, old)
    check_invariants(k)


def test_ctrl_c_stops_reproduce_cleanly(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.Popen([sys.executable, "-m", "odebug", "reproduce", "all"], cwd=str(tmp_path),
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait until it has started working (its progress goes to stderr), then Ctrl-C
    first = p.stderr.readline()
    assert first, "reproduce printed nothing"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, (p.returncode, err[-2000:])
    assert "odebug: interrupted" in err
    assert "Traceback" not in err
    assert "Fatal Python error" not in err


# ---- 6. the command line is parsed in linear work ----------------------------------------------
def test_two_hundred_thousand_boot_parameters():
    # quadratic before (over a minute); linear now -- the C unit test
    # (csrc/tests/test_robust.c) bounds the work: <= 4 hash probes a parameter
    n = 200_000
    with odebug.Kernel(" ".join(f"foo{i}=1" for i in range(n)), ram="16M") as k:
        assert k.cmdline.endswith(f"foo{n - 1}=1")
        assert "selftest passed" in k.dmesg()    # booted on (the huge lines left the log ring)
        assert k.kmalloc(8)


# ---- 8. a closed kernel is closed ----------------------------------------------------------------
def _closed_kernel():
    k = odebug.Kernel(ram="64M")
    c = k.kmem_cache_create("robust", 64)
    a = k.kmalloc(32)
    k.printk("before close")
    k.close()
    return k, c, a


REFUSED_AFTER_CLOSE = {
    "kmalloc": lambda k, c, a: k.kmalloc(8),
    "kfree": lambda k, c, a: k.kfree(a),
    "ksize": lambda k, c, a: k.ksize(a),
    "raw": lambda k, c, a: k.raw(a, 8),
    "read": lambda k, c, a: k.read(a, 8),
    "write": lambda k, c, a: k.write(a, b"x"),
    "slabinfo_text": lambda k, c, a: k.slabinfo_text(),
    "caches": lambda k, c, a: k.caches(),
    "cache": lambda k, c, a: k.cache("robust"),
    "kmem_cache_create": lambda k, c, a: k.kmem_cache_create("other", 32),
    "cache.alloc": lambda k, c, a: c.alloc(),
    "cache.stats": lambda k, c, a: c.stats(),
    "cache.info": lambda k, c, a: c.info(),
    "cache.validate": lambda k, c, a: c.validate(),
    "alloc_pages": lambda k, c, a: k.alloc_pages(),
    "advance": lambda k, c, a: k.advance(ms=1),
    "jiffies": lambda k, c, a: k.jiffies,
    "nr_free_pages": lambda k, c, a: k.nr_free_pages,
    "param": lambda k, c, a: k.param("hz"),
    "printk": lambda k, c, a: k.printk("x"),
    "fault": lambda k, c, a: k.fault("failslab"),
    "debug_objects.stats": lambda k, c, a: k.debug_objects.stats(),
    "debug_objects.churn": lambda k, c, a: k.debug_objects.churn(1, 1, 1),
    "kasan.enabled": lambda k, c, a: k.kasan.enabled,
    "kasan.quarantine.stats": lambda k, c, a: k.kasan.quarantine.stats(),
    "hackbench": lambda k, c, a: scenarios.hackbench(k, groups=1, fds=1, loops=1),
    "slab_object": lambda k, c, a: _core.slab_object(k, a),
    "slab_errors": lambda k, c, a: _core.slab_errors(k),
    "cache_find": lambda k, c, a: _core.cache_find(k, "robust"),
}


@pytest.mark.parametrize("what", list(REFUSED_AFTER_CLOSE))
def test_after_close_memory_and_state_raise_closed_error(what):
    k, c, a = _closed_kernel()
    with pytest.raises(odebug.ClosedError):
        REFUSED_AFTER_CLOSE[what](k, c, a)


def test_after_close_the_log_and_reports_stay_readable():
    k, c, a = _closed_kernel()
    assert k.closed
    assert "before close" in k.dmesg()
    assert k.reports == []
    assert k.report_count == 0
    assert isinstance(k.cmdline, str)
    k.close()          # idempotent
    repr(k)


def test_a_raw_view_held_across_close_stays_valid():
    k = odebug.Kernel(ram="64M")
    a = k.kmalloc(64)
    v = k.raw(a, 64)
    v[0:4] = b"abcd"
    k.close()
    # the arena is unmapped only when the Kernel object goes; the view holds it
    v[4:8] = b"efgh"
    assert bytes(v[0:8]) == b"abcdefgh"
    del k
    gc.collect()
    v[8] = 1
    assert v[8] == 1 and bytes(v[:4]) == b"abcd"
    v.release()
    gc.collect()


# ---- 9. one error -> exception table -----------------------------------------------------------
BAD_CALLS = [
    ("kmalloc 2**64", lambda k: k.kmalloc(2 ** 64), odebug.InvalidArgument),
    ("kmalloc -1", lambda k: k.kmalloc(-1), odebug.InvalidArgument),
    ("_core.kmalloc 2**64", lambda k: _core.kmalloc(k, 2 ** 64, 0), odebug.InvalidArgument),
    ("_core.kmalloc gfp", lambda k: _core.kmalloc(k, 8, 2 ** 40), odebug.InvalidArgument),
    ("kmalloc gfp", lambda k: k.kmalloc(8, 2 ** 40), odebug.InvalidArgument),
    ("kmalloc str", lambda k: k.kmalloc("8"), TypeError),
    ("cache size 0", lambda k: k.kmem_cache_create("x", size=0), odebug.InvalidArgument),
    ("cache size 1e9", lambda k: k.kmem_cache_create("x", size=10 ** 9), odebug.InvalidArgument),
    ("cache size 2**64", lambda k: k.kmem_cache_create("x", size=2 ** 64), odebug.InvalidArgument),
    ("krealloc size", lambda k: _core.krealloc(k, 0, 2 ** 64, 0), odebug.InvalidArgument),
    ("kfree 2**64", lambda k: k.kfree(2 ** 64), odebug.InvalidArgument),
    ("_core.kfree -1", lambda k: _core.kfree(k, -1), odebug.InvalidArgument),
    ("ksize -1", lambda k: k.ksize(-1), odebug.InvalidArgument),
    ("raw 2**64", lambda k: k.raw(2 ** 64, 1), odebug.InvalidArgument),
    ("raw n 2**63", lambda k: k.raw(k.arena_start, 2 ** 63), odebug.InvalidArgument),
    ("raw n -1", lambda k: k.raw(k.arena_start, -1), odebug.InvalidArgument),
    ("raw outside", lambda k: k.raw(0, 8), odebug.InvalidArgument),
    ("advance 2**64 ns", lambda k: k.advance(ns=2 ** 64), odebug.InvalidArgument),
    ("advance backwards", lambda k: k.advance(ns=-1), odebug.InvalidArgument),
    ("bind_cpu 2**40", lambda k: k.bind_cpu(2 ** 40), odebug.InvalidArgument),
    ("bind_cpu 99", lambda k: k.bind_cpu(99), odebug.InvalidArgument),
    ("alloc_pages order", lambda k: k.alloc_pages(2 ** 40), odebug.InvalidArgument),
    ("_core alloc_pages order", lambda k: _core.Kernel.alloc_pages(k, 2 ** 40), odebug.InvalidArgument),
    ("free_pages 2**64", lambda k: k.free_pages(2 ** 64), odebug.InvalidArgument),
    ("stack 2**70", lambda k: k.stack(2 ** 70), odebug.InvalidArgument),
    ("stack missing", lambda k: k.stack(123456), odebug.NotFound),
    ("fault_set probability", lambda k: k.set_fault("failslab", probability=2 ** 64),
     odebug.InvalidArgument),
    ("unknown cache", lambda k: k.cache("nope"), odebug.NotFound),
    ("Kernel cpus", lambda k: odebug.Kernel(cpus=2 ** 40), odebug.InvalidArgument),
    ("Kernel ram", lambda k: odebug.Kernel(ram=2 ** 64), odebug.InvalidArgument),
    ("Kernel ram -1", lambda k: odebug.Kernel(ram=-1), odebug.InvalidArgument),
    ("Kernel bad cmdline", lambda k: odebug.Kernel("hz=fast"), odebug.InvalidArgument),
    ("Kernel clock", lambda k: odebug.Kernel(clock="wall"), odebug.InvalidArgument),
    ("work delay", lambda k: k.work(lambda: None).schedule(2 ** 64), odebug.InvalidArgument),
    ("kasan.read", lambda k: k.read(2 ** 64, 1), odebug.InvalidArgument),
]


@pytest.mark.parametrize("what,call,exc", BAD_CALLS, ids=[w for w, _, _ in BAD_CALLS])
def test_bad_calls_raise_the_documented_exception(k, what, call, exc):
    with pytest.raises(exc) as ei:
        call(k)
    assert type(ei.value) is not OverflowError
    if exc is odebug.InvalidArgument:
        assert isinstance(ei.value, ValueError)


def test_destroyed_cache_raises_state_error(k):
    c = k.kmem_cache_create("gone", 64)
    c.destroy()
    for op in (c.alloc, c.stats, c.info, lambda: c.kmalloc(8)):
        with pytest.raises(odebug.StateError, match="destroyed"):
            op()


def test_invalid_argument_names_the_argument(k):
    with pytest.raises(odebug.InvalidArgument, match="^size:"):
        _core.kmalloc(k, 2 ** 64, 0)
    with pytest.raises(odebug.InvalidArgument, match="^addr:"):
        _core.ksize(k, 2 ** 64)
    with pytest.raises(odebug.InvalidArgument, match="^gfp:"):
        _core.kmalloc(k, 8, -1)
    with pytest.raises(odebug.InvalidArgument, match="^order:"):
        _core.Kernel.alloc_pages(k, 2 ** 33)


# ---- issue 16: the vector-call entries check what PyArg_ParseTuple checked ----------------
class _OtherKernel(odebug.Kernel):
    """A second subclass: the binding's remembered Kernel type must not be the only one."""


class _NotAKernel:
    pass


def test_fastcall_entries_check_arity_types_and_ranges(k):
    for fn, args in ((_core.kmalloc, (k, 64)), (_core.kmalloc, (k, 64, 0, 0)),
                     (_core.kfree, (k,)), (_core.kfree_rcu, ()), (_core.kfree_sensitive, (k, 1, 2))):
        with pytest.raises(TypeError, match="takes exactly"):
            fn(*args)
    with pytest.raises(TypeError, match="expected int, not float"):
        _core.kmalloc(k, 64.0, _core.GFP_KERNEL)
    with pytest.raises(TypeError, match="expected int, not bool"):
        _core.kfree(k, True)
    for bad in (-1, 2 ** 64, -(2 ** 70)):
        with pytest.raises(odebug.InvalidArgument, match="addr"):
            _core.kfree(k, bad)
    with pytest.raises(odebug.InvalidArgument, match="gfp"):
        _core.kmalloc(k, 64, 2 ** 32)
    # an int subclass converts as before (the slow path)
    class Big(int):
        pass
    p = _core.kmalloc(k, Big(64), Big(_core.GFP_KERNEL))
    _core.kfree(k, Big(p))
    # the kernel check: after a Kernel was accepted, a non-Kernel still fails and
    # another subclass still passes
    _core.kfree(k, 0)
    with pytest.raises(TypeError, match="expected an odebug.Kernel"):
        _core.kfree(_NotAKernel(), 0)
    with _OtherKernel(ram="64M") as k2:
        q = _core.kmalloc(k2, 32, _core.GFP_KERNEL)
        _core.kfree(k2, q)
    with pytest.raises(TypeError, match="expected an odebug.Kernel"):
        _core.kmalloc(object(), 8, _core.GFP_KERNEL)
    # a closed kernel is refused whatever its type was
    k3 = odebug.Kernel(ram="64M")
    k3.close()
    with pytest.raises(odebug.ClosedError):
        _core.kfree(k3, 0)
