"""The Kernel facade: one simulated kernel instance and its environment."""
from __future__ import annotations

import atexit
import contextlib
import os
import re
import threading
import weakref
from typing import (TYPE_CHECKING, Callable, ContextManager, Dict, Iterator, List, Optional,
                    Pattern, Union)

from . import _core
import warnings

from .report import Report, ReportKind, Reports, SuppressedReportsWarning

if TYPE_CHECKING:  # pragma: no cover
    from .debugobjects import DebugObjects  # noqa: F401
from .slab import SlabMixin
from .kasan import KasanMixin
from .sched import SchedMixin
from .vmalloc import VmallocMixin
from .mempool import MempoolMixin

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kKmMgGtT]?)(i?[bB])?\s*$")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}

_live: "weakref.WeakSet[Kernel]" = weakref.WeakSet()


def parse_size(value: Union[int, str], what: str = "size") -> int:
    """Bytes from an int or a kernel-style size string ("256M", "4G", "1T", "4096")."""
    if isinstance(value, bool):
        raise TypeError(f"{what}: expected bytes or a size string, not bool")
    if isinstance(value, int):
        if value < 0:
            raise _core.InvalidArgument(f"{what}: negative size {value}")
        return value
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if not m:
            raise _core.InvalidArgument(f"{what}: cannot parse size {value!r} (use e.g. 4096, '256M', '4G')")
        return int(m.group(1)) * _UNITS[m.group(2).lower()]
    raise TypeError(f"{what}: expected bytes or a size string, not {type(value).__name__}")


