"""KASAN's public poisoning API, mempool, kfree_sensitive and
kasan_disable_current (issue 17, part 2).

The twelve mempool cases of the kernel's kasan_test (spec section 3.2, rows
44-55) are ported with the kernel's own setup (a pool of 4, one element taken
out first so that frees go back into the reserve, where KASAN poisons them),
each asserting the report's kind, access size and direction, cache, object and
offset, and that nothing else was reported; then the pool's bookkeeping (an
element never kept twice, every page or object given back after destroy), the
fault-injection paths, the blocking wait, and the documented exceptions."""
import threading

import pytest

import odebug
from odebug import _core
from odebug.kasan import (KASAN_PAGE_FREE, KASAN_PAGE_REDZONE, KASAN_SLAB_FREE,
                          KASAN_SLAB_FREE_META, KASAN_SLAB_REDZONE)

KMALLOC_MAX_CACHE_SIZE = 8192
GRANULE = 8
OOB, UAF, PUAF = "slab-out-of-bounds", "slab-use-after-free", "use-after-free"
DF, IF = "double-free", "invalid-free"


def K(cmd="", **kw):
    kw.setdefault("ram", "64M")
    kw.setdefault("cpus", 2)
    return odebug.Kernel(("kasan_multi_shot no_debug_objects " + cmd).strip(), **kw)


@pytest.fixture
def k():
    with K() as kk:
        yield kk


class Expect:
    """The reports made in the block are exactly `want` [(kind, size, is_write)]."""

    def __init__(self, k, *want):
        self.k, self.want = k, list(want)

    def __enter__(self):
        self.start = self.k.report_count
        return self

    def __exit__(self, *exc):
        if exc[0]:
            return False
        self.reports = new = self.k.reports[self.start:]
        got = [(r.kind, r.size, r.is_write) for r in new]
        assert all(r.subsystem == "kasan" for r in new), got
        assert got == self.want, (got, self.want)


def R(kind, n=1):
    return (kind, n, False)


def FREE(kind):
    return (kind, 0, None)


def shadow(k, addr):
    return k.kasan.shadow(addr, 1)[0]


# ---- kasan_test's mempool cases (spec 3.2 rows 44-55) ------------------------------------
POOL_SIZE = 4


def prepare_kmalloc(k, size):
    """mempool_prepare_kmalloc: a pool of 4 and one element taken out, so that the
    tests' frees go into the reserve (add_element) rather than to kfree."""
    pool = k.mempool_create_kmalloc_pool(POOL_SIZE, size)
    assert pool is not None and pool.curr_nr == POOL_SIZE
    extra = pool.alloc_preallocated()
    assert extra is not None
    return pool, extra


def prepare_slab(k, size):
    cache = k.kmem_cache_create("test_cache", size)
    pool = k.mempool_create_slab_pool(POOL_SIZE, cache)
    assert pool is not None and pool.cache is cache
    return pool, pool.alloc_preallocated(), cache


def prepare_page(k, order):
    pool = k.mempool_create_page_pool(POOL_SIZE, order)
    assert pool is not None and pool.order == order
    return pool, pool.alloc_preallocated()


def oob_right(k, pool, size, cache, last_granule=None):
    elem = pool.alloc_preallocated()
    if last_granule is not None:
        assert shadow(k, elem + size - 1) == last_granule
    with Expect(k, R(OOB)) as e:
        k.read(elem + size, 1)
    r = e.reports[0]
    assert r.cache == cache and r.object == (elem if cache else 0)
    if cache:
        assert r.offset == size
        assert f"allocated {size}-byte region" in r.text
    pool.free(elem)
    return elem


def uaf(k, pool, kind, cache=None):
    elem = pool.alloc_preallocated()
    pool.free(elem)
    with Expect(k, R(kind)) as e:
        k.read(elem, 1)
    r = e.reports[0]
    assert r.addr == elem and r.cache == cache
    if cache:
        # the mempool_free is the free track, the element is "freed"
        assert r.object == elem and r.offset == 0 and r.free_track is not None
        assert "freed " in r.text and "Freed by task" in r.text
    return elem


