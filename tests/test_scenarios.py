"""Scenario drivers on real threads: invariants after join."""
import os
import random
import threading
import time

import pytest

import odebug
from odebug.scenarios import check_invariants, hackbench, object_churn, quarantine_storm

SCALE = int(os.environ.get("ODEBUG_STRESS_SCALE", "1"))


@pytest.mark.threads
@pytest.mark.parametrize("cmd", ["kasan=off no_debug_objects",
                                 "kasan=off no_debug_objects slub_debug=P",
                                 "kasan=off no_debug_objects slub_debug=FZPU odebug.slub_path=locked",
                                 "kasan=off no_debug_objects slub_debug=ZP odebug.slub_path=relaxed",
                                 # the modern debug flows run without the vCPU irq lock:
                                 # their counters must still add up exactly
                                 "kasan=off no_debug_objects slub_debug=P odebug.slub_path=modern",
                                 "kasan=off no_debug_objects slub_debug=FZPU odebug.slub_path=modern"])
def test_hackbench_invariants(cmd):
    with odebug.Kernel(cmd, cpus=3, ram="256M") as k:
        r = hackbench(k, groups=2, fds=4, loops=25 * SCALE, msg_size=100, runs=2)
        assert r.messages == 2 * 2 * 4 * 4 * 25 * SCALE and r.alloc_failures == 0
        assert len(r.times) == 2 and r.mean > 0 and r.stdev >= 0
        for name, st in r.slab_stats.items():
            allocs = st["alloc_fastpath"] + st["alloc_slowpath"]
            frees = st["free_fastpath"] + st["free_slowpath"]
            assert allocs == frees == r.messages, name      # nothing lost, nothing left
            assert k.cache(name).validate() == 0
        skb = r.slab_stats["skbuff_head_cache"]
        assert skb["free_slowpath"] > 0                      # cross-vCPU frees happened
        held = check_invariants(k)
        assert held["skbuff_head_cache"] == 0


def test_hackbench_bad_arguments():
    with odebug.Kernel("kasan=off", ram="64M") as k:
        with pytest.raises(ValueError):
            hackbench(k, groups=0)
        with pytest.raises(ValueError):
            hackbench(k, mode="fibers")
        with pytest.raises(ValueError):
            hackbench(k, groups=100, fds=100)


def _run_threads(n, fn):
    errors = []
    barrier = threading.Barrier(n)

    def wrap(i):
        try:
            barrier.wait()
            fn(i)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
    ts = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


@pytest.mark.threads
@pytest.mark.parametrize("policy", ["batched", "quarter"])
def test_kasan_python_threads(policy):
    """Python threads on vCPUs: kmalloc, checked writes and reads, kfree into the
    quarantine; afterwards every object is back in its slab and nothing leaked."""
    k = odebug.Kernel(f"odebug.quarantine={policy} no_debug_objects", cpus=4, ram="64M")

    def work(i):
        rnd = random.Random(i)
        with k.on_cpu(i % 4):
            live = []
            for _ in range(1500 * SCALE):
                p = k.kmalloc(rnd.randrange(1, 300))
                k.write(p, b"x")
                live.append(p)
                if len(live) > 8:
                    q = live.pop(rnd.randrange(len(live)))
                    assert k.read(q, 1) == b"x"
                    k.kfree(q)
            for q in live:
                k.kfree(q)
    _run_threads(6, work)
    assert k.kasan.counters()["detections"] == 0
    held = check_invariants(k)
    assert all(v == 0 for name, v in held.items() if name.startswith("kmalloc-")), held
    k.close()


@pytest.mark.threads
@pytest.mark.parametrize("policy", ["lazy", "eager"])
def test_debugobjects_python_threads(policy):
    k = odebug.Kernel(f"odebug.objects_free={policy}", cpus=4, ram="64M")
    d = k.debug_objects
    descr = odebug.ObjectDescr("stress_obj")

    def work(i):
        with k.on_cpu(i % 4):
            for r in range(40 * SCALE):
                addrs = [k.arena_end + (i << 20) + (r % 4) * 8192 + j * 64
                         for j in range(32)]
                for a in addrs:
                    d.init(a, descr)
                    assert d.activate(a, descr) == 0
                for a in addrs:
                    d.deactivate(a, descr)
                    d.free(a, descr)
    _run_threads(4, work)
    s = d.stats()
    assert s["warnings"] == 0 and s["pool_used"] == 0
    k.advance(ms=1000)
    check_invariants(k)
    k.close()


