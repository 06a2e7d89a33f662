"""odebug: the Linux kernel's memory debuggers as a fast user-space C library.

>>> import odebug
>>> with odebug.Kernel(cpus=2, ram="64M") as k:
...     k.advance(ms=10)
...     k.jiffies - k.INITIAL_JIFFIES
10

Errors (one table, ``odb_errmap`` in csrc/python/core.c; README "Numbers, Ctrl-C,
close() and errors"): every odebug error is an :class:`Error`.

* :class:`InvalidArgument` (also ``ValueError``): a bad argument -- out of range,
  negative, too large for its C type (never a bare ``OverflowError``), an
  address outside the arena, a malformed boot parameter; the message starts
  with the argument's name.  A wrong type is ``TypeError``.
* :class:`NotFound` (also ``LookupError``): no such cache, parameter or stack.
* :class:`StateError` (also ``RuntimeError``): not valid now (a cache still in
  use, ``advance`` on a real clock, any call on a destroyed cache).
* :class:`ClosedError` (also ``RuntimeError``): the kernel is closed (only its
  log and reports stay readable).
* :class:`KernelBug`: a report under ``panic_on_warn``; ``.report`` holds it.
* ``MemoryError``: the host or the arena is out of memory for a boot or a
  benchmark; ``KeyboardInterrupt``: Ctrl-C stopped a long C call early.
"""
from __future__ import annotations

import os as _os
from typing import Any, Dict


def _import_core() -> None:
    """``odebug._core``, or an ImportError that says what to do when it is not built.

    Run from odebug's source tree (``python -c 'import odebug'`` in the
    checkout, or pytest there), this directory shadows an installed odebug;
    if the C extension was never built in place, Python's own message is
    "cannot import name '_core' from partially initialized module 'odebug'
    (most likely due to a circular import)", which points nowhere useful."""
    import importlib
    import importlib.machinery
    here = _os.path.dirname(_os.path.abspath(__file__))
    try:
        importlib.import_module("._core", __name__)
    except ImportError as e:
        built = [f for f in _os.listdir(here) if f.startswith("_core.")
                 and f.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))]
        if built:
            raise                  # built, but does not load: the real error says why
        src = _os.path.dirname(here)
        in_tree = _os.path.exists(_os.path.join(src, "setup.py")) and \
            _os.path.isdir(_os.path.join(src, "csrc"))
        where = (f"this is odebug's source tree ({src}) and its C extension is not built"
                 if in_tree else f"no built C extension in {here}")
        raise ImportError(
            f"odebug: cannot import the C extension odebug._core: {where}. "
            "Build it in place (python setup.py build_ext --inplace, or pip install -e .), "
            "or, to use an installed odebug, run from outside the source tree "
            "(or with python -P).",
            name="odebug._core", path=here) from e


_import_core()
from . import _core
from ._core import (  # noqa: F401  (re-exported)
    ClosedError,
    Error,
    InvalidArgument,
    KernelBug,
    NotFound,
    StateError,
)
from .kernel import Kernel, parse_size
from .report import Report, ReportKind, Reports, SuppressedReportsWarning, Track
from .debugobjects import DebugObjects, ObjectDescr, State as ObjectState
from .kasan import Kasan, Quarantine, quarantine_geometry
from .mempool import Mempool
from . import sched
from .sched import explore

__all__ = [
    "Kernel", "Report", "ReportKind", "Reports", "SuppressedReportsWarning", "Track",
    "Error", "InvalidArgument", "ClosedError", "StateError",
    "NotFound", "KernelBug", "ObjectDescr", "Kasan", "Quarantine", "Mempool", "quarantine_geometry", "DebugObjects", "ObjectState", "get_include", "get_library", "parse_size", "build_info", "sched", "explore",
]
__version__ = "0.1.0"

_core._set_report_factory(Report._from_dict)


def get_include() -> str:
    """Directory holding ``odebug/odebug.h``, the public C header."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    installed = _os.path.join(here, "include")
    if _os.path.exists(_os.path.join(installed, "odebug", "odebug.h")):
        return installed
    return _os.path.join(_os.path.dirname(here), "csrc", "include")


def get_library() -> str:
    """Path of ``libodebug.so``, the C core as a plain shared library (for cffi / C).

    It is ``odebug/lib/libodebug.so``: link with ``-L<dir> -l:libodebug.so`` (or
    ``-lodebug``) and ``-Wl,-rpath,<dir>``, where ``<dir>`` is this path's directory."""
    return _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "lib", "libodebug.so")


def build_info() -> Dict[str, Any]:
    """Facts about this build: ``sanitizer`` ('' / 'address' / 'thread') and limits."""
    return _core._build_info()