def double_free(k, pool, cache=None):
    elem = pool.alloc_preallocated()
    pool.free(elem)
    before = pool.curr_nr
    with Expect(k, FREE(DF)) as e:
        pool.free(elem)
    assert e.reports[0].addr == elem and e.reports[0].cache == cache
    assert "Free of addr" in e.reports[0].text
    # reported, not kept a second time
    assert pool.curr_nr == before and pool.elements().count(elem) == 1
    return elem


def invalid_free(k, pool, cache=None):
    elem = pool.alloc_preallocated()
    before = pool.curr_nr
    with Expect(k, FREE(IF)) as e:
        pool.free(elem + 1)
    assert e.reports[0].addr == elem + 1 and e.reports[0].cache == cache
    assert pool.curr_nr == before
    pool.free(elem)
    assert pool.curr_nr == before + 1
    return elem


def finish(pool, extra):
    pool.free(extra)
    assert pool.curr_nr == POOL_SIZE
    assert len(set(pool.elements())) == POOL_SIZE
    pool.destroy()


def test_mempool_kmalloc_oob_right(k):
    size = 128 - GRANULE - 5
    pool, extra = prepare_kmalloc(k, size)
    oob_right(k, pool, size, "kmalloc-128")
    finish(pool, extra)


def test_mempool_kmalloc_large_oob_right(k):
    size = KMALLOC_MAX_CACHE_SIZE + 1
    pool, extra = prepare_kmalloc(k, size)
    # the large kmalloc's page redzone: a partial granule, then KASAN_PAGE_REDZONE
    oob_right(k, pool, size, None, last_granule=1)
    finish(pool, extra)


def test_mempool_slab_oob_right(k):
    size = 123
    pool, extra, cache = prepare_slab(k, size)
    oob_right(k, pool, size, "test_cache")
    finish(pool, extra)
    cache.destroy()


def test_mempool_kmalloc_uaf(k):
    pool, extra = prepare_kmalloc(k, 128)
    elem = uaf(k, pool, UAF, "kmalloc-128")
    assert shadow(k, elem) == KASAN_SLAB_FREE_META and shadow(k, elem + 8) == KASAN_SLAB_FREE
    finish(pool, extra)


def test_mempool_kmalloc_large_uaf(k):
    pool, extra = prepare_kmalloc(k, KMALLOC_MAX_CACHE_SIZE + 1)
    elem = uaf(k, pool, PUAF)
    assert k.kasan.shadow(elem, 16384) == bytes([KASAN_PAGE_FREE]) * 2048   # the whole block
    finish(pool, extra)


def test_mempool_slab_uaf(k):
    pool, extra, cache = prepare_slab(k, 123)
    uaf(k, pool, UAF, "test_cache")
    finish(pool, extra)
    cache.destroy()


def test_mempool_page_alloc_uaf(k):
    pool, extra = prepare_page(k, 2)
    elem = uaf(k, pool, PUAF)
    assert k.kasan.shadow(elem, 4 * 4096) == bytes([KASAN_PAGE_FREE]) * 2048
    finish(pool, extra)


def test_mempool_kmalloc_double_free(k):
    pool, extra = prepare_kmalloc(k, 128)
    double_free(k, pool, "kmalloc-128")
    finish(pool, extra)


def test_mempool_kmalloc_large_double_free(k):
    pool, extra = prepare_kmalloc(k, KMALLOC_MAX_CACHE_SIZE + 1)
    double_free(k, pool)
    finish(pool, extra)


def test_mempool_page_alloc_double_free(k):
    pool, extra = prepare_page(k, 2)
    double_free(k, pool)
    finish(pool, extra)


def test_mempool_kmalloc_invalid_free(k):
    pool, extra = prepare_kmalloc(k, 128)
    invalid_free(k, pool, "kmalloc-128")
    finish(pool, extra)


def test_mempool_kmalloc_large_invalid_free(k):
    pool, extra = prepare_kmalloc(k, KMALLOC_MAX_CACHE_SIZE + 1)
    invalid_free(k, pool)
    finish(pool, extra)


