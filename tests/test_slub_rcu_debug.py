"""CONFIG_SLUB_RCU_DEBUG (issue 17): a SLAB_TYPESAFE_BY_RCU object is freed and
KASAN-poisoned only after an RCU grace period, so the kernel's kmem_cache_rcu_uaf
reports; odebug.slub_rcu_debug=off gives kmem_cache_rcu_reuse's immediate reuse.
Also the "potentially related work creation" stacks KASAN records for deferred
frees (kvfree_rcu, the deferred slab free)."""
import pytest

import odebug
from odebug.slab import SLAB_TYPESAFE_BY_RCU


def K(cmdline="", **kw):
    kw.setdefault("ram", "64M")
    k = odebug.Kernel(cmdline, **kw)
    if k.kasan.enabled:
        k.kasan.multi_shot = True
    return k


def kasan_reports(k):
    return [r for r in k.reports if r.subsystem == "kasan"]


def live(k, name):
    st = k.cache(name).stats()
    return (st["alloc_fastpath"] + st["alloc_slowpath"]
            - st["free_fastpath"] - st["free_slowpath"])


def test_the_parameter_follows_kasan_and_can_be_set():
    with K() as k:
        assert k.param("odebug.slub_rcu_debug") == "on"
    with K("kasan=off") as k:
        assert k.param("odebug.slub_rcu_debug") == "off"
    with K("odebug.slub_rcu_debug=off") as k:
        assert k.param("odebug.slub_rcu_debug") == "off"
    with K("kasan=off odebug.slub_rcu_debug=on") as k:
        assert k.param("odebug.slub_rcu_debug") == "on"
    with pytest.raises(ValueError, match="odebug.slub_rcu_debug"):
        K("odebug.slub_rcu_debug=maybe")


def test_kmem_cache_rcu_uaf():
    # the kernel's kmem_cache_rcu_uaf: a read inside the grace period is legal,
    # one after rcu_barrier() is a slab-use-after-free
    with K() as k:
        c = k.kmem_cache_create("test_cache", 200, flags=SLAB_TYPESAFE_BY_RCU)
        p = c.alloc()
        c.free(p)
        k.read(p, 1)
        assert kasan_reports(k) == []
        k.rcu_barrier()
        k.read(p, 1)
        (r,) = kasan_reports(k)
        assert (r.kind, r.size, r.is_write, r.addr, r.cache) == \
            ("slab-use-after-free", 1, False, p, "test_cache")
        text = r.text
        assert "Freed by task" in text and "slab_free_after_rcu_debug" in text
        # the free that deferred it is the "related work creation"
        last = text.split("Last potentially related work creation:\n")[1].split("\n\n")[0]
        assert "test_slub_rcu_debug.py" in last and "test_kmem_cache_rcu_uaf" in last
        assert "Second to last" not in text
        c.destroy()
        assert kasan_reports(k) == [r]


def test_the_grace_period_is_a_jiffy_of_the_clock():
    with K() as k:
        c = k.kmem_cache_create("rcu", 64, flags=SLAB_TYPESAFE_BY_RCU)
        p = c.alloc()
        c.free(p)
        assert k.kasan.shadow(p, 8) == b"\x00"       # still accessible
        k.advance(ms=1)                              # HZ=1000: one jiffy
        assert k.kasan.shadow(p, 8) == b"\xfa"       # poisoned, free track valid
        q = k.kasan.quarantine.count()
        assert q["rcu"][0] == 1                      # and quarantined after it


def test_kmem_cache_rcu_reuse_with_the_option_off():
    # the kernel's kmem_cache_rcu_reuse (CONFIG_SLUB_RCU_DEBUG off): freed and
    # reused at once, at the same address, neither poisoned nor quarantined
    with K("odebug.slub_rcu_debug=off") as k:
        c = k.kmem_cache_create("test_cache", 16, flags=SLAB_TYPESAFE_BY_RCU)
        with k.on_cpu(0):
            p = c.alloc()
            c.free(p)
            p2 = c.alloc()
        assert p2 == p
        c.free(p2)
        k.rcu_barrier()
        k.read(p, 1)                                 # never poisoned
        assert kasan_reports(k) == []
    with K() as k:                                   # on: the slot is not reused yet
        c = k.kmem_cache_create("test_cache", 16, flags=SLAB_TYPESAFE_BY_RCU)
        with k.on_cpu(0):
            p = c.alloc()
            c.free(p)
            p2 = c.alloc()
        assert p2 != p


