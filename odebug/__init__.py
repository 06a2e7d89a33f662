"""odebug: the Linux kernel's memory debuggers as a fast user-space C library.

>>> import odebug
>>> with odebug.Kernel(cpus=2, ram="64M") as k:
...     k.advance(ms=10)
...     k.jiffies - k.INITIAL_JIFFIES
10
"""
from __future__ import annotations

import os as _os

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
from .report import Report, Track
from .debugobjects import DebugObjects, ObjectDescr, State as ObjectState
from .kasan import Kasan, Quarantine, quarantine_geometry
from . import sched
from .sched import explore

__all__ = [
    "Kernel", "Report", "Track", "Error", "InvalidArgument", "ClosedError", "StateError",
    "NotFound", "KernelBug", "ObjectDescr", "Kasan", "Quarantine", "quarantine_geometry", "DebugObjects", "ObjectState", "get_include", "get_library", "parse_size", "build_info", "sched", "explore",
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
    """Path of ``libodebug.so``, the C core as a plain shared library (for cffi / C)."""
    return _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "libodebug.so")


def build_info() -> dict:
    """Facts about this build: ``sanitizer`` ('' / 'address' / 'thread') and limits."""
    return _core._build_info()
