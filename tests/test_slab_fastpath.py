"""The inline fast paths of kmem_cache_alloc/kmem_cache_free/kmalloc/kfree: when
they are taken, that they count as the kernel's fast paths, and that every
case they do not handle still reaches the full path (reports included)."""
import threading

import pytest

import odebug
from odebug import _core

GFP_KERNEL = _core.GFP_KERNEL
GFP_ATOMIC = _core.GFP_ATOMIC
__GFP_ZERO = _core.__GFP_ZERO


def K(cmdline="", **kw):
    kw.setdefault("ram", "64M")
    return odebug.Kernel(("kasan=off no_debug_objects " + cmdline).strip(), **kw)


def test_fast_paths_count_as_the_kernels():
    k = K(cpus=2)
    s = k.kmem_cache_create("fp", 64)
    for _ in range(100):
        s.free(s.alloc())
    st = s.stats()
    # the first allocation refills the cpu slab; every other one is a fast path
    assert st["alloc_slowpath"] == 1 and st["alloc_fastpath"] == 99
    assert st["free_fastpath"] == 100 and st["free_slowpath"] == 0
    assert s.validate() == 0 and k.reports == []


def test_bench_pairs_on_an_exclusive_vcpu_take_the_fast_paths():
    k = K(cpus=2)
    s = k.kmem_cache_create("ex", 64)
    s._c.bench_pairs(1000, 1, True)          # the loop owns its vCPU: no lock taken
    s._c.bench_pairs(1000, 8, False)
    st = s.stats()
    assert st["alloc_fastpath"] + st["alloc_slowpath"] == 2000
    assert st["alloc_fastpath"] >= 1998
    assert st["free_fastpath"] == 2000
    with k.on_cpu(1):                        # the exclusive hold was dropped
        p = s.alloc()
        s.free(p)
    assert s.validate() == 0


def test_zeroing_and_kmalloc_on_the_fast_path():
    k = K()
    s = k.kmem_cache_create("z", 48)
    p = s.alloc()
    k.write(p, b"\xaa" * 48)
    s.free(p)
    q = s.zalloc()
    assert q == p and k.read(q, 48) == bytes(48)     # LIFO per-vCPU freelist
    s.free(q)
    a = k.kmalloc(100)
    k.write(a, b"\x55" * 100)
    k.kfree(a)
    b = k.kzalloc(100)
    assert b == a and k.read(b, 100) == bytes(100)
    k.kfree(b)
    st = k.cache("kmalloc-128").stats()
    assert st["free_fastpath"] == 2 and st["alloc_fastpath"] >= 1


def test_failslab_still_applies_to_fast_caches():
    k = K("failslab=1,100,0,3")
    s = k.kmem_cache_create("fs", 64)
    assert s.alloc(GFP_KERNEL) is not None        # ignore-gfp-wait, as the kernel
    assert [s.alloc(GFP_ATOMIC) for _ in range(3)] == [None, None, None]
    p = s.alloc(GFP_ATOMIC)                       # times exhausted
    assert p is not None
    s.free(p)
    assert k.fault("failslab")["failures"] == 3


@pytest.mark.parametrize("cmd,size", [
    ("", 64),          # slot 64
    ("", 24),          # slot 24 (3 << 3)
    ("", 200),         # slot 200 (25 << 3)
    ("slub_debug=Z,zc", 100),   # red zones on both sides
    ("slub_debug=FZPU,zc", 72),
])
def test_invalid_pointer_at_every_offset(cmd, size):
    """The exact-division test of check_valid_pointer: any address inside a
    slab that is not an object start is refused ("Invalid object pointer"),
    and nothing is freed."""
    k = K(cmd)
    s = k.kmem_cache_create("zc", size)
    objs = [s.alloc() for _ in range(3)]
    slot = s.size
    lo = min(objs)
    bad = 0
    for d in range(-s.red_left_pad, 2 * slot):
        a = lo + d
        if a in objs or d == 0:
            continue
        sl = k.slab_object(a)
        if sl is None:
            continue
        before = len(k.reports)
        s.free(a)
        assert len(k.reports) == before + 1, (d, k.reports[-1:])
        assert k.reports[-1].kind in ("Invalid object pointer", "Object already free")
        bad += 1
    assert bad >= slot
    for p in objs:
        s.free(p)
    st = s.stats()
    assert st["free_fastpath"] + st["free_slowpath"] == 3
    assert s.validate() == 0


@pytest.mark.parametrize("size", [8, 24, 56, 96, 192, 200, 1000, 3000, 8192])
def test_every_object_of_full_slabs_frees(size):
    k = K()
    s = k.kmem_cache_create("full", size)
    objs = [s.alloc() for _ in range(3 * s.objects_per_slab)]
    assert len(set(objs)) == len(objs)
    for p in reversed(objs):
        s.free(p)
    assert k.reports == [] and s.validate() == 0


