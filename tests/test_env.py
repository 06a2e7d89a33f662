"""The kernel environment: command line, constructor, vCPUs and tasks, the
virtual and real clocks with delayed work, the page allocator, fault
injection, printk and reports, the stack depot, lifetime, determinism and the
plain C library.

Expected values come from the kernel's behaviour (see the facts in the brief:
lib/fault-inject.c, init/main.c, lib/cmdline.c, kernel/workqueue.c,
mm/page_alloc.c, kernel/panic.c), not from what the code happens to print.
"""
from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import pytest

import odebug
from odebug import _core

GFP_KERNEL = _core.GFP_KERNEL
GFP_ATOMIC = _core.GFP_ATOMIC
NOWARN = _core.__GFP_NOWARN
PAGE = _core.PAGE_SIZE
MAX_ORDER = _core.MAX_PAGE_ORDER
THIS_FILE = os.path.basename(__file__)

UNKNOWN = 'Unknown kernel command line parameters "{}", will be passed to user space.'


def K(cmdline: str = "", **kw) -> odebug.Kernel:
    """A small kernel (8M) unless the test asks for more."""
    kw.setdefault("ram", "8M")
    return odebug.Kernel(cmdline, **kw)


def msgs(k) -> list:
    """dmesg lines without the "[    0.000000] " prefix (checked on the way)."""
    out = []
    for line in k.dmesg().splitlines():
        m = re.match(r"^\[ *\d+\.\d{6}\] ", line)
        assert m, f"dmesg line without a timestamp prefix: {line!r}"
        out.append(line[m.end():])
    return out


def unknown_lines(k) -> list:
    return [m for m in msgs(k) if m.startswith("Unknown kernel command line parameters")]


def nr_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def eventually(cond, timeout=5.0) -> bool:
    """cond() becomes true within timeout (a joined thread can linger in
    /proc/self/task for a moment after pthread_join returns)."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.002)
    return True


def settled_threads() -> int:
    """The thread count once threads that already ended are gone."""
    eventually(lambda: nr_threads() <= threading.active_count(), timeout=1.0)
    return nr_threads()


# =============================================================================
# 1. command line
# =============================================================================
INITIAL_JIFFIES = {1000: 4294667296, 300: 4294877296, 250: 4294892296, 100: 4294937296}


@pytest.mark.parametrize("hz", sorted(INITIAL_JIFFIES))
def test_cmdline_hz_sets_hz_and_initial_jiffies(hz):
    k = K(f"hz={hz}")
    assert k.HZ == hz
    assert k.param("hz") == str(hz)
    assert k.INITIAL_JIFFIES == INITIAL_JIFFIES[hz]
    assert k.jiffies == INITIAL_JIFFIES[hz]
    k.advance(ms=1000)
    assert k.jiffies - k.INITIAL_JIFFIES == hz


def test_default_hz_is_1000():
    k = K()
    assert k.HZ == 1000 and k.INITIAL_JIFFIES == 0xFFFB6C20 == k.jiffies


@pytest.mark.parametrize("cmdline, value", [
    ("", "0"),
    ("panic_on_warn=1", "1"),
    ("panic_on_warn", "1"),              # a bare bool key means true
    ("panic_on_warn=0", "0"),
    ("panic_on_warn=1 panic_on_warn=0", "0"),   # the last one wins
    ("panic-on-warn=1", "1"),            # '-' and '_' are the same (parameq)
    ("panic_on_warn=y", "1"),
    ("panic_on_warn=off", "0"),
])
def test_cmdline_panic_on_warn(cmdline, value):
    k = K(cmdline)
    assert k.param("panic_on_warn") == value
    assert k.param("panic-on-warn") == value
    assert unknown_lines(k) == []


@pytest.mark.parametrize("cmdline", ["", "hz=250", 'a "b c" d=1 -- e', "   leading  spaces"])
def test_first_dmesg_line_is_the_command_line(cmdline):
    k = K(cmdline)
    first = k.dmesg().splitlines()[0]
    assert first == "[    0.000000] Kernel command line: " + cmdline
    assert k.cmdline == cmdline


@pytest.mark.parametrize("cmdline, name, value", [
    ('failslab="1,100,0,-1"', "failslab", "1,100,0,-1"),
    ('"failslab=1,100,0,-1"', "failslab", "1,100,0,-1"),
    ('fail_page_alloc="3,20,4,5"', "fail_page_alloc", "3,20,4,5"),
    ('fail_page_alloc=" 2, 30, 4, 5"', "fail_page_alloc", "2,30,4,5"),  # vsscanf skips spaces
    ("fail_page_alloc=1,100,-7,-1xyz", "fail_page_alloc", "1,100,-7,-1"),  # trailing ignored
    ("fail-page-alloc=10,1,0,-1", "fail_page_alloc", "10,1,0,-1"),
])
def test_cmdline_quoted_and_fault_values(cmdline, name, value):
    k = K(cmdline)
    assert k.param(name) == value
    interval, prob, space, times = map(int, value.split(","))
    f = k.fault(name)
    assert (f["interval"], f["probability"], f["space"], f["times"]) == (interval, prob, space, times)
    assert unknown_lines(k) == []


def test_fault_attr_defaults():
    # FAULT_ATTR_INITIALIZER: interval 1, times 1, verbose 2, probability 0, space 0
    k = K()
    for name in ("failslab", "fail_page_alloc"):
        f = k.fault(name)
        assert (f["probability"], f["interval"], f["times"], f["space"], f["verbose"]) == (0, 1, 1, 0, 2)
        assert f["calls"] == f["failures"] == 0
        assert k.param(name) == "1,0,0,1"


@pytest.mark.parametrize("cmdline, listed", [
    ("foo", "foo"),
    ("foo=1", "foo=1"),
    ("B=1 a", "a B=1"),                              # bare args first, whatever the order
    ("x=1 y z=2 w", "y w x=1 z=2"),
    ('foo="a b" "c d"', "c d foo=a b"),             # quotes removed, spaces kept
    ('k="v"', "k=v"),
    ("HOME=/x TERM=vt100 e=1", "e=1"),              # HOME/TERM replace default slots
    ("a -- b c=d", "a"),                            # after -- : init's, not listed
    ("foo.bar=1 baz", "baz"),                       # dotted: unused module parameter
    ("hz=250 a panic_on_warn=1 b=2", "a b=2"),      # known parameters are consumed
    ("=foo", "=foo"),                               # '=' at index 0 is "no value"
    ("foo=", "foo="),
    ("FOO=1 a FOO=2 BAR=3", "a FOO=2 BAR=3"),       # same env name: replaced in place
    ("a a", "a a"),                                 # args are always appended
])
def test_cmdline_unknown_parameters_line(cmdline, listed):
    k = K(cmdline)
    assert unknown_lines(k) == [UNKNOWN.format(listed)]
    # it comes right after the "Kernel command line" line
    assert msgs(k)[1] == UNKNOWN.format(listed)


@pytest.mark.parametrize("cmdline", [
    "foo.bar=1", "usbcore.autosuspend=-1 mod.flag", "HOME=/root", "TERM=dumb",
    "-- x y=1", "", "hz=100",
])
def test_cmdline_nothing_unknown_no_line(cmdline):
    k = K(cmdline)
    assert unknown_lines(k) == []
    # not a line more than an empty command line gives (dropped silently)
    assert msgs(k)[1:] == msgs(K(""))[1:]


def test_cmdline_double_dash_stops_parsing():
    k = K("a -- panic_on_warn=1 hz=250 b")
    assert k.param("panic_on_warn") == "0"
    assert k.HZ == 1000
    assert unknown_lines(k) == [UNKNOWN.format("a")]


@pytest.mark.parametrize("cmdline, name", [
    ("hz=abc", "hz"),
    ("hz=0", "hz"),
    ("hz=-5", "hz"),
    ("hz", "hz"),
    ("failslab=1,2", "failslab"),
    ("failslab=garbage", "failslab"),
    ("failslab=0x10,1,2,3", "failslab"),          # base 10: stops at 'x'
    ("fail_page_alloc=1,-2,0,0", "fail_page_alloc"),  # %lu takes no '-'
    ("fail_page_alloc=1,2,3", "fail_page_alloc"),
    ("panic_on_warn=maybe", "panic_on_warn"),
    ("panic-on-warn=maybe", "panic_on_warn"),
    ("a b=1 hz=fast c", "hz"),
    ("log_buf_len=12Q", "log_buf_len"),
    ("log_buf_len=", "log_buf_len"),
    ("log_buf_len=-1", "log_buf_len"),
    ("log_buf_len", "log_buf_len"),
])
def test_cmdline_malformed_value_raises_naming_parameter(cmdline, name):
    with pytest.raises(ValueError) as ei:
        K(cmdline)
    assert isinstance(ei.value, odebug.InvalidArgument)
    assert name in str(ei.value)


@pytest.mark.parametrize("cmdline", ["odebug.xyz=1", "odebug.xyz", "a odebug.typo_here=3"])
def test_cmdline_unknown_odebug_parameter_raises(cmdline):
    with pytest.raises(ValueError, match=r"odebug\.(xyz|typo_here)"):
        K(cmdline)


@pytest.mark.parametrize("value, size, lines", [
    ("16M", 16 << 20, ["log_buf_len: 16777216 bytes"]),
    ("3000000", 4 << 20, ["log_buf_len: 4194304 bytes"]),          # a power of two, rounded up
    ("2k", 1 << 20, []),                                            # not above the default: ignored
    ("1048576", 1 << 20, []),
    ("3G", 2 << 30, ["log_buf over 2G is not supported.", "log_buf_len: 2147483648 bytes"]),
])
def test_log_buf_len(value, size, lines):
    """log_buf_len=n[KMG] sizes the printk ring as the kernel's does."""
    k = K(f"log_buf_len={value}")
    assert int(k.param("log_buf_len")) == size
    assert [m for m in msgs(k) if "log_buf" in m and "command line" not in m] == lines


