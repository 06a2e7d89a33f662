"""Tools for testing and fuzzing with odebug: hypothesis settings profiles,
strategies for operation sequences, and ready state machines with models and
invariants that users subclass.

    from hypothesis.stateful import rule
    from odebug.testing import QuarantineMachine

    class MyMachine(QuarantineMachine):
        @rule()
        def my_rule(self):             # self.kernel: a fresh kernel per example
            p = self.kernel.kmalloc(24)
            self.kernel.kfree(p)
            self.kernel.read(p, 1)     # a use-after-free: the example fails
    TestMine = MyMachine.TestCase

Every machine (:class:`SlabMachine`, :class:`QuarantineMachine`,
:class:`DebugObjectsMachine`) derives from :class:`KernelMachine`:

* ``self.kernel`` is a fresh :class:`odebug.Kernel` for each example (booted in
  ``__init__``, so it exists before any rule, ``@initialize`` ones included);
* every call made through it is recorded as a line of Python, so a failing
  example is printed as a **standalone reproducer script** (``import odebug``,
  the boot, the calls of the shrunk example) followed by **the kernel reports**
  it produced;
* the example fails when the kernel makes a report that the machine's model did
  not expect (the machine's own rules acknowledge the reports they predict, see
  :meth:`KernelMachine.acknowledge`), so a rule added by a user that contains a
  use-after-free or a double free is caught, and shrunk.

:func:`find_failure` runs a machine outside pytest and returns the shrunk
failure as plain data (:class:`Failure`: script, reports, error), e.g. for a
notebook or a fuzz campaign on an executor (:func:`odebug.lab.fuzz_task`).

Profiles (``HYPOTHESIS_PROFILE=dev|ci|fuzz``, registered by
``register_profiles()``): ``dev`` small and fast, ``ci`` derandomized with no
database, ``fuzz`` long campaigns with the example database on.
"""
from __future__ import annotations

import bisect
import os
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Type

try:
    from hypothesis import HealthCheck, settings
    from hypothesis import strategies as st
    from hypothesis.control import current_build_context
    from hypothesis.stateful import (Bundle, RuleBasedStateMachine, consumes, invariant,
                                     precondition, rule, run_state_machine_as_test)
except ImportError as e:  # pragma: no cover - hypothesis is an extra
    raise ImportError("odebug.testing needs hypothesis: pip install 'odebug[test]'") from e

from . import _core
from . import _models as model
from .debugobjects import DebugObjects, ObjectDescr
from .kasan import Kasan, Quarantine
from .kernel import Kernel
from .report import Report
from .slab import SLAB_NO_USER_FLAGS, SLAB_POISON, SLAB_RED_ZONE, Cache

MiB = 1 << 20


def register_profiles() -> str:
    """Register the dev/ci/fuzz profiles and load HYPOTHESIS_PROFILE (or ``ci``
    when $CI is set, else ``dev``).  Returns the loaded profile's name."""
    settings.register_profile("dev", max_examples=25, stateful_step_count=30, deadline=None)
    settings.register_profile("ci", max_examples=40, stateful_step_count=40, deadline=None,
                              derandomize=True, database=None, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("fuzz", max_examples=20_000, stateful_step_count=200,
                              deadline=None, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow])
    name = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
    settings.load_profile(name)
    return name


def _should_note() -> bool:
    """True on the final (shrunk, failing) run of a hypothesis test."""
    try:
        from hypothesis.control import should_note
        return should_note()
    except ImportError:  # pragma: no cover - older hypothesis
        try:
            return current_build_context().is_final
        except Exception:
            return False
    except Exception:
        return False


# ---- recording: every call on the kernel as a line of Python ---------------------------------
#: calls that only look: not written into the reproducer
QUIET = frozenset({
    "reports", "dmesg", "slabinfo", "slabinfo_text", "slab_object", "lookup", "state", "stats",
    "stats_text", "internals", "shadow", "info", "counters", "fault", "fault_get", "stack",
    "stack_text", "current_cpu", "current_pid", "cache", "caches", "stack_bounds", "close",
    "msecs_to_jiffies", "enabled", "policy", "lock_bias", "lock_bias_info", "HZ", "hz", "cpu", "pid",
})
#: calls whose int result is a new address, bound to a name (p1, p2, ...)
_ALLOCATORS = frozenset({"alloc", "zalloc", "kmalloc", "kzalloc", "krealloc", "alloc_pages"})
_CONTEXTS = frozenset({"on_cpu", "expect_report"})
_ADDR_MIN = 1 << 40


def _fmt_key(key: Any) -> str:
    if isinstance(key, slice):
        parts = ["" if v is None else repr(v) for v in (key.start, key.stop)]
        s = ":".join(parts)
        return s + (f":{key.step!r}" if key.step is not None else "")
    return repr(key)