@pytest.mark.threads
def test_real_clock_freeing_work_runs_during_the_workload():
    """clock="real": the lazy freeing work runs on the kernel's worker thread while
    the churn's pthreads run."""
    with odebug.Kernel("odebug.objects_free=lazy", cpus=2, ram="64M", clock="real") as k:
        r = object_churn(k, rounds=60 * SCALE, wave=300, threads=True)
        assert r.stats_before != r.stats_after
        runs = k.debug_objects.internals()["work_runs"]
        deadline = time.monotonic() + 5
        while k.debug_objects.internals()["work_runs"] == runs and time.monotonic() < deadline:
            time.sleep(0.05)
        assert k.debug_objects.internals()["work_runs"] > 0
        assert r.stats["objs_allocated"] > 0


def test_object_churn_stats_before_after():
    with odebug.Kernel("odebug.objects_free=lazy", cpus=2, ram="64M") as k:
        r = object_churn(k, rounds=40, wave=200)
        before = dict(l.split(":") for l in r.stats_before.splitlines())
        after = dict(l.split(":") for l in r.stats_after.splitlines())
        assert int(after["objs_allocated"]) > int(before["objs_allocated"])
        assert r.cycles > 0 and r.peak_live > 0
        k.advance(ms=1000)
        check_invariants(k)


@pytest.mark.threads
@pytest.mark.parametrize("policy", ["batched", "quarter"])
def test_quarantine_storm_invariants(policy):
    with odebug.Kernel(f"odebug.quarantine={policy} no_debug_objects", cpus=2, ram="64M") as k:
        r = quarantine_storm(k, 20_000 * SCALE, threads=2, mutex_every=4)
        assert r.ops == 2 * 20_000 * SCALE and r.throughput > 0
        assert r.mutex_ops == 2 * 5_000 * SCALE
        assert r.kmalloc_ns["p50"] <= r.kmalloc_ns["p99"] <= r.kmalloc_ns["max"]
        assert r.longest_reduce_bytes > 0            # the 64M quarantine overflowed
        assert r.quarantine["size"] <= r.quarantine["max_size"] + 2 * (1 << 20) + r.longest_reduce_bytes
        held = check_invariants(k)
        assert all(v == 0 for name, v in held.items() if name.startswith("kmalloc-")), held


# ---- the invariants themselves ------------------------------------------------------------
def test_accounting_counts_live_quarantined_and_pooled():
    """allocated - freed = live + quarantined + pooled, each term seen separately."""
    with odebug.Kernel("", cpus=2, ram="64M") as k:
        base = check_invariants(k, drain=False)
        c = k.kmem_cache_create("acct", 80)
        held = [c.alloc() for _ in range(30)]
        for p in held[:12]:
            c.free(p)                                # into the quarantine
        a = odebug.scenarios.accounting(k)["acct"]
        assert a["allocated"] == 30 and a["freed"] == 0 and a["held"] == 30
        assert a["quarantined"] == 12 and a["quarantined_bytes"] == 12 * c.size
        assert a["live"] == 18 and a["pooled"] == 0
        tr = odebug.scenarios.accounting(k)["debug_objects_cache"]
        assert tr["pooled"] > 0 and tr["live"] == 0
        assert check_invariants(k)["acct"] == 18     # drains: the 12 go back to the slab
        a = odebug.scenarios.accounting(k)["acct"]
        assert a["freed"] == 12 and a["quarantined"] == 0 and a["live"] == 18
        for p in held[12:]:
            c.free(p)
        live = check_invariants(k)
        assert live["acct"] == 0
        assert live["kmem_cache"] == base["kmem_cache"] + 1   # acct's descriptor (issue 17)
        assert {n: v for n, v in live.items() if n not in ("acct", "kmem_cache")} == \
            {n: v for n, v in base.items() if n != "kmem_cache"}