def test_report_names_the_caller_and_the_mempool_free_track(k):
    pool, extra = prepare_kmalloc(k, 64)
    elem = pool.alloc_preallocated()
    pool.free(elem)
    with Expect(k, FREE(DF)) as e:
        pool.free(elem)
    text = e.reports[0].text
    assert "BUG: KASAN: double-free in " in text and "test_kasan_mempool.py" in text.splitlines()[1]
    assert "Free of addr %016x" % elem in text
    assert "mempool_free" in text.split("Freed by task")[1]
    finish(pool, extra)


# ---- pool bookkeeping ------------------------------------------------------------------------
def test_reserve_is_poisoned_and_unpoisoned_exactly(k):
    with k.mempool_create_kmalloc_pool(3, 115) as pool:
        assert pool.kind == "kmalloc" and pool.size == 115 and pool.min_nr == 3
        for e in pool.elements():
            assert shadow(k, e) == KASAN_SLAB_FREE_META
        e = pool.alloc_preallocated()
        assert k.kasan.shadow(e, 128) == bytes(14) + bytes([3, KASAN_SLAB_REDZONE])
        # a new alloc track: this test's line
        with Expect(k, R(OOB)) as x:
            k.read(e + 115, 1)
        assert x.reports[0].alloc_track is not None
        assert "test_kasan_mempool.py" in x.reports[0].alloc_track.stack
        pool.free(e)
    assert pool.destroyed


def test_kmalloc_pool_gives_every_object_back(k):
    def live():
        st = k.cache("kmalloc-256").stats()
        return (st["alloc_fastpath"] + st["alloc_slowpath"] - st["free_fastpath"]
                - st["free_slowpath"])
    k.kasan.quarantine.drain()
    before = live()
    pool = k.mempool_create_kmalloc_pool(5, 200)
    assert live() == before + 5
    got = [pool.alloc() for _ in range(8)]        # the allocator first: 8 new objects
    assert pool.curr_nr == 5 and len(set(got)) == 8 and not set(got) & set(pool.elements())
    for e in got:
        pool.free(e)                              # the reserve is full: all to kfree
    k.kasan.quarantine.drain()
    assert pool.curr_nr == 5 and live() == before + 5
    pool.destroy()
    k.kasan.quarantine.drain()
    assert live() == before
    assert not k.reports


def test_page_pool_accounting(k):
    before = k.nr_free_pages
    pool = k.mempool_create_page_pool(3, 1)
    assert k.nr_free_pages == before - 6
    es = [pool.alloc_preallocated() for _ in range(3)]
    assert pool.alloc_preallocated() is None and pool.curr_nr == 0
    more = pool.alloc()                           # from the page allocator
    assert more is not None and more not in es
    for e in es + [more]:
        pool.free(e)
    assert pool.curr_nr == 3 and k.nr_free_pages == before - 6
    pool.destroy()
    assert k.nr_free_pages == before
    assert not k.reports


def test_resize(k):
    before = k.nr_free_pages
    pool = k.mempool_create_page_pool(2, 0)
    pool.resize(5)
    assert pool.min_nr == 5 and pool.curr_nr == 5 and k.nr_free_pages == before - 5
    pool.resize(1)
    assert pool.min_nr == 1 and pool.curr_nr == 1 and k.nr_free_pages == before - 1
    pool.destroy()
    assert k.nr_free_pages == before


def test_min_nr_zero_passes_everything_through(k):
    pool = k.mempool_create_kmalloc_pool(0, 32)
    e = pool.alloc()
    pool.free(e)
    assert pool.curr_nr == 0
    with Expect(k, R(UAF)):                       # kfree'd: in the quarantine
        k.read(e, 1)
    pool.destroy()


# ---- fault injection and the wait -------------------------------------------------------------
def test_failslab_100_percent(k):
    pool = k.mempool_create_kmalloc_pool(2, 64)
    reserve = set(pool.elements())
    k.set_fault("failslab", probability=100)
    a = pool.alloc(odebug._core.GFP_ATOMIC)
    b = pool.alloc(odebug._core.GFP_ATOMIC)
    assert {a, b} == reserve and pool.curr_nr == 0
    assert pool.alloc(odebug._core.GFP_ATOMIC) is None      # may not block: None
    assert pool.alloc(odebug._core.GFP_NOWAIT) is None
    # GFP_KERNEL: failslab's ignore-gfp-wait (default on) lets the blocking retry through
    c = pool.alloc()
    assert c is not None and c not in reserve
    calls = k.fault("failslab")["failures"]
    assert calls >= 4
    for e in (a, b, c):
        pool.free(e)
    k.set_fault("failslab", probability=0, ignore_gfp_wait=True)
    assert pool.curr_nr == 2
    pool.destroy()
    assert not k.reports


