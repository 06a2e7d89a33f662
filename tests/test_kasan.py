"""KASAN room: shadow, checked accesses, reports, both quarantines.

Ports the slab-related cases of kasan_test (spec §3.2) with the report kind,
access size and direction asserted, and that nothing else was reported."""
import re

import pytest
from hypothesis import settings

import odebug
from odebug.kasan import KASAN_SLAB_FREE, KASAN_SLAB_FREE_META, KASAN_SLAB_REDZONE
from odebug.testing import QuarantineMachine

MiB = 1 << 20


def K(cmd="", **kw):
    kw.setdefault("ram", "64M")
    kw.setdefault("cpus", 2)
    return odebug.Kernel(("kasan_multi_shot no_debug_objects " + cmd).strip(), **kw)


@pytest.fixture
def k():
    with K() as kk:
        yield kk


class Expect:
    """Run a block; the KASAN reports made in it must be exactly `want`
    [(kind, size, is_write)] (size/is_write None = not checked)."""

    def __init__(self, k, *want):
        self.k, self.want = k, list(want)

    def __enter__(self):
        self.start = self.k.report_count
        return self

    def __exit__(self, *exc):
        if exc[0]:
            return False
        new = self.k.reports[self.start:]
        got = [(r.kind, r.size, r.is_write) for r in new]
        assert all(r.subsystem == "kasan" for r in new), got
        assert len(got) == len(self.want), (got, self.want)
        for g, w in zip(got, self.want):
            assert g[0] == w[0], (got, self.want)
            if w[1] is not None:
                assert g[1] == w[1], (got, self.want)
            if w[2] is not None:
                assert g[2] == w[2], (got, self.want)
        self.reports = new


def W(kind, n=1):
    return (kind, n, True)


def R(kind, n=1):
    return (kind, n, False)


OOB, UAF = "slab-out-of-bounds", "slab-use-after-free"


# ---- kasan_test (spec §3.2), slab-related subset ------------------------------------
def test_kmalloc_oob_right(k):
    p = k.kmalloc(128 - 8 - 5)
    with Expect(k, W(OOB), W(OOB), R(OOB)):
        k.write(p + 115, b"y")
        k.write(p + 120, b"y")
        k.read(p + 128, 1)
    k.kfree(p)


def test_kmalloc_oob_left(k):
    k.kmalloc(15)                  # not the first object of its slab
    p = k.kmalloc(15)
    with Expect(k, R(OOB)):
        k.read(p - 1, 1)
    k.kfree(p)


def test_kmalloc_node_oob_right(k):
    p = k.kmalloc(4096)
    with Expect(k, R(OOB)):
        k.read(p + 4096, 1)
    k.kfree(p)


def test_kmalloc_track_caller_oob_right(k):
    for _ in range(2):
        p = k.kmalloc(120)
        with Expect(k, W(OOB)):
            k.write(p + 120, b"y")
        k.kfree(p)


def test_kmalloc_big_oob_right(k):
    p = k.kmalloc(8192 - 256)
    with Expect(k, W(OOB)):
        k.write(p + 8192 - 256, b"y")
    k.kfree(p)


def test_kmalloc_large_oob_right(k):
    n = 8192 + 10
    p = k.kmalloc(n)
    with Expect(k, W(OOB)):
        k.write(p + n, b"y")
    k.kfree(p)


def test_kmalloc_large_uaf(k):
    p = k.kmalloc(8192 + 10)
    k.kfree(p)
    with Expect(k, R("use-after-free")):
        k.read(p, 1)


def test_kmalloc_large_invalid_free(k):
    p = k.kmalloc(8192 + 10)
    with Expect(k, ("invalid-free", 0, None)):
        k.kfree(p + 1)
    k.kfree(p)


def test_page_alloc_uaf(k):
    p = k.alloc_pages(4)
    k.free_pages(p, 4)
    with Expect(k, R("use-after-free")):
        k.read(p, 1)


@pytest.mark.parametrize("big", [0, 8192])
def test_krealloc_more_oob(k, big):
    p = k.kmalloc(big + 201)
    q = k.krealloc(p, big + 235)
    with Expect(k):
        for off in (200, 201, 218, 234):
            k.write(q + big + off, b"x")
    with Expect(k, W(OOB), W(OOB)):
        k.write(q + big + 235, b"x")
        k.write(q + big + 240, b"x")
    k.kfree(q)


@pytest.mark.parametrize("big", [0, 8192])
def test_krealloc_less_oob(k, big):
    p = k.kmalloc(big + 235)
    q = k.krealloc(p, big + 201)
    with Expect(k):
        k.write(q + big + 200, b"x")
    with Expect(k, *[W(OOB)] * 5):
        for off in (201, 208, 218, 234, 235):
            k.write(q + big + off, b"x")
    k.kfree(q)


