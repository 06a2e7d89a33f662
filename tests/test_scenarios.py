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
                                 "kasan=off no_debug_objects slub_debug=ZP odebug.slub_path=relaxed"])
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