def test_log_buf_len_keeps_more_lines():
    """A bigger ring keeps the lines a default one drops, oldest first."""
    def fill(k):
        for i in range(40000):
            k.printk(f"line {i:05d} " + "x" * 40)
        return k.dmesg()
    small, big = fill(K()), fill(K("log_buf_len=8M"))
    assert "line 00000 " not in small and "line 39999 " in small
    assert "line 00000 " in big and "line 39999 " in big
    assert len(big) > len(small) and len(small.encode()) <= 1 << 20


def test_param_unknown_name():
    k = K()
    with pytest.raises(odebug.NotFound):
        k.param("no_such_param")
    with pytest.raises(LookupError):
        k.param("foo.bar")


# =============================================================================
# 2. constructor
# =============================================================================
@pytest.mark.parametrize("ram, nbytes", [
    (8 << 20, 8 << 20),
    (64 << 20, 64 << 20),
    ("64M", 64 << 20),
    ("1G", 1 << 30),
    ("16384K", 16 << 20),
    ("32m", 32 << 20),
    (" 16M ", 16 << 20),
    ("16MiB", 16 << 20),
    (str(12 << 20), 12 << 20),
])
def test_ram_sizes(ram, nbytes):
    k = odebug.Kernel(ram=ram)
    assert k.totalram_pages == nbytes // PAGE
    # the rooms may take a few pages at boot (slab caches ...), not more
    assert k.totalram_pages // 2 < k.nr_free_pages <= k.totalram_pages
    assert k.arena_end - k.arena_start == nbytes
    # seed 0: the nokaslr base, unless another live kernel holds it (then 1 GiB steps up)
    assert k.arena_start == k.page_offset and k.page_offset % (1 << 30) == 0
    assert k.page_offset >= _core._build_info()["page_offset"]
    k.close()


@pytest.mark.parametrize("ram", ["lots", "64X", "", "-1M", "1.5G", "0", "2M", "32T", -1, 0, 1 << 20])
def test_ram_bad_values(ram):
    with pytest.raises(ValueError):
        odebug.Kernel(ram=ram)


@pytest.mark.parametrize("kw", [
    dict(cmdline=5), dict(cmdline=None), dict(cpus="2"), dict(cpus=2.0), dict(cpus=True),
    dict(ram=1.5), dict(ram=None), dict(ram=b"64M"), dict(ram=True),
    dict(seed="1"), dict(seed=1.5), dict(hz=250.0), dict(hz="250"),
    dict(nr_cpus="4"), dict(nr_cpus=4.0), dict(clock=5), dict(clock=None),
])
def test_constructor_wrong_types(kw):
    with pytest.raises(TypeError):
        odebug.Kernel(**kw)


@pytest.mark.parametrize("kw", [
    dict(cpus=0), dict(cpus=-1), dict(cpus=257), dict(clock="bogus"), dict(clock="REAL"),
    dict(seed=-1), dict(hz=0), dict(hz=100001), dict(cpus=4, nr_cpus=2),
])
def test_constructor_bad_values(kw):
    with pytest.raises(ValueError):
        odebug.Kernel(ram="8M", **kw)


@pytest.mark.parametrize("kw", [
    dict(ram=(1 << 64) + (64 << 20)),      # must not wrap around to 64M
    dict(nr_cpus=(1 << 32) + 2),           # must not wrap around to 2
    dict(ram=1 << 70),
])
def test_constructor_out_of_range_ints_are_refused(kw):
    with pytest.raises((ValueError, OverflowError)):
        odebug.Kernel(**kw)


def test_constructor_cpus_and_nr_cpus():
    k = K(cpus=4)
    assert k.nr_cpus == 4 and k.config_nr_cpus == 256
    k = K(cpus=3, nr_cpus=8)
    assert k.nr_cpus == 3 and k.config_nr_cpus == 8
    assert K(hz=300).HZ == 300
    assert K(clock="real").clock == "real"
    assert K().clock == "virtual"


# =============================================================================
# 3. vCPUs and tasks
# =============================================================================
def test_on_cpu_binds_and_restores():
    k = K(cpus=4)
    assert k.cpu == 0
    with k.on_cpu(2) as c:
        assert c == 2 and k.cpu == 2
    assert k.cpu == 0
    with k.on_cpu(1):
        assert k.cpu == 1
        with k.on_cpu(3):
            assert k.cpu == 3
            with k.on_cpu(0):
                assert k.cpu == 0
            assert k.cpu == 3
        assert k.cpu == 1
    assert k.cpu == 0


def test_on_cpu_restores_on_exception():
    k = K(cpus=2)
    with pytest.raises(KeyError):
        with k.on_cpu(1):
            raise KeyError("x")
    assert k.cpu == 0


def test_bind_cpu_returns_old_binding():
    k = K(cpus=3)
    assert k.bind_cpu(2) == -1      # unbound before
    assert k.cpu == 2
    assert k.bind_cpu(1) == 2
    assert k.bind_cpu(-1) == 1      # -1 unbinds: CPU 0
    assert k.cpu == 0


@pytest.mark.parametrize("cpu", [2, 3, -2, 1000, -1000])
def test_on_cpu_bad_cpu(cpu):
    k = K(cpus=2)
    with k.on_cpu(1):
        with pytest.raises(ValueError):
            with k.on_cpu(cpu):
                pass  # pragma: no cover
        assert k.cpu == 1       # the binding did not change
    assert k.cpu == 0


def test_on_cpu_wrong_type():
    k = K()
    with pytest.raises(TypeError):
        with k.on_cpu("1"):
            pass  # pragma: no cover