def test_krealloc_uaf(k):
    p = k.kmalloc(201)
    k.kfree(p)
    with Expect(k, R(UAF), R(UAF)):
        assert k.krealloc(p, 235) is None
        k.read(p, 1)


def test_kmalloc_oob_16(k):
    p1 = k.kmalloc(13)
    p2 = k.kmalloc(16)
    with Expect(k, W(OOB, 16)):
        k.write(p1, k.read(p2, 16))
    k.kfree(p1)
    k.kfree(p2)


def test_kmalloc_uaf_16(k):
    p1 = k.kmalloc(16)
    p2 = k.kmalloc(16)
    k.kfree(p2)
    with Expect(k, R(UAF, 16)):
        k.write(p1, k.read(p2, 16))
    k.kfree(p1)


def test_kmalloc_oob_in_memset(k):
    p = k.kmalloc(120)
    with Expect(k, W(OOB, 128)):
        k.memset(p, 0, 128)
    k.kfree(p)


@pytest.mark.parametrize("off,n", [(119, 2), (117, 4), (113, 8), (105, 16)])
def test_kmalloc_oob_memset(k, off, n):
    p = k.kmalloc(120)
    with Expect(k, W(OOB, n)):
        k.memset(p + off, 0, n)
    k.kfree(p)


def test_kmalloc_memmove_negative_size(k):
    p = k.kmalloc(64)
    k.memset(p, 0, 64)
    with Expect(k, ("out-of-bounds", None, False)) as e:
        k.memmove(p, p + 4, -2)
    assert e.reports[0].size % (1 << 64) == (1 << 64) - 2
    k.kfree(p)


def test_kmalloc_memmove_invalid_size(k):
    p = k.kmalloc(64)
    k.memset(p, 0, 64)
    with Expect(k, R(OOB, 64)):
        k.memmove(p, p + 4, 64)
    k.kfree(p)


def test_kmalloc_uaf(k):
    p = k.kmalloc(10)
    k.kfree(p)
    with Expect(k, R(UAF)) as e:
        k.read(p + 8, 1)
    assert "located 8 bytes inside of\n freed 16-byte region" in e.reports[0].text


def test_kmalloc_uaf_memset(k):
    p = k.kmalloc(33)
    k.kfree(p)
    with Expect(k, W(UAF, 33)):
        k.memset(p, 0, 33)


def test_kmalloc_uaf2(k):
    p1 = k.kmalloc(43)
    k.kfree(p1)
    p2 = k.kmalloc(43)
    with Expect(k, R(UAF)):
        k.read(p1 + 40, 1)
    assert p1 != p2
    k.kfree(p2)


def test_kasan_atomics(k):
    p = k.kzalloc(48)
    with Expect(k, R(OOB, 4), W(OOB, 4), R(OOB, 8), W(OOB, 8)):
        k.read(p + 48, 4)
        k.write(p + 48, b"\0" * 4)
        k.read(p + 48, 8)
        k.write(p + 48, b"\0" * 8)
    k.kfree(p)


def test_kmalloc_double_kzfree(k):
    p = k.kmalloc(16)
    k.kfree_sensitive(p)
    with Expect(k, R(UAF), ("double-free", 0, None)) as e:
        k.kfree_sensitive(p)        # ksize()'s kasan_check_byte first, then kfree
    assert [r.addr for r in e.reports] == [p, p]
    assert e.reports[0].cache == "kmalloc-16" and e.reports[0].offset == 0


def test_ksize_unpoisons_memory(k):
    p = k.kmalloc(115)
    assert k.ksize(p) == 128
    with Expect(k):
        k.read(p, 1)
        k.read(p + 114, 1)
    with Expect(k, R(OOB), R(OOB), R(OOB)):
        k.read(p + 115, 1)
        k.read(p + 120, 1)
        k.read(p + 127, 1)
    k.kfree(p)


def test_ksize_uaf(k):
    p = k.kmalloc(120)
    k.kfree(p)
    with Expect(k, R(UAF), R(UAF), R(UAF)):
        assert k.ksize(p) == 0
        k.read(p, 1)
        k.read(p + 120, 1)


def test_kmem_cache_oob(k):
    c = k.kmem_cache_create("test_cache", 200)
    p = c.alloc()
    with Expect(k, R(OOB)) as e:
        k.read(p + 200, 1)
    assert e.reports[0].cache == "test_cache"
    c.free(p)
    c.destroy()


def test_kmem_cache_double_free(k):
    c = k.kmem_cache_create("test_cache", 200)
    p = c.alloc()
    c.free(p)
    with Expect(k, ("double-free", 0, None)):
        c.free(p)
    c.destroy()


def test_kmem_cache_invalid_free(k):
    c = k.kmem_cache_create("test_cache", 200, flags=odebug.slab.SLAB_TYPESAFE_BY_RCU)
    p = c.alloc()
    with Expect(k, ("invalid-free", 0, None)):
        c.free(p + 1)
    with Expect(k):
        c.free(p)
    c.destroy()


