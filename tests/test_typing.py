"""Type information of odebug._core (issue 19.3): the C methods' __text_signature__,
the stubs (odebug/_core.pyi) against the built module, and mypy --strict on the package."""
import importlib.util
import inspect
import os
import subprocess
import sys

import pytest

import odebug
from odebug import _core

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
P = inspect.Parameter


def params(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_kernel_dmesg_shows_clear():
    sig = inspect.signature(_core.Kernel.dmesg)
    assert list(sig.parameters) == ["self", "clear"]
    clear = sig.parameters["clear"]
    assert clear.kind is P.POSITIONAL_OR_KEYWORD and clear.default is False


@pytest.mark.parametrize("fn, expect", [
    (_core.Kernel.raw, [("self", P.POSITIONAL_ONLY, P.empty), ("addr", P.POSITIONAL_ONLY, P.empty),
                        ("n", P.POSITIONAL_ONLY, P.empty)]),
    (_core.Kernel.alloc_pages, [("self", P.POSITIONAL_ONLY, P.empty),
                                ("order", P.POSITIONAL_OR_KEYWORD, 0),
                                ("gfp", P.POSITIONAL_OR_KEYWORD, _core.GFP_KERNEL)]),
    (_core.Kernel.reports, [("self", P.POSITIONAL_ONLY, P.empty), ("start", P.POSITIONAL_ONLY, 0)]),
    (_core.Work.schedule, [("self", P.POSITIONAL_ONLY, P.empty), ("delay", P.POSITIONAL_OR_KEYWORD, 0)]),
    (_core.Cache.alloc, [("self", P.POSITIONAL_ONLY, P.empty),
                         ("gfp", P.POSITIONAL_ONLY, _core.GFP_KERNEL)]),
    (_core.Cache.stats, [("self", P.POSITIONAL_ONLY, P.empty), ("per_cpu", P.POSITIONAL_ONLY, False)]),
    (_core.SchedStrategy.next, [("self", P.POSITIONAL_ONLY, P.empty)]),
    (_core.kasan_read, [("kernel", P.POSITIONAL_ONLY, P.empty), ("addr", P.POSITIONAL_ONLY, P.empty),
                        ("n", P.POSITIONAL_ONLY, P.empty)]),
    (_core.sched_spawn, [("kernel", P.POSITIONAL_ONLY, P.empty), ("box", P.POSITIONAL_ONLY, P.empty),
                         ("cpu", P.POSITIONAL_ONLY, -1), ("name", P.POSITIONAL_ONLY, None)]),
    (_core.slub_stat_names, []),
])
def test_text_signatures(fn, expect):
    assert params(fn) == expect


def test_keyword_signatures_match_the_c_keywords():
    # the METH_KEYWORDS functions: the names inspect shows are the ones the C side takes
    assert [p for p in inspect.signature(_core.hackbench).parameters] == [
        "kernel", "groups", "fds", "loops", "msg_size", "queue_depth", "processes", "on_threads"]
    assert inspect.signature(_core.debug_objects_churn).parameters["phase_rounds"].default == 0
    assert list(inspect.signature(_core.Kernel.fault_set).parameters) == [
        "self", "name", "probability", "interval", "times", "space", "verbose"]
    with odebug.Kernel(cpus=1, ram="16M") as k:
        assert _core.Kernel.dmesg(k, clear=False) == k.dmesg()


def test_class_signatures():
    assert "skip_prefix" in inspect.signature(_core.Kernel).parameters
    sig = inspect.signature(_core.ObjectDescr)
    assert sig.parameters["debug_hint"].kind is P.KEYWORD_ONLY


def test_every_export_with_a_signature():
    """Every function and method of the binding has one (Kernel.work too, since its
    ``name`` takes None for the default)."""
    missing = []
    for name, obj in vars(_core).items():
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            for m, f in vars(obj).items():
                if callable(f) and not m.startswith("__"):
                    try:
                        inspect.signature(f)
                    except ValueError:
                        missing.append(f"{name}.{m}")
        elif callable(obj) and not isinstance(obj, type):
            inspect.signature(obj)
    assert missing == []


def test_exception_bases():
    assert _core.InvalidArgument.__mro__[1:3] == (_core.Error, ValueError)
    assert _core.NotFound.__mro__[1:3] == (_core.Error, LookupError)
    assert _core.StateError.__mro__[1:3] == (_core.Error, RuntimeError)
    assert _core.ClosedError.__mro__[1:3] == (_core.Error, RuntimeError)
    assert _core.KernelBug.__mro__[1] is _core.Error


def test_stub_ships():
    assert os.path.exists(os.path.join(os.path.dirname(odebug.__file__), "_core.pyi"))
    assert os.path.exists(os.path.join(os.path.dirname(odebug.__file__), "py.typed"))


needs_mypy = pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                                reason="mypy is not installed (pip install mypy, or the 'test' extra)")
# on a sanitizer build the extension needs the sanitizer runtime preloaded into mypy's
# process too; CI type-checks the plain build (.ci/run), the same sources
plain_build = pytest.mark.skipif(odebug.build_info()["sanitizer"] != "",
                                 reason="a sanitizer build: stubtest and mypy run on the plain build")


def _run(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@needs_mypy
@plain_build
def test_mypy_strict():
    r = _run("mypy", "--strict", "--no-incremental", "odebug/")
    assert r.returncode == 0, r.stdout + r.stderr


@needs_mypy
@plain_build
def test_stubtest():
    # the stubs against the module this test imports (the built extension)
    r = _run("mypy.stubtest", "odebug._core")
    assert r.returncode == 0, r.stdout + r.stderr
