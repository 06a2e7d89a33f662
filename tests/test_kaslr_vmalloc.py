"""Issue 17, part 3: the address space of a kernel.

1. Per-kernel KASLR bases: the direct map (``page_offset``) and vmalloc space
   (``vmalloc_start``) of a kernel come from its boot seed in 1 GiB steps; seed 0
   and ``nokaslr`` give the nokaslr layout; two live kernels never overlap, so a
   pointer of one kernel is never an object of another.
2. vmalloc with generic KASAN's CONFIG_KASAN_VMALLOC: vmalloc / vzalloc / vfree,
   vmap / vunmap, kvmalloc / kvfree, the vmalloc shadow, the kernel's reports.
3. An access that starts in RAM and runs past its end is classified by the
   shadow of its first bad byte.
"""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import odebug
from odebug import _core

GFP_KERNEL = _core.GFP_KERNEL
GFP_ATOMIC = _core.GFP_ATOMIC
GFP_NOWARN = _core.__GFP_NOWARN
GiB = 1 << 30
PAGE = 4096
NOKASLR_PAGE_OFFSET = 0xffff888000000000
NOKASLR_VMALLOC_START = 0xffffc90000000000
DIRECT_MAP_END = NOKASLR_PAGE_OFFSET + (64 << 40)
VMALLOC_REGION_END = NOKASLR_VMALLOC_START + (32 << 40)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _layouts(script: str) -> dict:
    """Run script in a fresh process (no other kernel alive there) with this
    tree's odebug; it prints one JSON object."""
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


_LAYOUT_SCRIPT = """
    import json, odebug
    out = {}
    for name, cmdline, seed in [("seed0", "", 0), ("seed7", "", 7), ("seed12345", "", 12345),
                                ("nokaslr7", "nokaslr", 7), ("huge", "", 2**64 - 1)]:
        with odebug.Kernel(cmdline, ram="64M", seed=seed) as k:
            out[name] = [k.page_offset, k.arena_start, k.arena_end, k.vmalloc_start, k.vmalloc_end,
                         k.param("nokaslr")]
    # a 2 GiB kernel takes two 1 GiB slots: a second seed-0 kernel goes past both
    with odebug.Kernel(ram="2G") as a, odebug.Kernel(ram="64M") as b:
        out["big_then_small"] = [a.page_offset, b.page_offset, a.vmalloc_start, b.vmalloc_start]
    print(json.dumps(out))
"""


# =============================================================================
# 1. KASLR
# =============================================================================
def test_seed_0_and_nokaslr_give_the_nokaslr_layout_and_other_seeds_move_it():
    got = _layouts(_LAYOUT_SCRIPT)
    po, start, end, vs, ve, nokaslr = got["seed0"]
    assert po == start == NOKASLR_PAGE_OFFSET and end == po + (64 << 20)
    assert vs == NOKASLR_VMALLOC_START and ve - vs == 2 * (64 << 20)
    assert nokaslr == "0"
    assert got["nokaslr7"][:1] == [NOKASLR_PAGE_OFFSET] and got["nokaslr7"][3] == NOKASLR_VMALLOC_START
    assert got["nokaslr7"][5] == "1"
    seen = set()
    for name in ("seed7", "seed12345", "huge"):
        po, start, end, vs, ve, _ = got[name]
        assert po == start and po % GiB == 0 and vs % GiB == 0
        assert NOKASLR_PAGE_OFFSET <= po and end <= DIRECT_MAP_END
        assert NOKASLR_VMALLOC_START <= vs and ve <= VMALLOC_REGION_END
        assert po != NOKASLR_PAGE_OFFSET and vs != NOKASLR_VMALLOC_START
        seen.add(po)
    assert len(seen) == 3
    a, b, av, bv = got["big_then_small"]
    assert a == NOKASLR_PAGE_OFFSET and b == NOKASLR_PAGE_OFFSET + 2 * GiB
    assert av == NOKASLR_VMALLOC_START and bv == NOKASLR_VMALLOC_START + 4 * GiB


def test_two_processes_with_the_same_seed_get_the_same_layout():
    script = """
        import json, odebug
        with odebug.Kernel(ram="32M", seed=424242) as k:
            print(json.dumps([k.page_offset, k.vmalloc_start, k.kmalloc(100), k.vmalloc(100)]))
    """
    assert _layouts(script) == _layouts(script)