@pytest.mark.threads
def test_threads_bound_to_different_vcpus_concurrently():
    n = 4
    k = K(cpus=n)
    barrier = threading.Barrier(n + 2)
    seen = {}
    errors = []

    def bound(i):
        try:
            with k.on_cpu(i):
                barrier.wait(timeout=10)          # all bound at the same time
                a = k.cpu
                barrier.wait(timeout=10)          # ... and still their own after the others read
                b = k.cpu
                seen[i] = (a, b, k.pid)
            seen[("after", i)] = k.cpu
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
            barrier.abort()

    def unbound():
        try:
            barrier.wait(timeout=10)
            a = k.cpu
            barrier.wait(timeout=10)
            seen["unbound"] = (a, k.cpu, k.pid)
        except Exception as e:  # pragma: no cover
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=bound, args=(i,)) for i in range(n)]
    threads.append(threading.Thread(target=unbound))
    for t in threads:
        t.start()
    with k.on_cpu(n - 1):
        pass                                      # the main thread's binding is its own
    barrier.wait(timeout=10)
    barrier.wait(timeout=10)
    for t in threads:
        t.join(10)
    assert not errors, errors
    for i in range(n):
        assert seen[i][:2] == (i, i)
        assert seen[("after", i)] == 0
    assert seen["unbound"][:2] == (0, 0)
    pids = [seen[i][2] for i in range(n)] + [seen["unbound"][2], k.pid]
    assert len(set(pids)) == len(pids), pids
    assert all(p > 0 for p in pids)
    assert k.cpu == 0


@pytest.mark.threads
def test_pid_is_per_thread_and_stable():
    k = K()
    main = k.pid
    assert k.pid == main
    got = []
    t = threading.Thread(target=lambda: got.extend([k.pid, k.pid, k.cpu]))
    t.start()
    t.join()
    assert got[0] == got[1] != main
    assert got[2] == 0
    # a pid is per kernel: another kernel numbers its own tasks
    k2 = K()
    assert k2.pid >= 1


# =============================================================================
# 4. delayed work on the virtual clock
# =============================================================================
def recorder(k, log, tag=None):
    def fn():
        log.append((tag, k.jiffies, k.cpu))
    return fn


@pytest.mark.parametrize("delay", [1, 2, 10, 250])
def test_delayed_work_runs_when_due_never_before(delay):
    k = K()
    log = []
    w = k.work(recorder(k, log))
    start = k.jiffies
    assert w.schedule(delay=delay) is True
    assert w.pending and w.due == start + delay
    k.advance(ms=delay - 1)
    assert log == [] and w.pending
    k.advance(us=999)
    assert log == []
    k.advance(us=1)
    assert log == [(None, start + delay, 0)]
    assert not w.pending and w.due is None
    k.advance(ms=1000)
    assert len(log) == 1


@pytest.mark.parametrize("hz", [100, 250, 300, 1000])
@pytest.mark.parametrize("offset_us", [0, 1000, 1500, 3333])
def test_delayed_work_due_is_jiffies_plus_delay(hz, offset_us):
    # queue_delayed_work: the timer expires at jiffies + delay; the callback
    # runs at the first tick where jiffies reaches it, whatever the phase of
    # the clock within the current jiffy when it was queued.
    k = K(hz=hz)
    k.advance(us=offset_us)
    for delay in (1, 2, 7):
        log = []
        w = k.work(recorder(k, log))
        j0 = k.jiffies
        assert w.schedule(delay=delay)
        assert w.due == j0 + delay
        # the first instant where jiffies == j0 + delay
        rel = j0 + delay - k.INITIAL_JIFFIES
        due_ns = -(-rel * 1_000_000_000 // hz)
        k.advance(ns=due_ns - k.now_ns - 1)
        assert log == [], (hz, offset_us, delay)
        k.advance(ns=1)
        assert log == [(None, j0 + delay, 0)], (hz, offset_us, delay)


def test_delayed_work_order_due_then_queue_order():
    k = K()
    log = []
    works = {t: k.work(recorder(k, log, t)) for t in "abcdef"}
    works["a"].schedule(delay=30)
    works["b"].schedule(delay=10)
    works["c"].schedule(delay=10)     # same due as b: after b
    works["d"].schedule()             # delay 0
    works["e"].schedule(delay=20)
    k.advance(ms=5)
    works["f"].schedule(delay=5)      # due 10 too, queued last
    k.advance(ms=100)
    base = k.INITIAL_JIFFIES
    assert log == [("d", base, 0), ("b", base + 10, 0), ("c", base + 10, 0), ("f", base + 10, 0),
                   ("e", base + 20, 0), ("a", base + 30, 0)]
    assert k.jiffies == base + 105


def test_schedule_pending_returns_false_and_keeps_due():
    k = K()
    log = []
    w = k.work(recorder(k, log))
    assert w.schedule(delay=50)
    due = w.due
    k.advance(ms=10)
    assert w.schedule(delay=5) is False
    assert w.schedule() is False
    assert w.due == due
    k.advance(ms=39)
    assert log == []
    k.advance(ms=1)
    assert [j for _, j, _ in log] == [due]
    assert w.schedule(delay=5) is True      # idle again: queued


def test_cancel():
    k = K()
    log = []
    w = k.work(recorder(k, log))
    assert w.cancel() is False
    w.schedule(delay=10)
    assert w.cancel() is True
    assert not w.pending
    assert w.cancel() is False
    k.advance(ms=100)
    assert log == []


def test_flush_runs_pending_item_now():
    k = K()
    log = []
    w = k.work(recorder(k, log))
    assert w.flush() is False               # idle
    w.schedule(delay=1000)
    j = k.jiffies
    assert w.flush() is True
    assert log == [(None, j, 0)]
    assert not w.pending and k.jiffies == j
    assert w.flush() is False
    k.advance(ms=2000)
    assert len(log) == 1


def test_periodic_work_reschedules_itself():
    k = K(hz=250)
    runs = []

    def tick():
        runs.append(k.jiffies - k.INITIAL_JIFFIES)
        w.schedule(delay=5)                 # every 5 jiffies = 20 ms

    w = k.work(tick)
    w.schedule(delay=5)
    k.advance(ms=1000)                      # 250 jiffies
    assert runs == list(range(5, 251, 5))
    assert w.pending
    k.advance(ms=10_000)
    assert len(runs) == 50 + 500
    assert w.cancel() is True
    k.advance(ms=1000)
    assert len(runs) == 550


def test_work_runs_on_the_vcpu_that_queued_it():
    k = K(cpus=3)
    log = []
    w0 = k.work(recorder(k, log, "w0"))
    w2 = k.work(recorder(k, log, "w2"))
    w1 = k.work(recorder(k, log, "w1"))
    w0.schedule(delay=1)
    with k.on_cpu(2):
        w2.schedule(delay=2)
    with k.on_cpu(1):
        w1.schedule(delay=3)
        k.advance(ms=10)                    # advance from vCPU 1
        assert k.cpu == 1                   # the caller's binding is restored
    assert k.cpu == 0
    assert [(t, c) for t, _, c in log] == [("w0", 0), ("w2", 2), ("w1", 1)]
    log.clear()
    with k.on_cpu(2):
        w0.schedule()                       # queued from vCPU 2 ...
    w0.flush()                              # ... flushed from vCPU 0: runs on 2
    assert log[-1][2] == 2


def test_delay_zero_runs_at_next_advance():
    k = K()
    log = []
    w = k.work(recorder(k, log))
    assert w.schedule() is True
    assert w.due == k.jiffies
    assert log == []                        # never synchronously
    k.advance(ns=0)
    assert len(log) == 1
    assert w.schedule(delay=0) is True
    k.advance()
    assert len(log) == 2
    assert k.now_ns == 0 and k.jiffies == k.INITIAL_JIFFIES


@pytest.mark.parametrize("hz", [100, 250, 1000])
def test_jiffies_follow_the_virtual_clock(hz):
    k = K(hz=hz)
    k.advance(ms=1000)
    assert k.jiffies - k.INITIAL_JIFFIES == hz
    assert k.now_ns == 1_000_000_000
    k.advance(ms=2500)
    assert k.jiffies - k.INITIAL_JIFFIES == hz * 35 // 10
    k.advance(us=1)
    k.advance(ns=1)
    assert k.now_ns == 3_500_001_001


def test_msecs_to_jiffies_rounds_up():
    assert [K(hz=250).msecs_to_jiffies(m) for m in (0, 1, 4, 5)] == [0, 1, 1, 2]
    assert [K(hz=100).msecs_to_jiffies(m) for m in (10, 11)] == [1, 2]
    assert K(hz=1000).msecs_to_jiffies(17) == 17


def test_advance_errors():
    k = K()
    with pytest.raises(ValueError):
        k.advance(ms=-1)
    k.advance(ms=1)
    # must not wrap around and move time backwards
    with pytest.raises((ValueError, OverflowError)):
        k.advance(ns=(1 << 64) - 1)
    with pytest.raises((ValueError, OverflowError)):
        k.advance(ns=1 << 64)
    assert k.now_ns == 1_000_000


def test_advance_from_a_work_item_is_refused():
    k = K()
    errors = []

    def fn():
        try:
            k.advance(ms=1)
        except odebug.StateError as e:
            errors.append(e)

    k.work(fn).schedule(delay=1)
    k.advance(ms=5)
    assert len(errors) == 1 and isinstance(errors[0], RuntimeError)
    assert k.now_ns == 5_000_000


def test_advance_on_real_clock_raises_state_error():
    k = K(clock="real")
    try:
        with pytest.raises(odebug.StateError):
            k.advance(ms=1)
        with pytest.raises(RuntimeError):
            k.advance(ns=0)
    finally:
        k.close()


def test_bad_delays_are_refused_or_never_due():
    k = K()
    log = []
    w = k.work(recorder(k, log))
    with pytest.raises((ValueError, OverflowError)):
        w.schedule(delay=-1)                # not a huge unsigned delay
    with pytest.raises((ValueError, OverflowError)):
        w.schedule(delay=1 << 64)
    with pytest.raises(TypeError):
        w.schedule(delay="10")
    assert not w.pending
    for delay in (1 << 40, (1 << 63) + 5, (1 << 64) - 1):
        assert w.schedule(delay=delay)      # far in the future: must not wrap to "now"
        assert w.due > k.jiffies
        k.advance(ms=1_000_000)
        assert log == [], delay
        assert w.cancel() is True


def test_exception_in_work_is_unraisable_not_fatal(monkeypatch):
    k = K()
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_type))
    log = []

    def bad():
        raise ZeroDivisionError("in a work item")

    k.work(bad).schedule(delay=1)
    k.work(recorder(k, log)).schedule(delay=2)
    k.advance(ms=10)
    assert seen == [ZeroDivisionError]
    assert len(log) == 1