def test_blocking_alloc_waits_for_a_free_from_another_thread(k):
    pool = k.mempool_create_kmalloc_pool(1, 64)
    held = pool.alloc_preallocated()
    k.set_fault("failslab", probability=100, ignore_gfp_wait=False)
    got = []
    started = threading.Event()

    def waiter():
        started.set()
        got.append(pool.alloc())                  # GFP_KERNEL: waits (the GIL released)

    t = threading.Thread(target=waiter)
    t.start()
    started.wait()
    pool.free(held)                               # into the reserve: wakes the waiter
    t.join(timeout=60)
    assert not t.is_alive()
    assert got == [held] and pool.curr_nr == 0
    k.set_fault("failslab", probability=0, ignore_gfp_wait=True)
    pool.free(held)
    pool.destroy()


def test_a_waiter_sees_the_pool_destroyed(k):
    pool = k.mempool_create_page_pool(1, 1)       # fail_page_alloc's min-order is 1
    held = pool.alloc_preallocated()
    k.set_fault("fail_page_alloc", probability=100, ignore_gfp_wait=False)
    errors = []

    def waiter():
        try:
            pool.alloc()
        except odebug.StateError as e:
            errors.append(str(e))

    t = threading.Thread(target=waiter)
    t.start()
    # destroy() cannot tell whether the waiter is in yet: either way it ends in StateError
    pool.destroy()
    t.join(timeout=60)
    assert not t.is_alive() and errors and "destroyed" in errors[0]
    k.set_fault("fail_page_alloc", probability=0)
    k.free_pages(held, 1)


@pytest.mark.parametrize("seed", range(4))
def test_controlled_scheduler_waiter_gets_the_freed_element(seed):
    with K(sched="controlled", seed=seed) as k:
        pool = k.mempool_create_kmalloc_pool(1, 64)
        held = pool.alloc_preallocated()
        k.set_fault("failslab", probability=100, ignore_gfp_wait=False)
        got = []
        k.spawn(lambda: got.append(pool.alloc()), name="waiter")
        k.spawn(lambda: pool.free(held), name="freer")
        r = k.run()
        assert got == [held] and not r.reports


def test_controlled_scheduler_nobody_gives_back_is_a_deadlock():
    with K(sched="controlled") as k:
        pool = k.mempool_create_kmalloc_pool(1, 64)
        pool.alloc_preallocated()
        k.set_fault("failslab", probability=100, ignore_gfp_wait=False)
        k.spawn(pool.alloc, name="waiter")
        k.run(timeout=30, check=False)
        (r,) = k.reports
        assert r.kind == "deadlock"
        assert "waits in mempool_alloc: wait for an element" in r.text


