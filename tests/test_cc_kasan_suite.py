"""The kernel's KASAN test cases (kasan_test_c.c, generic mode) as an
instrumented C suite: tests/cc/kasan_suite.c, written for odebug, built with
odebug.cc's flags (gcc, and clang when installed), each case run in a fresh
kernel through its C entry ``kasan_suite_run``.

The C side is a small KUnit: ``KUNIT_EXPECT_KASAN_FAIL`` requires a "BUG:
KASAN: " report from its expression and none outside the expectations (the
kernel's kasan_test_exit rule), with KASAN multi-shot on for the case.  This
side checks more than the kernel's suite does: every report's exact bug type,
access size and direction, in order -- the "Expected report(s), Generic"
column of the kernel test table (spec section 3.2).

Where that column is a derivation the kernel does not bear out, the kernel
wins: ``kasan_memchr`` is reported as a read of 1 byte (the table says 25),
because the kernel's memchr (lib/string.c, built with KASAN; x86-64 has no
arch version) reads byte by byte and the first bad byte is the 25th.
"""
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
SUITE = os.path.join(HERE, "cc", "kasan_suite.c")

if odebug.build_info().get("sanitizer"):
    pytest.skip("odebug.cc's runtime defines the __asan_* callbacks that this sanitizer "
                "build's runtime (preloaded) defines too; tested in the plain build",
                allow_module_level=True)
if not cc.compiler_supported("gcc"):
    pytest.skip("gcc with -fsanitize=kernel-address is needed", allow_module_level=True)

KUNIT_SUCCESS, KUNIT_FAILURE, KUNIT_SKIPPED = 0, 1, 2


def _case_names():
    src = open(SUITE).read()
    table = src.split("static const struct kunit_case kasan_cases[] = {", 1)[1].split("};", 1)[0]
    return re.findall(r"KUNIT_CASE\((\w+)\)", table)


CASES = _case_names()

# (bug type, access size, is_write); free reports have size 0 and no direction
def R(kind, size):
    return (kind, size, False)


def W(kind, size):
    return (kind, size, True)


SOOB, UAF, SUAF = "slab-out-of-bounds", "use-after-free", "slab-use-after-free"
INVALID_FREE = ("invalid-free", 0, None)
DOUBLE_FREE = ("double-free", 0, None)

# kasan_atomics: READ_ONCE, WRITE_ONCE, smp_load_acquire, smp_store_release on
# the int, then the 23 atomic_t operations (atomic_read the only read; every
# other one may store: kasan_check_write, as instrument_atomic_read_write has
# it; try_cmpxchg(good, bad) reports its expected-value operand, also a
# write), then the same 23 on atomic_long_t (8 bytes)
_ATOMIC_OPS = [R(SOOB, 4)] + [W(SOOB, 4)] * 22
ATOMICS = ([R(SOOB, 4), W(SOOB, 4), R(SOOB, 4), W(SOOB, 4)] + _ATOMIC_OPS +
           [(k, 8, w) for (k, _, w) in _ATOMIC_OPS])

