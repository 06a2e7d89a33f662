"""odebug.cc: a C workload built with the KASAN instrumentation flags (through
``python -m odebug cc``), its planted bugs caught by the kernel the calling
thread runs in, with the C function named in the report; host memory passes."""
import ctypes
import os
import re
import shutil
import subprocess
import sys

import pytest

import odebug
import odebug.cc as cc

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "cc", "workload.c")

if odebug.build_info().get("sanitizer"):
    pytest.skip("odebug.cc's runtime defines the __asan_* callbacks that this sanitizer "
                "build's runtime (preloaded) defines too; tested in the plain build",
                allow_module_level=True)
if not cc.compiler_supported("gcc"):
    pytest.skip("gcc with -fsanitize=kernel-address is needed", allow_module_level=True)


def _clang():
    import glob
    for c in ["clang"] + sorted(glob.glob("/usr/bin/clang-[0-9]*"), reverse=True):
        if shutil.which(c) and cc.compiler_supported(c):
            return c
    return None


@pytest.fixture(scope="module", params=["gcc", "clang"])
def lib(request, tmp_path_factory):
    compiler = "gcc" if request.param == "gcc" else _clang()
    if compiler is None:
        pytest.skip("no clang with -fsanitize=kernel-address installed")
    out = tmp_path_factory.mktemp("cc") / f"libworkload-{request.param}.so"
    p = subprocess.run([sys.executable, "-m", "odebug", "cc", "--", compiler, "-O1", "-shared",
                        "-fPIC", "-Wall", "-Werror", WORKLOAD, "-o", str(out)],
                       capture_output=True, text=True, cwd=os.path.dirname(HERE))
    assert p.returncode == 0, p.stderr
    cc.runtime()
    lib = ctypes.CDLL(str(out))
    lib.cc_read_at.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    return lib


@pytest.fixture
def k():
    with odebug.Kernel(cmdline="kasan_multi_shot", ram="64M") as kern:
        yield kern


def _one(k, fn, *args):
    n = len(k.reports)
    with cc.enter(k):
        fn(*args)
    new = k.reports[n:]
    assert len(new) == 1, [r.kind for r in new]
    return new[0]


def _first_frame(text):
    lines = text.splitlines()
    return lines[lines.index(" <TASK>") + 1]


@pytest.mark.parametrize("fn, kind, size, write", [
    ("cc_slab_oob", "slab-out-of-bounds", 1, False),
    ("cc_slab_uaf", "slab-use-after-free", 4, False),
    ("cc_cache_uaf", "slab-use-after-free", 1, False),
])
def test_planted_slab_bugs_name_the_c_function(lib, k, fn, kind, size, write):
    r = _one(k, getattr(lib, fn))
    assert r.kind == kind and r.subsystem == "kasan"
    assert r.size == size and r.is_write == write
    title = r.text.splitlines()[1]
    assert re.fullmatch(rf"BUG: KASAN: {kind} in {fn}\+0x[0-9a-f]+/0x[0-9a-f]+", title), title
    assert _first_frame(r.text).startswith(f" {fn}+")
    assert title in k.dmesg()
    # the allocation's track names the C function too (kernel_compat.h's macros)
    assert r.alloc_track is not None
    assert f"\n {fn}+" in r.text.split("Allocated by task")[1]


def test_slab_oob_is_one_past_a_13_byte_object(lib, k):
    r = _one(k, lib.cc_slab_oob)
    assert r.cache == "kmalloc-16" and r.offset == 13
    assert "allocated 13-byte region" in r.text


def test_global_out_of_bounds(lib, k):
    r = _one(k, lib.cc_global_oob, 10)
    assert r.kind == "global-out-of-bounds" and r.size == 4 and not r.is_write
    lines = r.text.splitlines()
    assert re.fullmatch(r"BUG: KASAN: global-out-of-bounds in cc_global_oob\+0x[0-9a-f]+/0x[0-9a-f]+",
                        lines[1])
    i = lines.index("The buggy address belongs to the variable:")
    assert re.fullmatch(r" cc_table\+0x28/0x[0-9a-f]+", lines[i + 1])
    assert _first_frame(r.text).startswith(" cc_global_oob+")
    # the runtime's shadow of the global: 40 bytes, then its red zone (0xf9)
    dump = lines[lines.index("Memory state around the buggy address:") + 1:]
    shadow = " ".join(ln.split(":", 1)[1] for ln in dump if ln[:1] in " >" and ":" in ln)
    assert " 00 00 00 00 00 f9" in re.sub(r"\s+", " ", shadow)
    assert "global-out-of-bounds in cc_global_oob" in k.dmesg()
    n = len(k.reports)
    with cc.enter(k):
        assert lib.cc_global_oob(9) == 10          # in bounds: silent
    assert len(k.reports) == n