# ---- bad arguments ------------------------------------------------------------------------------
def test_bad_arguments(k):
    with pytest.raises(odebug.InvalidArgument, match="min_nr"):
        k.mempool_create_kmalloc_pool(-1, 64)
    with pytest.raises(odebug.InvalidArgument, match="min_nr"):
        k.mempool_create_kmalloc_pool(1 << 21, 64)
    with pytest.raises(odebug.InvalidArgument, match="size"):
        k.mempool_create_kmalloc_pool(1, 0)
    with pytest.raises(odebug.InvalidArgument, match="size"):
        k.mempool_create_kmalloc_pool(1, 1 << 40)
    with pytest.raises(odebug.InvalidArgument, match="order"):
        k.mempool_create_page_pool(1, 11)
    with pytest.raises(TypeError):
        k.mempool_create_slab_pool(1, "kmalloc-64")
    with pytest.raises(TypeError):
        k.mempool_create_kmalloc_pool("4", 64)
    ctor = k.kmem_cache_create("with_ctor", 32, ctor=lambda a: None)
    with pytest.raises(odebug.InvalidArgument, match="constructor"):
        k.mempool_create_slab_pool(1, ctor)
    gone = k.kmem_cache_create("gone", 32)
    gone.destroy()
    with pytest.raises(odebug.StateError):
        k.mempool_create_slab_pool(1, gone)
    with K() as other:
        c2 = other.kmem_cache_create("elsewhere", 32)
        with pytest.raises(odebug.InvalidArgument, match="another kernel"):
            k.mempool_create_slab_pool(1, c2)

    pool = k.mempool_create_kmalloc_pool(2, 64)
    with pytest.raises(odebug.InvalidArgument, match="__GFP_ZERO"):
        pool.alloc(odebug._core.GFP_KERNEL | odebug._core.__GFP_ZERO)
    with pytest.raises(odebug.InvalidArgument, match="not an address"):
        pool.free(0x1000)
    with pytest.raises(odebug.InvalidArgument):
        pool.free(-1)
    with pytest.raises(TypeError):
        pool.free("0x10")
    with pytest.raises(odebug.InvalidArgument, match="new_min_nr"):
        pool.resize(0)
    with pytest.raises(odebug.InvalidArgument, match="new_min_nr"):
        pool.resize(-3)
    pool.free(None)
    pool.free(0)
    assert pool.curr_nr == 2
    pool.destroy()
    for call in (pool.alloc, pool.alloc_preallocated, pool.destroy, lambda: pool.free(0),
                 lambda: pool.resize(2)):
        with pytest.raises(odebug.StateError, match="destroyed"):
            call()
    assert pool.destroyed and "destroyed" in repr(pool)

    pages = k.mempool_create_page_pool(1, 1)
    e = pages.alloc_preallocated()
    order0 = k.alloc_pages(0)
    with pytest.raises(odebug.InvalidArgument, match="order 1"):
        pages.free(order0)                        # a block of another order
    pages.free(e)
    k.free_pages(order0, 0)
    pages.destroy()
    assert not k.reports


def test_slab_pool_with_its_cache_destroyed(k):
    cache = k.kmem_cache_create("pooled", 48)
    pool = k.mempool_create_slab_pool(2, cache)
    e = pool.alloc_preallocated()
    pool.free(e)
    pool.destroy()
    cache.destroy()                               # empty now: really destroyed
    with pytest.raises(odebug.StateError):
        pool.alloc()
    assert not k.reports


def test_cache_busy_while_a_pool_call_waits(k):
    import time
    cache = k.kmem_cache_create("busy", 48)
    pool = k.mempool_create_slab_pool(1, cache)
    held = pool.alloc_preallocated()
    k.set_fault("failslab", probability=100, ignore_gfp_wait=False)
    got = []
    t = threading.Thread(target=lambda: got.append(pool.alloc()))
    t.start()
    try:
        # the waiter's two failed attempts come after it marked the cache busy
        for _ in range(6000):
            if k.fault("failslab")["failures"] >= 2:
                break
            time.sleep(0.01)
        with pytest.raises(odebug.StateError, match="in use"):
            cache.destroy()
    finally:
        pool.free(held)
        t.join(timeout=60)
    assert got == [held]
    k.set_fault("failslab", probability=0, ignore_gfp_wait=True)
    pool.free(held)
    pool.destroy()
    cache.destroy()
    assert not k.reports


def test_closed_kernel():
    k = K()
    pool = k.mempool_create_kmalloc_pool(1, 64)
    k.close()
    with pytest.raises(odebug.ClosedError):
        pool.alloc()
    with pytest.raises(odebug.ClosedError):
        k.mempool_create_kmalloc_pool(1, 64)
    assert "closed" in repr(pool)


def test_kasan_off_pool_still_works():
    with odebug.Kernel("kasan=off no_debug_objects", ram="64M") as k:
        pool = k.mempool_create_kmalloc_pool(2, 64)
        e = pool.alloc_preallocated()
        pool.free(e)
        pool.free(e)                              # no KASAN: kept twice, as the kernel would
        assert pool.curr_nr == 2
        pool.destroy()


