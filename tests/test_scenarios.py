"""Scenario drivers on real threads: invariants after join."""
import os

import pytest

import odebug
from odebug.scenarios import hackbench

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
        assert not k.reports


def test_hackbench_bad_arguments():
    with odebug.Kernel("kasan=off", ram="64M") as k:
        with pytest.raises(ValueError):
            hackbench(k, groups=0)
        with pytest.raises(ValueError):
            hackbench(k, mode="fibers")
        with pytest.raises(ValueError):
            hackbench(k, groups=100, fds=100)