def test_vmalloc_oob_through_kernel_compat(lib, k):
    """kasan_test's vmalloc_oob written as kernel C: vmalloc(2035) through
    kernel_compat.h, bytes 2035 and 2040 read through the pointer: two
    vmalloc-out-of-bounds reports naming the C function, the area described
    as the kernel does (created by the function), the shadow dump from the
    vmalloc shadow; the area's pages go back at vfree."""
    free0 = k.nr_free_pages
    n = len(k.reports)
    with cc.enter(k):
        lib.cc_vmalloc_oob()
    new = k.reports[n:]
    assert [r.kind for r in new] == ["vmalloc-out-of-bounds"] * 2
    assert [r.addr - k.vmalloc_start for r in new] == [2035, 2040]
    for r in new:
        assert r.subsystem == "kasan" and r.size == 1 and not r.is_write and r.cache is None
        assert re.fullmatch(r"BUG: KASAN: vmalloc-out-of-bounds in cc_vmalloc_oob\+0x[0-9a-f]+/0x[0-9a-f]+",
                            r.text.splitlines()[1])
        assert _first_frame(r.text).startswith(" cc_vmalloc_oob+")
        lines = r.text.splitlines()
        i = lines.index("The buggy address belongs to the virtual mapping at")
        assert lines[i + 1] == f" [{k.vmalloc_start:016x}, {k.vmalloc_start + 8192:016x}) created by:"
        assert lines[i + 2].startswith(" cc_vmalloc_oob+")
        assert "The buggy address belongs to the physical page:" in r.text
        row = [ln for ln in lines if ln.startswith(">")][0]
        assert row.endswith(" 00 00 03 f8")
    assert k.nr_free_pages == free0 and k.nr_vmalloc_pages == 0


def test_kvmalloc_past_kmalloc_max_size_and_use_after_kvfree(lib, k):
    n = len(k.reports)
    with cc.enter(k):
        assert lib.cc_kvmalloc_uaf() == 42          # the freed area reads scratch zeros
    new = k.reports[n:]
    assert [r.kind for r in new] == ["vmalloc-out-of-bounds"]
    assert k.is_vmalloc_addr(new[0].addr) and new[0].size == 4
    assert "cc_kvmalloc_uaf" in new[0].text.splitlines()[1]


def test_host_memory_and_in_bounds_accesses_pass_silently(lib, k):
    with cc.enter(k):
        assert lib.cc_host_ok() == 88
    assert len(k.reports) == 0 and "KASAN" not in k.dmesg()


def test_mempool_through_kernel_compat(lib, k):
    k.kfree(k.kmalloc(48))                    # kmalloc-64's first slab, before counting pages
    before = k.nr_free_pages
    r = _one(k, lib.cc_mempool_uaf)           # one report: none from the disabled section
    assert r.kind == "slab-use-after-free" and r.size == 1 and not r.is_write
    assert r.cache == "kmalloc-64" and r.offset == 1
    assert re.fullmatch(r"BUG: KASAN: slab-use-after-free in cc_mempool_uaf\+0x[0-9a-f]+/0x[0-9a-f]+",
                        r.text.splitlines()[1])
    freed = r.text.split("Freed by task")[1].split("\n\n")[0]
    assert "\n mempool_free+" in freed and "\n cc_mempool_uaf+" in freed
    assert "\n cc_mempool_uaf+" in r.text.split("Allocated by task")[1].split("\n\n")[0]
    assert k.nr_free_pages == before          # the page pool gave its page back


@pytest.mark.parametrize("fn, size", [("cc_memcpy_oob", 20), ("cc_memset_oob", 16)])
def test_mem_intrinsics_across_an_object_boundary(lib, k, fn, size):
    r = _one(k, getattr(lib, fn))
    assert r.kind == "slab-out-of-bounds" and r.is_write and r.size == size
    assert f"slab-out-of-bounds in {fn}+" in r.text.splitlines()[1]


def test_two_kernels_each_access_goes_to_its_own(lib):
    with odebug.Kernel(ram="64M", cmdline="kasan_multi_shot") as ka, \
            odebug.Kernel(ram="64M", cmdline="kasan_multi_shot") as kb:
        a, b = ka.kmalloc(8), kb.kmalloc(8)
        cc.register(kb)                             # checked, not current
        with cc.enter(ka):
            lib.cc_read_at(kb.c_pointer, b + 8)     # B's memory: B's shadow decides
            assert (len(ka.reports), len(kb.reports)) == (0, 1)
            lib.cc_read_at(ka.c_pointer, a + 8)
            assert (len(ka.reports), len(kb.reports)) == (1, 1)
            lib.cc_read_at(ka.c_pointer, a + 7)     # in bounds
            with cc.enter(kb):                      # nested: B is current now
                lib.cc_global_oob(10)
            assert (len(ka.reports), len(kb.reports)) == (1, 2)
            lib.cc_global_oob(10)                   # back in A
            assert (len(ka.reports), len(kb.reports)) == (2, 2)
        assert kb.reports[0].kind == "slab-out-of-bounds"
        assert "in cc_read_at+" in kb.reports[0].text
        assert kb.reports[1].kind == ka.reports[1].kind == "global-out-of-bounds"
        # kmalloc through kernel_compat.h comes from the current kernel
        with cc.enter(kb):
            lib.cc_slab_oob()
        assert (len(ka.reports), len(kb.reports)) == (2, 3)