def test_the_record_is_a_real_kmalloc():
    # struct rcu_delayed_free (24 bytes) comes from kmalloc-32 and goes back
    with K() as k:
        c = k.kmem_cache_create("rcu", 64, flags=SLAB_TYPESAFE_BY_RCU)
        ps = [c.alloc() for _ in range(10)]
        before = live(k, "kmalloc-32")
        for p in ps:
            c.free(p)
        assert live(k, "kmalloc-32") == before + 10
        k.rcu_barrier()
        k.kasan.quarantine.drain()
        assert live(k, "kmalloc-32") == before
        assert live(k, "rcu") == 0


def test_without_a_record_the_object_is_freed_at_once():
    # kmalloc(GFP_NOWAIT) of the record fails: the free goes on unpoisoned, as
    # the kernel's slab_free_hook falls through
    with K() as k:
        c = k.kmem_cache_create("rcu", 64, flags=SLAB_TYPESAFE_BY_RCU)
        with k.on_cpu(0):
            p = c.alloc()
            k.set_fault("failslab", probability=100, interval=1, times=-1)
            c.free(p)
            k.set_fault("failslab", probability=0, interval=1, times=0)
            assert k.kasan.shadow(p, 8) == b"\x00"
            assert c.alloc() == p                    # back on the freelist already
        assert kasan_reports(k) == []


def test_double_free_is_caught_when_the_grace_period_ends():
    with K("slub_debug=F") as k:
        c = k.kmem_cache_create("rcu", 64, flags=SLAB_TYPESAFE_BY_RCU)
        p = c.alloc()
        c.free(p)
        c.free(p)                                    # within the grace period: not seen yet
        assert kasan_reports(k) == []
        k.rcu_barrier()
        (r,) = kasan_reports(k)
        assert r.kind == "double-free" and r.addr == p
        assert "slab_free_after_rcu_debug" in r.text
        assert c.validate() == 0                     # freed once: the slab is sound
        k.kasan.quarantine.drain()
        assert live(k, "rcu") == 0


def test_destroy_runs_the_pending_deferred_frees_first():
    with K() as k:
        c = k.kmem_cache_create("rcu", 64, flags=SLAB_TYPESAFE_BY_RCU)
        ps = [c.alloc() for _ in range(100)]
        for p in ps:
            c.free(p)
        c.destroy()
        assert k.reports == []                       # no "Objects remaining", no WARN
        assert "rcu " not in k.slabinfo_text()
        k.kasan.quarantine.drain()                   # the records went to the quarantine
        assert live(k, "kmalloc-32") == 0


def test_invalid_free_in_an_rcu_cache_is_reported_once():
    # the kernel's kmem_cache_invalid_free (an RCU cache): p+1 is an invalid
    # free, nothing deferred; the real free afterwards is clean
    with K() as k:
        c = k.kmem_cache_create("test_cache", 200, flags=SLAB_TYPESAFE_BY_RCU)
        p = c.alloc()
        c.free(p + 1)
        (r,) = kasan_reports(k)
        assert r.kind == "invalid-free"
        c.free(p)
        k.rcu_barrier()
        assert kasan_reports(k) == [r]
        c.destroy()
        assert k.reports == [r]


def test_kfree_rcu_records_the_related_work_creation():
    with K() as k:
        p = k.kmalloc(64)
        k.kfree_rcu(p)
        k.rcu_barrier()
        k.read(p, 1)
        (r,) = kasan_reports(k)
        assert r.kind == "slab-use-after-free"
        last = r.text.split("Last potentially related work creation:\n")[1].split("\n\n")[0]
        assert "test_kfree_rcu_records_the_related_work_creation" in last
        # a new allocation of the slot forgets it
        k.kasan.quarantine.drain()


def test_aux_stacks_keep_the_two_latest():
    # two deferrals of one object: "Last" is the second, "Second to last" the first
    with K() as k:
        c = k.kmem_cache_create("rcu", 64, flags=SLAB_TYPESAFE_BY_RCU)
        p = c.alloc()

        def first():
            c.free(p)

        def second():
            c.free(p)

        first()
        second()
        k.rcu_barrier()
        k.read(p, 1)
        r = [r for r in kasan_reports(k) if r.kind == "slab-use-after-free"][0]
        last = r.text.split("Last potentially related work creation:\n")[1].split("\n\n")[0]
        prev = r.text.split("Second to last potentially related work creation:\n")[1].split("\n\n")[0]
        assert ":second" in last and ":first" in prev


def test_kasan_off_with_the_option_on_defers_without_poisoning():
    with K("kasan=off odebug.slub_rcu_debug=on") as k:
        c = k.kmem_cache_create("rcu", 64, flags=SLAB_TYPESAFE_BY_RCU)
        with k.on_cpu(0):
            p = c.alloc()
            c.free(p)
            assert c.alloc() != p                    # deferred
        k.rcu_barrier()
        assert k.reports == []
