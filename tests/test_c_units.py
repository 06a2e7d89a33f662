"""Build and run the C unit tests in csrc/tests/ (one program per test_*.c).

Each program is compiled together with the C core using the same sanitizer
as the installed build (ODEBUG_SANITIZE), so CI runs them under ASan+UBSan and
TSan too.  A program prints "N passed, M failed" and exits non-zero on failure.
"""
import glob
import os
import platform
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = [f for d in ("kernel", "slab", "kasan", "debugobjects", "scenarios")
        for f in sorted(glob.glob(os.path.join(ROOT, "csrc", d, "*.c")))]
PROGRAMS = sorted(glob.glob(os.path.join(ROOT, "csrc", "tests", "test_*.c")))

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def _flags():
    flags = ["-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Wno-unused-parameter",
             "-D_GNU_SOURCE", "-DODB_BUILDING", "-fno-omit-frame-pointer",
             "-I" + os.path.join(ROOT, "csrc", "include"), "-I" + os.path.join(ROOT, "csrc")]
    if platform.machine() in ("x86_64", "AMD64"):
        flags.append("-mcx16")
    if os.environ.get("ODEBUG_WERROR") == "1":
        flags.append("-Werror")
    san = os.environ.get("ODEBUG_SANITIZE", "").strip()
    if san:
        flags.append("-fsanitize=" + san)
        if "undefined" in san:
            flags.append("-fno-sanitize-recover=undefined")
    return flags


@pytest.fixture(scope="module")
def core_objects(tmp_path_factory):
    """The C core compiled once (the programs' flags), a file per job in parallel;
    every program links these objects."""
    out = tmp_path_factory.mktemp("c_core")

    def compile_one(src):
        obj = out / (os.path.relpath(src, ROOT).replace(os.sep, "_")[:-2] + ".o")
        r = subprocess.run(["gcc", *_flags(), "-c", src, "-o", str(obj)],
                           capture_output=True, text=True)
        return str(obj), r

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        results = list(ex.map(compile_one, CORE))
    errors = [r.stderr for _, r in results if r.returncode]
    assert not errors, "\n".join(errors)
    return [obj for obj, _ in results]


@pytest.mark.threads
@pytest.mark.parametrize("src", PROGRAMS, ids=[os.path.basename(p)[:-2] for p in PROGRAMS])
def test_c_program(src, tmp_path, core_objects):
    exe = tmp_path / os.path.basename(src)[:-2]
    build = subprocess.run(["gcc", *_flags(), src, *core_objects, "-o", str(exe), "-pthread"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)      # the program links its own sanitizer runtime
    run = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=300)
    out = run.stdout + run.stderr
    m = re.search(r"(\d+) passed, (\d+) failed", run.stdout)
    assert m, out
    assert run.returncode == 0 and m.group(2) == "0", out
    assert int(m.group(1)) > 0, out
    assert "ThreadSanitizer" not in out and "AddressSanitizer" not in out, out