def test_a_destroyed_kernel_is_forgotten(lib):
    k = odebug.Kernel(ram="64M")
    a = k.kmalloc(8)
    with cc.enter(k):
        pass
    kp = k.c_pointer
    k.close()
    del k
    import gc
    gc.collect()
    with odebug.Kernel(ram="64M") as k2:
        with cc.enter(k2):
            assert lib.cc_host_ok() == 88        # no stale arena routing, no crash
    assert kp and a


def test_libodebug_exports_no_asan_symbols():
    if shutil.which("nm") is None:
        pytest.skip("needs nm")
    out = subprocess.run(["nm", "-D", "--defined-only", odebug.get_library()],
                         capture_output=True, text=True, check=True).stdout
    assert "__asan_" not in out
    rt = subprocess.run(["nm", "-D", "--defined-only", cc.runtime_library()],
                        capture_output=True, text=True, check=True).stdout
    for name in ("__asan_load4_noabort", "__asan_store8", "__asan_loadN", "__asan_memcpy",
                 "__asan_register_globals", "__asan_handle_no_return", "odb_cc_enter"):
        assert f" T {name}\n" in rt, name


def test_flags_and_the_cli_wrapper(tmp_path):
    f = cc.cflags()
    assert "-fsanitize=kernel-address" in f and "asan-stack=1" in f and "asan-instrument-allocas=1" in f
    assert "-I" + odebug.get_include() in f
    assert any(x.startswith("-Wl,-rpath,") for x in cc.ldflags())
    p = subprocess.run([sys.executable, "-m", "odebug", "cc", "--help"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "COMPILER" in p.stdout
    p = subprocess.run([sys.executable, "-m", "odebug", "cc"], capture_output=True, text=True)
    assert p.returncode == 2 and "usage" in p.stderr


def test_readme_c_example_builds_runs_and_prints_the_readme_output(tmp_path):
    readme = open(os.path.join(os.path.dirname(HERE), "README.md")).read()
    sec = readme.split("\n## KASAN for your own C code (`odebug.cc`)\n", 1)[1].split("\n## ", 1)[0]
    (prog,) = re.findall(r"```c\n(.*?)```", sec, flags=re.S)
    commands = re.findall(r"```sh\n(.*?)```", sec, flags=re.S)[0]
    expected = re.findall(r"```text\n(.*?)```", sec, flags=re.S)[0]
    (tmp_path / "oob.c").write_text(prog)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bindir / "python").chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    root = os.path.dirname(HERE)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(odebug.__file__)) + \
        (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=str(tmp_path),
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    off = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+")
    got = [off.sub("+OFF", ln) for ln in p.stdout.splitlines()]
    want = [off.sub("+OFF", ln) for ln in expected.splitlines()]
    assert got == want
    assert want[2].startswith("BUG: KASAN: slab-out-of-bounds in last_tag+")
    assert root


def test_code_without_frame_pointers_is_still_reported_by_name(tmp_path, k):
    # -fomit-frame-pointer after odebug's flags: rbp holds anything in that code;
    # the report's stack walk stays inside the thread's stack and the title still
    # comes from the callback's return address
    out = tmp_path / "libnofp.so"
    p = subprocess.run([sys.executable, "-m", "odebug", "cc", "--", "gcc", "-O2", "-shared",
                        "-fPIC", "-fomit-frame-pointer", WORKLOAD, "-o", str(out)],
                       capture_output=True, text=True, cwd=os.path.dirname(HERE))
    assert p.returncode == 0, p.stderr
    cc.runtime()
    nofp = ctypes.CDLL(str(out))
    r = _one(k, nofp.cc_slab_uaf)
    assert r.kind == "slab-use-after-free"
    assert "slab-use-after-free in cc_slab_uaf+" in r.text.splitlines()[1]


def test_threads_each_in_their_own_kernel(lib):
    import threading
    kernels = [odebug.Kernel(ram="64M", cmdline="kasan_multi_shot") for _ in range(2)]
    errors = []

    def run(k):
        try:
            with cc.enter(k):
                for _ in range(50):
                    lib.cc_slab_oob()
                    lib.cc_host_ok()
                    lib.cc_global_oob(10)
        except BaseException as e:          # pragma: no cover - reported below
            errors.append(e)
    try:
        ts = [threading.Thread(target=run, args=(k,)) for k in kernels]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors
        for k in kernels:
            kinds = [r.kind for r in k.reports]
            assert kinds.count("slab-out-of-bounds") == 50
            assert kinds.count("global-out-of-bounds") == 50
            assert len(kinds) == 100
    finally:
        for k in kernels:
            k.close()