def test_work_needs_a_callable():
    k = K()
    with pytest.raises(TypeError):
        k.work(42)


# =============================================================================
# 5. the real clock
# =============================================================================
@pytest.mark.threads
def test_real_clock_work_runs_on_the_worker_thread():
    before = settled_threads()
    k = K(clock="real", cpus=2)
    assert eventually(lambda: nr_threads() == before + 1)   # the worker
    ran = []
    late = []
    main = threading.get_ident()

    def fn():
        ran.append((threading.get_ident(), k.jiffies, k.cpu, k.pid))

    w = k.work(fn)
    with k.on_cpu(1):
        t0 = time.monotonic()
        j0 = k.jiffies
        assert w.schedule(delay=20)
        due = w.due
    assert due >= j0 + 20
    while not ran and time.monotonic() - t0 < 5:
        time.sleep(0.002)
    assert len(ran) == 1, "the work did not run within 5 s"
    ident, j, cpu, pid = ran[0]
    assert ident != main
    assert j >= due                               # not before it fell due
    assert cpu == 1                               # the queueing vCPU
    assert pid != k.pid
    assert time.monotonic() - t0 >= 0.019

    w2 = k.work(lambda: late.append(1))
    assert w2.schedule(delay=150)
    k.close()
    assert eventually(lambda: nr_threads() == before)       # the worker was joined
    k.close()                                     # twice is fine
    assert k.closed
    time.sleep(0.3)
    assert late == []                             # queued before close: never runs
    with pytest.raises(odebug.ClosedError):
        w2.schedule(delay=1)
    time.sleep(0.05)
    assert late == [] and len(ran) == 1


@pytest.mark.threads
def test_real_clock_periodic_and_cancel():
    k = K(clock="real", hz=1000)
    try:
        runs = []

        def tick():
            runs.append(k.jiffies)
            if len(runs) < 5:
                w.schedule(delay=5)

        w = k.work(tick)
        w.schedule(delay=5)
        t0 = time.monotonic()
        while len(runs) < 5 and time.monotonic() - t0 < 5:
            time.sleep(0.005)
        assert len(runs) == 5
        assert all(b - a >= 5 for a, b in zip(runs, runs[1:]))
        w.schedule(delay=10_000)
        assert w.cancel() is True
        assert w.flush() is False
    finally:
        k.close()


# =============================================================================
# 6. page allocator
# =============================================================================
@pytest.mark.parametrize("order", range(MAX_ORDER + 1))
def test_alloc_pages_aligned_inside_arena(order):
    k = K("", ram="16M")
    free0 = k.nr_free_pages
    a = k.alloc_pages(order)
    assert a is not None
    size = PAGE << order
    assert k.arena_start <= a and a + size <= k.arena_end
    assert (a - k.arena_start) % size == 0       # a buddy block is naturally aligned
    assert k.nr_free_pages == free0 - (1 << order)
    k.free_pages(a, order)
    assert k.nr_free_pages == free0


def test_alloc_pages_blocks_do_not_overlap():
    k = K(ram="16M")
    free0 = k.nr_free_pages
    blocks = []
    for order in [0, 3, 1, 0, 5, 2, 10, 0, 4]:
        a = k.alloc_pages(order)
        blocks.append((a, a + (PAGE << order), order))
    blocks.sort()
    for (s1, e1, _), (s2, _, _) in zip(blocks, blocks[1:]):
        assert e1 <= s2
    used = sum(1 << o for *_, o in blocks)
    assert k.nr_free_pages == free0 - used
    for a, _, o in blocks:
        k.free_pages(a, o)
    assert k.nr_free_pages == free0


def max_blocks(k, order):
    """How many blocks of this order can be allocated now (then freed again)."""
    got = []
    while (a := k.alloc_pages(order, GFP_KERNEL | NOWARN)) is not None:
        got.append(a)
    for a in got:
        k.free_pages(a, order)
    return got


def test_page_exhaustion_and_buddy_merging():
    k = K(ram="8M")
    total = k.totalram_pages
    assert total == 2048
    free0 = k.nr_free_pages                 # what the rooms left at boot
    big0 = sorted(max_blocks(k, MAX_ORDER))
    assert len(big0) >= 1
    assert k.nr_free_pages == free0
    n0, r0 = len(msgs(k)), len(k.reports)
    addrs = []
    while True:
        a = k.alloc_pages(0, GFP_KERNEL | NOWARN)
        if a is None:
            break
        addrs.append(a)
        assert len(addrs) <= total
    assert len(addrs) == free0 == len(set(addrs))
    assert k.nr_free_pages == 0
    assert len(k.reports) == r0 and len(msgs(k)) == n0   # __GFP_NOWARN: silent

    with k.expect_report("page allocation failure", subsystem="kernel", count=1) as got:
        assert k.alloc_pages(0) is None
    r = got.report
    assert r.subsystem == "kernel" and r.kind == "page allocation failure"
    assert "page allocation failure: order:0" in r.text
    line = msgs(k)[-1]
    assert re.fullmatch(r"\S+: page allocation failure: order:0, mode:0x[0-9a-f]+\(GFP_KERNEL\), "
                        r"nodemask=\(null\)", line), line
    assert k.alloc_pages(3, GFP_ATOMIC | NOWARN) is None
    assert len(k.reports) == r0 + 1

    # free in a scrambled order: everything merges back into the same big blocks
    for a in addrs[::2] + addrs[1::2]:
        k.free_pages(a, 0)
    assert k.nr_free_pages == free0
    assert sorted(max_blocks(k, MAX_ORDER)) == big0
    assert k.nr_free_pages == free0