def test_each_kernel_has_its_own_tasks():
    """A thread's task belongs to one kernel: a kernel made again after a close
    (often at the same address) gives the thread a new task, pid 1 again."""
    pids = []
    for i in range(40):
        with K(ram="16M") as k:
            s = k.kmem_cache_create("c", 64)
            s.free(s.alloc())
            pids.append(k.pid)
            assert s.stats()["free_fastpath"] == 1
    assert set(pids) == {pids[0]}


@pytest.mark.threads
def test_task_slots_follow_threads():
    """Threads run one after another usually get the same thread pointer (glibc
    reuses the stack): each must get its own task (a new pid), never the exited
    thread's, so the slot is freed at thread exit."""
    k = K(cpus=2)
    c = k.kmem_cache_create("seq", 64)
    pids = []

    def worker():
        for _ in range(50):
            c.free(c.alloc())
        pids.append(k.pid)

    for _ in range(30):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert len(set(pids)) == 30
    st = c.stats()
    assert st["alloc_fastpath"] + st["alloc_slowpath"] == 1500
    assert st["free_fastpath"] + st["free_slowpath"] == 1500
    k.close()


@pytest.mark.threads
def test_more_threads_than_task_slots():
    """300 live threads on 256 slots: the ones whose slot is taken find their task
    in the pthread key; every thread keeps its own task throughout."""
    k = K(cpus=4)
    c = k.kmem_cache_create("many", 64)
    start = threading.Barrier(300)
    seen = {}

    def worker(n):
        start.wait()
        first = k.pid
        for _ in range(20):
            c.free(c.alloc())
        seen[n] = (first, k.pid)

    ts = [threading.Thread(target=worker, args=(n,)) for n in range(300)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(a == b for a, b in seen.values())
    assert len({a for a, _ in seen.values()}) == 300
    st = c.stats()
    assert st["free_fastpath"] + st["free_slowpath"] == 6000
    assert c.validate() == 0
    k.close()


@pytest.mark.threads
def test_current_cache_per_thread_and_kernel():
    k1, k2 = K(cpus=2), K(cpus=2)
    c1, c2 = k1.kmem_cache_create("a", 64), k2.kmem_cache_create("b", 64)
    seen = {}

    def worker(n):
        for _ in range(200):
            c1.free(c1.alloc())
            c2.free(c2.alloc())
        seen[n] = (k1.pid, k2.pid)

    ts = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len({v[0] for v in seen.values()}) == 4       # one task per thread, per kernel
    assert len({v[1] for v in seen.values()}) == 4
    for c in (c1, c2):
        st = c.stats()
        assert st["alloc_fastpath"] + st["alloc_slowpath"] == 800
        assert st["free_fastpath"] + st["free_slowpath"] == 800
        assert c.validate() == 0
    k1.close()
    k2.close()


def test_bench_slab_reports_paired_ratios():
    """`python -m odebug bench slab` on a tiny budget: every configuration is
    there, ratios are per-round pairs (a configuration against itself is 1)."""
    from odebug import bench
    res = bench.slab_pairs(2000, rounds=3, flags=("-", "P"), paths=("relaxed", "modern"))
    rows = {(r["path"], r["flags"]): r for r in res["rows"]}
    assert set(rows) == {("relaxed", "-"), ("relaxed", "P"), ("modern", "-"), ("modern", "P")}
    for (path, fl), r in rows.items():
        assert r["ns_per_pair"] > 0 and r["vs_glibc"] > 0
        if fl == "-":
            assert r["vs_nodebug"] == 1.0
    assert res["exclusive_ns_per_pair"] > 0 and res["glibc_ns_per_pair"] > 0
    off = {(r["path"], r["flags"]): r for r in res["bias_off"]}
    assert set(off) == {("relaxed", "-"), ("modern", "P")}
    assert all(r["ns_per_pair"] > 0 and r["vs_biased"] > 0 for r in off.values())
    text = bench.format_slab_table(res)
    assert "ratios paired within each round" in text and "(excl.)" in text
    assert "odebug.lock_bias=off" in text


# ---- lock bias (odebug.lock_bias=): the vCPU irq lock and list_lock ------------------------
def test_one_thread_gets_its_locks_biased():
    k = K()
    assert k.lock_bias["threshold"] == 1024 and k.param("odebug.lock_bias") == "1024"
    s = k.kmem_cache_create("b", 64)
    before = k.lock_bias["grants"]
    for _ in range(3000):
        s.free(s.alloc())
    info = k.lock_bias
    assert info["grants"] > before and info["revocations"] == 0
    st = s.stats()
    assert st["alloc_fastpath"] + st["alloc_slowpath"] == 3000
    assert st["free_fastpath"] == 3000 and s.validate() == 0


def test_lock_bias_off_and_bad_values():
    k = K("odebug.lock_bias=off")
    s = k.kmem_cache_create("b", 64)
    for _ in range(3000):
        s.free(s.alloc())
    assert k.lock_bias == {"threshold": 0, "grants": 0, "revocations": 0}
    assert K("odebug.lock_bias=7").lock_bias["threshold"] == 7
    assert K("odebug.lock_bias").lock_bias["threshold"] == 1024
    for bad in ("maybe", "-1", "99999999999"):
        with pytest.raises(odebug.InvalidArgument, match="odebug.lock_bias"):
            K(f"odebug.lock_bias={bad}")


@pytest.mark.threads
@pytest.mark.parametrize("cmd", ["", "slub_debug=P odebug.slub_path=modern",
                                 "slub_debug=FZPU", "slub_debug=P odebug.slub_path=locked"])
def test_threads_sharing_a_vcpu_revoke_biases_and_lose_nothing(cmd):
    """Threads on one vCPU, each in bursts (threshold 2: a lock is biased almost
    at once), so the irq lock and list_lock are biased and revoked over and over;
    every object comes back, counters add up, validate finds nothing."""
    k = K(f"odebug.lock_bias=2 {cmd}", cpus=2)
    s = k.kmem_cache_create("b", 64)
    n_threads, bursts, burst = 4, 30, 60
    errors = []
    start = threading.Barrier(n_threads)

    def worker():
        try:
            with k.on_cpu(0):
                start.wait()
                for _ in range(bursts):
                    held = [s.alloc() for _ in range(burst)]
                    for p in held:
                        s.free(p)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=worker) for _ in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    info = k.lock_bias
    assert info["grants"] >= 2 and info["revocations"] >= 1
    st = s.stats()
    total = n_threads * bursts * burst
    assert st["alloc_fastpath"] + st["alloc_slowpath"] == total
    assert st["free_fastpath"] + st["free_slowpath"] == total
    assert s.validate() == 0 and k.reports == []
    s.destroy()                     # "Objects remaining" if one was lost
    assert k.reports == []