def check_int(name: str, value: int, lo: int, hi: Optional[int] = None) -> int:
    """``value`` if it is an int in ``lo..hi`` (``hi`` None: no upper bound);
    else TypeError (not an int) or :class:`odebug.InvalidArgument` (a
    ValueError) naming the parameter.  Scenario and benchmark parameters are
    checked with it before any C work runs."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name}: expected int, not {type(value).__name__}")
    if value < lo or (hi is not None and value > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise _core.InvalidArgument(f"{name}: must be {rng}, not {value}")
    return value


class _OnCpu:
    """``with k._cpu(n):``: bind the calling thread to vCPU n for the block."""
    __slots__ = ("k", "cpu", "old")

    def __init__(self, k: "Kernel", cpu: int) -> None:
        self.k, self.cpu, self.old = k, cpu, -1

    def __enter__(self) -> None:
        self.old = self.k.bind_cpu(self.cpu)

    def __exit__(self, *exc: object) -> None:
        if not self.k.closed:
            self.k.bind_cpu(self.old)


_NO_CPU: "ContextManager[object]" = contextlib.nullcontext()

#: the debugfs extra knobs of each fault attribute (lib/fault-inject.c, mm/failslab.c,
#: mm/fail_page_alloc.c)
_FAULT_KNOBS = {
    "failslab": ("ignore-gfp-wait", "cache-filter"),
    "fail_page_alloc": ("ignore-gfp-wait", "ignore-gfp-highmem", "min-order"),
}


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"Kernel.{old} is deprecated and will go in the next release: "
                  f"use Kernel.{new}", DeprecationWarning, stacklevel=3)


@atexit.register
def _close_all() -> None:
    for k in list(_live):
        try:
            k.close()
        except Exception:  # pragma: no cover - best effort at exit
            pass


class ExpectedReports:
    """What ``Kernel.expect_report`` matched: ``.reports`` after the block."""

    def __init__(self) -> None:
        self.reports: List[Report] = []

    @property
    def report(self) -> Report:
        return self.reports[0]


class Kernel(SlabMixin, KasanMixin, MempoolMixin, SchedMixin, VmallocMixin, _core.Kernel):
    """A simulated kernel: vCPUs, clock, RAM, log and reports, and (in later rooms)
    the slab allocator, KASAN and debug objects.

    ``Kernel(cmdline="slub_debug=FZPU", cpus=2, ram="256M", clock="virtual", seed=0)``

    ``sched="controlled"`` (the same as ``odebug.sched=controlled`` on the command
    line) runs the tasks of ``spawn()`` one at a time under a scheduler of
    :mod:`odebug.sched` (``run()``): deterministic, explorable, replayable
    concurrency.  The default ``"free"`` lets threads run as they will.

    The command line takes kernel-style parameters (``key``, ``key=value``,
    ``key="quoted value"``); unknown ones are listed in dmesg as the kernel does,
    and a malformed value raises ``ValueError`` naming the parameter.

    KASAN (generic, on unless ``kasan=off``) reports only the first bad access
    per boot, as the kernel does without ``kasan_multi_shot``: later detections
    are counted in ``k.reports.suppressed`` (a :class:`odebug.SuppressedReportsWarning`
    the first time) and ``clear_reports()`` does not re-arm it.  Boot with
    ``kasan_multi_shot`` or set ``k.kasan.multi_shot = True`` to see them all.
    """

    #: INITIAL_JIFFIES of this kernel's HZ (jiffies at boot)
    INITIAL_JIFFIES: int

    def __init__(self, cmdline: str = "", *, cpus: int = 2, ram: Union[int, str] = "256M",
                 clock: str = "virtual", seed: int = 0, hz: Optional[int] = None,
                 nr_cpus: Optional[int] = None, sched: str = "free") -> None:
        if not isinstance(cmdline, str):
            raise TypeError(f"cmdline: expected str, not {type(cmdline).__name__}")
        if not isinstance(cpus, int) or isinstance(cpus, bool):
            raise TypeError(f"cpus: expected int, not {type(cpus).__name__}")
        if not 1 <= cpus <= _core._build_info()["max_cpus"]:
            raise _core.InvalidArgument(f"cpus: must be between 1 and {_core._build_info()['max_cpus']}, not {cpus}")
        if not isinstance(clock, str):
            raise TypeError(f"clock: expected str, not {type(clock).__name__}")
        if clock not in ("virtual", "real"):
            raise _core.InvalidArgument(f"clock: must be 'virtual' or 'real', not {clock!r}")
        for name, v in (("seed", seed), ("hz", hz), ("nr_cpus", nr_cpus)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                raise TypeError(f"{name}: expected int, not {type(v).__name__}")
        if seed < 0:
            raise _core.InvalidArgument(f"seed: expected a non-negative int, not {seed!r}")
        if hz is not None and not 1 <= hz <= 100000:
            raise _core.InvalidArgument(f"hz: expected 1..100000, not {hz!r}")
        if nr_cpus is not None and not cpus <= nr_cpus <= _core._build_info()["max_cpus"]:
            raise _core.InvalidArgument(f"nr_cpus: expected an int >= cpus, not {nr_cpus!r}")
        if sched not in ("free", "controlled"):
            raise _core.InvalidArgument(f"sched: must be 'free' or 'controlled', not {sched!r}")
        if sched == "controlled":
            cmdline = f"{cmdline} odebug.sched=controlled".strip()
        super().__init__(cpus=cpus, ram=parse_size(ram, "ram"), clock=clock,
                         seed=seed & ((1 << 64) - 1), cmdline=cmdline, hz=hz or 0,
                         nr_cpus=nr_cpus or 0, skip_prefix=_PKG_DIR)
        self.INITIAL_JIFFIES = (-300 * self.HZ) & 0xFFFFFFFF
        _live.add(self)

    # -- lifetime ---------------------------------------------------------------
    def __enter__(self) -> "Kernel":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the kernel (its worker, its tasks' calls); idempotent, never raises.

        After close, reading the log and the reports stays fine (``dmesg()``,
        ``reports``, ``report_count``, ``stack()``, ``cmdline``, ``closed``);
        anything touching memory or kernel state -- ``raw``, ``read``,
        ``write``, ``kmalloc``, ``slabinfo_text``, ``caches``, a Cache's
        methods, ``debug_objects``, ``kasan``, statistics, time -- raises
        :class:`odebug.ClosedError`.  The arena is unmapped only when this
        object is deallocated: a ``raw()`` memoryview holds a reference to its
        kernel, so a view kept across ``close()`` stays valid (it sees the dead
        kernel's memory) until it is released."""
        super().close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.nr_cpus} vCPUs, {self.clock} clock"
        return f"<odebug.Kernel {state}>"

    # -- vCPUs ------------------------------------------------------------------
    @contextlib.contextmanager
    def on_cpu(self, cpu: int) -> Iterator[int]:
        """Run the block with the calling thread bound to vCPU ``cpu``."""
        old = self.bind_cpu(cpu)
        try:
            yield cpu
        finally:
            if not self.closed:
                self.bind_cpu(old)

    def _cpu(self, cpu: Optional[int]) -> "ContextManager[object]":
        """The ``cpu=`` argument of a call: nothing for None, else the call runs with
        the thread bound to that vCPU (a plain class, not a generator: this is on
        every call's path)."""
        return _NO_CPU if cpu is None else _OnCpu(self, cpu)

    @property
    def cpu(self) -> int:
        """smp_processor_id() of the calling thread."""
        return super().current_cpu()

    def cpu_offline(self, cpu: int) -> None:
        """CPU hotplug: vCPU ``cpu`` goes offline.  Every room's callback runs in the
        kernel's order: KASAN's quarantine frees the vCPU's list (from v5.10 on, see
        ``odebug.quarantine_fixes=``), SLUB flushes its per-CPU slabs, debug objects
        give its per-CPU pool back.  The last online vCPU cannot go (StateError)."""
        self._cpu_hotplug(cpu, False)

    def cpu_online(self, cpu: int) -> None:
        """CPU hotplug: vCPU ``cpu`` comes back online."""
        self._cpu_hotplug(cpu, True)

    @property
    def online_cpus(self) -> List[int]:
        """The vCPUs that are online."""
        return [c for c in range(self.nr_cpus) if self.cpu_is_online(c)]

    @property
    def pid(self) -> int:
        """The calling thread's task id in this kernel."""
        return super().current_pid()

    @property
    def lock_bias(self) -> Dict[str, int]:
        """The lock bias (``odebug.lock_bias=``): a vCPU's irq lock or a cache's
        list_lock that one thread takes again and again is biased to it and then
        costs no atomic operation, until another thread revokes the bias.

        ``{"threshold": n, "grants": g, "revocations": r}``: ``threshold`` is the
        number of acquisitions in a row that first biases a lock (0: off, by the
        option or for want of ``membarrier(2)``); the counts are since boot."""
        return super().lock_bias_info()

    # -- time ---------------------------------------------------------------------
    @property
    def HZ(self) -> int:
        """CONFIG_HZ of this kernel (ticks per second; ``Kernel(hz=...)`` sets it)."""
        return super().hz

    def advance(self, ms: float = 0, us: float = 0, ns: int = 0) -> None:
        """Move the virtual clock forward, running every work item that falls due
        (in due order, in this thread).  Only with ``clock="virtual"``."""
        total = int(ms * 1_000_000) + int(us * 1_000) + int(ns)
        if total < 0:
            raise _core.InvalidArgument(f"advance: time cannot go backwards ({total} ns)")
        super().advance(total)

    def msecs_to_jiffies(self, ms: int) -> int:
        """msecs_to_jiffies(): rounds up."""
        return -(-ms * self.HZ // 1000)

    # -- memory -------------------------------------------------------------------
    def alloc_pages(self, order: int = 0, gfp: int = _core.GFP_KERNEL, *,
                    cpu: Optional[int] = None) -> Optional[int]:
        """alloc_pages(): the block's address, or None when the allocation fails."""
        _check_order(order)
        with self._cpu(cpu):
            return super().alloc_pages(order, gfp)

    def free_pages(self, addr: int, order: int = 0, *,
                   cpu: Optional[int] = None) -> None:
        """__free_pages(): ValueError if addr is not an allocated block of that order."""
        _check_addr(addr)
        _check_order(order)
        with self._cpu(cpu):
            super().free_pages(addr, order)

    # -- fault injection ------------------------------------------------------------
    def fault(self, name: str) -> Dict[str, int]:
        """State of ``failslab`` or ``fail_page_alloc``, as its debugfs directory shows it:
        ``probability``, ``interval``, ``times``, ``space``, ``verbose``, the extra knobs
        (``ignore_gfp_wait`` and ``cache_filter`` for failslab; ``ignore_gfp_wait``,
        ``ignore_gfp_highmem`` and ``min_order`` for fail_page_alloc; 0/1 for the
        bools) and the ``calls``/``failures`` counts."""
        d = super().fault_get(name)
        for knob in _FAULT_KNOBS[name]:
            d[knob.replace("-", "_")] = super().fault_get_flag(name, knob)
        return d

    def set_fault(self, name: str, *, probability: int, interval: int = 1, times: int = -1,
                  space: int = 0, verbose: int = 0, ignore_gfp_wait: Optional[bool] = None,
                  ignore_gfp_highmem: Optional[bool] = None, min_order: Optional[int] = None,
                  cache_filter: Optional[bool] = None) -> None:
        """Set a fault_attr as its debugfs files would (``times=-1``: unlimited).

        The four knobs are always written (their defaults are the boot values); an
        extra knob is written only when given (``None``: unchanged).  ``cache_filter``
        is failslab's, ``ignore_gfp_highmem`` and ``min_order`` fail_page_alloc's;
        giving another attribute's knob is an :class:`odebug.InvalidArgument` and
        then nothing is changed."""
        extras = {"ignore-gfp-wait": ignore_gfp_wait, "ignore-gfp-highmem": ignore_gfp_highmem,
                  "min-order": min_order, "cache-filter": cache_filter}
        given = {knob: v for knob, v in extras.items() if v is not None}
        for knob, v in given.items():
            arg = knob.replace("-", "_")
            if name in _FAULT_KNOBS and knob not in _FAULT_KNOBS[name]:
                raise _core.InvalidArgument(f"{arg}: {name} has no knob {knob!r}")
            check_int(arg, int(v) if isinstance(v, bool) else v, 0,
                      0xFFFFFFFF if knob == "min-order" else 1)
        super().fault_set(name, probability, interval, times, space, verbose)
        for knob, v in given.items():
            super().fault_set_flag(name, knob, int(v))

    # -- log and reports ----------------------------------------------------------------
    @property
    def reports(self) -> Reports:  # type: ignore[override]
        """Every report made so far, oldest first (a list; see :class:`odebug.report.Reports`).

        KASAN reports only its first bad access per boot unless ``kasan_multi_shot``
        is on (the kernel's default; ``k.kasan.multi_shot = True`` turns it on at run
        time, as the kernel's KASAN test module does): the later detections are
        counted in ``.suppressed`` (shown by the list's repr) and the first time
        there are any a :class:`odebug.SuppressedReportsWarning` is issued."""
        r = Reports(_core.Kernel.reports(self, 0))
        r.suppressed = self._suppressed()
        return r

    def _suppressed(self) -> int:
        if self.closed:
            return 0
        n = int(_core.kasan_counters(self)["suppressed"])
        if n and not self.__dict__.get("_warned_suppressed"):
            self.__dict__["_warned_suppressed"] = True
            warnings.warn(f"KASAN suppressed {n} report(s) after the first: kasan_multi_shot is "
                          f"off (boot with it, or set k.kasan.multi_shot = True)",
                          SuppressedReportsWarning, stacklevel=3)
        return n

    @contextlib.contextmanager
    def expect_report(self, kind: "Union[str, ReportKind, Pattern[str], None]" = None, *,
                      subsystem: Optional[str] = None,
                      count: Optional[int] = None) -> Iterator[ExpectedReports]:
        """Fail (AssertionError) unless the block makes a matching report (of
        ``subsystem`` too when given; exactly ``count`` of them when given).

        ``kind`` is a :class:`odebug.ReportKind` (that kind exactly), a string
        (a kind, e.g. ``"slab-use-after-free"``, or any part of the report's title,
        e.g. ``"Redzone overwritten"`` matches ``kmalloc Redzone overwritten``), a
        compiled regular expression searched in the title, or None (any report)."""
        start = self.report_count
        got = ExpectedReports()
        yield got
        new = _core.Kernel.reports(self, start)
        got.reports = [r for r in new if r.matches(kind)
                       and (subsystem is None or r.subsystem == subsystem)]
        if not got.reports:
            seen = ", ".join(repr(str(r.kind)) for r in new) or "none"
            n = self._suppressed()
            why = (f" ({n} KASAN report(s) suppressed so far: kasan_multi_shot is off, "
                   f"so KASAN reports only its first bad access)" if n else "")
            want = kind.pattern if isinstance(kind, re.Pattern) else (kind or "any")
            raise AssertionError(f"expected a {want!s} report, got: {seen}{why}")
        if count is not None and len(got.reports) != count:
            raise AssertionError(f"expected {count} {kind!r} reports, got {len(got.reports)}")

    def stack(self, handle: int) -> str:
        """A stack-depot stack as the kernel prints it."""
        return super().stack_text(handle)

    # -- the other spellings (deprecated for one release: one name per thing) ----------
    def current_cpu(self) -> int:
        """Deprecated: use the ``cpu`` property."""
        _deprecated("current_cpu()", "cpu")
        return super().current_cpu()

    def current_pid(self) -> int:
        """Deprecated: use the ``pid`` property."""
        _deprecated("current_pid()", "pid")
        return super().current_pid()

    def lock_bias_info(self) -> Dict[str, int]:
        """Deprecated: use the ``lock_bias`` property."""
        _deprecated("lock_bias_info()", "lock_bias")
        return super().lock_bias_info()

    @property
    def hz(self) -> int:
        """Deprecated: use ``HZ``."""
        _deprecated("hz", "HZ")
        return super().hz

    def fault_get(self, name: str) -> Dict[str, int]:
        """Deprecated: use ``fault(name)``."""
        _deprecated("fault_get()", "fault()")
        return super().fault_get(name)

    def fault_set(self, name: str, probability: int, interval: int = 1, times: int = -1,
                  space: int = 0, verbose: int = 0) -> None:
        """Deprecated: use ``set_fault(name, probability=..., ...)``."""
        _deprecated("fault_set()", "set_fault()")
        super().fault_set(name, probability, interval, times, space, verbose)

    def fault_set_flag(self, name: str, knob: str, value: int) -> None:
        """Deprecated: use ``set_fault(name, ..., ignore_gfp_wait=..., min_order=...)``."""
        _deprecated("fault_set_flag()", "set_fault()'s knob keywords")
        super().fault_set_flag(name, knob, value)

    def stack_text(self, handle: int) -> str:
        """Deprecated: use ``stack(handle)``."""
        _deprecated("stack_text()", "stack()")
        return super().stack_text(handle)

    # -- debug objects ----------------------------------------------------------------
    @property
    def debug_objects(self) -> "DebugObjects":
        """The debug-objects tracker (lib/debugobjects.c, v5.3): init, activate, ...,
        stats(); see :mod:`odebug.debugobjects`."""
        from .debugobjects import DebugObjects
        return DebugObjects(self)   # a light view: no reference cycle with the kernel


def _check_order(order: int) -> None:
    if not isinstance(order, int) or isinstance(order, bool):
        raise TypeError(f"order: expected int, not {type(order).__name__}")
    if not 0 <= order <= _core.MAX_PAGE_ORDER:
        raise _core.InvalidArgument(f"order: must be 0..{_core.MAX_PAGE_ORDER}, not {order}")


def _check_addr(addr: int) -> None:
    if not isinstance(addr, int) or isinstance(addr, bool):
        raise TypeError(f"addr: expected int, not {type(addr).__name__}")
    if not 0 <= addr < 1 << 64:
        raise _core.InvalidArgument(f"addr: 0x{addr:x} is not a 64-bit address" if addr >= 0 else
                         f"addr: negative address {addr}")