def test_gfp_zero_gives_zeroed_memory():
    k = K()
    a = k.alloc_pages(1)
    k.raw(a, 2 * PAGE)[:] = b"\xaa" * (2 * PAGE)
    k.free_pages(a, 1)
    b = k.alloc_pages(1, GFP_KERNEL | _core.__GFP_ZERO)
    assert bytes(k.raw(b, 2 * PAGE)) == bytes(2 * PAGE)


def test_bad_frees_raise_and_leave_the_kernel_intact():
    k = K()
    free0 = k.nr_free_pages
    a = k.alloc_pages(1)
    b = k.alloc_pages(0)
    never = k.alloc_pages(0)
    k.free_pages(never, 0)              # a free page now
    bad = [
        (a + 8, 1),                      # not a page address
        (a + PAGE, 0),                   # a tail page
        (a, 0),                          # wrong order
        (a, 2),
        (never, 0),                      # free page
        (k.arena_end, 0),                # outside
        (k.arena_start - PAGE, 0),
        (0x1000, 0),
    ]
    for addr, order in bad:
        with pytest.raises(ValueError):
            k.free_pages(addr, order)
        assert k.nr_free_pages == free0 - 3
    k.free_pages(a, 1)
    with pytest.raises(ValueError):
        k.free_pages(a, 1)               # twice
    k.free_pages(b, 0)
    with pytest.raises(ValueError):
        k.free_pages(b, 0)
    assert k.nr_free_pages == free0
    assert k.reports == []
    # still fully usable
    c = k.alloc_pages(MAX_ORDER)
    assert c is not None
    k.free_pages(c, MAX_ORDER)


@pytest.mark.parametrize("call, exc", [
    pytest.param(lambda k: k.alloc_pages(MAX_ORDER + 1), ValueError, id='alloc_pages(MAX_ORDER + 1)'),
    pytest.param(lambda k: k.alloc_pages(-1), ValueError, id='alloc_pages(-1)'),
    pytest.param(lambda k: k.alloc_pages(1 << 40), ValueError, id='alloc_pages(1 << 40)'),
    pytest.param(lambda k: k.alloc_pages("1"), TypeError, id='alloc_pages("1")'),
    pytest.param(lambda k: k.alloc_pages(True), TypeError, id='alloc_pages(True)'),
    pytest.param(lambda k: k.alloc_pages(0, gfp=-1), (ValueError, OverflowError), id='alloc_pages(0, gfp=-1)'),
    pytest.param(lambda k: k.alloc_pages(0, gfp=1 << 40), (ValueError, OverflowError), id='alloc_pages(0, gfp=1 << 40)'),
    pytest.param(lambda k: k.free_pages(k.arena_start, 99), ValueError, id='free_pages(arena_start, 99)'),
    pytest.param(lambda k: k.free_pages(k.arena_start, -1), ValueError, id='free_pages(arena_start, -1)'),
    pytest.param(lambda k: k.free_pages(-4096, 0), ValueError, id='free_pages(-4096, 0)'),
    pytest.param(lambda k: k.free_pages(1 << 64, 0), ValueError, id='free_pages(1 << 64, 0)'),
    pytest.param(lambda k: k.free_pages("x", 0), TypeError, id='free_pages("x", 0)'),
])
def test_page_allocator_bad_arguments(call, exc):
    k = K()
    free0 = k.nr_free_pages
    with pytest.raises(exc):
        call(k)
    assert k.nr_free_pages == free0


# =============================================================================
# 7. fault injection
# =============================================================================
def failure_pattern(k, n, order=1, gfp=GFP_ATOMIC | NOWARN):
    out = []
    for _ in range(n):
        a = k.alloc_pages(order, gfp)
        out.append(a is None)
        if a is not None:
            k.free_pages(a, order)
    return out


def test_fail_page_alloc_probability_and_seed():
    def run(seed):
        k = K("fail_page_alloc=1,50,0,-1", seed=seed, ram="16M")
        k.set_fault("fail_page_alloc", probability=50, verbose=0)   # no dumps: fast
        free0 = k.nr_free_pages
        pat = failure_pattern(k, 2000)
        f = k.fault("fail_page_alloc")
        assert f["calls"] == 2000
        assert f["failures"] == sum(pat)
        assert k.nr_free_pages == free0
        return pat

    a = run(1234)
    assert 800 <= sum(a) <= 1200, sum(a)
    assert run(1234) == a                 # same seed, same failures
    assert run(1235) != a                 # another seed, another sequence


def test_fail_page_alloc_from_cmdline_alone():
    k = K("fail_page_alloc=1,50,0,-1", seed=7)
    f = k.fault("fail_page_alloc")
    assert (f["probability"], f["interval"], f["times"], f["space"]) == (50, 1, -1, 0)
    pat = failure_pattern(k, 400)
    assert 120 <= sum(pat) <= 280
    assert k.fault("fail_page_alloc")["failures"] == sum(pat)
    assert failure_pattern(K("fail_page_alloc=1,50,0,-1", seed=7), 400) == pat


def test_fail_page_alloc_ignores_gfp_kernel_by_default():
    k = K()
    k.set_fault("fail_page_alloc", probability=100)
    assert not any(failure_pattern(k, 50, gfp=GFP_KERNEL))
    assert k.fault("fail_page_alloc")["calls"] == 0       # ignore-gfp-wait: before should_fail
    k.set_fault("fail_page_alloc", probability=100, ignore_gfp_wait=False)
    assert all(failure_pattern(k, 5, gfp=GFP_KERNEL | NOWARN))


def test_fail_page_alloc_min_order_nofail_highmem():
    k = K()
    k.set_fault("fail_page_alloc", probability=100)
    assert not any(failure_pattern(k, 50, order=0))       # min-order 1
    assert not any(failure_pattern(k, 10, gfp=GFP_ATOMIC | _core.__GFP_NOFAIL))
    assert not any(failure_pattern(k, 10, gfp=GFP_ATOMIC | _core.__GFP_HIGHMEM))
    assert k.fault("fail_page_alloc")["calls"] == 0
    assert all(failure_pattern(k, 3, order=MAX_ORDER))
    k.set_fault("fail_page_alloc", probability=100, min_order=0)
    assert all(failure_pattern(k, 5, order=0))
    k.set_fault("fail_page_alloc", probability=100, ignore_gfp_highmem=False)
    assert all(failure_pattern(k, 5, gfp=GFP_ATOMIC | _core.__GFP_HIGHMEM | NOWARN))
    with pytest.raises(ValueError, match="cache_filter: fail_page_alloc has no knob"):
        k.set_fault("fail_page_alloc", probability=0, cache_filter=True)   # failslab's knob
    assert k.fault("fail_page_alloc")["probability"] == 100               # nothing changed
    with pytest.raises(odebug.NotFound):
        k.set_fault("fail_nothing", probability=0, min_order=1)


def test_fault_interval_fails_every_nth():
    k = K()
    k.set_fault("fail_page_alloc", probability=100, interval=3)
    pat = failure_pattern(k, 30)
    assert pat == [i % 3 == 2 for i in range(30)]
    assert k.fault("fail_page_alloc")["failures"] == 10


def test_fault_times_limits_failures():
    k = K()
    k.set_fault("fail_page_alloc", probability=100, times=5)
    pat = failure_pattern(k, 20)
    assert pat == [True] * 5 + [False] * 15
    f = k.fault("fail_page_alloc")
    assert f["times"] == 0 and f["failures"] == 5
    # -1 and other negative values never run out
    for times in (-1, -2):
        k.set_fault("fail_page_alloc", probability=100, times=times)
        assert all(failure_pattern(k, 20))


@pytest.mark.parametrize("order, space, passes", [
    (1, 10, 4),      # 10>2 ->8 ->6 ->4 ->2; 2>2 is false: fail from then on
    (2, 10, 2),      # 10>4 ->6 ->2; then fail
    (1, 2, 0),       # space == size: no budget left
    (0, 0, 0),
])
def test_fault_space_budget(order, space, passes):
    k = K()
    k.set_fault("fail_page_alloc", probability=100, space=space, min_order=0)
    pat = failure_pattern(k, passes + 5, order=order)
    assert pat == [False] * passes + [True] * 5
    assert k.fault("fail_page_alloc")["space"] == space - passes * (1 << order)