@pytest.mark.parametrize("path", ["relaxed", "modern"])
def test_poison_pattern_at_every_small_size(path):
    """init_object's poison (inline 16-byte stores up to 64 bytes, memset beyond):
    POISON_FREE up to the last byte, POISON_END there, nothing past the object
    touched, on alloc and on free."""
    k = K(f"odebug.slub_path={path}")
    for size in list(range(1, 70)) + [95, 96, 127, 128, 200]:
        s = k.kmem_cache_create(f"poison{size}", size, flags="P")
        want = b"\x6b" * (size - 1) + b"\xa5"
        p = s.alloc()
        assert k.read(p, size) == want, size
        k.write(p, b"\x11" * size)
        s.free(p)
        assert k.read(p, size) == want, size
        assert s.validate() == 0, size
        s.destroy()
    assert k.reports == []


# ---- the modern flows' inline common case (s->modern_fast) ---------------------------------
def _modern_run(bias, size, flags, seed, n_ops=3000):
    """A seeded alloc/free sequence on one modern-flow cache; everything it can
    observe: the addresses handed out, the counters, slabinfo, validate."""
    import random
    rnd = random.Random(seed)
    k = K(f"odebug.slub_path=modern odebug.lock_bias={bias}")
    s = k.kmem_cache_create("mf", size, flags=flags)
    live, handed = [], []
    for _ in range(n_ops):
        if live and rnd.random() < 0.45:
            s.free(live.pop(rnd.randrange(len(live))))
        else:
            p = s.alloc()
            handed.append(p - k.arena_start)
            live.append(p)
    rows = [r for r in k.slabinfo() if r["name"] == "mf"]
    out = dict(handed=handed, stats=s.stats(), slabinfo=rows, errors=s.validate())
    for p in live:
        s.free(p)
    out["after"] = s.stats()
    s.destroy()
    out["reports"] = [r.kind for r in k.reports]
    k.close()
    return out


@pytest.mark.parametrize("size,flags", [(16, "P"), (40, "P"), (64, "P"), (8, "P"), (100, "P"),
                                        (64, "PU"), (64, "ZP")])
def test_modern_inline_case_is_the_full_flow(size, flags):
    """The same sequence with the bias (the inline common case runs for P-only
    caches of 16..64 bytes) and without it (the full flow every time): the same
    objects in the same order, the same counters, slabinfo, no errors."""
    for seed in (1, 2):
        a = _modern_run(1, size, flags, seed)      # threshold 1: biased at once
        b = _modern_run("off", size, flags, seed)
        assert a == b
        assert a["errors"] == 0 and a["reports"] == []
        st = a["after"]
        assert st["alloc_slowpath"] == st["free_slowpath"] == len(a["handed"])
        assert st["alloc_fastpath"] == 0 and st["free_fastpath"] == 0


def test_modern_inline_case_poisons_and_validate_sees_corruption():
    k = K("odebug.slub_path=modern odebug.lock_bias=1")
    s = k.kmem_cache_create("mfp", 48, flags="P")
    keep = [s.alloc() for _ in range(5)]            # the slab stays partial
    p = s.alloc()
    assert k.read(p, 48) == b"\x6b" * 47 + b"\xa5"
    k.write(p, b"\x00" * 48)
    s.free(p)
    assert k.read(p, 48) == b"\x6b" * 47 + b"\xa5"
    assert k.lock_bias["grants"] >= 1
    k.write(p, b"\x78")                              # use after free
    assert s.validate() == 2                         # Poison overwritten + FIX
    assert "Poison overwritten" in k.reports[0].text
    for q in keep:
        s.free(q)