def test_kfree_via_page_and_phys_no_report(k):
    for _ in range(2):
        p = k.kmalloc(8)
        with Expect(k):
            k.kfree(p)


def test_kmem_cache_accounted_and_bulk(k):
    c = k.kmem_cache_create("test_cache", 200)
    with Expect(k):
        for _ in range(5):
            c.free(c.alloc())
        objs = c.alloc_bulk(10)
        for p in objs:
            k.read(p, 1)
            k.read(p + 199, 1)
        c.free_bulk(objs)
    c.destroy()


def test_kasan_memchr_memcmp(k):
    p = k.kzalloc(24)
    with Expect(k, R(OOB, 25), R(OOB, 25)):
        k.read(p, 25)
        k.kasan.check(p, 25, False)
    k.kfree(p)


def test_kasan_bitops_generic(k):
    p = k.kzalloc(9)
    with Expect(k, *[W(OOB, 8)] * 2 + [R(OOB, 8)] * 2):
        k.write(p + 8, b"\0" * 8)          # set_bit(64)
        k.write(p + 8, b"\0" * 8)          # bit 72
        k.read(p + 8, 8)                   # test_bit
        k.read(p + 8, 8)
    k.kfree(p)


def test_copy_user_test_oob(k):
    p = k.kmalloc(120)
    with Expect(k, *[W(OOB, 121)] * 3 + [R(OOB, 121)] * 4):
        for _ in range(3):
            k.write(p, b"\0" * 121)
        for _ in range(4):
            k.read(p, 121)
    k.kfree(p)


# ---- shadow encoding ------------------------------------------------------------------
def test_shadow_kmalloc_115(k):
    p = k.kmalloc(115)
    assert k.kasan.shadow(p, 128) == b"\0" * 14 + b"\x03\xfc"
    assert k.cache("kmalloc-128").size == 192
    k.kfree(p)
    sh = k.kasan.shadow(p, 128)
    assert sh[0] == KASAN_SLAB_FREE_META and set(sh[1:]) == {KASAN_SLAB_FREE}


def test_wild_and_null(k):
    with Expect(k, R("null-ptr-deref", 8), W("user-memory-access", 4),
                R("wild-memory-access", 1)):
        assert k.read(8, 8) == b""               # reported; no byte there to read
        k.write(0x10000000, b"abcd")
        k.read(0xffff000000000000, 1)


def test_single_shot_default_counts_everything():
    with odebug.Kernel("no_debug_objects", ram="64M") as k:
        p = k.kmalloc(8)
        k.read(p + 8, 1)
        k.read(p + 9, 1)
        k.read(p + 10, 1)
        assert [r.kind for r in k.reports if r.subsystem == "kasan"] == [OOB]
        c = k.kasan.counters()
        assert c["detections"] == 3 and c["reports"] == 1 and c["suppressed"] == 2


def test_fault_panic_raises_and_access_is_reported():
    with odebug.Kernel("kasan.fault=panic no_debug_objects", ram="64M") as k:
        p = k.kmalloc(8)
        with pytest.raises(odebug.KernelBug) as e:
            k.write(p + 8, b"x")
        assert e.value.report.kind == OOB
        assert "kasan.fault=panic set" in k.dmesg()


def test_kasan_off():
    with odebug.Kernel("kasan=off no_debug_objects", ram="64M") as k:
        p = k.kmalloc(115)
        assert k.cache("kmalloc-128").size == 128
        k.write(p + 120, b"x")
        assert not k.reports
        with pytest.raises(ValueError):
            k.read(8, 1)
        with pytest.raises(odebug.Error):
            k.kasan.shadow(p, 8)
        assert not k.kasan.enabled


def test_huge_sizes_are_invalid_arguments_not_overflow_errors(k):
    p = k.kmalloc(8)
    for call in (lambda: k.read(p, 1 << 63), lambda: k.memset(p, 0, 1 << 63),
                 lambda: k.kasan.shadow(p, 1 << 63), lambda: k.read(p, 1 << 64)):
        with pytest.raises(odebug.InvalidArgument, match="size"):
            call()
    assert not k.reports


def test_bad_params():
    for cmd in ("kasan=maybe", "kasan.fault=explode", "odebug.quarantine=half"):
        with pytest.raises(ValueError):
            odebug.Kernel(cmd, ram="64M")


def test_uaf_write_performed_but_metadata_kept(k):
    c = k.kmem_cache_create("meta", 64)
    objs = [c.alloc() for _ in range(4)]
    for p in objs:
        c.free(p)
    with Expect(k, *[W(UAF, 64)] * 4):
        for p in objs:
            k.write(p, b"\xee" * 64)       # clobbers quarantine link + free track
    assert k.read(objs[0] + 40, 1) == b"\xee"   # performed (metadata put back)
    k.kasan.quarantine.drain()
    c.destroy()                            # nothing lost, no crash