EXPECTED = {
    "kmalloc_oob_right": [W(SOOB, 1), W(SOOB, 1), R(SOOB, 1)],
    "kmalloc_oob_left": [R(SOOB, 1)],
    "kmalloc_node_oob_right": [R(SOOB, 1)],
    "kmalloc_track_caller_oob_right": [W(SOOB, 1), W(SOOB, 1)],
    "kmalloc_big_oob_right": [W(SOOB, 1)],
    "kmalloc_large_oob_right": [W(SOOB, 1)],          # KASAN_PAGE_REDZONE
    "kmalloc_large_uaf": [R(UAF, 1)],                 # KASAN_PAGE_FREE
    "kmalloc_large_invalid_free": [INVALID_FREE],
    "page_alloc_uaf": [R(UAF, 1)],
    "krealloc_more_oob": [W(SOOB, 1)] * 2,
    "krealloc_less_oob": [W(SOOB, 1)] * 5,
    "krealloc_large_more_oob": [W(SOOB, 1)] * 2,
    "krealloc_large_less_oob": [W(SOOB, 1)] * 5,
    "krealloc_uaf": [R(SUAF, 1), R(SUAF, 1)],         # kasan_check_byte, then the read
    "kmalloc_oob_16": [W(SOOB, 16)],
    "kmalloc_uaf_16": [R(SUAF, 16)],
    "kmalloc_oob_in_memset": [W(SOOB, 128)],
    "kmalloc_oob_memset_2": [W(SOOB, 2)],
    "kmalloc_oob_memset_4": [W(SOOB, 4)],
    "kmalloc_oob_memset_8": [W(SOOB, 8)],
    "kmalloc_oob_memset_16": [W(SOOB, 16)],
    "kmalloc_memmove_negative_size": [R("out-of-bounds", 2**64 - 2)],   # the wrap rule
    "kmalloc_memmove_invalid_size": [R(SOOB, 64)],    # the source; the copy is skipped
    "kmalloc_uaf": [R(SUAF, 1)],
    "kmalloc_uaf_memset": [W(SUAF, 33)],
    "kmalloc_uaf2": [R(SUAF, 1)],
    "kmalloc_double_kzfree": [R(SUAF, 1), DOUBLE_FREE],   # ksize()'s kasan_check_byte, then kfree
    "ksize_unpoisons_memory": [R(SOOB, 1)] * 3,
    "ksize_uaf": [R(SUAF, 1)] * 3,
    "rcu_uaf": [R(SUAF, 4)],                          # the callback reads an int
    "workqueue_uaf": [R(SUAF, 8)],                    # work->data, an atomic_long_t
    "kfree_via_page": [],
    "kfree_via_phys": [],
    "kmem_cache_oob": [R(SOOB, 1)],
    "kmem_cache_double_free": [DOUBLE_FREE],
    "kmem_cache_invalid_free": [INVALID_FREE],
    "kmem_cache_rcu_uaf": [R(SUAF, 1)],               # after the grace period (SLUB_RCU_DEBUG)
    "kmem_cache_rcu_reuse": [],                       # with odebug.slub_rcu_debug=off
    "kmem_cache_double_destroy": [R(SUAF, 1)],        # kasan_check_byte on the descriptor
    "kmem_cache_accounted": [],
    "kmem_cache_bulk": [],
    # the mempool cases: frees go into the reserve, where KASAN poisons them
    "mempool_kmalloc_oob_right": [R(SOOB, 1)],
    "mempool_kmalloc_large_oob_right": [R(SOOB, 1)],  # KASAN_PAGE_REDZONE
    "mempool_slab_oob_right": [R(SOOB, 1)],
    "mempool_kmalloc_uaf": [R(SUAF, 1)],
    "mempool_kmalloc_large_uaf": [R(UAF, 1)],         # the pages: KASAN_PAGE_FREE
    "mempool_slab_uaf": [R(SUAF, 1)],
    "mempool_page_alloc_uaf": [R(UAF, 1)],
    "mempool_kmalloc_double_free": [DOUBLE_FREE],
    "mempool_kmalloc_large_double_free": [DOUBLE_FREE],
    "mempool_page_alloc_double_free": [DOUBLE_FREE],
    "mempool_kmalloc_invalid_free": [INVALID_FREE],
    "mempool_kmalloc_large_invalid_free": [INVALID_FREE],
    "kasan_global_oob_right": [R("global-out-of-bounds", 1)],
    "kasan_global_oob_left": [R("global-out-of-bounds", 1)],     # clang only
    "kasan_stack_oob": [R("stack-out-of-bounds", 1)],
    "kasan_alloca_oob_left": [R("alloca-out-of-bounds", 1)],
    "kasan_alloca_oob_right": [R("alloca-out-of-bounds", 1)],
    "kasan_memchr": [R(SOOB, 1)],                     # see the module's doc
    "kasan_memcmp": [R(SOOB, 1)],                     # words 0-2 equal, then byte 24
    "kasan_strings": [R(SOOB, 1)] + [R(SUAF, 1)] * 6,
    # bit 64 (8 modifications), then bit 72 (7 test-and-modify, then test_bit:
    # the one read); each on the whole long at +8 of a 9-byte object
    "kasan_bitops_generic": [W(SOOB, 8)] * 15 + [R(SOOB, 8)],
    "kasan_atomics": ATOMICS,
    "vmalloc_oob": [R("vmalloc-out-of-bounds", 1)] * 2,
    "copy_to_kernel_nofault_oob": [R(SOOB, 128), W(SOOB, 128)],
    "copy_user_test_oob": [W(SOOB, 121), R(SOOB, 121)] * 3 + [W(SOOB, 121)],
}


def _clang():
    import glob
    for c in ["clang"] + sorted(glob.glob("/usr/bin/clang-[0-9]*"), reverse=True):
        if shutil.which(c) and cc.compiler_supported(c):
            return c
    return None