def test_invariants_catch_a_corruption_and_a_report():
    with odebug.Kernel("slub_debug=FZP kasan=off", cpus=1, ram="64M") as k:
        c = k.kmem_cache_create("bad", 64)
        p = c.alloc()
        k.raw(p + 64, 1)[0] = 0x11                   # right redzone
        with pytest.raises(odebug.scenarios.InvariantError, match="bad"):
            check_invariants(k)
    with odebug.Kernel("", cpus=2, ram="64M") as k:     # the last online vCPU stays online
        p = k.kmalloc(32)
        k.kfree(p)
        with k.expect_report("slab-use-after-free"):
            k.read(p, 1)
        k.clear_reports()
        check_invariants(k)                          # nothing else is wrong
        k.kfree(k.kmalloc(8))
        k.kasan.quarantine.cpu_offline(0)            # offline frees are accounted too
        check_invariants(k)


# ---- more scenarios on real threads ------------------------------------------------------
@pytest.mark.threads
@pytest.mark.parametrize("path", ["relaxed", "locked"])
def test_hackbench_with_kasan_and_debug_objects(path):
    """The default debug kernel (KASAN + quarantine, debug objects) under hackbench:
    frees enter the quarantine; the invariants hold with it full and drained."""
    with odebug.Kernel(f"slub_debug=P odebug.slub_path={path}", cpus=3, ram="128M") as k:
        r = hackbench(k, groups=2, fds=3, loops=20 * SCALE, runs=2)
        assert r.alloc_failures == 0
        a = odebug.scenarios.accounting(k)["skbuff_head_cache"]
        assert a["allocated"] == r.messages and a["quarantined"] > 0
        assert a["live"] == 0
        live = check_invariants(k)
        assert live["skbuff_head_cache"] == 0 and live[r.slab_stats and "kmalloc-512"] == 0


@pytest.mark.threads
@pytest.mark.parametrize("policy", ["lazy", "eager"])
def test_object_churn_pthreads_virtual_clock(policy):
    """One pthread per vCPU, each moving the shared virtual clock (work runs in
    whichever thread advances): trackers conserved, stats consistent."""
    with odebug.Kernel(f"odebug.objects_free={policy}", cpus=4, ram="64M") as k:
        r = object_churn(k, rounds=30 * SCALE, wave=150, threads=True, advance_ms=10)
        assert r.cycles > 0 and r.stats["warnings"] == 0
        assert r.stats["pool_used"] == 0             # everything retired
        k.advance(ms=1000)
        check_invariants(k)


@pytest.mark.threads
@pytest.mark.parametrize("policy", ["batched", "quarter"])
def test_storm_with_python_threads_alongside(policy):
    """Every kind of thread at once: the C storm's pthreads on vCPUs 0-1 (GIL
    released) while Python threads kmalloc/read/kfree and track objects on vCPUs
    2-3 and the main thread reads the stats."""
    with odebug.Kernel(f"odebug.quarantine={policy}", cpus=4, ram="64M") as k:
        d, descr = k.debug_objects, odebug.ObjectDescr("mixed_obj")
        done = threading.Event()
        out = {}

        def storm():
            out["r"] = quarantine_storm(k, 15_000 * SCALE, threads=2, mutex_every=3)
            done.set()

        def py(i):
            rnd = random.Random(i)
            with k.on_cpu(2 + i % 2):
                n = 0
                while not done.is_set() or n < 300:
                    p = k.kmalloc(rnd.randrange(2, 600))
                    k.write(p, b"ab")
                    a = k.arena_end + (i << 24) + (n % 64) * 64
                    d.init(a, descr)
                    d.activate(a, descr)
                    assert k.read(p, 2) == b"ab"
                    d.deactivate(a, descr)
                    d.free(a, descr)
                    k.kfree(p)
                    n += 1
        st = threading.Thread(target=storm)
        st.start()
        _run_threads(2, py)
        while not done.is_set():
            k.kasan.quarantine.stats()
            time.sleep(0.01)
        st.join()
        r = out["r"]
        assert r.ops == 2 * 15_000 * SCALE and r.mutex_ops == 2 * 5_000 * SCALE
        assert r.quarantine_lock_waits >= 0 and r.evicting_reduces > 0
        k.advance(ms=1000)
        live = check_invariants(k)
        assert all(v == 0 for n, v in live.items() if n.startswith("kmalloc-")), live