def test_nokaslr_takes_no_value():
    with pytest.raises(ValueError, match="nokaslr"):
        odebug.Kernel("nokaslr=1", ram="16M")


def _overlap(a0, a1, b0, b1):
    return a0 < b1 and b0 < a1


def test_two_live_kernels_with_one_seed_have_disjoint_arenas_and_vmalloc_spaces():
    ks = [odebug.Kernel(ram="64M", seed=99) for _ in range(3)]
    try:
        for i, a in enumerate(ks):
            for b in ks[i + 1:]:
                assert not _overlap(a.arena_start, a.arena_end, b.arena_start, b.arena_end)
                assert not _overlap(a.vmalloc_start, a.vmalloc_end, b.vmalloc_start, b.vmalloc_end)
        # the next free slot, deterministically: the same seed again, after a
        # close, takes the slot that was freed
        first = ks[0].page_offset
        ks[0].close()
        with odebug.Kernel(ram="64M", seed=99) as again:
            assert again.page_offset == first
    finally:
        for k in ks:
            k.close()


def test_a_pointer_of_another_kernel_is_reported_or_refused_never_its_object():
    a = odebug.Kernel("kasan_multi_shot", ram="64M", seed=5)
    b = odebug.Kernel("kasan_multi_shot", ram="64M", seed=5)     # the same seed, alive at once
    try:
        p = a.kmalloc(64)
        a.write(p, b"A" * 64)
        q = b.kmalloc(64)                                          # b's own object
        b.write(q, b"B" * 64)
        assert not b.arena_start <= p < b.arena_end
        # kfree: "not an address in this kernel's memory", nothing freed
        with pytest.raises(odebug.InvalidArgument, match="not an address in this kernel's memory"):
            b.kfree(p)
        # read / write: a wild access in b, never performed
        with b.expect_report("wild-memory-access", count=1) as got:
            assert b.read(p, 8) == b""
        r = got.report
        assert r.addr == p and r.size == 8 and not r.is_write and r.subsystem == "kasan"
        with b.expect_report("wild-memory-access", count=1) as got:
            b.write(p, b"X" * 8)
        assert got.report.is_write
        # a's object is untouched and still a's; b's too
        assert a.read(p, 64) == b"A" * 64 and b.read(q, 64) == b"B" * 64
        assert not a.reports
        a.kfree(p)
        b.kfree(q)
        assert not a.reports and len(b.reports) == 2
    finally:
        a.close()
        b.close()


def test_a_vmalloc_pointer_of_another_kernel_is_wild_and_vfree_warns():
    with odebug.Kernel("kasan_multi_shot", ram="32M", seed=3) as a, \
            odebug.Kernel("kasan_multi_shot", ram="32M", seed=3) as b:
        v = a.vmalloc(100)
        assert a.is_vmalloc_addr(v) and not b.is_vmalloc_addr(v)
        with b.expect_report("wild-memory-access", count=1):
            b.read(v, 4)
        free0 = b.nr_free_pages
        with b.expect_report("Trying to vfree() nonexistent vm area", count=1):
            b.vfree(v)
        assert b.nr_free_pages == free0
        a.write(v, b"ok")
        assert a.read(v, 2) == b"ok" and not a.reports
        a.vfree(v)


# =============================================================================
# 2. vmalloc
# =============================================================================
@pytest.fixture
def k():
    with odebug.Kernel("kasan_multi_shot", ram="64M") as kern:
        yield kern


def _plant_vmalloc(k, size):
    return k.vmalloc(size)