class Recorder:
    """The reproducer under construction: a prelude (imports, the boot, setup
    lines) and one line per recorded call, with addresses given names."""

    def __init__(self) -> None:
        self.prelude: List[str] = ["import odebug"]
        self.lines: List[str] = []
        self.indent = 0
        self.paused = 0
        self._names: Dict[int, str] = {}
        self._addrs: List[int] = []
        self._aliases: Dict[int, str] = {}
        self._keep: List[Any] = []
        self._n = 0

    # -- building -----------------------------------------------------------------------------
    def emit(self, line: str) -> None:
        """Append a line of the reproducer (at the current ``with`` depth)."""
        self.lines.append("    " * self.indent + line)

    def setup(self, line: str) -> None:
        """Append a line to the prelude (after the imports and the boot)."""
        if line not in self.prelude:
            self.prelude.append(line)

    def alias(self, obj: Any, expr: str) -> None:
        """Render ``obj`` as ``expr`` in recorded calls (e.g. a descriptor variable)."""
        self._aliases[id(obj)] = expr
        self._keep.append(obj)

    def name_addr(self, addr: int, prefix: str = "p") -> str:
        """A fresh name for a newly allocated address."""
        self._n += 1
        name = f"{prefix}{self._n}"
        if addr not in self._names:
            bisect.insort(self._addrs, addr)
        self._names[addr] = name
        return name

    def render(self, v: Any) -> str:
        """Python source for a value passed to a recorded call."""
        alias = self._aliases.get(id(v))
        if alias is not None:
            return alias
        if isinstance(v, _Proxy):
            expr: str = v._expr
            return expr
        if isinstance(v, bool) or v is None:
            return repr(v)
        if isinstance(v, int):
            return self._render_int(v)
        if isinstance(v, (list, tuple)):
            inner = ", ".join(self.render(x) for x in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
        if isinstance(v, (bytearray, memoryview)):
            return repr(bytes(v))
        if isinstance(v, ObjectDescr):
            return f"odebug.ObjectDescr({v.name!r})"
        if isinstance(v, Kernel):
            return "k"
        return repr(v)

    def _render_int(self, v: int) -> str:
        if v < _ADDR_MIN or not self._addrs:
            return repr(v)
        i = bisect.bisect_right(self._addrs, v)
        if i and v - self._addrs[i - 1] < 1 << 16:
            base = self._addrs[i - 1]
            off = v - base
            return self._names[base] + (f" + {off}" if off else "")
        if i < len(self._addrs) and self._addrs[i] - v <= 64:
            base = self._addrs[i]
            return f"{self._names[base]} - {base - v}"
        return hex(v)

    def args(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> str:
        parts = [self.render(a) for a in args]
        parts += [f"{key}={self.render(val)}" for key, val in kwargs.items()]
        return ", ".join(parts)

    # -- output --------------------------------------------------------------------------------
    @property
    def calls(self) -> int:
        """Number of recorded lines."""
        return len(self.lines)

    def script(self, *, print_reports: bool = True) -> str:
        """The standalone reproducer: prelude, calls, then the reports printed."""
        out = list(self.prelude) + list(self.lines)
        if print_reports:
            out += ["for r in k.reports:",
                    "    print(r.subsystem, r.kind)",
                    "    print(r.text)"]
        return "\n".join(out) + "\n"


class _Proxy:
    """A recording view of a Cache / Kasan / Quarantine / DebugObjects."""

    __slots__ = ("_obj", "_rec", "_expr")

    def __init__(self, obj: Any, rec: Recorder, expr: str) -> None:
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_rec", rec)
        object.__setattr__(self, "_expr", expr)

    def __getattr__(self, name: str) -> Any:
        v = getattr(self._obj, name)
        if name.startswith("_") or self._rec.paused:
            return v
        return _wrap(self._rec, self._expr, name, v)

    def __repr__(self) -> str:
        return f"<recording {self._obj!r}>"

    def __eq__(self, other: Any) -> bool:
        eq: bool = self._obj == (other._obj if isinstance(other, _Proxy) else other)
        return eq

    def __hash__(self) -> int:
        return hash(self._obj)

    def unwrap(self) -> Any:
        """The object behind this view (calls on it are not recorded)."""
        return self._obj


class _Raw:
    """A recording view of ``k.raw(addr, n)``: item assignments are stray writes."""

    __slots__ = ("_mv", "_rec", "_expr")

    def __init__(self, mv: memoryview, rec: Recorder, expr: str) -> None:
        self._mv, self._rec, self._expr = mv, rec, expr

    def __setitem__(self, key: Any, value: Any) -> None:
        self._mv[key] = value
        self._rec.emit(f"{self._expr}[{_fmt_key(key)}] = {self._rec.render(value)}")

    def __getitem__(self, key: Any) -> Any:
        return self._mv[key]

    def __len__(self) -> int:
        return len(self._mv)

    def __bytes__(self) -> bytes:
        return bytes(self._mv)

    def tobytes(self) -> bytes:
        return self._mv.tobytes()


class _RecordedContext:
    """``with k.on_cpu(1):`` / ``with k.expect_report(...):`` recorded as a block."""

    def __init__(self, rec: Recorder, call: str, cm: Any) -> None:
        self._rec, self._call, self._cm = rec, call, cm

    def __enter__(self) -> Any:
        self._rec.paused += 1
        try:
            v = self._cm.__enter__()
        finally:
            self._rec.paused -= 1
        self._rec.emit(f"with {self._call}:")
        self._rec.indent += 1
        self._start = len(self._rec.lines)
        return v

    def __exit__(self, *exc: Any) -> Any:
        if len(self._rec.lines) == self._start:
            self._rec.emit("pass")
        self._rec.indent -= 1
        self._rec.paused += 1
        try:
            return self._cm.__exit__(*exc)
        finally:
            self._rec.paused -= 1


def _wrap(rec: Recorder, expr: str, name: str, v: Any) -> Any:
    if isinstance(v, (Kasan, Quarantine, DebugObjects)):
        return _Proxy(v, rec, f"{expr}.{name}")
    if isinstance(v, Cache):
        return _Proxy(v, rec, f"k.cache({v.name!r})")
    if callable(v) and not isinstance(v, type):
        if name in QUIET:
            def quiet(*args: Any, **kwargs: Any) -> Any:
                rec.paused += 1
                try:
                    r = v(*args, **kwargs)
                finally:
                    rec.paused -= 1
                return _Proxy(r, rec, f"k.cache({r.name!r})") if isinstance(r, Cache) else r
            return quiet

        def recorded(*args: Any, **kwargs: Any) -> Any:
            call = f"{expr}.{name}({rec.args(args, kwargs)})"
            if name in _CONTEXTS:
                return _RecordedContext(rec, call, v(*args, **kwargs))
            rec.paused += 1
            try:
                r = v(*args, **kwargs)
            except BaseException as e:
                rec.emit("try:")
                rec.emit(f"    {call}")
                rec.emit(f"except Exception as e:   # {type(e).__name__}: {str(e)[:60]}")
                rec.emit("    print(type(e).__name__, e)")
                raise
            finally:
                rec.paused -= 1
            if isinstance(r, Cache):
                rec.emit(call)
                return _Proxy(r, rec, f"k.cache({r.name!r})")
            if name == "raw" and isinstance(r, memoryview):
                return _Raw(r, rec, call)
            if isinstance(r, int) and not isinstance(r, bool) and name in _ALLOCATORS and r:
                rec.emit(f"{rec.name_addr(r)} = {call}")
            elif name == "alloc_bulk" and isinstance(r, list):
                var = rec.name_addr(r[0], "b") if r else "_"
                for i, a in enumerate(r[1:], 1):
                    if a not in rec._names:
                        bisect.insort(rec._addrs, a)
                    rec._names[a] = f"{var}[{i}]"
                if r:
                    rec._names[r[0]] = f"{var}[0]"
                rec.emit(f"{var} = {call}")
            else:
                rec.emit(call)
            return r
        return recorded
    return v


class RecordingKernel(Kernel):
    """An :class:`odebug.Kernel` whose public calls are recorded (``.recorder``)
    as the lines of a reproducer script.  It is a real Kernel: pass it anywhere
    a Kernel goes (calls made inside odebug are not recorded twice)."""

    def __init__(self, cmdline: str = "", *, recorder: Optional[Recorder] = None,
                 **kw: Any) -> None:
        rec = recorder or Recorder()
        object.__setattr__(self, "_rec", rec)
        rec.paused += 1
        try:
            super().__init__(cmdline, **kw)
        finally:
            rec.paused -= 1
        args = ", ".join([repr(cmdline)] + [f"{key}={val!r}" for key, val in kw.items()])
        rec.setup(f"k = odebug.Kernel({args})")

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_"):
            return super().__getattribute__(name)
        rec = super().__getattribute__("_rec")
        if rec.paused:
            return super().__getattribute__(name)
        rec.paused += 1          # a property's own calls are not recorded
        try:
            v = super().__getattribute__(name)
        finally:
            rec.paused -= 1
        return _wrap(rec, "k", name, v)

    @property
    def recorder(self) -> Recorder:
        """The :class:`Recorder` holding this kernel's reproducer."""
        rec: Recorder = self._rec
        return rec

    @property
    def real(self) -> "RecordingKernel":
        """Self, for symmetry with the recording views of sub-objects."""
        return self


def format_reports(reports: Iterable[Report], *, full: bool = True) -> str:
    """Reports as text: a ``[subsystem] kind`` header each, then (``full``) its
    kernel-format lines."""
    out = []
    for r in reports:
        out.append(f"[{r.subsystem}] {r.kind}" + (f" (cache {r.cache})" if r.cache else ""))
        if full:
            out.append(r.text.rstrip("\n"))
    return "\n".join(out)


# ---- a failing example, as plain data ----------------------------------------------------------
@dataclass
class Failure:
    """A failing example: the reproducer ``script``, the kernel's ``reports``
    (plain dicts: subsystem, kind, cache, text, expected), the ``error``."""
    machine: str
    script: str
    reports: List[Dict[str, Any]] = field(default_factory=list)
    error: str = ""
    calls: int = 0

    @property
    def unexpected(self) -> List[Dict[str, Any]]:
        """The reports the model did not expect."""
        return [r for r in self.reports if not r["expected"]]

    def __str__(self) -> str:
        head = (f"odebug reproducer ({self.machine}, {self.calls} recorded calls); "
                "run it as a script:")
        script = "\n".join("    " + line for line in self.script.rstrip("\n").splitlines())
        unexpected = self.unexpected
        lines = [head, script, "",
                 f"kernel reports in this example: {len(self.reports)}, "
                 f"not expected by the model: {len(unexpected)}"]
        shown = unexpected or self.reports[-1:]
        for r in self.reports:
            mark = "" if r["expected"] else "  <-- unexpected"
            lines.append(f"  [{r['subsystem']}] {r['kind']}"
                         + (f" (cache {r['cache']})" if r["cache"] else "") + mark)
        for r in shown:
            lines += ["", r["text"].rstrip("\n")]
        if self.error:
            lines += ["", f"error: {self.error}"]
        return "\n".join(lines)

    def replay(self) -> str:
        """Run the script in a fresh namespace of this process; its printed output."""
        import contextlib
        import io
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            ns: Dict[str, Any] = {"__name__": "__odebug_reproducer__"}
            try:
                exec(compile(self.script, "<odebug reproducer>", "exec"), ns)
            finally:
                k = ns.get("k")
                if isinstance(k, Kernel):
                    k.close()
        return buf.getvalue()


_LAST: Dict[type, Failure] = {}


class KernelMachine(RuleBasedStateMachine):
    """Base of the ready machines: a fresh recording kernel per example
    (``self.kernel``), reports checked against the model, and the failing
    example printed as a reproducer script plus its reports.

    Subclasses set ``cmdline`` (the kernel command line each example boots with:
    a class attribute or a property; override it to test other boot options,
    e.g. ``cmdline = SlabMachine.cmdline + " odebug.slub_path=modern"``),
    ``cpus``, ``ram``, ``seed``; their rules call :meth:`acknowledge` after a
    call whose reports the model predicted (and asserted), or override
    :meth:`report_expected`.  Any other report fails the example (invariant
    ``no_unexpected_reports``).
    """

    cmdline = ""
    cpus = 2
    ram = "64M"
    seed = 0

    def __init__(self) -> None:
        super().__init__()
        self.recorder = Recorder()
        self._acked_seq = 0
        self.kernel: RecordingKernel = self.boot()

    def boot(self) -> RecordingKernel:
        """Make this example's kernel (recorded as the reproducer's first line)."""
        return RecordingKernel(self.cmdline, cpus=self.cpus, ram=self.ram, seed=self.seed,
                               recorder=self.recorder)

    # -- reports -------------------------------------------------------------------------------------
    def acknowledge(self) -> None:
        """Every report made so far was expected by the model."""
        rs = self.kernel.reports
        if rs:
            self._acked_seq = max(self._acked_seq, rs[-1].seq)

    def report_expected(self, report: Report) -> bool:
        """Override: True if the model expects this (not acknowledged) report."""
        return False

    def unexpected_reports(self) -> List[Report]:
        """Reports made since the last :meth:`acknowledge` that the model did not expect."""
        return [r for r in self.kernel.reports
                if r.seq > self._acked_seq and not self.report_expected(r)]

    @invariant()
    def no_unexpected_reports(self) -> None:
        bad = self.unexpected_reports()
        if bad:
            kinds = ", ".join(f"{r.subsystem}:{r.kind}" for r in bad)
            raise AssertionError(f"the kernel made {len(bad)} report(s) the model did not "
                                 f"expect: {kinds}\n{format_reports(bad[:1])}")

    # -- recording ------------------------------------------------------------------------------------
    def quietly(self) -> "_Quiet":
        """``with self.quietly(): ...``: calls in the block are not recorded
        (emit a summary line with ``self.recorder.emit(...)`` instead)."""
        return _Quiet(self.recorder)

    def failure(self, error: str = "") -> Failure:
        """This example as a :class:`Failure` (script, reports)."""
        bad = {r.seq for r in self.unexpected_reports()}
        reps = [dict(subsystem=r.subsystem, kind=r.kind, cache=r.cache, text=r.text,
                     expected=r.seq not in bad) for r in self.kernel.reports]
        return Failure(machine=type(self).__name__, script=self.recorder.script(),
                       reports=reps, error=error, calls=self.recorder.calls)

    def reproducer(self) -> str:
        """The standalone Python script replaying this example's kernel calls."""
        return self.recorder.script()

    def teardown(self) -> None:
        try:
            if not self.kernel.closed and _should_note():
                import sys
                exc = sys.exc_info()[1]
                err = "" if exc is None else "".join(
                    traceback.format_exception_only(type(exc), exc)).strip()
                f = self.failure(err)
                _LAST[type(self)] = f
                from hypothesis import note
                note(str(f))
        finally:
            self.kernel.close()


class _Quiet:
    def __init__(self, rec: Recorder) -> None:
        self._rec = rec

    def __enter__(self) -> None:
        self._rec.paused += 1

    def __exit__(self, *exc: Any) -> None:
        self._rec.paused -= 1


def find_failure(machine: Type[KernelMachine], *, max_examples: int = 200,
                 steps: int = 30, derandomize: bool = True,
                 seed: Optional[int] = None) -> Optional[Failure]:
    """Run ``machine`` under hypothesis (quietly, no database) and return its
    shrunk failing example as a :class:`Failure`, or None if none was found.
    ``seed`` (with ``derandomize=False``) picks hypothesis' random seed."""
    from hypothesis import Phase, Verbosity, core
    # no explain phase: it re-runs the failure hundreds of times to annotate lines
    # (most of the time of a concurrent machine's find), and nothing here prints it
    s = settings(max_examples=max_examples, stateful_step_count=steps, deadline=None,
                 database=None, derandomize=derandomize, print_blob=False,
                 verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck),
                 phases=[p for p in Phase if p.name != "explain"], report_multiple_bugs=False)
    _LAST.pop(machine, None)
    old = getattr(core, "global_force_seed", None)
    if seed is not None and not derandomize:
        # hypothesis types this private knob as None
        core.global_force_seed = seed  # type: ignore[assignment]
    try:
        run_state_machine_as_test(machine, settings=s)
    except Exception as e:  # the shrunk failure
        f = _LAST.get(machine)
        if f is None:
            raise
        f.error = "".join(traceback.format_exception_only(type(e), e)).strip().splitlines()[0]
        return f
    finally:
        if seed is not None and not derandomize:
            core.global_force_seed = old
    return None


# ---- strategies --------------------------------------------------------------------------------
#: cache configurations: (object size, debug flags)
cache_configs = st.tuples(st.sampled_from([8, 24, 64, 100, 192, 512]),
                          st.sampled_from(["-", "P", "Z", "ZP", "FZPU", "U"]))
#: a vCPU of a 2-vCPU kernel
vcpus = st.integers(min_value=0, max_value=1)
#: kmalloc sizes across the size classes (96/192 included) and the large path
sizes = st.sampled_from([1, 8, 13, 16, 24, 40, 64, 96, 100, 128, 192, 256, 512, 1000, 4096, 9000])
#: sizes that stay in the small kmalloc caches
small_sizes = st.sampled_from([8, 13, 24, 40, 64, 100, 128])
#: virtual time steps (ms)
advances = st.sampled_from([0, 1, 10, 99, 100, 150, 1000])
#: debug-object operations
DOBJ_OPS = ("init", "activate", "deactivate", "destroy", "free", "assert_init")


def stray_writes(max_offset: int = 256) -> st.SearchStrategy:
    """(offset from an object's start, byte value): offsets -16..max_offset hit
    the left red zone, the object, its right red zone and beyond."""
    return st.tuples(st.integers(-16, max_offset), st.integers(0, 255))


@dataclass(frozen=True)
class Op:
    """One operation of a sequence: ``name`` and its arguments.  Objects are
    referred to by index ``i`` into the live (or freed) list at run time,
    modulo its length, so sequences shrink well."""
    name: str
    args: Tuple[Any, ...] = ()

    def __repr__(self) -> str:
        return f"{self.name}{self.args!r}" if len(self.args) != 1 else f"{self.name}({self.args[0]!r})"


def operations(*, max_ops: int = 40, cpus: int = 2, debug_objects: bool = True,
               stray: bool = False, misuse: bool = False,
               size: st.SearchStrategy = sizes) -> st.SearchStrategy:
    """Lists of :class:`Op`: alloc/free/read/write/validate/advance (and
    debug-object ops, stray writes with ``stray``, double frees and
    use-after-frees with ``misuse``) for :func:`run_ops`."""
    idx = st.integers(0, 63)
    cpu = st.integers(0, cpus - 1)
    ops = [
        st.builds(lambda s, c: Op("alloc", (s, c)), size, cpu),
        st.builds(lambda i, c: Op("free", (i, c)), idx, cpu),
        st.builds(lambda i, o, n, c: Op("read", (i, o, n, c)), idx, st.integers(0, 4095),
                  st.sampled_from([1, 2, 4, 8, 16]), cpu),
        st.builds(lambda i, o, n, c: Op("write", (i, o, n, c)), idx, st.integers(0, 4095),
                  st.sampled_from([1, 2, 4, 8, 16]), cpu),
        st.just(Op("validate")),
        st.builds(lambda ms: Op("advance", (ms,)), advances),
    ]
    if debug_objects:
        ops.append(st.builds(lambda o, i: Op("dobj", (o, i)), st.sampled_from(DOBJ_OPS), idx))
    if stray:
        ops.append(st.builds(lambda i, w: Op("stray", (i,) + w), idx, stray_writes()))
    if misuse:
        ops.append(st.builds(lambda i: Op("double_free", (i,)), idx))
        ops.append(st.builds(lambda i, o: Op("use_after_free", (i, o)), idx, st.integers(0, 4095)))
    return st.lists(st.one_of(ops), max_size=max_ops)


@dataclass
class OpsRun:
    """What :func:`run_ops` did: per op, whether it ran and the reports it made."""
    steps: List[Tuple[Op, bool, List[Report]]]
    script: str

    @property
    def reports(self) -> List[Report]:
        """Every report, in order."""
        return [r for _, _, rs in self.steps for r in rs]

    def unexpected(self) -> List[Report]:
        """Reports made by ops that were not misuse (stray, double_free, use_after_free)."""
        return [r for op, _, rs in self.steps if op.name not in _MISUSE for r in rs]


_MISUSE = frozenset({"stray", "double_free", "use_after_free"})


def run_ops(kernel: Kernel, ops: Sequence[Op], *, descr: Optional[ObjectDescr] = None) -> OpsRun:
    """Run an operation sequence on ``kernel`` (e.g. from :func:`operations`).

    Objects come from kmalloc; reads and writes stay inside live objects; debug
    objects follow their legal transitions (an op that would be illegal in the
    tracked state is skipped, and ``free`` deactivates and frees a tracked
    object first), so only the misuse ops (stray writes, double frees,
    use-after-frees) should make reports: ``run.unexpected()`` lists the others.
    The run is recorded: ``run.script`` replays it (on a fresh kernel with the
    same boot parameters)."""
    rec = Recorder()
    rec.setup(f"k = odebug.Kernel({kernel.cmdline!r}, cpus={kernel.nr_cpus}, "
              f"ram={kernel.totalram_pages * 4096}, clock={kernel.clock!r})")
    d = descr or ObjectDescr("odebug_ops")
    rec.setup(f"d = odebug.ObjectDescr({d.name!r})")
    rec.alias(d, "d")
    live: List[Tuple[int, int]] = []
    freed: List[Tuple[int, int]] = []
    tracked: Dict[int, str] = {}        # addr -> "init" | "active" | "inactive" | "destroyed"
    steps: List[Tuple[Op, bool, List[Report]]] = []
    nc = kernel.nr_cpus
    for op in ops:
        start = kernel.reports[-1].seq if kernel.report_count else 0
        ran = _run_op(kernel, rec, op, d, live, freed, tracked, nc)
        new = [r for r in kernel.reports if r.seq > start]
        steps.append((op, ran, new))
    return OpsRun(steps, rec.script())


def _run_op(k: Kernel, rec: Recorder, op: Op, d: ObjectDescr, live: List[Tuple[int, int]],
            freed: List[Tuple[int, int]], tracked: Dict[int, str], nc: int) -> bool:
    def kw(c: int) -> Dict[str, int]:
        return {"cpu": c % nc}
    proxy = _Proxy(k, rec, "k")
    dob = _Proxy(k.debug_objects, rec, "k.debug_objects")
    a = op.args
    if op.name == "alloc":
        p = proxy.kmalloc(a[0], **kw(a[1]))
        if p is None:
            return False
        live.append((p, a[0]))
        return True
    if op.name == "advance":
        proxy.advance(ms=a[0])
        return True
    if op.name == "validate":
        names = sorted({so[0] for p, _ in live if (so := k.slab_object(p))})
        for n in names:
            if proxy.cache(n).validatable:
                proxy.cache(n).validate()
        return True
    if op.name in ("double_free", "use_after_free"):
        if not freed:
            return False
        p, size = freed[a[0] % len(freed)]
        if any(q == p for q, _ in live):      # reused since: no longer a misuse
            return False
        if op.name == "double_free":
            proxy.kfree(p)
        else:
            proxy.read(p + a[1] % size, 1)
        return True
    if not live:
        return False
    i = (a[1] if op.name == "dobj" else a[0]) % len(live)
    p, size = live[i]
    if op.name == "free":
        st_ = tracked.pop(p, None)
        if st_ == "active":
            dob.deactivate(p, d)
        if st_ is not None:
            dob.free(p, d)
        proxy.kfree(p, **kw(a[1]))
        live.pop(i)
        freed.append((p, size))
        del freed[:-64]
        return True
    if op.name in ("read", "write"):
        off = a[1] % size
        n = 1 + (a[2] - 1) % (size - off)
        if op.name == "read":
            proxy.read(p + off, n, **kw(a[3]))
        else:
            proxy.write(p + off, bytes(range(n)), **kw(a[3]))
        return True
    if op.name == "stray":
        proxy.raw(p + a[1], 1)[0] = a[2]
        return True
    if op.name == "dobj":
        what, cur = a[0], tracked.get(p)
        legal = {"init": cur in (None, "init", "inactive"),
                 "activate": cur in ("init", "inactive"),
                 "deactivate": cur == "active",
                 "destroy": cur in ("init", "inactive"),
                 "free": cur in ("init", "inactive", "destroyed"),
                 "assert_init": cur is not None}[what]
        if not legal:
            return False
        getattr(dob, what)(p, d)
        nxt = {"init": "init", "activate": "active", "deactivate": "inactive",
               "destroy": "destroyed", "free": None, "assert_init": cur}[what]
        if nxt is None:
            tracked.pop(p, None)
        else:
            tracked[p] = nxt
        return True
    raise ValueError(f"run_ops: unknown op {op.name!r}")


# ---- the debug slab ------------------------------------------------------------------------------
class SlabMachine(KernelMachine):
    """alloc / free / validate / stray writes over several caches with different
    debug flags, on two vCPUs, against a model of live objects.

    Invariants after every step: every live object lies inside a slab of its own
    cache, is aligned and is live once; validate() finds exactly the corruptions
    the model made (2 errors per corruption: the report and its FIX); the
    cache's statistics add up (allocations - frees == live objects); no report
    the model did not expect.  The kernel boots with ``kasan=off
    no_debug_objects`` so that the slab alone is under test, and with
    ``slub_debug=FZPU,kmalloc-*``: a rule of a subclass that overflows or
    corrupts a ``kmalloc`` object is caught by the kmalloc caches' checks
    (the machine's own caches take exactly their drawn flags).
    """

    cmdline = "kasan=off no_debug_objects slub_debug=FZPU,kmalloc-*"
    #: the pre-2016 path checks every debug cache (not only F) on alloc and free
    locked = False
    caches = Bundle("caches")
    objects = Bundle("objects")

    def __init__(self) -> None:
        super().__init__()
        self.live: Dict[int, str] = {}           # object -> cache name
        self.cache_flags: Dict[str, str] = {}
        self.allocs: Dict[str, int] = {}
        self.frees: Dict[str, int] = {}
        self.pending: Optional[Tuple[str, int, str]] = None   # (cache, object, where)
        self.freed: Dict[str, List[int]] = {}    # free objects we may poison-corrupt
        # caches with a slab abandoned by "Marking all objects used": its never
        # allocated objects now fail ACTIVE checks one by one on every validate,
        # so their validate counts are no longer predicted exactly
        self.unpredictable: Set[str] = set()
        self._n = 0

    def report_expected(self, report: Report) -> bool:
        # a pending corruption is reported by the next check of its cache
        return report.cache in self.unpredictable or (
            self.pending is not None and report.cache == self.pending[0])

    # -- rules ----------------------------------------------------------------------------
    @rule(target=caches, cfg=cache_configs)
    def create_cache(self, cfg: Tuple[int, str]) -> str:
        size, letters = cfg
        self._n += 1
        name = f"m{self._n}"
        flags = letters if letters != "-" else 0
        bits = flags if isinstance(flags, int) else _core.slab_flags_parse(self.kernel, flags)
        c = self.kernel.kmem_cache_create(name, size, flags=bits | SLAB_NO_USER_FLAGS)
        self.cache_flags[name] = c.flags
        self.allocs[name] = self.frees[name] = 0
        self.freed[name] = []
        return name

    @rule(target=objects, name=caches, cpu=vcpus)
    def alloc(self, name: str, cpu: int) -> int:
        c = self.kernel.cache(name)
        before = self.kernel.slab_errors
        p = c.alloc(cpu=cpu)
        assert p is not None
        assert p not in self.live, "an object handed out twice"
        errs = self.kernel.slab_errors - before
        pend = self.pending
        if name in self.unpredictable:
            self.kernel.clear_reports()
        elif errs:
            # F checks a free object on alloc: a poisoned one at the freelist head
            # gives the report + its FIX + "Marking all objects used", and the
            # allocation moves to another slab (whose old free objects now count
            # as used, so they are no longer free for write_after_free)
            assert pend is not None and pend[0] == name and pend[2] == "poison"
            assert errs == 3, errs
            assert "F" in self.cache_flags[name] or self.locked
            assert p != pend[1]
            self.pending = None
            self.freed[name] = []
            self.unpredictable.add(name)
            self.kernel.clear_reports()
        elif pend is not None and pend[1] == p:
            # without F (relaxed path), init_object() re-poisons it silently
            assert "F" not in self.cache_flags[name] and not self.locked
            self.pending = None
        if p in self.freed[name]:
            self.freed[name].remove(p)
        self.live[p] = name
        self.allocs[name] += 1
        return p

    @rule(p=consumes(objects), cpu=vcpus)
    def free(self, p: int, cpu: int) -> None:
        if self.pending is not None and self.pending[1] == p:
            self.live_only_validate()     # repair first: a corrupted object is not freed
        name = self.live.pop(p)
        self.kernel.cache(name).free(p, cpu=cpu)
        self.frees[name] += 1
        if name not in self.unpredictable:
            self.freed[name].append(p)

    @precondition(lambda self: self.pending is None)
    @rule(p=objects, where=st.sampled_from(["right", "left"]), val=st.integers(0, 255))
    def overflow_live(self, p: int, where: str, val: int) -> None:
        name = self.live[p]
        c = self.kernel.cache(name)
        if "Z" not in self.cache_flags[name] or val == 0xcc or name in self.unpredictable:
            return
        if where == "right":
            addr = p + c.object_size + (c.inuse - c.object_size) - 1
        else:
            addr = p - 1
        self.kernel.raw(addr, 1)[0] = val
        self.pending = (name, p, where)

    @precondition(lambda self: self.pending is None)
    @rule(data=st.data())
    def write_after_free(self, data: st.DataObject) -> None:
        names = [n for n, objs in self.freed.items()
                 if objs and "P" in self.cache_flags[n] and n not in self.unpredictable]
        if not names:
            return
        name = data.draw(st.sampled_from(sorted(names)))
        p = data.draw(st.sampled_from(self.freed[name]))
        c = self.kernel.cache(name)
        off = data.draw(st.integers(0, c.object_size - 2))
        val = data.draw(st.integers(0, 255).filter(lambda v: v != 0x6b))
        self.kernel.raw(p + off, 1)[0] = val
        self.pending = (name, p, "poison")

    @rule()
    def validate_all(self) -> None:
        for name in self.cache_flags:
            c = self.kernel.cache(name)
            if not c.validatable:          # v6.1+: debug caches only (nothing to corrupt here)
                c.flush()
                continue
            errs = c.validate()
            if name in self.unpredictable:
                continue
            expect = 2 if self.pending is not None and self.pending[0] == name else 0
            assert errs == expect, (name, errs, self.pending)
        self.pending = None
        self.kernel.clear_reports()

    def live_only_validate(self) -> None:
        assert self.pending is not None
        name = self.pending[0]
        assert self.kernel.cache(name).validate() == 2
        self.pending = None
        self.kernel.clear_reports()

    # -- invariants ----------------------------------------------------------------------------
    @invariant()
    def objects_belong_to_their_cache(self) -> None:
        for p, name in self.live.items():
            assert self.kernel.slab_object(p) == (name, p)
            assert p % self.kernel.cache(name).align == 0

    @invariant()
    def stats_add_up(self) -> None:
        for name in self.cache_flags:
            s = self.kernel.cache(name).stats()
            assert s["alloc_fastpath"] + s["alloc_slowpath"] == self.allocs[name]
            assert s["free_fastpath"] + s["free_slowpath"] == self.frees[name]
            live = sum(1 for n in self.live.values() if n == name)
            assert self.allocs[name] - self.frees[name] == live


# ---- KASAN and its quarantine ----------------------------------------------------------------------
SIZES = [8, 13, 24, 40, 64, 100, 128]
OOB, UAF = "slab-out-of-bounds", "slab-use-after-free"


def kmalloc_object_size(size: int) -> int:
    """The object size of the small kmalloc cache serving ``size`` bytes."""
    for s in (8, 16, 32, 64, 96, 128, 192):
        if size <= s:
            return s
    raise ValueError(f"kmalloc_object_size: {size} is above kmalloc-192")


class QuarantineMachine(KernelMachine):
    """kmalloc / kfree / double frees / checked accesses in and around objects,
    with generic KASAN and its quarantine (``policy``: ``batched`` or
    ``quarter``), against a model of live and freed objects.

    Every access verdict is checked: inside a live object nothing is reported;
    past its requested size (into the kmalloc slack or the red zone) a
    slab-out-of-bounds; inside a freed (quarantined) object a
    slab-use-after-free; a second kfree a double-free; the access size and
    direction of each report.  Freed objects are not handed out again while
    the model holds them as freed unless the quarantine let them go; the
    quarantine stays within its budget.  ``self.live``: addr -> requested size;
    ``self.freed``: addr -> object size.
    """

    policy = "batched"
    cpus = 1
    ram = "64M"

    @property
    def cmdline(self) -> str:  # type: ignore[override]
        return f"kasan_multi_shot no_debug_objects odebug.quarantine={self.policy}"

    def __init__(self) -> None:
        super().__init__()
        self.live: Dict[int, int] = {}
        self.freed: Dict[int, int] = {}

    @rule(size=st.sampled_from(SIZES), cpu=vcpus)
    def alloc(self, size: int, cpu: int) -> None:
        p = self.kernel.kmalloc(size, cpu=cpu % self.cpus)
        assert p is not None
        self.freed.pop(p, None)
        assert p not in self.live
        self.live[p] = size

    @precondition(lambda self: self.live)
    @rule(data=st.data(), cpu=vcpus)
    def free(self, data: st.DataObject, cpu: int) -> None:
        p = data.draw(st.sampled_from(sorted(self.live)))
        n = self.kernel.report_count
        self.kernel.kfree(p, cpu=cpu % self.cpus)
        assert self.kernel.report_count == n
        self.freed[p] = kmalloc_object_size(self.live.pop(p))

    @precondition(lambda self: self.freed)
    @rule(data=st.data())
    def double_free(self, data: st.DataObject) -> None:
        p = data.draw(st.sampled_from(sorted(self.freed)))
        n = self.kernel.report_count
        self.kernel.kfree(p)
        new = self.kernel.reports[n:]
        assert [r.kind for r in new] == ["double-free"]
        self.acknowledge()

    @precondition(lambda self: self.live or self.freed)
    @rule(data=st.data(), write=st.booleans())
    def access(self, data: st.DataObject, write: bool) -> None:
        p = data.draw(st.sampled_from(sorted(set(self.live) | set(self.freed))))
        cap = self.live.get(p) or self.freed[p]
        off = data.draw(st.integers(-8, cap + 16))
        n = data.draw(st.sampled_from([1, 2, 4, 8, 16, 5]))
        c0 = self.kernel.report_count
        if write:
            self.kernel.write(p + off, b"\0" * n)
        else:
            self.kernel.read(p + off, n)
        new = self.kernel.reports[c0:]
        if p in self.live:
            size = self.live[p]
            ok = off >= 0 and off + n <= size
            # the access may run into a neighbour (allocated or not): only the
            # verdict inside our own object + redzone is modelled exactly
            if ok:
                assert new == [], [r.kind for r in new]
            elif off >= 0 and off < size:
                assert [r.kind for r in new] == [OOB]
            elif off >= size and off + n <= kmalloc_object_size(size) + 16:
                assert [r.kind for r in new] == [OOB]
        else:
            if 0 <= off < cap:
                assert [r.kind for r in new] == [UAF]
        for r in new:
            assert r.size == n and r.is_write == write
        self.acknowledge()

    @invariant()
    def quarantine_bounded(self) -> None:
        s = self.kernel.kasan.quarantine.stats()
        assert s["size"] <= self.kernel.totalram_pages * 4096 // 32 + 2 * MiB


# ---- debug objects ---------------------------------------------------------------------------------
DOBJ_BASE = 0xffff_c900_0000_0000
DOBJ_ADDRS = [DOBJ_BASE + c * 4096 + o * 64 for c in range(3) for o in range(3)]
DOBJ_STATIC = DOBJ_ADDRS[1::4]
DOBJ_BULK = DOBJ_BASE + (1 << 32)
ON_STACK_KINDS = ("object is on stack, but NOT annotated", "object is NOT on stack, but annotated")

#: the descriptor behaviours of DebugObjectsMachine (shared by kernel and model)
BEHAVIOURS = [
    model.Behaviour("plain"),
    model.Behaviour("selftest", static_addrs=DOBJ_STATIC, fixups="selftest"),
    model.Behaviour("falsy", static_addrs=DOBJ_STATIC[:1], fixups="false", assert_fixup=True),
]


def behaviour_descr(kernel: Kernel, b: "model.Behaviour") -> ObjectDescr:
    """An :class:`odebug.ObjectDescr` whose callbacks do what behaviour ``b``
    says (the same behaviour drives the model's descriptor)."""
    holder: Dict[str, ObjectDescr] = {}

    def fx(which: str) -> Optional[Callable[[int, int], bool]]:
        def f(addr: int, state: int) -> bool:
            return b.fixup(kernel.debug_objects, which, addr, state, holder["d"])
        return f if b.has(which) else None
    holder["d"] = ObjectDescr(
        b.name, is_static_object=lambda a: b.is_static_object(None, a),
        fixup_init=fx("init"), fixup_activate=fx("activate"), fixup_destroy=fx("destroy"),
        fixup_free=fx("free"), fixup_assert_init=fx("assert_init"))
    return holder["d"]


class DebugObjectsMachine(KernelMachine):
    """The debug-objects tracker against its Python model (odebug._models),
    step by step: states, return values, warnings in order, fixups, every pool
    counter and the freeing work's scheduling, under the ``policy`` (``lazy``
    or ``eager``), several vCPUs, static objects, re-entrant fixups, range
    checks, OOM and failed trylocks.  ``self.model`` is the model;
    ``self.call(op, *args, descr=i)`` runs an op on both."""

    policy = "lazy"
    cpus = 2
    ram = "32M"
    #: boot with the kernel's selftest (else odebug.objects_selftest=off)
    selftest = True

    @property
    def cmdline(self) -> str:  # type: ignore[override]
        cmd = f"kasan=off odebug.objects_free={self.policy}"
        return cmd if self.selftest else cmd + " odebug.objects_selftest=off"

    def __init__(self) -> None:
        super().__init__()
        k = self.kernel
        self.d = k.debug_objects
        k.set_fault("failslab", probability=0, verbose=0)
        start = self.d.internals() if self.selftest else None
        self.model = model.Model(ncpus=self.cpus, eager=self.policy == "eager", start=start,
                                 hz=k.HZ, now_ns=k.now_ns)
        with self.quietly():
            self.kd = [behaviour_descr(k, b) for b in BEHAVIOURS]
        self.recorder.setup("from odebug.testing import BEHAVIOURS, behaviour_descr")
        for i, descr in enumerate(self.kd):
            self.recorder.setup(f"d{i} = behaviour_descr(k, BEHAVIOURS[{i}])")
            self.recorder.alias(descr, f"d{i}")
        self.md = [model.MDescr(b) for b in BEHAVIOURS]
        self.nbulk = 0

    def call(self, op: str, *args: Any, descr: Optional[int] = None) -> Tuple[Any, Any]:
        """Run ``op`` on the kernel and on the model; (kernel result, model result).
        The warnings it makes are checked against the model's by ``same``."""
        if descr is None:
            r1 = getattr(self.d, op)(*args)
            r2 = getattr(self.model, op)(*args)
        else:
            r1 = getattr(self.d, op)(*args[:1], self.kd[descr], *args[1:])
            r2 = getattr(self.model, op)(*args[:1], self.md[descr], *args[1:])
        self.acknowledge()
        return r1, r2

    addr = st.sampled_from(DOBJ_ADDRS)
    descr = st.integers(0, len(BEHAVIOURS) - 1)

    @rule(a=addr, i=descr)
    def init(self, a: int, i: int) -> None:
        self.call("init", a, descr=i)

    @rule(a=addr, i=descr)
    def activate(self, a: int, i: int) -> None:
        r1, r2 = self.call("activate", a, descr=i)
        assert r1 == r2

    @rule(a=addr, i=descr)
    def deactivate(self, a: int, i: int) -> None:
        self.call("deactivate", a, descr=i)

    @rule(a=addr, i=descr)
    def destroy(self, a: int, i: int) -> None:
        self.call("destroy", a, descr=i)

    @rule(a=addr, i=descr)
    def free(self, a: int, i: int) -> None:
        self.call("free", a, descr=i)

    @rule(a=addr, i=descr)
    def assert_init(self, a: int, i: int) -> None:
        self.call("assert_init", a, descr=i)

    @rule(a=addr, i=descr, expect=st.integers(0, 2), nxt=st.integers(0, 2))
    def active_state(self, a: int, i: int, expect: int, nxt: int) -> None:
        self.call("active_state", a, expect, nxt, descr=i)

    @rule(a=addr, delta=st.sampled_from([-8, 0, 8]),
          size=st.sampled_from([0, 64, 200, 4096, 3 * 4096 + 100]))
    def check_no_obj_freed(self, a: int, delta: int, size: int) -> None:
        self.call("check_no_obj_freed", a + delta, size)

    def _bulk(self, op: str, lo: int, hi: int) -> None:
        self.recorder.emit(f"for j in range({lo}, {hi}):")
        self.recorder.emit(f"    k.debug_objects.{op}({hex(DOBJ_BULK)} + 64 * j, d0)")
        with self.quietly():
            for j in range(lo, hi):
                self.call(op, DOBJ_BULK + 64 * j, descr=0)

    @rule(n=st.integers(1, 1500))
    def bulk_init(self, n: int) -> None:
        self._bulk("init", self.nbulk, self.nbulk + n)
        self.nbulk += n

    @rule(n=st.integers(1, 1500))
    def bulk_free(self, n: int) -> None:
        n = min(n, self.nbulk)
        if n:
            self._bulk("free", self.nbulk - n, self.nbulk)
        self.nbulk -= n

    @rule(ms=st.sampled_from([0, 1, 50, 99, 100, 150, 1000]))
    def advance(self, ms: int) -> None:
        self.kernel.advance(ms=ms)
        self.model.advance(ms * 1_000_000)
        self.acknowledge()

    @rule(cpu=st.integers(0, 1))
    def switch_cpu(self, cpu: int) -> None:
        cpu %= self.cpus
        self.kernel.bind_cpu(cpu)
        self.model.cpu = cpu

    @rule(n=st.integers(1, 2))
    def fail_trylock(self, n: int) -> None:
        self.d.fail_trylock(n)
        self.model.pool.fail_trylock = n

    @rule(on=st.booleans())
    def failslab(self, on: bool) -> None:
        self.kernel.set_fault("failslab", probability=100 if on else 0, times=-1, verbose=0)
        self.model.oom_fail = on

    # -- comparisons ----------------------------------------------------------------
    @invariant()
    def same(self) -> None:
        ks, ms = self.d.stats(), self.model.stats()
        for f in ("max_chain", "max_checked"):     # page frees of the tracker slab add scans
            assert ks[f] >= ms[f], f
        for f in ms:
            if f not in ("max_chain", "max_checked"):
                assert ks[f] == ms[f], (f, ks, ms)
        i = self.d.internals()
        p = self.model.pool
        assert i["enabled"] == self.model.enabled
        assert i["pcp_free"] == [len(c) for c in p.pcp]
        assert (i["obj_pool_free"], i["obj_pool_used"], i["obj_nr_tofree"]) == \
            (p.pool_free, p.used, p.nr_tofree)
        assert i["work_pending"] == p.pending
        if self.policy == "lazy":
            assert i["obj_freeing"] == p.freeing
        assert i["hashed"] == len(self.model.objs)
        for a in DOBJ_ADDRS:
            assert self.d.lookup(a) == self.model.lookup(a), hex(a)
        kinds = [r.kind for r in self.kernel.reports if r.subsystem == "odebug"
                 and r.kind not in ON_STACK_KINDS]
        assert kinds == self.model.kinds
        self.model.check()
        # tracker conservation (spec 2.2)
        assert (i["obj_pool_free"] + sum(i["pcp_free"]) + i["obj_nr_tofree"] + i["hashed"]
                == 1024 + ks["objs_allocated"] - ks["objs_freed"])
        if self.policy == "lazy":
            assert i["obj_nr_tofree"] <= 1040


__all__ = [
    "register_profiles", "KernelMachine", "SlabMachine", "QuarantineMachine",
    "DebugObjectsMachine", "RecordingKernel", "Recorder", "Failure", "find_failure",
    "format_reports", "Op", "OpsRun", "operations", "run_ops", "stray_writes",
    "cache_configs", "vcpus", "sizes", "small_sizes", "advances", "BEHAVIOURS",
    "behaviour_descr", "kmalloc_object_size", "SLAB_POISON", "SLAB_RED_ZONE",
]


# ---- concurrency: schedules as data, concurrent machines (odebug/concurrent.py) --------------------
_CONCURRENT = ("ConcurrentMachine", "DebugObjectsConcurrentMachine", "QuarantineConcurrentMachine",
               "SlabConcurrentMachine", "TaskOp", "schedules")
__all__ += list(_CONCURRENT)


def __getattr__(name: str) -> Any:
    """The concurrent machines live in odebug.concurrent (which builds on this
    module); they are looked up on first use so either module imports first."""
    if name in _CONCURRENT:
        from . import concurrent
        return getattr(concurrent, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