# ---- report format ------------------------------------------------------------------------
def test_report_text_format(k):
    p = k.kmalloc(115)
    k.write(p + 120, b"x")
    r = k.reports[-1]
    lines = r.text.splitlines()
    assert lines[0] == "=" * 66 and lines[-1] == "=" * 66
    assert re.match(r"BUG: KASAN: slab-out-of-bounds in \S+", lines[1])
    assert re.match(r"Write of size 1 at addr %016x by task .+/\d+$" % (p + 120), lines[2])
    assert lines[3] == ""
    assert any(l.startswith("Allocated by task %d:" % k.pid) for l in lines)
    i = lines.index("The buggy address belongs to the object at %016x" % p)
    assert lines[i + 1] == " which belongs to the cache kmalloc-128 of size 128"
    assert lines[i + 2] == "The buggy address is located 5 bytes to the right of"
    assert lines[i + 3] == " allocated 115-byte region [%016x, %016x)" % (p, p + 115)
    j = lines.index("Memory state around the buggy address:")
    rows = lines[j + 1:j + 7]
    row0 = (p + 120) & ~127
    assert rows[2].startswith(">%016x:" % row0)
    assert rows[0].startswith(" %016x:" % (row0 - 256))
    kk = ((p + 120) - row0) // 8
    assert rows[3].index("^") == 19 + 3 * kk
    assert rows[2][rows[3].index("^"):].startswith("fc")
    assert (r.addr, r.size, r.is_write, r.cache, r.object, r.offset) == \
        (p + 120, 1, True, "kmalloc-128", p, 120)
    assert r.alloc_track is not None and r.alloc_track.pid == k.pid and r.free_track is None
    assert "BUG: KASAN: slab-out-of-bounds" in k.dmesg()


def test_report_free_tracks_and_free_line(k):
    p = k.kmalloc(10)
    k.kfree(p)
    k.kfree(p)
    r = k.reports[-1]
    assert r.kind == "double-free"
    assert "Free of addr %016x by task" % p in r.text
    assert "Freed by task" in r.text and r.free_track is not None


def _queue_the_free(k, p):
    k.kfree_rcu(p)


def test_kfree_rcu_records_the_work_creation_stack(k):
    # kvfree_call_rcu's kasan_record_aux_stack: a later report on the object
    # says where its deferred free was queued, after its free track
    p = k.kmalloc(40)
    _queue_the_free(k, p)
    k.rcu_barrier()
    with Expect(k, R(UAF)) as e:
        k.read(p, 1)
    lines = e.reports[0].text.splitlines()
    i = lines.index("Last potentially related work creation:")
    aux = lines[i + 1:lines.index("", i)]
    assert aux[-1].endswith(":_queue_the_free"), aux
    assert lines.index("Freed by task 1:") < i < \
        lines.index("The buggy address belongs to the object at %016x" % p)
    assert "Second to last potentially related work creation:" not in lines
    # a new allocation of the slot starts without work stacks
    k.kasan.quarantine.drain()
    q = k.kmalloc(40)
    assert q == p
    with Expect(k, R(OOB)) as e:
        k.read(q + 40, 1)
    assert "potentially related work creation" not in e.reports[0].text
    # a large kmalloc has no alloc meta: nothing recorded, nothing printed
    big = k.kmalloc(3 * 4096)
    k.kfree_rcu(big)
    k.rcu_barrier()
    with Expect(k, R("use-after-free")) as e:
        k.read(big, 1)
    assert "potentially related work creation" not in e.reports[0].text


