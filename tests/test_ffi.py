"""odebug.ffi: the ready cffi binding, derived from the public header at import
time (issue 19 item 10).  It must hold every public function, macro and enum
of odebug.h, with the C compiler's struct layouts, and drive a kernel."""
import os
import re
import shutil
import subprocess

import pytest

import odebug
from odebug.ffi import cdef_from_header, ffi, header_path, lib

HEADER = open(header_path()).read()
# a different route from odebug.ffi's: plain regexes over the comment-free header
PLAIN = re.sub(r"/\*.*?\*/", " ", HEADER, flags=re.S)
API = sorted(set(re.findall(r"\bODB_API\b[^;{(]*?\b(odb_\w+)\s*\(", PLAIN)))
MACROS = sorted(set(re.findall(r"^\s*#\s*define\s+(ODB_\w+)\s+\S", PLAIN, flags=re.M)) - {"ODB_API"})
ENUMS = sorted(set(re.findall(r"^\s*(ODB_\w+)\s*=", PLAIN, flags=re.M)))
STRUCTS = sorted(set(re.findall(r"\bstruct\s+(odb_\w+)\s*\{", PLAIN)))


def test_header_is_the_installed_one():
    assert header_path() == os.path.join(odebug.get_include(), "odebug", "odebug.h")
    assert len(API) > 100 and "odb_kernel_create" in API and "odb_kmalloc" in API


@pytest.mark.parametrize("name", API)
def test_every_public_function_is_in_lib(name):
    fn = getattr(lib, name)                   # dlsym: declared and exported
    assert ffi.typeof(fn).kind == "function"


def test_every_macro_and_enum_is_a_constant():
    missing = [n for n in MACROS + ENUMS if not hasattr(lib, n)]
    assert not missing, missing
    assert lib.ODB_GFP_KERNEL == 0x1 | 0x80 | 0x2 | 0x4
    assert lib.ODB_PAGE_SIZE == 4096 and lib.ODB_PAGE_OFFSET == 0xffff888000000000
    assert lib.ODB_ZERO_SIZE_PTR == 16 and lib.ODB_EINVAL == -22
    assert lib.ODB_ODEBUG_STATE_ACTIVE == 3


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_struct_layouts_match_the_compiler(tmp_path):
    src = tmp_path / "sizes.c"
    src.write_text('#include <stdio.h>\n#include <odebug/odebug.h>\nint main(void) {\n' + "".join(
        f'  printf("{s} %zu %zu\\n", sizeof(struct {s}), _Alignof(struct {s}));\n'
        for s in STRUCTS) + "  return 0;\n}\n")
    exe = tmp_path / "sizes"
    subprocess.run(["gcc", "-std=c11", "-I", odebug.get_include(), str(src), "-o", str(exe)],
                   check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        name, size, align = line.split()
        assert (ffi.sizeof("struct " + name), ffi.alignof("struct " + name)) == \
            (int(size), int(align)), name


def test_preprocessor_handles_conditionals_attributes_and_macros():
    src = """
    #ifndef G
    #define G
    #include <stdint.h>
    #if defined(ODB_BUILDING)
    #define API __attribute__((visibility("default")))
    #else
    #define API
    #endif
    #ifdef __cplusplus
    extern "C" {
    #endif
    #define A 0x10u   /* a comment */
    #define B (A << 2)
    #define C ((uint64_t)7)
    struct s { int v[B]; };   // B expands
    API int f(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
    #endif
    """
    out = cdef_from_header(src)
    assert "extern" not in out and "__attribute__" not in out and "API" not in out
    assert "#define A 16" in out and "#define B 64" in out and "#define C 7" in out
    assert "int v[64];" in out and "int f(const char *fmt, ...)" in out
    assert "visibility" not in cdef_from_header(src, {"ODB_BUILDING": ""}).split("int f")[0]
    with pytest.raises(ValueError):
        cdef_from_header("#define F(x) (x)\n")


def test_a_kernel_through_lib():
    cfg = ffi.new("struct odb_config *")
    lib.odb_config_init(cfg)
    cfg.ram = 64 << 20
    cmdline = ffi.new("char[]", b"slub_debug=FZPU")
    cfg.cmdline = cmdline
    out = ffi.new("odb_kernel **")
    err = ffi.new("char[256]")
    assert lib.odb_kernel_create(cfg, out, err, 256) == lib.ODB_OK, ffi.string(err)
    k = out[0]
    try:
        addr = ffi.new("odb_addr_t *")
        assert lib.odb_kmalloc(k, 100, lib.ODB_GFP_KERNEL, addr) == lib.ODB_OK
        assert addr[0] >= lib.odb_arena_start(k)
        size = ffi.new("size_t *")
        assert lib.odb_ksize(k, addr[0], size) == 0 and size[0] >= 100
        assert lib.odb_kfree(k, addr[0]) == lib.ODB_OK
        assert lib.odb_report_count(k) == 0
        lib.odb_kfree(k, addr[0])                          # a double free: a report
        assert lib.odb_report_count(k) == 1
        r = lib.odb_report_get(k, 0)
        try:
            assert ffi.string(r.kind) == b"double-free"
            assert r.addr == addr[0]
            text = ffi.string(r.text).decode()
            assert "BUG: KASAN: double-free" in text
        finally:
            lib.odb_report_put(r)
        assert lib.odb_kfree(k, 12345) == lib.ODB_EINVAL
        assert b"not an address" in ffi.string(lib.odb_strerror(k))
        s = lib.odb_dmesg(k, False)
        try:
            assert b"Kernel command line: slub_debug=FZPU" in ffi.string(s)
        finally:
            lib.odb_free(s)
    finally:
        lib.odb_kernel_destroy(k)
