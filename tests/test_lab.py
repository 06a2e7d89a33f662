"""odebug.lab.sweep on a process pool (spawn), serially, on threads, and on a Dask
LocalCluster when dask.distributed is installed."""
import concurrent.futures as cf
import multiprocessing

import pytest

import odebug
from odebug import lab


def test_grid_points():
    assert lab.grid_points({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    assert lab.grid_points({"a": 3}) == [{"a": 3}]
    assert lab.grid_points([{"a": 1}, {"b": 2}]) == [{"a": 1}, {"b": 2}]


def test_sweep_default_process_pool_deterministic_tasks():
    grid = {"policy": ["quarter", "batched"], "ops": [30_000], "ram": ["64M"], "cpus": [1]}
    t = lab.sweep(lab.quarantine_task, grid, seeds=2, max_workers=2)
    assert [(r["policy"], r["seed"]) for r in t] == \
        [("quarter", 0), ("quarter", 1), ("batched", 0), ("batched", 1)]
    assert all(r["max_size"] == 64 * (1 << 20) // 32 - (1 << 20) for r in t)
    # the C core is deterministic in the virtual clock: same seed, same reduce sizes
    again = lab.sweep(lab.quarantine_task, grid, seeds=[1], executor="serial")
    for r in again:
        twin = t.where(policy=r["policy"], seed=1)[0]
        assert r["largest_reduce_bytes"] == twin["largest_reduce_bytes"]
        assert r["evicting_reduces"] == twin["evicting_reduces"]
    text = t.to_text(["policy", "seed", "largest_reduce_bytes"])
    assert text.splitlines()[0].split() == ["policy", "seed", "largest_reduce_bytes"]
    assert len(text.splitlines()) == 5
    s = t.summary(by=["policy"], value="ops_per_s")
    assert [r["policy"] for r in s] == ["quarter", "batched"] and all(r["n"] == 2 for r in s)


def test_sweep_churn_on_a_given_spawn_pool():
    with cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
        t = lab.sweep(lab.churn_task, {"policy": ["eager", "lazy"], "rounds": [60],
                                       "cpus": [2], "wave": [200]}, executor=ex, seeds=None)
    eager, lazy = t
    assert "seed" not in eager
    assert eager["objs_allocated"] > lazy["objs_allocated"] > 0
    assert eager["peak_live"] == lazy["peak_live"]


def _boom(x, seed):
    if x == 2:
        raise ValueError("two")
    return x * 10 + seed


def test_sweep_threads_values_and_recorded_errors():
    with cf.ThreadPoolExecutor(2) as ex:
        t = lab.sweep(_boom, {"x": [1, 2]}, executor=ex, seeds=2, errors="record")
    assert [r.get("value") for r in t] == [10, 11, None, None]
    assert t[2]["error"] == "ValueError: two"
    with pytest.raises(ValueError):
        lab.sweep(_boom, {"x": [2]}, executor="serial")


def test_fuzz_task_finds_a_planted_bug():
    r = lab.fuzz_task("odebug_lab_planted:Planted", max_examples=100, seed=3)
    assert r["found"] and r["kinds"] == "double-free"
    assert "k.kfree(p1)" in r["script"]


def test_sweep_on_dask_localcluster():
    distributed = pytest.importorskip("distributed", reason="dask[distributed] not installed "
                                      "(pip install 'odebug[dask]')")
    if odebug.build_info()["sanitizer"]:
        pytest.skip("sanitizer build: dask workers would need the runtime preloaded at start")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, host="127.0.0.1") as cluster, \
            distributed.Client(cluster) as client:
        ex = client.get_executor(pure=False)
        t = lab.sweep(lab.quarantine_task, {"policy": ["quarter", "batched"], "ops": [20_000],
                                            "ram": ["64M"], "cpus": [1]}, executor=ex, seeds=2)
    assert [(r["policy"], r["seed"]) for r in t] == \
        [("quarter", 0), ("quarter", 1), ("batched", 0), ("batched", 1)]
    assert all(r["largest_reduce_bytes"] > 0 for r in t)