# ---- the public poisoning API ---------------------------------------------------------------------
def test_poison_and_unpoison(k):
    p = k.kmalloc(64)
    k.kasan.poison(p + 16, 16)                    # default: KASAN_SLAB_REDZONE
    assert k.kasan.shadow(p, 64) == bytes(2) + bytes([KASAN_SLAB_REDZONE] * 2) + bytes(4)
    with Expect(k, R(OOB)):
        k.read(p + 20, 1)
    k.kasan.poison(p + 16, 8, KASAN_SLAB_FREE)
    with Expect(k, R(UAF)):
        k.read(p + 16, 1)
    k.kasan.unpoison(p + 16, 13)                  # a partial last granule
    assert k.kasan.shadow(p + 16, 16) == bytes([0, 5])
    with Expect(k):
        k.read(p + 16, 13)
    with Expect(k, R("out-of-bounds")):          # the next granule is accessible
        k.read(p + 29, 1)
    k.kasan.unpoison(p, 64)
    k.kfree(p)


def test_poison_bad_arguments(k):
    p = k.kmalloc(64)
    with pytest.raises(odebug.InvalidArgument, match="aligned"):
        k.kasan.poison(p + 4, 8)
    with pytest.raises(odebug.InvalidArgument, match="multiple"):
        k.kasan.poison(p, 12)
    with pytest.raises(odebug.InvalidArgument, match="aligned"):
        k.kasan.unpoison(p + 3, 8)
    with pytest.raises(odebug.InvalidArgument, match="value"):
        k.kasan.poison(p, 8, 256)
    with pytest.raises(odebug.InvalidArgument, match="outside"):
        k.kasan.poison(0x1000, 8)
    with pytest.raises(odebug.InvalidArgument, match="outside"):
        k.kasan.unpoison(k.arena_end - 8, 16)
    with pytest.raises(odebug.InvalidArgument):
        k.kasan.poison(p, -8)
    with pytest.raises(odebug.InvalidArgument, match="page"):
        k.kasan.poison_pages(p | 8)
    with pytest.raises(odebug.InvalidArgument, match="order"):
        k.kasan.poison_pages(k.arena_start, 11)
    with pytest.raises(odebug.InvalidArgument, match="not an object"):
        k.kasan.mempool_unpoison_object(p + 8, 8)
    with pytest.raises(odebug.InvalidArgument, match="object size"):
        k.kasan.mempool_unpoison_object(p, 65)
    with pytest.raises(odebug.InvalidArgument):
        k.kasan.mempool_poison_object(16)
    assert k.kasan.shadow(p, 64) == bytes(8)      # nothing changed
    assert not k.reports
    k.kfree(p)


def test_poison_pages(k):
    pg = k.alloc_pages(1)
    k.kasan.poison_pages(pg, 1)
    assert k.kasan.shadow(pg, 8192) == bytes([KASAN_PAGE_FREE]) * 1024
    with Expect(k, R(PUAF)):
        k.read(pg + 5000, 1)
    k.kasan.unpoison_pages(pg, 1)
    with Expect(k):
        k.read(pg + 5000, 1)
    k.free_pages(pg, 1)


def test_mempool_poison_object_by_hand(k):
    p = k.kmalloc(100)
    assert k.kasan.mempool_poison_object(p) is True
    with Expect(k, R(UAF)):
        k.read(p + 50, 1)
    with Expect(k, FREE(DF)):
        assert k.kasan.mempool_poison_object(p) is False
    with Expect(k, FREE(IF)):
        assert k.kasan.mempool_poison_object(p + 8) is False
    k.kasan.mempool_unpoison_object(p, 100)
    assert k.kasan.shadow(p, 128)[12:] == bytes([4, KASAN_SLAB_REDZONE, KASAN_SLAB_REDZONE,
                                                 KASAN_SLAB_REDZONE])
    with Expect(k):
        k.kfree(p)
    big = k.kmalloc(3 * 4096)                     # a large kmalloc: the pages
    assert k.kasan.mempool_poison_object(big) is True
    assert shadow(k, big + 4 * 4096 - 1) == KASAN_PAGE_FREE
    k.kasan.mempool_unpoison_object(big, 3 * 4096 + 1)
    assert shadow(k, big + 3 * 4096) == 1 and shadow(k, big + 3 * 4096 + 8) == KASAN_PAGE_REDZONE
    k.kfree(big)
    pg = k.alloc_pages(0)
    assert k.kasan.mempool_poison_pages(pg) is True
    with Expect(k, FREE(DF)):
        assert k.kasan.mempool_poison_pages(pg) is False
    k.kasan.mempool_unpoison_pages(pg)
    k.free_pages(pg)


