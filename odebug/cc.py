"""``odebug.cc``: KASAN for your own C code, built with the compiler's instrumentation.

C built with :func:`cflags` and linked with :func:`ldflags` calls
``__asan_load*/__asan_store*`` before every memory access; odebug's runtime
(``odebug/lib/libodebug_kasan_rt.so``) checks the accesses that fall in a
kernel's arena with that kernel's KASAN, and its own registered globals' red
zones, and lets other host memory through.  ``odebug/kernel_compat.h`` gives
kernel names (``kmalloc``, ``kfree``, ``kmem_cache_*``) over ``odebug.h``.

The calling thread's current kernel (``odb_cc_enter(k)`` in C, :func:`enter`
from Python) is the one its allocations come from and its global overflows
are reported to.

Why no stack red zones (``--param asan-stack=0``): gcc and clang poison a
frame's red zones by writing shadow inline at ``(addr >> 3) + offset``, with
no call odebug could route; a host stack has no such shadow (it would take a
shadow mapping of the whole address space), so stack and alloca red zones are
not instrumented.  The shadow offset given is the x86-64 kernel's
(``0xdffffc0000000000``): any inline shadow access that slipped through would
fault at once (a non-canonical address) instead of writing somewhere.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import subprocess
import sys
from typing import Any, Iterator, List, Optional, Sequence

from . import get_include, get_library

__all__ = ["cflags", "ldflags", "runtime_library", "compiler_supported", "enter", "register", "runtime",
           "main"]

SHADOW_OFFSET = "0xdffffc0000000000"


def runtime_library() -> str:
    """Path of ``libodebug_kasan_rt.so``, the runtime of instrumented code."""
    return os.path.join(os.path.dirname(get_library()), "libodebug_kasan_rt.so")


def cflags(compiler: str = "gcc") -> List[str]:
    """Compiler flags for C that odebug's KASAN checks: instrumentation with every
    access through a call, globals instrumented, no stack instrumentation (see the
    module's doc), frame pointers (the reports' stacks) and odebug's include path.

    ``compiler``: ``"gcc"`` (default) or ``"clang"`` (its spelling of the same)."""
    common = ["-fsanitize=kernel-address", "-fno-omit-frame-pointer", "-g",
              "-I" + get_include()]
    if os.path.basename(compiler).startswith("clang"):
        return common + ["-mllvm", "-asan-instrumentation-with-call-threshold=0",
                         "-mllvm", "-asan-globals=1", "-mllvm", "-asan-stack=0",
                         "-mllvm", "-asan-mapping-offset=" + SHADOW_OFFSET]
    return common + ["-fasan-shadow-offset=" + SHADOW_OFFSET,
                     "--param", "asan-instrumentation-with-call-threshold=0",
                     "--param", "asan-globals=1", "--param", "asan-stack=0"]


def ldflags() -> List[str]:
    """Linker flags: the KASAN runtime and libodebug, with their directory as rpath."""
    d = os.path.dirname(get_library())
    return ["-L" + d, "-l:libodebug_kasan_rt.so", "-l:libodebug.so", "-Wl,-rpath," + d]


def compiler_supported(compiler: str = "gcc") -> bool:
    """Whether ``compiler`` exists and accepts :func:`cflags` (a tiny test compile)."""
    if shutil.which(compiler) is None:
        return False
    p = subprocess.run([compiler, *cflags(compiler), "-x", "c", "-c", "-o", os.devnull, "-"],
                       input="int g[4]; int f(int *p) { return p[1] + g[2]; }\n",
                       capture_output=True, text=True)
    return p.returncode == 0


_rt: Optional[ctypes.CDLL] = None


def runtime() -> ctypes.CDLL:
    """The runtime loaded (once) with ctypes, globally (RTLD_GLOBAL): instrumented
    libraries loaded afterwards bind their ``__asan_*`` calls to it."""
    global _rt
    if _rt is None:
        from . import build_info
        if build_info().get("sanitizer"):
            raise RuntimeError("odebug.cc: this odebug is a sanitizer build; its "
                               "sanitizer runtime defines the same __asan_* callbacks")
        lib = ctypes.CDLL(runtime_library(), mode=ctypes.RTLD_GLOBAL)
        lib.odb_cc_enter.argtypes = [ctypes.c_void_p]
        lib.odb_cc_enter.restype = ctypes.c_int
        lib.odb_cc_register.argtypes = [ctypes.c_void_p]
        lib.odb_cc_register.restype = ctypes.c_int
        lib.odb_cc_leave.argtypes = []
        lib.odb_cc_leave.restype = ctypes.c_int
        _rt = lib
    return _rt


def register(kernel: Any) -> None:
    """Make the runtime check instrumented accesses to ``kernel``'s arena
    (``odb_cc_register``) without making it the thread's current kernel;
    :func:`enter` registers too.  Arenas of kernels never registered are host
    memory to the runtime (unchecked).  A destroyed kernel is forgotten."""
    rc = runtime().odb_cc_register(kernel.c_pointer)
    if rc != 0:
        raise RuntimeError(f"odb_cc_register: status {rc}")


@contextlib.contextmanager
def enter(kernel: Any) -> Iterator[int]:
    """``with odebug.cc.enter(k) as kp:`` -- the calling thread runs in ``k``
    (``odb_cc_enter``): instrumented C called from this block allocates from it
    (kernel_compat.h) and reports to it; ``kp`` is ``k.c_pointer``, the
    ``odb_kernel *`` to pass to C."""
    rt = runtime()
    kp = kernel.c_pointer
    rc = rt.odb_cc_enter(kp)
    if rc != 0:
        raise RuntimeError(f"odb_cc_enter: status {rc}")
    try:
        yield kp
    finally:
        rt.odb_cc_leave()


def main(argv: Sequence[str], prog: str = "odebug cc") -> int:
    """``python -m odebug cc -- gcc file.c -o prog``: run the compiler with
    :func:`cflags` (after the compiler's name) and :func:`ldflags` (at the end)."""
    args = list(argv)
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        print(f"usage: {prog} -- COMPILER ARGS...", file=sys.stderr)
        return 2
    cc = args[0]
    cmd = [cc, *cflags(cc), *args[1:]]
    if "-c" not in args[1:] and "-E" not in args[1:] and "-S" not in args[1:]:
        cmd += ldflags()
    try:
        return subprocess.call(cmd)
    except OSError as e:
        print(f"{prog}: {cc}: {e.strerror}", file=sys.stderr)
        return 127
