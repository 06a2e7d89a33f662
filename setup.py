"""Build odebug's C core.

Two artefacts come out of csrc/:

* ``odebug/lib/libodebug.so``: the C core as a plain shared library, built with
  ``-fvisibility=hidden`` so that only the public API (``ODB_API``) is exported.
  C users and cffi load it (``odebug.get_library()``); it does not link
  libpython.  It lives in ``lib/`` (no ``__init__.py``) so that pkgutil/pydoc
  do not take it for an extension module ``odebug.libodebug`` (which fails to
  import).
* ``odebug/lib/libodebug_kasan_rt.so``: the KASAN runtime of users' instrumented C
  code (csrc/cc/, ``odebug.cc``): the compiler's ``__asan_*`` callbacks over
  libodebug.so.  A library of its own so that libodebug.so never defines
  ``__asan_*`` (gcc's libasan, preloaded in sanitizer builds, does); never built
  with a sanitizer itself.
* ``odebug._core``: the thin CPython binding (csrc/python/), linked against
  libodebug.so through an ``$ORIGIN/lib`` RUNPATH, so there is one copy of the core.

Environment knobs:
  ODEBUG_WERROR=1                    add -Werror
  ODEBUG_SANITIZE=address,undefined  ASan+UBSan build (or =thread for TSan)
  ODEBUG_DEBUG=1                     -O0 -g3
"""
import glob
import platform
import os
import shutil

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
CORE_DIRS = ["kernel", "slab", "kasan", "debugobjects", "scenarios"]


def rel(*parts):
    return os.path.join(*parts)


def core_sources():
    out = []
    for d in CORE_DIRS:
        out += sorted(glob.glob(rel("csrc", d, "*.c")))
    return out


def all_headers():
    return sorted(glob.glob(rel("csrc", "**", "*.h"), recursive=True))


def flags():
    cflags = ["-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-Wshadow",
              "-Wstrict-prototypes", "-Wno-unused-parameter",
              "-D_GNU_SOURCE", "-fno-omit-frame-pointer"]
    if platform.machine() in ("x86_64", "AMD64"):
        cflags.append("-mcx16")   # inline cmpxchg16b for SLUB's freelist+counters
    ldflags = ["-pthread"]
    if os.environ.get("ODEBUG_DEBUG") == "1":
        cflags = [f for f in cflags if f != "-O2"] + ["-O0", "-g3"]
    if os.environ.get("ODEBUG_WERROR") == "1":
        cflags.append("-Werror")
    san = os.environ.get("ODEBUG_SANITIZE", "").strip()
    if san:
        s = ["-fsanitize=" + san, "-fno-omit-frame-pointer", "-g"]
        if "undefined" in san:
            s.append("-fno-sanitize-recover=undefined")
        cflags = [f for f in cflags if f != "-O2"] + s + ["-O1"]
        ldflags += ["-fsanitize=" + san]
    return cflags, ldflags


class SharedLib(Extension):
    """Marker: build as a plain shared library named lib<name>.so."""


class RuntimeLib(SharedLib):
    """A plain shared library over libodebug.so (found beside it: $ORIGIN)."""