def test_fault_probability_zero_short_circuits():
    k = K()
    k.set_fault("fail_page_alloc", probability=0, interval=2, space=100, times=3)
    assert not any(failure_pattern(k, 20))
    f = k.fault("fail_page_alloc")
    assert f["calls"] == 0 and f["space"] == 100 and f["times"] == 3


def test_fault_verbose_dump_lines():
    k = K()
    k.set_fault("fail_page_alloc", probability=100, times=2, verbose=1)
    n0 = len(msgs(k))
    assert failure_pattern(k, 3, gfp=GFP_ATOMIC) == [True, True, False]
    new = msgs(k)[n0:]
    assert new == [
        "FAULT_INJECTION: forcing a failure.",
        "name fail_page_alloc, interval 1, probability 100, space 0, times 2",
        "FAULT_INJECTION: forcing a failure.",
        "name fail_page_alloc, interval 1, probability 100, space 0, times 1",
    ]
    # an injected failure returns before the slowpath: no warn_alloc, no report
    assert k.reports == []

    k.set_fault("fail_page_alloc", probability=100, times=-1, verbose=0)
    n0 = len(msgs(k))
    assert all(failure_pattern(k, 5, gfp=GFP_ATOMIC))
    assert msgs(k)[n0:] == []


def test_fault_verbose_2_dumps_the_stack():
    k = K()
    k.set_fault("fail_page_alloc", probability=100, interval=4, space=3, times=7, verbose=2)
    n0 = len(msgs(k))
    while k.alloc_pages(1, GFP_ATOMIC) is not None:      # space: 3>2 -> 1; then every 4th
        pass
    new = msgs(k)[n0:]
    assert new[0] == "FAULT_INJECTION: forcing a failure."
    assert new[1] == "name fail_page_alloc, interval 4, probability 100, space 1, times 7"
    assert new[2].startswith("CPU: 0 ") and f"PID: {k.pid} " in new[2]
    assert "Call Trace:" in new
    assert any(THIS_FILE in line and "test_fault_verbose_2_dumps_the_stack" in line for line in new)
    assert k.fault("fail_page_alloc")["times"] == 6


def test_fault_nowarn_suppresses_the_dump():
    k = K()
    k.set_fault("fail_page_alloc", probability=100, verbose=2)
    n0 = len(msgs(k))
    assert all(failure_pattern(k, 3, gfp=GFP_ATOMIC | NOWARN))
    assert msgs(k)[n0:] == []
    assert k.fault("fail_page_alloc")["failures"] == 3


def test_fault_unknown_name():
    k = K()
    with pytest.raises(odebug.NotFound):
        k.fault("fail_everything")
    with pytest.raises(LookupError):
        k.set_fault("nope", probability=1)


# =============================================================================
# 8. printk and reports
# =============================================================================
def test_printk_timestamps_and_lines():
    k = K()
    n0 = len(k.dmesg().splitlines())
    k.printk("hello")
    k.advance(us=1_234_567)
    k.printk("two\nlines")
    k.advance(ms=123_455_000)
    k.printk("late")
    lines = k.dmesg().splitlines()
    assert lines[n0:] == ["[    0.000000] hello",
                         "[    1.234567] two",
                         "[    1.234567] lines",
                         "[123456.234567] late"]
    assert k.dmesg(clear=True).endswith("late\n")
    assert k.dmesg() == ""


def test_report_fields_and_dmesg():
    k = K()
    assert k.reports == [] and k.report_count == 0
    k.report("kernel", "WARNING: something odd", "line one\nline two")
    k.report("mydriver", "BUG: bad state", "x = 3")
    r1, r2 = k.reports
    assert (r1.subsystem, r1.kind, r1.text) == ("kernel", "WARNING: something odd", "line one\nline two\n")
    assert (r2.subsystem, r2.kind, r2.text) == ("mydriver", "BUG: bad state", "x = 3\n")
    assert r1.seq == 1 and r2.seq == 2
    assert isinstance(r1, odebug.Report) and str(r1) == r1.text
    assert r1.alloc_track is None and r1.is_write is None
    assert msgs(k)[-3:] == ["line one", "line two", "x = 3"]
    assert k.report_count == 2
    k.clear_reports()
    assert k.reports == [] and k.report_count == 0
    k.report("kernel", "WARNING: again")
    assert [r.kind for r in k.reports] == ["WARNING: again"]


def test_expect_report():
    k = K()
    with k.expect_report("WARNING: x") as got:
        k.report("kernel", "WARNING: x", "t")
    assert got.report.kind == "WARNING: x" and len(got.reports) == 1
    with pytest.raises(AssertionError):
        with k.expect_report("WARNING: x"):
            pass
    with pytest.raises(AssertionError):
        with k.expect_report("WARNING: y"):
            k.report("kernel", "WARNING: x", "t")
    with pytest.raises(AssertionError):
        with k.expect_report("WARNING: x", count=1):
            k.report("kernel", "WARNING: x", "1")
            k.report("kernel", "WARNING: x", "2")
    with pytest.raises(AssertionError):
        with k.expect_report("WARNING: x", subsystem="kasan"):
            k.report("kernel", "WARNING: x", "t")
    with k.expect_report(subsystem="kasan", count=2) as got:
        k.report("kasan", "BUG: KASAN: a", "t")
        k.report("kernel", "WARNING: b", "t")
        k.report("kasan", "BUG: KASAN: c", "t")
    assert [r.kind for r in got.reports] == ["BUG: KASAN: a", "BUG: KASAN: c"]


def test_panic_on_warn_turns_a_report_into_kernel_bug():
    k = K("panic_on_warn=1")
    with pytest.raises(odebug.KernelBug) as ei:
        k.report("kernel", "WARNING: boom", "it went boom")
    assert isinstance(ei.value, odebug.Error)
    assert ei.value.report.kind == "WARNING: boom"
    assert ei.value.report.subsystem == "kernel"
    assert [r.kind for r in k.reports] == ["WARNING: boom"]
    m = msgs(k)
    i = m.index("it went boom")
    assert m[i + 1] == "Kernel panic - not syncing: kernel: panic_on_warn set ..."
    assert "---[ end Kernel panic - not syncing: kernel: panic_on_warn set ... ]---" in m[i + 2:]
    # the call completed: the kernel is still usable
    assert k.alloc_pages(0) is not None


def test_panic_on_warn_off_no_exception():
    k = K("panic_on_warn=0")
    k.report("kernel", "WARNING: boom", "t")
    assert not any("Kernel panic" in m for m in msgs(k))


def test_panic_on_warn_does_not_panic_on_allocation_failure():
    k = K("panic_on_warn=1")
    blocks = []
    while (a := k.alloc_pages(0, GFP_KERNEL | NOWARN)) is not None:
        blocks.append(a)
    assert k.alloc_pages(0) is None          # warns, returns NULL; no panic
    assert [r.kind for r in k.reports] == ["page allocation failure"]
    assert not any("Kernel panic" in m for m in msgs(k))


def test_report_bad_arguments():
    k = K()
    with pytest.raises(TypeError):
        k.report(1, "x")
    with pytest.raises(TypeError):
        k.report("kernel")
    assert k.reports == []


# =============================================================================
# 9. stack depot
# =============================================================================
def _save_in_helper(k):
    return k.stack_save()


def test_stack_depot_handles_and_text():
    k = K()
    handles = []
    for _ in range(3):
        handles.append(k.stack_save())
    line = sys._getframe().f_lineno - 1
    assert handles[0] != 0 and len(set(handles)) == 1
    n = k.stack_depot_count
    other = k.stack_save()
    assert other not in (0, handles[0])
    assert k.stack_depot_count == n + 1
    assert k.stack_save() not in (handles[0], other)          # yet another line

    text = k.stack(handles[0])
    assert f" {THIS_FILE}:{line}:test_stack_depot_handles_and_text" in text.splitlines()
    assert all(ln.startswith(" ") for ln in text.splitlines())
    assert text.endswith("\n")
    helper = k.stack(_save_in_helper(k))
    assert f"{THIS_FILE}:" in helper and ":_save_in_helper" in helper
    assert _save_in_helper(k) == _save_in_helper(k)