class Suite:
    def __init__(self, path, compiler):
        self.compiler = compiler
        cc.runtime()
        self.lib = ctypes.CDLL(path)
        self.lib.kasan_suite_run.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                             ctypes.c_size_t]
        self.lib.kasan_suite_run.restype = ctypes.c_int
        self.lib.kasan_suite_count.restype = ctypes.c_size_t
        self.lib.kasan_suite_case.argtypes = [ctypes.c_size_t]
        self.lib.kasan_suite_case.restype = ctypes.c_char_p

    def names(self):
        return [self.lib.kasan_suite_case(i).decode() for i in range(self.lib.kasan_suite_count())]

    def run(self, k, name):
        msg = ctypes.create_string_buffer(4096)
        st = self.lib.kasan_suite_run(k.c_pointer, name.encode(), msg, len(msg))
        return st, msg.value.decode()


@pytest.fixture(scope="module", params=["gcc", "clang"])
def suite(request, tmp_path_factory):
    compiler = "gcc" if request.param == "gcc" else _clang()
    if compiler is None:
        pytest.skip("no clang with -fsanitize=kernel-address installed")
    out = tmp_path_factory.mktemp("kasan_suite") / f"libkasan_suite-{request.param}.so"
    p = subprocess.run([sys.executable, "-m", "odebug", "cc", "--", compiler, "-O1", "-shared",
                        "-fPIC", "-Wall", "-Wextra", "-Wshadow", "-Werror", SUITE, "-o", str(out)],
                       capture_output=True, text=True, cwd=os.path.dirname(HERE))
    assert p.returncode == 0, p.stderr
    return Suite(str(out), request.param)


def _reports(k):
    return [(r.kind, r.size, r.is_write) for r in k.reports]


#: the boot command line of a case (the kernel's config gates), else the defaults
CMDLINE = {"kmem_cache_rcu_reuse": "odebug.slub_rcu_debug=off"}


@pytest.mark.parametrize("case", CASES)
def test_kasan_case(suite, case):
    with odebug.Kernel(CMDLINE.get(case, ""), ram="64M") as k:
        status, log = suite.run(k, case)
        if status == KUNIT_SKIPPED:
            # the kernel's own gate: gcc leaves no red zone before a global
            assert case == "kasan_global_oob_left" and suite.compiler == "gcc", log
            assert _reports(k) == []
            pytest.skip(log)
        assert status == KUNIT_SUCCESS, log
        assert _reports(k) == EXPECTED[case], "\n\n".join(r.text for r in k.reports)
        assert all(r.subsystem == "kasan" for r in k.reports)
        # the suite's cases turn multi-shot on and back off
        assert not k.kasan.multi_shot
        for r in k.reports:
            title = r.text.splitlines()[1]
            assert title.startswith(f"BUG: KASAN: {r.kind} in "), title
            assert title in k.dmesg()


def test_the_suite_lists_every_case_with_an_expectation(suite):
    assert suite.names() == CASES
    assert sorted(EXPECTED) == sorted(CASES)
    assert len(CASES) == 66          # 52 + kmalloc_double_kzfree and the 12 mempool cases


@pytest.mark.parametrize("case,cmdline", [("kmem_cache_rcu_uaf", "odebug.slub_rcu_debug=off"),
                                          ("kmem_cache_rcu_reuse", "")])
def test_the_rcu_cases_skip_on_the_other_config(suite, case, cmdline):
    # KASAN_TEST_NEEDS_CONFIG_ON / _OFF(CONFIG_SLUB_RCU_DEBUG)
    with odebug.Kernel(cmdline, ram="64M") as k:
        status, log = suite.run(k, case)
        assert status == KUNIT_SKIPPED and "CONFIG_SLUB_RCU_DEBUG" in log, log
        assert k.reports == []


def test_unknown_case_and_the_shims_own_failures(suite):
    with odebug.Kernel(ram="64M") as k:
        assert suite.run(k, "no_such_case") == (-1, "")
        # each of these must fail: an expectation without a report, a report
        # outside any expectation (kasan_test_exit), a report of another type
        st, log = suite.run(k, "shim_expectation_without_report")
        assert st == KUNIT_FAILURE and "but none occurred" in log, log
        st, log = suite.run(k, "shim_report_outside_expectation")
        assert st == KUNIT_FAILURE and "outside an expectation" in log, log
        st, log = suite.run(k, "shim_report_of_another_type")
        assert st == KUNIT_FAILURE and "another type than slab-use-after-free" in log, log
        assert _reports(k) == [R(SOOB, 1), R(SOOB, 1)]


def _one(suite, case):
    k = odebug.Kernel(ram="64M")
    status, log = suite.run(k, case)
    assert status == KUNIT_SUCCESS, log
    return k