def test_vmalloc_oob(k):
    """kasan_test's vmalloc_oob (spec §3 row 67): vmalloc(PAGE_SIZE / 2 - 8 - 5),
    then reads of [2035] (inside the partial granule) and [2040] (the next
    one): two vmalloc-out-of-bounds reports, as the kernel describes them."""
    size = PAGE // 2 - 8 - 5
    assert size == 2035
    free0 = k.nr_free_pages
    v = _plant_vmalloc(k, size)
    assert v is not None and v % PAGE == 0 and k.is_vmalloc_addr(v)
    assert k.vmalloc_start <= v < k.vmalloc_end
    assert k.nr_free_pages == free0 - 1 and k.nr_vmalloc_pages == 1
    # the shadow: 254 accessible granules, 3 of the 255th, KASAN_VMALLOC_INVALID after
    sh = k.kasan.shadow(v, 2 * PAGE)
    assert sh[:254] == bytes(254) and sh[254] == 3 and set(sh[255:]) == {0xF8}
    k.write(v, b"v" * size)                                # every byte of the area: silent
    assert k.read(v, size) == b"v" * size and not k.reports
    with k.expect_report("vmalloc-out-of-bounds", count=2) as got:
        k.read(v + size, 1)
        k.read(v + size + 5, 1)
    for r, off in zip(got.reports, (2035, 2040)):
        assert r.kind == odebug.ReportKind.VMALLOC_OUT_OF_BOUNDS and r.subsystem == "kasan"
        assert r.addr == v + off and r.size == 1 and r.is_write is False and r.cache is None
        lines = r.text.splitlines()
        assert re.fullmatch(r"BUG: KASAN: vmalloc-out-of-bounds in test_kaslr_vmalloc\.py:\d+:"
                            r"test_vmalloc_oob", lines[1]), lines[1]
        assert f"Read of size 1 at addr {v + off:016x}" in lines[2]
        i = lines.index("The buggy address belongs to the virtual mapping at")
        # [va_start, va_end): the page and the guard page; created by the caller
        assert lines[i + 1] == f" [{v:016x}, {v + 2 * PAGE:016x}) created by:"
        assert re.fullmatch(r" test_kaslr_vmalloc\.py:\d+:_plant_vmalloc", lines[i + 2])
        assert lines[i + 4] == "The buggy address belongs to the physical page:"
        row = [ln for ln in lines if ln.startswith(">")]
        assert row == [f">{v + 1920:016x}: " + " ".join(["00"] * 14) + " 03 f8"]
        caret = lines[lines.index(row[0]) + 1]
        assert caret.index("^") == 3 + 16 + 3 * ((v + off - (v + 1920)) // 8)
    assert k.read(v + size, 8) == b"\x00" * 8              # the page's bytes exist: read
    k.vfree(v)
    assert k.nr_free_pages == free0 and k.nr_vmalloc_pages == 0


def test_use_after_vfree_is_vmalloc_out_of_bounds(k):
    """vfree poisons the area back to KASAN_VMALLOC_INVALID (kasan_poison_vmalloc):
    a use after free of vmalloc memory is vmalloc-out-of-bounds, with no mapping
    to describe; the range is not reused at once (the lazy purge)."""
    free0 = k.nr_free_pages
    v = k.vmalloc(3 * PAGE)
    k.write(v, b"x" * 3 * PAGE)
    k.vfree(v)
    assert k.nr_free_pages == free0
    assert k.kasan.shadow(v, 4 * PAGE) == b"\xf8" * (4 * PAGE // 8)
    with k.expect_report("vmalloc-out-of-bounds", count=1) as got:
        assert k.read(v + 100, 4) == b""                   # nothing exists there now
    r = got.report
    assert "virtual mapping" not in r.text and "physical page" not in r.text
    assert "Memory state around the buggy address:" in r.text
    with k.expect_report("vmalloc-out-of-bounds", count=1):
        k.write(v, b"late")
    w = k.vmalloc(3 * PAGE)
    assert w != v and not w <= v < w + 4 * PAGE            # a fresh range
    k.vfree(w)


def test_vzalloc_zeroes_and_the_pages_come_back_at_vfree(k):
    free0 = k.nr_free_pages
    vs = [k.vzalloc(n) for n in (1, PAGE, 5 * PAGE + 3, 64 << 10)]
    assert all(v is not None for v in vs)
    assert k.nr_free_pages == free0 - (1 + 1 + 6 + 16) == free0 - k.nr_vmalloc_pages
    for v, n in zip(vs, (1, PAGE, 5 * PAGE + 3, 64 << 10)):
        assert k.read(v, n) == bytes(n)
        k.write(v, b"\xff" * n)
    # areas sit one after the other, a guard page between
    for a, b in zip(vs, vs[1:]):
        assert b >= a + PAGE + PAGE
    for v in vs:
        k.vfree(v)
    assert k.nr_free_pages == free0 and k.nr_vmalloc_pages == 0 and not k.reports


def test_vmap_of_allocated_pages_aliases_their_direct_map(k):
    """vmap(pages): the pages mapped one after the other, all accessible, the
    same memory as their direct-map addresses; the guard page after them is
    invalid; vunmap frees no page."""
    pages = [k.alloc_pages(0) for _ in range(3)]
    free0 = k.nr_free_pages
    for i, p in enumerate(pages):
        k.write(p, bytes([0x41 + i]) * PAGE)
    v = k.vmap(pages)
    assert v is not None and k.is_vmalloc_addr(v) and k.nr_vmalloc_pages == 0
    assert k.read(v, 3 * PAGE) == b"A" * PAGE + b"B" * PAGE + b"C" * PAGE
    k.write(v + PAGE + 10, b"through vmap")                # seen through the direct map
    assert k.read(pages[1] + 10, 12) == b"through vmap"
    k.write(pages[2], b"direct")                            # and the other way round
    assert k.read(v + 2 * PAGE, 6) == b"direct"
    assert bytes(k.raw(v, 3 * PAGE))[PAGE + 10:PAGE + 22] == b"through vmap"
    assert k.kasan.shadow(v, 4 * PAGE) == bytes(3 * PAGE // 8) + b"\xf8" * (PAGE // 8)
    assert not k.reports
    with k.expect_report("vmalloc-out-of-bounds", count=1) as got:
        k.read(v + 3 * PAGE, 1)                             # the guard page
    assert f" [{v:016x}, {v + 4 * PAGE:016x}) created by:" in got.report.text
    assert "physical page" not in got.report.text        # nothing is mapped there
    k.vunmap(v)
    assert k.nr_free_pages == free0                        # the pages stay the caller's
    assert k.read(pages[1] + 10, 12) == b"through vmap" and not k.reports[1:]
    with k.expect_report("vmalloc-out-of-bounds", count=1):
        k.read(v, 1)
    for p in pages:
        k.free_pages(p, 0)


def test_vmap_refuses_addresses_that_are_not_pages_of_this_kernel(k):
    p = k.alloc_pages(0)
    for bad in ([p + 8], [k.arena_end], [0], [k.vmalloc_start]):
        with pytest.raises(odebug.InvalidArgument, match="vmap: page 0"):
            k.vmap(bad)
    assert k.vmap([]) is None
    with pytest.raises(TypeError):
        k.vmap([p, "x"])


def test_kvmalloc_large_goes_to_vmalloc_and_kvfree_gives_it_back(k):
    free0 = k.nr_free_pages
    size = (4 << 20) + 1                                    # past KMALLOC_MAX_SIZE
    v = k.kvmalloc(size)
    assert v is not None and k.is_vmalloc_addr(v)
    # VM_ALLOW_HUGE_VMAP: mapped in 2 MiB blocks, the caller's size accessible
    assert v % (2 << 20) == 0 and k.nr_vmalloc_pages == (6 << 20) // PAGE
    assert k.nr_free_pages == free0 - (6 << 20) // PAGE
    k.write(v, b"\x01" * size)
    assert not k.reports
    with k.expect_report("vmalloc-out-of-bounds", count=1):
        k.read(v + size, 1)
    k.kvfree(v)
    assert k.nr_free_pages == free0 and k.nr_vmalloc_pages == 0
    # small: kmalloc; kvfree is kfree
    p = k.kvmalloc(100)
    assert k.arena_start <= p < k.arena_end
    k.kvfree(p)
    with k.expect_report("double-free", count=1):          # it was kfree'd: the slab's object
        k.kfree(p)
    # a size kmalloc can serve comes from kmalloc, a page block here
    free1 = k.nr_free_pages
    q = k.kvmalloc(64 << 10)
    assert k.arena_start <= q < k.arena_end and k.nr_free_pages == free1 - 16
    k.kvfree(q)
    assert k.nr_free_pages == free1 and k.nr_vmalloc_pages == 0
    assert k.kvmalloc(0) == 16 and k.kvfree(16) is None
    # no vmalloc fallback for a gfp that may not sleep
    assert k.kvmalloc(size, GFP_ATOMIC) is None


def test_kvmalloc_falls_back_to_vmalloc_when_kmalloc_fails(k):
    free0 = k.nr_free_pages
    # the kmalloc_large attempt (order 4, GFP_KERNEL) fails once
    k.set_fault("fail_page_alloc", probability=100, times=1, ignore_gfp_wait=0)
    v = k.kvmalloc(64 << 10)
    assert v is not None and k.is_vmalloc_addr(v)
    assert not [r for r in k.reports if r.kind == "page allocation failure"]   # quietly
    k.kvfree(v)
    assert k.nr_free_pages == free0


def test_vfree_of_an_address_that_is_no_area_warns_and_frees_nothing(k):
    v = k.vmalloc(PAGE)
    k.write(v, b"keep")
    free0 = k.nr_free_pages
    p = k.kmalloc(64)
    for bad in (k.vmalloc_start + 64 * PAGE, p, 0x4141414141414000):
        with k.expect_report("Trying to vfree() nonexistent vm area", count=1) as got:
            k.vfree(bad)
        r = got.report
        assert r.subsystem == "kernel" and r.addr == bad
        assert f"Trying to vfree() nonexistent vm area ({bad:016x})" in r.text
        assert "WARNING: CPU: 0 PID: 1 at mm/vmalloc.c:" in r.text
        assert "test_kaslr_vmalloc.py" in r.text                      # the caller in the trace
    with k.expect_report(re.compile("Trying to vfree")) as got:
        k.vfree(v + 8)                                      # not page aligned: two WARNs
    assert [r.kind for r in got.reports] == ["Trying to vfree() bad address",
                                             "Trying to vfree() nonexistent vm area"]
    with k.expect_report("Trying to vunmap() nonexistent vm area", count=1):
        k.vunmap(k.vmalloc_start + 64 * PAGE)
    assert k.nr_free_pages == free0 - 1                     # only the kmalloc
    assert k.read(v, 4) == b"keep" and k.vfree(None) is None and k.vfree(0) is None
    assert all(isinstance(r.kind, odebug.ReportKind) for r in k.reports)
    k.vfree(v)
    with k.expect_report("Trying to vfree() nonexistent vm area", count=1):
        k.vfree(v)                                          # twice: the second is no area


def test_vfree_under_panic_on_warn_raises():
    with odebug.Kernel("panic_on_warn=1", ram="16M") as k:
        with pytest.raises(odebug.KernelBug, match="nonexistent vm area"):
            k.vfree(k.vmalloc_start)


def test_kfree_of_a_vmalloc_address_is_an_invalid_free_and_frees_nothing(k):
    v = k.vmalloc(100)
    k.write(v, b"still here")
    free0 = k.nr_free_pages
    with k.expect_report("invalid-free", count=1) as got:
        k.kfree(v)
    r = got.report
    assert r.addr == v and f"Free of addr {v:016x}" in r.text
    assert "The buggy address belongs to the virtual mapping at" in r.text
    assert k.nr_free_pages == free0 and k.read(v, 10) == b"still here"
    k.vfree(v)
    with odebug.Kernel("kasan=off", ram="16M") as off:
        w = off.vmalloc(100)
        with off.expect_report("no slab for object", count=1):
            off.kfree(w)
        off.vfree(w)


def test_vmalloc_that_cannot_be_done_is_none_with_the_kernels_report(k):
    with k.expect_report("vmalloc error", count=1) as got:
        assert k.vmalloc(k.totalram_pages * PAGE + 1) is None
    assert "vmalloc error: size %d, exceeds total pages" % (k.totalram_pages * PAGE + 1) in \
        got.report.text
    n = len(k.reports)
    assert k.vmalloc(k.totalram_pages * PAGE + 1, GFP_KERNEL | GFP_NOWARN) is None
    assert len(k.reports) == n
    free0 = k.nr_free_pages
    # vmalloc's pages are order-0 __GFP_HIGHMEM GFP_KERNEL ones
    k.set_fault("fail_page_alloc", probability=100, interval=1, times=3, min_order=0,
                ignore_gfp_wait=0, ignore_gfp_highmem=0)
    with k.expect_report("vmalloc error", count=1) as got:
        assert k.vmalloc(10 * PAGE) is None
    assert "failed to allocate pages" in got.report.text
    assert not [r for r in k.reports if r.kind == "page allocation failure"]
    assert k.nr_free_pages == free0 and k.nr_vmalloc_pages == 0
    assert k.vmalloc(0) is None


def test_vmalloc_space_fills_then_the_lazy_ranges_are_purged():
    with odebug.Kernel(ram="16M", cpus=1) as k:
        span = k.vmalloc_end - k.vmalloc_start              # 32 MiB: twice the RAM
        seen = set()
        for _ in range(3 * span // (2 << 20)):
            v = k.vmalloc(1 << 20)
            assert v is not None
            seen.add(v)
            k.vfree(v)
        assert min(seen) == k.vmalloc_start and len(seen) > 1 and not k.reports


def test_kasan_off_vmalloc_is_unchecked_and_outside_is_refused():
    with odebug.Kernel("kasan=off", ram="16M") as k:
        v = k.vmalloc(100)
        k.write(v + 100, b"slack")                          # the rest of the page: unchecked
        assert k.read(v + 100, 5) == b"slack"
        with pytest.raises(odebug.InvalidArgument, match="outside"):
            k.read(v + PAGE - 2, 4)                         # into the guard page
        with pytest.raises(odebug.InvalidArgument, match="outside"):
            k.write(k.vmalloc_start + (64 << 20), b"x")
        k.vfree(v)
        assert not k.reports


def test_every_access_path_takes_vmalloc_addresses(k):
    v = k.vmalloc(256)
    w = k.vmalloc(256)
    k.memset(v, 0x5a, 256)
    k.memcpy(w, v, 256)
    assert k.read(w, 256) == b"\x5a" * 256
    k.memmove(w + 1, w, 100)
    assert k.read(w, 3) == b"\x5a" * 3
    raw = k.raw(v, 256)
    raw[:4] = b"raw!"
    assert k.read(v, 4) == b"raw!" and not k.reports
    with pytest.raises(ValueError):
        k.raw(v, PAGE + 1)                                  # past the mapped page
    with k.expect_report("vmalloc-out-of-bounds", count=1):
        k.memset(v + 200, 0, 100)                           # skipped: the check fails
    assert k.read(v + 200, 56) == b"\x5a" * 56
    with k.expect_report("vmalloc-out-of-bounds", count=1):
        k.memcpy(w, v, 300)
    with k.expect_report("vmalloc-out-of-bounds", count=1):
        assert len(k.read(v + 256, PAGE)) == PAGE - 256    # up to the guard page
    k.vfree(v)
    assert raw[:4] == b"\x00" * 4                           # a kept view: scratch memory, no fault
    k.vfree(w)


# =============================================================================
# 3. past the end of RAM
# =============================================================================
def test_an_access_running_past_the_end_of_ram_is_classified_by_its_first_bad_byte():
    with odebug.Kernel("kasan_multi_shot no_debug_objects", ram="16M") as k:
        end = k.arena_end
        if k.kasan.shadow(end - 8, 8) == b"\xff":
            with k.expect_report("use-after-free", count=1) as got:   # a free page at the end
                assert k.read(end - 4, 16) == bytes(4)                # only the bytes that exist
            r = got.report
            assert r.addr == end - 4 and r.size == 16
            assert "BUG: KASAN: use-after-free in test_kaslr_vmalloc.py:" in r.text
            assert "The buggy address belongs to the physical page:" in r.text
            assert "Memory state around the buggy address:" in r.text
        # every page allocated: the bytes in RAM are fine, the first bad one is
        # past the end -- no shadow there: wild-memory-access
        got_pages = []
        while True:
            p = k.alloc_pages(0, GFP_KERNEL | GFP_NOWARN)
            if p is None:
                break
            got_pages.append(p)
        assert k.kasan.shadow(end - 8, 8) == b"\x00"
        k.write(end - 4, b"last")
        with k.expect_report("wild-memory-access", count=1) as got:
            assert k.read(end - 4, 16) == b"last"
        r = got.report
        assert r.addr == end - 4 and r.size == 16
        assert re.search(r"BUG: KASAN: wild-memory-access in test_kaslr_vmalloc\.py:\d+:"
                         r"test_an_access_running_past", r.text)
        # the dump (the access address has shadow) around the first bad byte,
        # end + 4 (8-byte steps from the access address); no shadow past the end
        dump = r.text.split("Memory state around the buggy address:\n")[1].splitlines()
        assert dump[0] == f" {end - 256:016x}:" + " 00" * 16
        assert dump[1] == f" {end - 128:016x}:" + " 00" * 16
        assert dump[2] == f">{end:016x}:" + " ??" * 16
        assert dump[3] == " " * 19 + "^"
        assert dump[4] == f" {end + 128:016x}:" + " ??" * 16
        for p in got_pages:
            k.free_pages(p, 0)


# =============================================================================
# threads
# =============================================================================
def test_kernels_booted_by_threads_at_once_never_overlap():
    import threading
    got, lock = [], threading.Lock()

    def boot():
        k = odebug.Kernel(ram="32M", seed=1234)
        with lock:
            got.append(k)

    ts = [threading.Thread(target=boot) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    try:
        spans = sorted((k.arena_start, k.arena_end) for k in got)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
        vspans = sorted((k.vmalloc_start, k.vmalloc_end) for k in got)
        assert all(a[1] <= b[0] for a, b in zip(vspans, vspans[1:]))
    finally:
        for k in got:
            k.close()


def test_threads_vmalloc_write_read_vfree_and_the_pages_add_up():
    import random
    import threading
    with odebug.Kernel("kasan_multi_shot", ram="64M", cpus=4) as k:
        free0 = k.nr_free_pages
        errors = []

        def worker(cpu):
            rng = random.Random(cpu)
            try:
                for _ in range(150):
                    n = rng.choice([1, 100, PAGE, 3 * PAGE + 7, 70 << 10])
                    v = k.vmalloc(n, cpu=cpu) if rng.random() < 0.7 else k.kvmalloc(n, cpu=cpu)
                    assert v is not None
                    data = bytes([cpu]) * n
                    k.write(v, data, cpu=cpu)
                    assert k.read(v, n, cpu=cpu) == data
                    k.kvfree(v, cpu=cpu)
            except Exception as e:   # pragma: no cover - reported below
                errors.append(e)

        ts = [threading.Thread(target=worker, args=(c,)) for c in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors and not k.reports
        # every vmalloc'd page went back (kvmalloc's kmalloc objects may leave
        # slabs in their caches, which hold no vmalloc page)
        assert k.nr_vmalloc_pages == 0
        slab_pages = sum(r["num_slabs"] * r["pagesperslab"] for r in k.slabinfo())
        assert k.nr_free_pages + slab_pages >= free0


def test_a_vfree_racing_readers_reports_never_crashes():
    import threading
    with odebug.Kernel("kasan_multi_shot", ram="32M", cpus=2) as k:
        for _ in range(20):
            v = k.vmalloc(8 * PAGE)
            raw = k.raw(v, 8 * PAGE)
            stop = threading.Event()

            def reader():
                while not stop.is_set():
                    k.read(v, 8 * PAGE, cpu=1)
                    bytes(raw[:64])

            t = threading.Thread(target=reader)
            t.start()
            k.vfree(v, cpu=0)
            stop.set()
            t.join()
            del raw
        assert k.nr_vmalloc_pages == 0
        assert {r.kind for r in k.reports} <= {"vmalloc-out-of-bounds"}


def test_a_forked_child_cannot_touch_its_parents_kernel():
    # RAM is shared with vmalloc space's aliases, so with a fork()ed child too:
    # in the child an inherited kernel is closed, and tearing it down there
    # touches nothing of the parent's
    import gc
    with odebug.Kernel(ram="16M") as k:
        p = k.kmalloc(64)
        k.write(p, b"parent" * 10)
        q = k.kmalloc(64)
        k.kfree(q)                        # in the quarantine: a child's teardown would free it
        pid = os.fork()
        if pid == 0:                      # the child
            code = 1
            try:
                try:
                    k.write(p, b"child!" * 10)
                except odebug.ClosedError:
                    try:
                        k.kmalloc(64)
                    except odebug.ClosedError:
                        code = 0
                del k
                gc.collect()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert k.read(p, 60) == b"parent" * 10
        k.read(q, 1)                      # still quarantined: a use-after-free report
        assert [r.kind for r in k.reports] == ["slab-use-after-free"]
        k.kfree(p)
        assert k.kasan.quarantine.stats()["put_calls"] == 2