@pytest.mark.parametrize("handle, exc", [
    (0, odebug.NotFound), (9999, odebug.NotFound), ((1 << 32) - 1, odebug.NotFound),
    (1 << 32, ValueError), (-1, (ValueError, OverflowError)), ("1", TypeError),
])
def test_stack_depot_unknown_handles(handle, exc):
    k = K()
    k.stack_save()
    with pytest.raises(exc):
        k.stack(handle)


# =============================================================================
# 10. lifetime
# =============================================================================
def test_close_twice_and_closed_errors():
    k = K("hz=250 foo")
    k.report("kernel", "WARNING: before close", "t")
    w = k.work(lambda: None)
    w.schedule(delay=5)
    k.close()
    k.close()
    assert k.closed and "closed" in repr(k)
    k_start = _core._build_info()["page_offset"]   # any address: the kernel is closed
    ops = [
        lambda: k.alloc_pages(0), lambda: k.free_pages(k_start, 0), lambda: k.jiffies,
        lambda: k.HZ, lambda: k.advance(ms=1), lambda: k.report("kernel", "x"),
        lambda: k.work(print), lambda: k.stack_save(), lambda: k.cpu, lambda: k.pid,
        lambda: k.bind_cpu(0), lambda: k.param("hz"), lambda: k.fault("failslab"),
        lambda: k.set_fault("failslab", probability=1), lambda: k.printk("x"),
        lambda: w.schedule(), lambda: w.flush(), lambda: k.totalram_pages,
    ]
    for op in ops:
        with pytest.raises(odebug.ClosedError) as ei:
            op()
        assert isinstance(ei.value, RuntimeError) and isinstance(ei.value, odebug.Error)
    with pytest.raises(odebug.ClosedError):
        with k.on_cpu(0):
            pass  # pragma: no cover
    # still readable
    assert msgs(k)[0] == "Kernel command line: hz=250 foo"
    assert [r.kind for r in k.reports] == ["WARNING: before close"]
    assert k.cmdline == "hz=250 foo"
    k.clear_reports()
    assert k.reports == []


def test_close_inside_on_cpu_block():
    k = K(cpus=2)
    with k.on_cpu(1):
        k.close()
    assert k.closed


def test_context_manager_closes():
    with K() as k:
        assert not k.closed
    assert k.closed


def test_open_kernel_is_closed_when_collected():
    k = K()
    w = k.work(lambda: None)          # a reference cycle kernel <-> work
    w.schedule(delay=10)
    a = k.alloc_pages(0)
    m = k.raw(a, 16)
    m[:4] = b"live"
    r = weakref.ref(k)
    del k, w
    gc.collect()
    assert r() is not None            # the memoryview keeps it alive
    assert bytes(m[:4]) == b"live"
    m.release()
    del m
    gc.collect()
    assert r() is None


@pytest.mark.threads
def test_open_real_clock_kernel_is_closed_when_collected():
    before = settled_threads()
    k = K(clock="real")
    ran = []
    w = k.work(lambda: ran.append(1))
    w.schedule(delay=100_000)
    r = weakref.ref(k)
    assert eventually(lambda: nr_threads() == before + 1)
    del k, w
    gc.collect()
    assert r() is None
    assert eventually(lambda: nr_threads() == before)   # the worker was stopped and joined
    assert ran == []