def _block(text, header):
    """The stack lines under a report's "<header>" line."""
    lines = text.splitlines()
    i = lines.index(header)
    out = []
    for ln in lines[i + 1:]:
        if not ln.strip():
            break
        out.append(ln)
    return out


@pytest.mark.parametrize("case, fn", [("rcu_uaf", "rcu_uaf"), ("workqueue_uaf", "workqueue_uaf")])
def test_deferred_work_reports_name_where_the_work_was_queued(suite, case, fn):
    with _one(suite, case) as k:
        (r,) = k.reports
        aux = _block(r.text, "Last potentially related work creation:")
        assert any(ln.startswith(f" {fn}+") for ln in aux), r.text
        assert "Second to last potentially related work creation:" not in r.text
        # the free happened in the deferred function itself
        freed = _block(r.text, "Freed by task 1:")
        reclaim = "rcu_victim_reclaim" if case == "rcu_uaf" else "self_freeing_work"
        assert any(ln.startswith(f" {reclaim}+") for ln in freed), r.text
        # the sections in the kernel's order
        t = r.text
        assert t.index("Allocated by task") < t.index("Freed by task") < \
            t.index("Last potentially related work creation:") < \
            t.index("The buggy address belongs to the object at")


def test_stack_report_describes_the_frame(suite):
    with _one(suite, "kasan_stack_oob") as k:
        (r,) = k.reports
        lines = r.text.splitlines()
        i = lines.index("The buggy address belongs to stack of task swapper/0/1")
        assert re.fullmatch(r" and is located at offset \d+ in frame:", lines[i + 1])
        assert re.fullmatch(r" kasan_stack_oob\+0x0/0x[0-9a-f]+", lines[i + 2]), r.text
        assert lines[i + 4] == "This frame has 2 objects:"
        objs = lines[i + 5:i + 7]
        (arr,) = [o for o in objs if o.endswith("'stack_array'")]
        lo, hi = map(int, re.fullmatch(r" \[(\d+), (\d+)\) 'stack_array'", arr).groups())
        assert hi - lo == 10
        # the bad byte is the first after the array
        assert int(re.search(r"offset (\d+)", lines[i + 1]).group(1)) == hi
        # the shadow of the frame: 10 bytes = 00 02, then a red zone
        dump = "\n".join(lines[lines.index("Memory state around the buggy address:"):])
        # (the frame may straddle two rows of the dump: the bytes in order)
        shadow = " ".join(row.split(": ", 1)[1].strip() for row in dump.splitlines()
                          if re.match(r"^[ >][0-9a-f]{16}: ", row))
        assert re.search(r"00 02 f[23]", shadow), dump
        assert "stack-out-of-bounds in kasan_stack_oob+" in lines[1]


@pytest.mark.parametrize("case", ["kasan_alloca_oob_left", "kasan_alloca_oob_right"])
def test_alloca_reports_name_the_stack(suite, case):
    with _one(suite, case) as k:
        (r,) = k.reports
        assert "The buggy address belongs to stack of task swapper/0/1" in r.text
        assert f"alloca-out-of-bounds in {case}+" in r.text.splitlines()[1]
        dump = r.text.split("Memory state around the buggy address:")[1]
        assert ("ca ca ca ca" if case.endswith("left") else "00 02 cb") in dump, dump


def test_global_report_names_the_variable(suite):
    with _one(suite, "kasan_global_oob_right") as k:
        (r,) = k.reports
        lines = r.text.splitlines()
        i = lines.index("The buggy address belongs to the variable:")
        assert re.fullmatch(r" global_array\+0xd/0x[0-9a-f]+", lines[i + 1]), r.text


def test_string_function_reports_name_the_caller(suite):
    with _one(suite, "kasan_strings") as k:
        titles = [r.text.splitlines()[1] for r in k.reports]
        assert all(re.fullmatch(r"BUG: KASAN: slab-(out-of-bounds|use-after-free) in "
                                r"kasan_strings\+0x[0-9a-f]+/0x[0-9a-f]+", t) for t in titles), titles
        # the freed object's reads are all at +16 (one byte each)
        uaf = k.reports[1:]
        assert {r.offset for r in uaf} == {16} and {r.cache for r in uaf} == {"kmalloc-32"}


def test_host_stack_and_heap_outside_the_arena_stay_silent(suite):
    # the suite's own frames (its stack buffers, the KUnit struct) and the
    # calloc'd "user" page are accessed throughout: only expected reports
    with _one(suite, "copy_user_test_oob") as k:
        assert all(r.kind == SOOB and r.size == 121 for r in k.reports)
    with _one(suite, "copy_to_kernel_nofault_oob") as k:
        assert [r.offset for r in k.reports] == [0, 0]