@pytest.mark.threads
def test_slab_python_threads_with_kasan():
    """The slab on Python threads with KASAN on: cross-vCPU frees into the
    quarantine, bulk calls, a debug cache; accounting balances afterwards."""
    with odebug.Kernel("", cpus=4, ram="64M") as k:
        caches = [k.kmem_cache_create("st_plain", 72), k.kmem_cache_create("st_dbg", 72, flags="FZPU")]

        def work(i):
            rnd = random.Random(i)
            live = []
            with k.on_cpu(i % 4):
                for r in range(800 * SCALE):
                    c = caches[r % 2]
                    if r % 50 == 0:
                        b = c.alloc_bulk(8)
                        c.free_bulk(b)
                    live.append((c, c.alloc()))
                    if len(live) > 10:
                        c2, p = live.pop(rnd.randrange(len(live)))
                        with k.on_cpu((i + 1) % 4):
                            c2.free(p)
                for c2, p in live:
                    c2.free(p)
        _run_threads(6, work)
        live = check_invariants(k)
        assert live["st_plain"] == 0 and live["st_dbg"] == 0


@pytest.mark.threads
@pytest.mark.parametrize("policy", ["lazy", "eager"])
def test_real_clock_work_runs_on_the_worker_during_the_workload(policy):
    """clock="real": while Python threads keep creating and retiring tracked
    objects, the freeing work runs on the kernel's worker thread (never in the
    workload's threads: nothing advances a real clock)."""
    with odebug.Kernel(f"odebug.objects_free={policy}", cpus=2, ram="64M", clock="real") as k:
        d, descr = k.debug_objects, odebug.ObjectDescr("rt_obj")
        seen = {}
        stop = threading.Event()

        def work(i):
            with k.on_cpu(i):
                r = 0
                while not stop.is_set():
                    addrs = [k.arena_end + (i << 24) + (r % 8) * 65536 + j * 64
                             for j in range(600)]
                    for a in addrs:
                        d.init(a, descr)
                        d.activate(a, descr)
                    for a in addrs:
                        d.deactivate(a, descr)
                        d.free(a, descr)
                    r += 1

        ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            i = d.internals()
            if i["work_runs_worker"] > 0 and d.stats()["objs_freed"] > 0:
                seen = {"alive": all(t.is_alive() for t in ts), **i}
                break
            time.sleep(0.02)
        stop.set()
        for t in ts:
            t.join()
        assert seen, "the freeing work never ran on the worker"
        assert seen["alive"]                          # ... while the workload ran
        assert seen["work_runs_worker"] == seen["work_runs"] or seen["work_runs"] > 0
        i = d.internals()
        assert i["work_runs_worker"] == i["work_runs"]   # every run was on the worker
        check_invariants(k)


@pytest.mark.threads
@pytest.mark.parametrize("flags", ["P", "FZPU"])
def test_modern_debug_flows_count_exactly_under_threads(flags):
    """The modern debug flows take list_lock without the vCPU irq lock, so their
    per-vCPU counters are only exact if every update is under list_lock: 16
    threads on 3 vCPUs, long enough that a counter updated outside the lock
    loses increments."""
    with odebug.Kernel(f"kasan=off no_debug_objects slub_debug={flags} odebug.slub_path=modern",
                       cpus=3, ram="256M") as k:
        r = hackbench(k, groups=2, fds=4, loops=2000, msg_size=100, runs=1)
        for name, st in r.slab_stats.items():
            assert st["alloc_fastpath"] == st["free_fastpath"] == 0, name   # no cpu slab
            assert st["alloc_slowpath"] == st["free_slowpath"] == r.messages, name
            assert k.cache(name).validate() == 0
        assert check_invariants(k)["skbuff_head_cache"] == 0