@pytest.mark.threads
def test_kernel_collected_on_its_own_worker_thread():
    # The last reference to a real-clock kernel can go away while its worker
    # runs a work item (here: the garbage collector runs inside the item).
    # Closing and freeing must then neither join the worker from itself nor
    # free the memory the running item still uses.  Run in a child so that a
    # crash (or a sanitizer report on a sanitized build) fails only this test.
    code = textwrap.dedent("""
        import gc, threading, time, weakref, odebug
        done = threading.Event()
        def fn():
            time.sleep(0.05)
            gc.collect()
            done.set()
        def make():
            k = odebug.Kernel(clock="real", ram="8M")
            k.work(fn).schedule(delay=1)
            return weakref.ref(k)
        gc.disable()
        r = make()
        assert done.wait(10)
        time.sleep(0.3)
        assert r() is None
        for _ in range(20):                      # reuse the freed memory
            k = odebug.Kernel(clock="real", ram="8M"); k.alloc_pages(0); k.close()
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stdout + res.stderr


def test_hundred_kernels_in_one_process():
    kernels = [odebug.Kernel(ram="16M", seed=i) for i in range(100)]
    free0 = kernels[0].nr_free_pages
    addrs = []
    for i, k in enumerate(kernels):
        assert k.totalram_pages == 4096 and k.nr_free_pages == free0
        a = k.alloc_pages(2)
        k.raw(a, 4 * PAGE)[:] = bytes([i]) * (4 * PAGE)
        addrs.append(a)
        k.report("kernel", f"WARNING: kernel {i}", f"number {i}")
    for i, (k, a) in enumerate(zip(kernels, addrs)):
        assert bytes(k.raw(a, 4 * PAGE)) == bytes([i]) * (4 * PAGE)
        assert [r.kind for r in k.reports] == [f"WARNING: kernel {i}"]
        assert k.nr_free_pages == free0 - 4
    refs = [weakref.ref(k) for k in kernels]
    for k in kernels[::2]:
        k.close()
    del kernels, k
    gc.collect()
    assert all(r() is None for r in refs)


# =============================================================================
# 11. determinism
# =============================================================================
def _workload(seed):
    k = odebug.Kernel("hz=250 splash quiet=1 fail_page_alloc=2,40,0,-1 mod.opt=3",
                      ram="8M", cpus=2, seed=seed)
    log = []
    w = k.work(lambda: (log.append(k.jiffies), k.printk(f"tick at {k.jiffies}")))
    w.schedule(delay=3)
    k.advance(ms=7)
    with k.on_cpu(1):
        w.schedule(delay=1)
        k.set_fault("fail_page_alloc", probability=40, interval=2, verbose=2)
        for _ in range(40):
            a = k.alloc_pages(1, GFP_ATOMIC)
            if a is not None:
                k.free_pages(a, 1)
    k.advance(us=12_345)
    blocks = []
    while (a := k.alloc_pages(0, GFP_KERNEL | NOWARN)) is not None:
        blocks.append(a)
    k.alloc_pages(0)                          # page allocation failure
    for b in blocks:
        k.free_pages(b, 0)
    k.report("kernel", "WARNING: done", "end of workload")
    return k


def test_same_seed_same_dmesg():
    a, b = _workload(99), _workload(99)
    assert a.dmesg().encode() == b.dmesg().encode()
    assert [r.text for r in a.reports] == [r.text for r in b.reports]
    assert a.fault("fail_page_alloc") == b.fault("fail_page_alloc")
    assert "FAULT_INJECTION: forcing a failure." in msgs(a)
    c = _workload(100)
    assert c.dmesg() != a.dmesg()


# =============================================================================
# 12. the C library
# =============================================================================
def test_get_include():
    inc = odebug.get_include()
    hdr = os.path.join(inc, "odebug", "odebug.h")
    assert os.path.isfile(hdr)
    with open(hdr) as f:
        assert "odb_kernel_create" in f.read()


CDEF = """
typedef struct odb_kernel odb_kernel;
enum odb_clock_kind { ODB_CLOCK_VIRTUAL = 0, ODB_CLOCK_REAL = 1 };
struct odb_config {
    unsigned int cpus;
    unsigned int nr_cpus;
    uint64_t ram;
    enum odb_clock_kind clock;
    uint64_t seed;
    unsigned int hz;
    const char *cmdline;
};
void odb_config_init(struct odb_config *cfg);
int odb_kernel_create(const struct odb_config *cfg, odb_kernel **out, char *errbuf, size_t errlen);
unsigned int odb_nr_cpus(odb_kernel *k);
unsigned int odb_hz(odb_kernel *k);
uint64_t odb_jiffies(odb_kernel *k);
uint64_t odb_totalram_pages(odb_kernel *k);
int odb_advance(odb_kernel *k, uint64_t ns);
char *odb_dmesg(odb_kernel *k, bool clear);
void odb_free(void *p);
void odb_kernel_close(odb_kernel *k);
void odb_kernel_destroy(odb_kernel *k);
"""


def test_get_library_with_cffi():
    cffi = pytest.importorskip("cffi")
    path = odebug.get_library()
    assert os.path.isfile(path) and path.endswith("libodebug.so")
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    lib = ffi.dlopen(path)
    cfg = ffi.new("struct odb_config *")
    lib.odb_config_init(cfg)
    assert (cfg.cpus, cfg.nr_cpus, cfg.ram, cfg.hz) == (2, 256, 256 << 20, 0)
    cfg.cpus = 3
    cfg.ram = 8 << 20
    cmd = ffi.new("char[]", b"hz=250 foo BAR=1")
    cfg.cmdline = cmd
    out = ffi.new("odb_kernel **")
    err = ffi.new("char[256]")
    assert lib.odb_kernel_create(cfg, out, err, 256) == 0, ffi.string(err)
    k = out[0]
    try:
        assert lib.odb_nr_cpus(k) == 3 and lib.odb_hz(k) == 250
        assert lib.odb_totalram_pages(k) == 2048
        assert lib.odb_jiffies(k) == INITIAL_JIFFIES[250]
        assert lib.odb_advance(k, 1_000_000_000) == 0
        assert lib.odb_jiffies(k) == INITIAL_JIFFIES[250] + 250
        s = lib.odb_dmesg(k, False)
        text = ffi.string(s).decode()
        lib.odb_free(s)
        assert text.splitlines()[0] == "[    0.000000] Kernel command line: hz=250 foo BAR=1"
        assert UNKNOWN.format("foo BAR=1") in text
        lib.odb_kernel_close(k)
        assert lib.odb_advance(k, 1) == -1000          # ODB_ECLOSED
    finally:
        lib.odb_kernel_destroy(k)
    # a malformed command line: ODB_EINVAL and a message naming the parameter
    bad = ffi.new("char[]", b"hz=fast")
    cfg.cmdline = bad
    assert lib.odb_kernel_create(cfg, out, err, 256) == -22
    assert out[0] == ffi.NULL and b"hz" in ffi.string(err)


def test_library_exports_only_the_public_api():
    import ctypes
    lib = ctypes.CDLL(odebug.get_library())
    assert lib.odb_kernel_create and lib.odb_dmesg
    for internal in ("printk", "alloc_pages", "should_fail", "next_arg", "odb_parse_cmdline"):
        with pytest.raises(AttributeError):
            getattr(lib, internal)


# =============================================================================
# 13. bad input never crashes
# =============================================================================
def test_raw_inside_the_arena_is_writable_and_shared():
    k = K()
    a = k.alloc_pages(0)
    m = k.raw(a, PAGE)
    assert isinstance(m, memoryview) and not m.readonly and m.nbytes == PAGE
    m[100:105] = b"hello"
    assert bytes(k.raw(a + 100, 5)) == b"hello"
    k.raw(a + 200, 3)[:] = b"xyz"
    assert bytes(m[200:203]) == b"xyz"
    assert bytes(k.raw(k.arena_end - 4, 4)) == bytes(4)        # last bytes of RAM
    assert k.raw(k.arena_start, 0).nbytes == 0


@pytest.mark.parametrize("where, size", [
    ("start-1", 1), ("end", 1), ("end-8", 16), ("zero", 1), ("neg", 1),
    ("wrap", 8), ("start", 1 << 40), ("start", -1), ("start", -(1 << 20)),
])
def test_raw_outside_the_arena_is_value_error(where, size):
    k = K()
    addr = {"start-1": k.arena_start - 1, "end": k.arena_end, "end-8": k.arena_end - 8,
            "zero": 0, "neg": -1, "wrap": k.arena_start + (1 << 64),
            "start": k.arena_start}[where]
    with pytest.raises(ValueError):
        k.raw(addr, size)


def test_raw_wrong_types():
    k = K()
    with pytest.raises(TypeError):
        k.raw("0", 1)
    with pytest.raises(TypeError):
        k.raw(k.arena_start, "1")
    with pytest.raises(TypeError):
        k.raw(float(k.arena_start), 1)


@pytest.mark.parametrize("call", [
    pytest.param(lambda k: k.advance(ms=-5), id='advance(ms=-5)'),
    pytest.param(lambda k: k.advance(ns=-1), id='advance(ns=-1)'),
    pytest.param(lambda k: k.alloc_pages(-3), id='alloc_pages(-3)'),
    pytest.param(lambda k: k.alloc_pages(12), id='alloc_pages(12)'),
    pytest.param(lambda k: k.alloc_pages(1 << 64), id='alloc_pages(1 << 64)'),
    pytest.param(lambda k: k.free_pages(k.arena_start, 1 << 40), id='free_pages(arena_start, 1 << 40)'),
    pytest.param(lambda k: k.bind_cpu(1 << 40), id='bind_cpu(1 << 40)'),
    pytest.param(lambda k: k.set_fault("fail_page_alloc", probability=1, times=1 << 70), id='set_fault("fail_page_alloc", probability=1, times=1 << 70)'),
    pytest.param(lambda k: _core.Kernel.fault_set_flag(k, "fail_page_alloc", "no-such-knob", 1), id='_core fault_set_flag("fail_page_alloc", "no-such-knob", 1)'),
    pytest.param(lambda k: _core.Kernel.fault_set_flag(k, "fail_page_alloc", "min-order", -1), id='_core fault_set_flag("fail_page_alloc", "min-order", -1)'),
    pytest.param(lambda k: k.set_fault("fail_page_alloc", probability=1, min_order=-1), id='set_fault("fail_page_alloc", probability=1, min_order=-1)'),
    pytest.param(lambda k: k.set_fault("fail_page_alloc", probability=1, ignore_gfp_wait=2), id='set_fault("fail_page_alloc", probability=1, ignore_gfp_wait=2)'),
    pytest.param(lambda k: k.set_fault("fail_page_alloc", probability=-1), id='set_fault("fail_page_alloc", probability=-1)'),
    pytest.param(lambda k: k.set_fault("fail_page_alloc", probability=10, interval=-3), id='set_fault("fail_page_alloc", probability=10, interval=-3)'),
    pytest.param(lambda k: k.set_fault("fail_page_alloc", probability=10, verbose=-1), id='set_fault("fail_page_alloc", probability=10, verbose=-1)'),
    pytest.param(lambda k: k.param(None), id='param(None)'),
    pytest.param(lambda k: k.printk(None), id='printk(None)'),
])
def test_bad_arguments_raise_not_crash(call):
    k = K()
    with pytest.raises((ValueError, TypeError, OverflowError)):
        call(k)
    # and the kernel still works
    a = k.alloc_pages(0)
    assert a is not None
    k.free_pages(a, 0)


def test_work_name_none_is_the_default_and_a_bad_name_is_typeerror():
    """``work(fn, None)`` is ``work(fn)`` (it was a TypeError: "argument 2 must be str")."""
    k = K()
    log = []
    w = k.work(recorder(k, log), None)
    assert repr(w).startswith("<odebug work '<function recorder.")
    assert repr(k.work(recorder(k, log), "mine")) == "<odebug work 'mine'>"
    with pytest.raises(TypeError, match="work: name must be a str or None, not int"):
        k.work(recorder(k, log), 3)
    start = k.jiffies
    assert w.schedule(delay=1)
    k.advance(ms=1)
    assert log == [(None, start + 1, 0)]