def test_kasan_off_poisoning_is_a_no_op():
    with odebug.Kernel("kasan=off no_debug_objects", ram="64M") as k:
        p = k.kmalloc(64)
        k.kasan.poison(p, 8)
        assert k.kasan.mempool_poison_object(p) is True
        with pytest.raises(odebug.InvalidArgument):
            k.kasan.poison(p + 1, 8)
        k.read(p, 1)
        assert not k.reports


# ---- kasan_disable_current ---------------------------------------------------------------------------
def test_disabled_suppresses_access_reports_only(k):
    p = k.kmalloc(13)
    q = k.kmalloc(13)
    assert k.kasan.current_depth == 0
    with k.kasan.disabled():
        assert k.kasan.current_depth == 1
        with Expect(k):
            k.read(p + 13, 1)
            k.write(p + 13, b"\x41")
            k.memset(p, 0x42, 16)                 # performed, as in the kernel
            k.memcpy(q, p, 16)
            k.kasan.check(p + 20, 4)
        assert k.raw(q + 15, 1)[0] == 0x42
        with Expect(k, FREE(IF)):                 # frees are never suppressed
            k.kfree(p + 1)
    assert k.kasan.current_depth == 0
    assert k.kasan.counters()["detections"] == 1
    with Expect(k, R(OOB)):
        k.read(p + 13, 1)
    k.kfree(p)
    k.kfree(q)
    with k.kasan.disabled():
        with Expect(k, FREE(DF)):
            k.kfree(p)


def test_disable_current_nests_and_refuses_underflow(k):
    assert k.kasan.disable_current() == 1
    assert k.kasan.disable_current() == 2
    assert k.kasan.enable_current() == 1
    assert k.kasan.enable_current() == 0
    with pytest.raises(odebug.StateError, match="kasan_enable_current"):
        k.kasan.enable_current()


def test_disable_current_is_per_thread(k):
    p = k.kmalloc(8)
    k.kfree(p)
    seen = []
    with k.kasan.disabled():
        def other():
            n = k.report_count
            k.read(p, 1)
            seen.append(k.report_count - n)
        t = threading.Thread(target=other)
        t.start()
        t.join()
        with Expect(k):
            k.read(p, 1)
    assert seen == [1]


# ---- kfree_sensitive (spec row 30) -------------------------------------------------------------------
def test_kfree_sensitive_zeroes_then_frees(k):
    p = k.kmalloc(60)
    k.memset(p, 0x73, 60)
    with Expect(k):
        k.kfree_sensitive(p)
    assert bytes(k.raw(p + 16, 16)) == bytes(16)  # past the free meta, before the free pointer
    assert k.raw(p + 60, 4).tobytes() == bytes(4)  # ksize() bytes: the slack too
    k.kfree_sensitive(None)
    k.kfree_sensitive(0)


def test_kfree_sensitive_with_the_kmalloc_redzone():
    # slub_debug=FZU tracks kmalloc's requested size; ksize() lifts the check off
    # the slack (skip_orig_size_check), so zeroing all of it is not a redzone hit
    with K("slub_debug=FZU") as k:
        p = k.kmalloc(115)
        k.kfree_sensitive(p)
        k.kasan.quarantine.drain()                # SLUB checks the object now
        q = k.kmalloc(115)
        k.write(q + 120, b"x")                    # without ksize: KASAN, then SLUB
        k.kfree(q)
        k.kasan.quarantine.drain()
        kinds = [(r.subsystem, r.kind) for r in k.reports]
        assert kinds == [("kasan", OOB), ("slub", "kmalloc Redzone overwritten")], kinds


def test_ksize_of_a_large_kmalloc_interior_is_0(k):
    p = k.kmalloc(3 * 4096)
    assert k.ksize(p) == 4 * 4096
    assert k.ksize(p + 8) == 0
    k.kfree(p)