# ---- quarantine -----------------------------------------------------------------------------
def fill(k, cache, nbytes, cpu=None):
    objs = [cache.alloc(cpu=cpu) for _ in range(nbytes // cache.size + 1)]
    for p in objs:
        cache.free(p, cpu=cpu)
    return objs


@pytest.mark.parametrize("policy", ["batched", "quarter"])
def test_quarantine_uaf_then_evicted_and_reused(policy):
    with K(f"odebug.quarantine={policy}", ram="64M") as k:
        c = k.kmem_cache_create("q", 1000)
        victim = c.alloc()
        keep = c.alloc()               # keeps the victim's slab alive after eviction
        c.free(victim)
        with Expect(k, R(UAF)) as e:
            k.read(victim, 1)
        assert e.reports[0].free_track is not None
        seen_reuse = False
        for _ in range(40):
            objs = fill(k, c, 512 * 1024)
            k.kasan.quarantine.reduce()
            s = k.kasan.quarantine.stats()
            if s["evicted_objects"]:
                break
        # evicted: still poisoned, reported without tracks
        with Expect(k, R(UAF)) as e:
            k.read(victim, 1)
        assert e.reports[0].alloc_track is None and e.reports[0].free_track is None
        for _ in range(2000):
            p = c.alloc()
            if p == victim:
                seen_reuse = True
                break
        assert seen_reuse
        with Expect(k):
            k.read(victim, 1)
        del objs, keep


def test_batched_ring_exact_rules():
    with K("odebug.quarantine=batched", ram="64M", cpus=1) as k:
        c = k.kmem_cache_create("q", 3968)     # + 128 redzone: slot 4096
        assert c.size == 4096
        q = k.kasan.quarantine
        n_flush = MiB // 4096 + 1              # first put that crosses 1 MiB
        objs = [c.alloc() for _ in range(3 * n_flush)]
        for p in objs[:n_flush - 1]:
            c.free(p)
        s = q.stats()
        assert s["size"] == 0 and s["percpu_bytes"] == [(n_flush - 1) * 4096]
        c.free(objs[n_flush - 1])
        s = q.stats()
        assert s["size"] == n_flush * 4096 and s["percpu_bytes"] == [0]
        assert s["tail"] == 1 and s["max_size"] == 0 and s["batch_size"] == 0
        # sizing happens at the first over-budget reduce; 64M/32 - 1M = 1M: evicts one batch
        q.reduce()
        s = q.stats()
        assert s["max_size"] == 64 * MiB // 32 - MiB and s["batch_size"] == MiB
        assert s["head"] == 1 and s["size"] == 0 and s["evicted_objects"] == n_flush
        before = s["reduce_slow"]
        q.reduce()                          # size <= max: lockless no-op
        assert q.stats()["reduce_slow"] == before
        for p in objs[n_flush:]:
            c.free(p)
        k.kasan.quarantine.drain()
        s = q.stats()
        assert s["ring_bytes"] == 0 and s["percpu_total"] == 0
        c.destroy()


def test_kmalloc_reduces_twice_and_atomic_never():
    with K(ram="64M") as k:
        q = k.kasan.quarantine
        r0 = q.stats()["reduce_calls"]
        p = k.kmalloc(32)
        assert q.stats()["reduce_calls"] - r0 == 2
        c = k.kmem_cache_create("x", 32)
        r0 = q.stats()["reduce_calls"]
        o = c.alloc()
        assert q.stats()["reduce_calls"] - r0 == 1
        r0 = q.stats()["reduce_calls"]
        o2 = c.alloc(odebug.slab.GFP_ATOMIC)
        k.kfree(p)
        assert q.stats()["reduce_calls"] == r0
        c.free(o); c.free(o2); c.destroy()


@pytest.mark.parametrize("policy", ["batched", "quarter"])
def test_quarantine_bounded_and_nothing_lost(policy):
    with K(f"odebug.quarantine={policy}", ram="64M", cpus=2) as k:
        c = k.kmem_cache_create("q", 2000)
        budget = 64 * MiB // 32
        for i in range(12):
            fill(k, c, MiB // 2, cpu=i % 2)
            s = k.kasan.quarantine.stats()
            assert s["size"] <= budget + 2 * MiB + 64 * 1024
            assert max(s["percpu_bytes"]) <= MiB + c.size
        k.kasan.quarantine.drain()
        info = c.info()
        assert info["active_objs"] == 0 or c.stats()["free_slab"] >= 0
        s = k.kasan.quarantine.stats()
        assert s["ring_bytes"] == 0 and s["percpu_total"] == 0
        # every slab object is free again: the cache can go without leak reports
        n = k.report_count
        c.destroy()
        assert k.report_count == n
        assert "still has objects" not in k.dmesg()


@pytest.mark.parametrize("policy", ["batched", "quarter"])
def test_remove_cache_on_destroy(policy):
    with K(f"odebug.quarantine={policy}", ram="64M", cpus=1) as k:
        a = k.kmem_cache_create("a", 3000)
        b = k.kmem_cache_create("b", 3000)
        fill(k, a, 3 * MiB)
        bo = fill(k, b, 3 * MiB)
        s0 = k.kasan.quarantine.stats()
        a.destroy()
        s1 = k.kasan.quarantine.stats()
        assert "still has objects" not in k.dmesg()
        assert s1["remove_cache_objects"] > 0
        if policy == "batched":
            assert s1["size"] == s0["size"]            # quirk: not lowered
        assert s1["ring_bytes"] < s0["ring_bytes"]
        with Expect(k, R(UAF)):
            k.read(bo[-1], 1)                           # b's objects still quarantined
        b.destroy()


def test_quarter_reduce_frees_to_three_quarters():
    with K("odebug.quarantine=quarter", ram="128M", cpus=1) as k:
        c = k.kmem_cache_create("q", 4000)
        q = k.kasan.quarantine
        fill(k, c, 2 * MiB)
        q.reduce()                       # first reduce: sizing (quirk: frees the list)
        mx = q.stats()["max_size"]
        assert mx == 128 * MiB // 32 - MiB
        while q.stats()["size"] <= mx:
            fill(k, c, MiB)
            s = q.stats()
        before = q.stats()
        q.reduce()
        after = q.stats()
        assert after["size"] < mx * 3 // 4
        assert after["size"] >= mx * 3 // 4 - c.size
        assert after["max_evict_bytes"] >= before["size"] - mx * 3 // 4


def test_cpu_offline_refuses():
    with K(ram="64M") as k:
        c = k.kmem_cache_create("q", 64)
        p = c.alloc(cpu=1)
        k.kasan.quarantine.cpu_offline(1)
        c.free(p, cpu=1)
        assert k.kasan.quarantine.stats()["put_refused"] == 1
        k.kasan.quarantine.cpu_offline(1, False)
        c.destroy()


@pytest.mark.parametrize("policy", ["batched", "quarter"])
def test_quarantine_count_by_cache_and_conservation(policy):
    """count() walks every list: per cache, objects and bytes as the lists count
    them; put_calls - evicted - remove_cache - offline is what it finds."""
    with K(f"odebug.quarantine={policy}", ram="64M", cpus=2) as k:
        q = k.kasan.quarantine

        def held():          # every cache is listed; keep those with objects
            return {n: v for n, v in q.count().items() if v[0]}
        a, b = k.kmem_cache_create("qa", 100), k.kmem_cache_create("qb", 24)
        assert held() == {}
        pa = [a.alloc(cpu=i % 2) for i in range(30)]
        pb = [b.alloc(cpu=1) for _ in range(7)]
        for i, p in enumerate(pa):
            a.free(p, cpu=i % 2)
        for p in pb:
            b.free(p, cpu=0)
        got = held()
        assert got == {"qa": (30, 30 * a.size), "qb": (7, 7 * b.size)}
        q.reduce()                       # per-CPU lists may move into the ring
        assert held() == got or sum(o for o, _ in held().values()) < 37

        def conserved():
            st = q.stats()
            n = sum(o for o, _ in held().values())
            assert n == (st["put_calls"] - st["evicted_objects"]
                            - st["remove_cache_objects"] - st["offline_objects"])
            return st
        conserved()
        p = a.alloc(cpu=1)
        a.free(p, cpu=1)
        q.cpu_offline(1)                 # kasan_cpu_offline: vCPU 1's list freed at once
        st = conserved()
        assert st["offline_objects"] >= 1
        assert held().get("qa", (0, 0))[0] < 31
        q.cpu_offline(1, False)
        b.destroy()                      # kasan_quarantine_remove_cache
        assert "qb" not in held()
        conserved()
        q.drain()
        assert held() == {}
        a.destroy()


def test_metadata_at_a_4_byte_offset_slub_debug_u_on_kmalloc():
    """slub_debug=U on a kmalloc cache puts the 4-byte orig_size before KASAN's
    metadata, so the free meta (and its quarantine link) sit at a 4-byte
    offset, as in the kernel.  Free, quarantine, reduce, drain and the free
    track in a report all work there (the UBSan build checks the accesses)."""
    with K("slub_debug=U kasan_multi_shot", ram="64M", cpus=1) as k:
        q = k.kasan.quarantine
        ps = [k.kmalloc(13) for _ in range(200)]
        for p in ps:
            k.kfree(p)
        assert q.count()["kmalloc-16"][0] == 200
        q.reduce()
        k.read(ps[-1], 1)
        r = k.reports[-1]
        assert r.kind == UAF and "Freed by task" in r.text
        q.drain()
        assert q.count()["kmalloc-16"][0] == 0
        assert k.cache("kmalloc-16").validate() == 0


def test_quarantine_count_names_a_cache_destroyed_with_objects():
    """A cache destroyed while a mempool still holds its elements: the kernel
    reports it and keeps the cache; odebug takes it off the list (the name can
    be used again) and keeps it, so the elements the pool frees afterwards are
    quarantined as any.  count() names them ``"<name> (destroyed)"``, not None
    (which the fuzzer's invariants took for objects of no known cache), and the
    books balance (found by the surface fuzzer, seed 91)."""
    with K("slub_debug=P odebug.slub_path=modern kasan_multi_shot", ram="16M", cpus=2) as k:
        q = k.kasan.quarantine
        c = k.kmem_cache_create("zc", 409, align=8)
        pool = k.mempool_create_slab_pool(2, c)
        size = c.size
        c.destroy()
        assert "kmem_cache_destroy zc: Slab cache still has objects" in k.dmesg()
        assert "zc" not in [x["name"] for x in k.slabinfo()]
        again = k.kmem_cache_create("zc", 64)            # the name is free again
        pool.destroy()                                   # its two elements: quarantined
        got = q.count()
        assert None not in got
        assert got["zc (destroyed)"] == (2, 2 * size)
        assert got["zc"] == (0, 0)
        st = q.stats()
        assert sum(b for _, b in got.values()) == st["ring_bytes"] + st["percpu_total"]
        n = sum(o for o, _ in got.values())
        assert n == (st["put_calls"] - st["evicted_objects"] - st["remove_cache_objects"]
                     - st["offline_objects"])
        # a zombie of the same name as a live cache's stays apart from it
        p = again.alloc()
        again.free(p)
        assert q.count()["zc"] == (1, again.size)
        assert q.count()["zc (destroyed)"] == (2, 2 * size)


def test_quarantine_count_kasan_off():
    with odebug.Kernel("kasan=off no_debug_objects", ram="64M") as k:
        with pytest.raises(odebug.Error):
            k.kasan.quarantine.count()


def test_geometry_seed_machines():
    g = odebug.quarantine_geometry("4G", 4)
    assert (g["max_size"], g["batch_size"], g["batches"], g["slots_used"]) == \
        (130023424, 1048576, 1024, 124)
    assert g["old_reduce_bytes"] == 130023424 - 97517568
    g = odebug.quarantine_geometry("128G", 32)
    assert (g["max_size"], g["batch_size"], g["batches"], g["slots_used"]) == \
        (4261412864, 8388608, 1024, 508)
    g = odebug.quarantine_geometry("1T", 4096)
    assert (g["max_size"], g["batch_size"], g["batches"], g["slots_used"]) == \
        (30064771072, 4194304, 16384, 7168)
    assert odebug.quarantine_geometry("64M", 4)["max_size"] == 0
    assert odebug.quarantine_geometry("1G", 1)["max_size"] == 32505856
    with pytest.raises(ValueError):
        odebug.quarantine_geometry("4G", 8, nr_cpus=4)


def test_geometry_matches_a_4g_kernel():
    with odebug.Kernel("no_debug_objects", ram="4G", cpus=4) as k:
        c = k.kmem_cache_create("q", 4000)
        fill(k, c, MiB + 4096)
        k.kasan.quarantine.reduce()
        s = k.kasan.quarantine.stats()
        g = odebug.quarantine_geometry("4G", 4)
        assert (s["max_size"], s["batch_size"], s["batches"]) == \
            (g["max_size"], g["batch_size"], g["batches"])


def test_threads_storm_balance():
    with K(ram="64M", cpus=2) as k:
        r = k.kasan.quarantine.storm(20000, threads=2, live=32, min_size=16, max_size=1024)
        assert r["ops"] == 40000
        k.kasan.quarantine.drain()
        for name in ("kmalloc-16", "kmalloc-1024"):
            assert k.cache(name).info()["active_objs"] >= 0
        s = k.kasan.quarantine.stats()
        assert s["percpu_total"] == 0 and s["ring_bytes"] == 0


# ---- the state machine of odebug.testing: every access verdict against a model -------------------
class QuarterQuarantineMachine(QuarantineMachine):
    policy = "quarter"


TestQuarantineMachine = QuarantineMachine.TestCase
TestQuarantineMachine.settings = settings(max_examples=13, stateful_step_count=40, deadline=None)
TestQuarterQuarantineMachine = QuarterQuarantineMachine.TestCase
TestQuarterQuarantineMachine.settings = settings(max_examples=12, stateful_step_count=40,
                                                 deadline=None)


def test_storm_mutex_and_lock_waits():
    """The storm's shared mutex and the quarantine_lock wait accounting."""
    k = odebug.Kernel("no_debug_objects odebug.quarantine=quarter", ram="64M", cpus=1)
    r = k.kasan.quarantine.storm(20_000, threads=1, live=64, mutex_every=4)
    assert r["mutex_ops"] == 5_000                  # every 4th of 20,000 steps
    assert r["mutex_wait_ns_total"] >= 0
    s = k.kasan.quarantine.stats()
    assert s["lock_waits"] == 0 and s["lock_wait_ns_total"] == 0   # one thread: no contention
    k.close()


def test_multi_shot_is_settable_at_run_time_and_suppression_is_visible():
    """Issue 19.6 / 17: the kernel's default (no kasan_multi_shot) reports the
    first bad access only; the rest are counted, shown in k.reports' repr, and
    warned about once.  k.kasan.multi_shot flips it at run time."""
    with odebug.Kernel("no_debug_objects", ram="16M") as k:
        assert k.kasan.multi_shot is False
        p = k.kmalloc(32)
        k.kfree(p)
        k.read(p, 1)                                  # reported
        q = k.kmalloc(16)
        k.write(q + 16, b"x")                         # suppressed
        k.kfree(q)
        k.kfree(q)                                    # suppressed (double free)
        with pytest.warns(odebug.SuppressedReportsWarning, match="suppressed 2 report"):
            reps = k.reports
        assert [r.kind for r in reps] == ["slab-use-after-free"]
        assert reps.suppressed == 2 and "2 KASAN report(s) suppressed" in repr(reps)
        k.clear_reports()                             # does not re-arm (as the kernel)
        r = k.kmalloc(16)
        with pytest.raises(AssertionError, match="suppressed so far"):
            with k.expect_report("slab-out-of-bounds"):
                k.write(r + 16, b"x")
        k.kasan.multi_shot = True                     # as kasan_test's kunit init does
        assert k.kasan.multi_shot is True and "kasan_multi_shot" not in k.cmdline
        with k.expect_report("slab-out-of-bounds"):
            k.write(r + 16, b"y")
        k.kasan.multi_shot = False
        k.write(r + 16, b"z")
        assert [x.kind for x in k.reports] == ["slab-out-of-bounds"]
        assert k.reports.suppressed == 4


def test_report_kinds_are_an_enumeration_and_expect_report_matches_titles():
    """Issue 19.5: kinds are odebug.ReportKind members; expect_report takes a kind,
    a title substring or a regex."""
    with odebug.Kernel("slub_debug=FZPU,kmalloc-* kasan=off", ram="16M") as k:
        p = k.kmalloc(20)
        k.raw(p + 20, 1)[0] = 1
        with k.expect_report("Redzone overwritten") as got:          # title substring
            k.kfree(p)
        r = got.report
        assert r.kind is odebug.ReportKind.KMALLOC_REDZONE_OVERWRITTEN
        assert r.kind == "kmalloc Redzone overwritten" and r.cache == "kmalloc-32"
        assert r.title == "BUG kmalloc-32 (Not tainted): kmalloc Redzone overwritten"
        q = k.kmalloc(20)
        k.raw(q + 20, 1)[0] = 1
        with k.expect_report(re.compile(r"kmalloc-\d+ .*: kmalloc Redzone")):
            k.kfree(q)
        q = k.kmalloc(20)
        k.raw(q + 20, 1)[0] = 1
        with k.expect_report(odebug.ReportKind.KMALLOC_REDZONE_OVERWRITTEN):
            k.kfree(q)
        with pytest.raises(AssertionError):
            with k.expect_report(odebug.ReportKind.DOUBLE_FREE):
                k.kfree(k.kmalloc(8))


def test_quarantine_holding_all_ram_is_reduced_by_the_next_blocking_alloc():
    """A non-blocking alloc_bulk of huge objects fails when RAM runs out and frees what
    it got -- into the quarantine, which then holds every page.  As in the kernel,
    KASAN's post-alloc hook of the next GFP_KERNEL allocation reduces the quarantine
    (after that allocation has failed), so the one after it succeeds (the fuzzer's
    "kmalloc returned None" of seed 24 example 39529 was this)."""
    k = odebug.Kernel("no_debug_objects", cpus=2, ram="16M")
    c = k.kmem_cache_create("huge", 236451, flags="F")
    r0 = k.kasan.quarantine.stats()["reduce_calls"]   # boot's descriptor allocations made some
    assert c.alloc_bulk(143, 0) is None
    q = k.kasan.quarantine.stats()
    assert q["size"] > 13 << 20 and q["reduce_calls"] == r0
    # boot's own slabs (the kmem_cache cache's) leave fragments no huge slab
    # fits in: fill them without blocking (non-blocking allocations evict nothing)
    for shift in range(22, 2, -1):
        while k.kmalloc(1 << shift, 0) is not None:
            pass
    assert k.nr_free_pages == 0
    assert k.kasan.quarantine.stats()["reduce_evicting"] == 0
    assert k.kmalloc(64) is None
    assert k.kasan.quarantine.stats()["reduce_evicting"] >= 1 and k.nr_free_pages > 0
    p = k.kmalloc(64)
    assert p is not None
    k.kfree(p)
    k.close()


def test_boot_memory_is_page_free():
    """Issue 17: memblock hands every boot page to the buddy allocator and
    generic KASAN poisons a freed page KASAN_PAGE_FREE (0xFF): a read of a page
    the allocator never handed out is a use-after-free report, as is a read of
    pages handed out and freed again; pages in use read silently."""
    with odebug.Kernel("no_debug_objects kasan_multi_shot", ram="64M") as k:
        last = k.page_offset                # the bottom page: the buddy hands out from the top
        assert k.kasan.shadow(last, 64) == b"\xff" * 8
        with k.expect_report("use-after-free", count=1) as got:
            k.read(last + 100, 1)
        r = got.reports[0]
        assert r.kind == "use-after-free" and r.addr == last + 100 and r.cache is None
        assert "Read of size 1 at addr" in r.text
        p = k.kmalloc(3 * 4096)                                 # a large kmalloc: whole pages
        k.write(p, b"x" * 3 * 4096)
        assert not [x for x in k.reports if x.seq > r.seq]
        k.kfree(p)
        with k.expect_report("use-after-free", count=1):
            k.read(p, 8)
