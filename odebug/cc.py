"""``odebug.cc``: KASAN for your own C code, built with the compiler's instrumentation.

C built with :func:`cflags` and linked with :func:`ldflags` calls
``__asan_load*/__asan_store*`` before every memory access; odebug's runtime
(``odebug/lib/libodebug_kasan_rt.so``) checks the accesses that fall in a
kernel's arena with that kernel's KASAN, and its own registered globals' red
zones, and the calling thread's stack frames' red zones, and lets other host
memory through.  ``odebug/kernel_compat.h`` gives
kernel names (``kmalloc``, ``kfree``, ``kmem_cache_*``) over ``odebug.h``.

The calling thread's current kernel (``odb_cc_enter(k)`` in C, :func:`enter`
from Python) is the one its allocations come from and its global overflows
are reported to.

Stack and alloca red zones (``asan-stack=1``, allocas instrumented): gcc and
clang poison a frame's red zones by writing shadow bytes inline at
``(addr >> 3) + SHADOW_OFFSET``, with no call odebug could route, so the
runtime gives host memory a real shadow: when it is loaded it reserves
(``MAP_NORESERVE``, pages cost memory only once written) the shadow of the
whole user address space, 16 TiB of address space at ``SHADOW_OFFSET``
(``0x100000000000``: [16 TiB, 32 TiB), a range nothing maps in an x86-64
process), where frames and dynamic allocas (``__asan_alloca_poison``) are
poisoned.  The checks read it for the calling thread's own stack only, as the
kernel describes only the task's own stack; other host memory is never
checked against it (its shadow may be stale: a thread's stack freed
mid-frame and reused by malloc).  If the range cannot be reserved
(``vm.overcommit_memory=2``, something mapped there), :func:`runtime` raises:
stack-instrumented code would fault on its first frame.  Heap accesses are
unaffected: the arena and globals are looked up first, as before.
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

# The runtime's stack shadow: must be csrc/cc/kasan_rt.c's STACK_SHADOW_OFFSET.
SHADOW_OFFSET = "0x100000000000"


def runtime_library() -> str:
    """Path of ``libodebug_kasan_rt.so``, the runtime of instrumented code."""
    return os.path.join(os.path.dirname(get_library()), "libodebug_kasan_rt.so")


def cflags(compiler: str = "gcc") -> List[str]:
    """Compiler flags for C that odebug's KASAN checks: instrumentation with every
    access through a call, globals, stack frames and dynamic allocas instrumented
    (their shadow at :data:`SHADOW_OFFSET`, see the module's doc), no
    use-after-scope (the kernel turned it off), frame pointers (the reports'
    stacks) and odebug's include path.

    ``compiler``: ``"gcc"`` (default) or ``"clang"`` (its spelling of the same;
    clang instruments dynamic allocas by default and has no use-after-scope with
    ``kernel-address``)."""
    common = ["-fsanitize=kernel-address", "-fno-omit-frame-pointer", "-g",
              "-I" + get_include()]
    if os.path.basename(compiler).startswith("clang"):
        return common + ["-mllvm", "-asan-instrumentation-with-call-threshold=0",
                         "-mllvm", "-asan-globals=1", "-mllvm", "-asan-stack=1",
                         "-mllvm", "-asan-mapping-offset=" + SHADOW_OFFSET]
    return common + ["-fasan-shadow-offset=" + SHADOW_OFFSET,
                     "--param", "asan-instrumentation-with-call-threshold=0",
                     "--param", "asan-globals=1", "--param", "asan-stack=1",
                     "--param", "asan-instrument-allocas=1",
                     "-fno-sanitize-address-use-after-scope"]


def ldflags() -> List[str]:
    """Linker flags: the KASAN runtime and libodebug, with their directory as rpath,
    and the ``memcpy``/``memset``/``memmove`` calls of the objects linked (those the
    compiler emits itself too: struct copies, loops it turns into memset) routed
    to the runtime's checked versions (``--wrap``), as the kernel's own mem*
    functions check every call."""
    d = os.path.dirname(get_library())
    return ["-L" + d, "-l:libodebug_kasan_rt.so", "-l:libodebug.so", "-Wl,-rpath," + d,
            "-Wl,--wrap=memcpy,--wrap=memset,--wrap=memmove"]


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
    libraries loaded afterwards bind their ``__asan_*`` calls to it.  Raises
    ``RuntimeError`` in a sanitizer build of odebug, or if the runtime could not
    reserve the stack shadow (see the module's doc)."""
    global _rt
    if _rt is None:
        from . import build_info
        if build_info().get("sanitizer"):
            raise RuntimeError("odebug.cc: this odebug is a sanitizer build; its "
                               "sanitizer runtime defines the same __asan_* callbacks")
        lib = ctypes.CDLL(runtime_library(), mode=ctypes.RTLD_GLOBAL)
        lib.odb_cc_stack_shadow.argtypes = []
        lib.odb_cc_stack_shadow.restype = ctypes.c_bool
        if not lib.odb_cc_stack_shadow():
            raise RuntimeError("odebug.cc: the runtime could not reserve the stack shadow "
                               f"(16 TiB of address space at {SHADOW_OFFSET}, MAP_NORESERVE): "
                               "code built with odebug.cc's flags cannot run in this process")
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
