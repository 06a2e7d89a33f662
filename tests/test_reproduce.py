"""python -m odebug reproduce --quick --json: runs and produces every field
(values are not asserted against thresholds: timing is not a test)."""
import json
import subprocess
import sys


def test_reproduce_quick_json(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "odebug", "reproduce", "--quick", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "== debugobjects" in p.stdout and "== KASAN quarantine" in p.stdout
    assert "== SLUB debug paths" in p.stdout
    assert "[odebug reproduce]" in p.stderr          # progress on stderr
    r = json.loads(out.read_text())
    for part, key in (("debugobjects", "objs_allocated_ratio"),
                      ("quarantine", "largest_reduce_ratio"), ("slub", "relaxed_speedup")):
        assert isinstance(r[part][key], float) and r[part][key] > 0, (part, key)
    assert [m["exact"] for m in r["quarantine"]["machines"]] == [True, True, True]
    for f in ("mutex_wait_ms_2thr", "mutex_wait_max_ms_2thr", "qlock_wait_ms_2thr"):
        assert r["quarantine"]["quarter"][f] >= 0 and r["quarantine"]["batched"][f] >= 0
    for f in ("objs_allocated", "objs_freed", "pool_max_used", "pool_min_free"):
        assert f in r["debugobjects"]["eager"] and f in r["debugobjects"]["lazy"]
    assert r["debugobjects"]["stats_text_lazy"].startswith("max_chain     :")
    for fl in ("P", "-", "FZPU"):
        row = r["slub"]["slub_debug=" + fl]
        for path in ("locked", "relaxed"):
            assert set(row[path]) >= {"mean", "variance", "stdev", "times"}


def test_reproduce_rejects_bad_arguments():
    p = subprocess.run([sys.executable, "-m", "odebug", "reproduce", "everything"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "invalid choice" in p.stderr