class odebug_build_ext(build_ext):
    def run(self):
        # A variant switch (ODEBUG_SANITIZE, ODEBUG_DEBUG, ...) changes only flags,
        # which distutils does not track: rebuild everything when they change.
        # (the layout too: _core built for odebug/libodebug.so has the wrong RUNPATH)
        sig = repr(flags()) + " lib/libodebug.so"
        stamp = os.path.join(self.build_temp, "odebug-flags")
        try:
            with open(stamp) as f:
                if f.read() != sig:
                    self.force = True
        except OSError:
            self.force = True
        # the library's old place (before lib/): pydoc would list it as a module,
        # and a wheel would pick it up from build_lib
        for stale in (os.path.join(HERE, "odebug", "libodebug.so"),
                      os.path.join(self.build_lib, "odebug", "libodebug.so")):
            if os.path.exists(stale):
                os.remove(stale)
        if self.inplace:
            # setuptools copies the in-place outputs without creating their directory
            os.makedirs(os.path.join(HERE, "odebug", "lib"), exist_ok=True)
        super().run()
        os.makedirs(self.build_temp, exist_ok=True)
        with open(stamp, "w") as f:
            f.write(sig)

    def get_ext_filename(self, fullname):
        # distutils passes either the dotted name or only its last part
        parts = fullname.split(".")
        for ext in self.extensions:
            if isinstance(ext, SharedLib) and ext.name.split(".")[-1] == parts[-1] \
                    and (len(parts) == 1 or ext.name == fullname):
                return os.path.join(*parts[:-1], "lib" + parts[-1] + ".so")
        return super().get_ext_filename(fullname)

    def get_export_symbols(self, ext):
        if isinstance(ext, SharedLib):
            return []
        return super().get_export_symbols(ext)

    def build_extension(self, ext):
        # Python's own LDSHARED may carry its build's -Wl,-rpath (pyenv, some distros):
        # that host path would come before $ORIGIN/lib in _core's RUNPATH (and be
        # searched first for libodebug.so); odebug's objects get only their own.
        for attr in ("linker_so", "linker_so_cxx"):
            cmd = getattr(self.compiler, attr, None)
            if cmd:
                setattr(self.compiler, attr,
                        [w for w in cmd if not w.startswith(("-Wl,-rpath,", "-Wl,-R"))])
        if not isinstance(ext, SharedLib) or isinstance(ext, RuntimeLib):
            libdir = os.path.dirname(self.get_ext_fullpath(core.name))
            ext.library_dirs = [libdir]
        super().build_extension(ext)
        if isinstance(ext, SharedLib):
            dest = os.path.join(os.path.dirname(self.get_ext_fullpath(binding.name)),
                                "include", "odebug")
            os.makedirs(dest, exist_ok=True)
            for h in glob.glob(rel("csrc", "include", "odebug", "*.h")):
                shutil.copy(h, dest)


cflags, ldflags = flags()
core = SharedLib(
    "odebug.lib.odebug",        # odebug/lib/libodebug.so
    sources=core_sources(),
    include_dirs=[rel("csrc", "include"), "csrc"],
    depends=all_headers(),
    extra_compile_args=cflags + ["-fvisibility=hidden", "-DODB_BUILDING"],
    extra_link_args=ldflags + ["-Wl,-soname,libodebug.so"],
)
rt_cflags = [f for f in cflags if not f.startswith("-fsanitize")]
if "-O1" in rt_cflags and "-O2" not in rt_cflags:
    rt_cflags = [f for f in rt_cflags if f != "-O1"] + ["-O2"]
kasan_rt = RuntimeLib(
    "odebug.lib.odebug_kasan_rt",   # odebug/lib/libodebug_kasan_rt.so
    sources=sorted(glob.glob(rel("csrc", "cc", "*.c"))),
    include_dirs=[rel("csrc", "include")],
    depends=all_headers(),
    libraries=[":libodebug.so"],
    runtime_library_dirs=["$ORIGIN"],
    extra_compile_args=rt_cflags + ["-fvisibility=hidden"],
    extra_link_args=["-pthread", "-Wl,-soname,libodebug_kasan_rt.so"],
)
binding = Extension(
    "odebug._core",
    sources=sorted(glob.glob(rel("csrc", "python", "*.c"))),
    include_dirs=[rel("csrc", "include"), "csrc"],
    depends=all_headers(),
    libraries=[":libodebug.so"],
    runtime_library_dirs=["$ORIGIN/lib"],
    extra_compile_args=cflags,
    extra_link_args=ldflags,
)

setup(ext_modules=[core, kasan_rt, binding], cmdclass={"build_ext": odebug_build_ext})
