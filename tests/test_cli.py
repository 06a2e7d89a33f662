"""The command line (odebug/__main__.py): one argparse parser, prog ``odebug``.

Every ``--help`` exits 0 at once, prints ``usage: odebug ...`` and runs nothing
(issue 19: ``bench --help`` used to run the benchmarks, ``bench quarantine
--help`` called itself ``__main__.py``, reproduce's description stopped
mid-sentence)."""
import subprocess
import sys
import time

import pytest

HELPS = [
    [],
    ["reproduce"],
    ["bench"],
    ["bench", "slab"],
    ["bench", "python"],
    ["bench", "api"],
    ["bench", "quarantine"],
    ["bench", "debugobjects"],
    ["bench", "races"],
    ["bench", "all"],
]


def _odebug(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "odebug", *args], capture_output=True,
                          text=True, timeout=timeout)


def _help_text(cmd):
    """The help the parser prints for ``odebug CMD --help``, built in-process."""
    from odebug.__main__ import build_parser
    p = build_parser()
    for word in cmd:
        sub = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction")
        p = sub.choices[word]
    return p.format_help()


@pytest.mark.parametrize("cmd", HELPS, ids=lambda c: " ".join(c) or "odebug")
def test_help_runs_nothing(cmd, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")       # the same wrapping in both processes
    t0 = time.monotonic()
    p = _odebug(*cmd, "--help")
    took = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    assert took < 10, took
    assert p.stdout.startswith("usage: odebug " + " ".join(cmd)), p.stdout
    assert "__main__" not in p.stdout
    assert p.stderr == ""                     # no progress lines: nothing ran
    assert p.stdout == _help_text(cmd)        # nothing but the help: nothing ran


def test_help_descriptions_are_whole_sentences(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    for cmd in (["reproduce"], ["bench"], ["bench", "quarantine"], ["bench", "slab"],
                ["bench", "all"]):
        desc = _help_text(cmd).split("\n\n")[1]
        assert desc.rstrip().endswith("."), (cmd, desc)
    assert "as ratios of the two policies run side by side." in " ".join(
        _help_text(["reproduce"]).split())


def test_options_keep_their_defaults():
    from odebug.__main__ import build_parser
    p = build_parser()
    a = p.parse_args(["reproduce"])
    assert (a.which, a.quick, a.json, a.runs) == ("all", False, None, None)
    a = p.parse_args(["bench", "slab"])
    assert (a.pairs, a.rounds) == (500_000, 15)
    a = p.parse_args(["bench", "quarantine"])
    assert (a.ram, a.cpus, a.ops, a.quick) == ("4G", 4, 700_000, False)
    a = p.parse_args(["bench", "debugobjects"])
    assert (a.cpus, a.rounds, a.wave, a.lifetime, a.advance_ms, a.threads, a.seed,
            a.phase_rounds) == (8, 2000, 800, 3, 10.0, False, 0, 25)
    a = p.parse_args(["bench", "races"])
    assert (a.fixed_schedules, a.pct_budget, a.dfs_budget, a.seed, a.only) == (
        1000, 2000, 20_000, 1, None)
    assert p.parse_args(["bench"]).func.__name__ == "run_all"
    assert p.parse_args(["bench", "all"]).func.__name__ == "run_all"


def test_bad_command_and_option_exit_2():
    p = _odebug("nonsense")
    assert p.returncode == 2 and "usage: odebug" in p.stderr and "invalid choice" in p.stderr
    p = _odebug("bench", "slab", "--no-such-option")
    assert p.returncode == 2 and "unrecognized arguments: --no-such-option" in p.stderr


def test_bench_runs_with_options():
    p = _odebug("bench", "quarantine", "--ram", "64M", "--cpus", "2", "--ops", "2000",
                timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("geometry 64M/2 CPUs")


def test_bench_quarantine_quick_runs():
    """``bench quarantine --quick`` (the CI size) runs both rows: it booted one vCPU and then
    asked for its 2-thread row (``threads: must be 1..1, not 2``)."""
    p = _odebug("bench", "quarantine", "--quick", timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("geometry 64M/2 CPUs")
    assert "ops_per_s_2thr" in p.stdout


def test_bench_python_section():
    """``bench python`` prints one row per configuration, ns and the Kernel/_core ratio."""
    p = _odebug("bench", "python", "--pairs", "2000", "--rounds", "1", timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("python: kmalloc(64)+kfree pairs")
    rows = {ln.split()[0]: ln.split() for ln in lines[2:4]}
    assert set(rows) == {"no-debug", "defaults"}
    for cells in rows.values():
        kernel, core, trivial, ratio, hook = cells[1:]
        assert float(kernel) > 0 and float(core) > 0 and float(hook) > 0
        assert ratio.endswith("x") and float(ratio[:-1]) > 0


@pytest.mark.skipif(__import__("shutil").which("gcc") is None, reason="needs gcc")
def test_bench_api_section():
    """``bench api`` builds a C program on the public API (and glibc's, and ASan's
    when gcc has it) and prints ns and ratios per workload and configuration,
    and the resident bytes per live object."""
    p = _odebug("bench", "api", "--pairs", "3000", "--live", "200", "--rounds", "2",
                "--ram", "64", timeout=600)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("api: the public C API (odb_kmalloc/odb_kfree) in a C program")
    rows = [ln for ln in lines if ln.startswith(("64 B alloc+free pair", "random 16..1024"))]
    configs = [ln[30:].split()[0] for ln in rows]
    asan = "asan" in configs
    want = ["glibc"] + (["asan"] if asan else []) + ["no-debug", "defaults", "full",
                                                     "full-modern"]
    assert configs == want * 2
    for ln in rows:
        ns, vs_glibc = (float(x) for x in ln[30:].split()[1:3])
        assert ns > 0 and vs_glibc > 0
    glibc = [ln for ln in rows if ln[30:].split()[0] == "glibc"]
    assert all(float(ln[30:].split()[2]) == 1.0 for ln in glibc)
    if asan:
        # x ASan is the median of the rounds' ratios, "rounds" their lowest and highest,
        # "best" the fastest rounds' ratio
        assert lines[2].split()[-2:] == ["rounds", "best"]
        for ln in rows:
            x = float(ln[30:].split()[3])
            lo, hi = (float(v) for v in ln[30:].split()[4].split("-"))
            best = float(ln[30:].split()[5])
            assert lo <= x <= hi and best > 0, ln
            if ln[30:].split()[0] == "asan":
                assert best == 1.0
        assert any(ln.startswith("rounds: the lowest and the highest") for ln in lines)
    mem = [ln for ln in lines if ln.startswith("resident bytes per live 64 B object")]
    assert len(mem) == 1 and "defaults" in mem[0]


def test_bench_api_ratios_arithmetic(monkeypatch):
    """The ratios from given round timings (the programs' runs replaced): x glibc
    and x ASan are the medians of the per-round ratios, ``rounds`` their lowest
    and highest, ``best`` the fastest round over ASan's fastest round."""
    from odebug import bench_api
    ns = {"glibc": [10.0, 30.0, 20.0], "asan": [100.0, 300.0, 150.0],
          "odebug": [60.0, 120.0, 90.0]}
    calls = {}

    def fake_run(exe, mode, cmdline, n, size, live, ram, cpus, env=None, odebug=False):
        if mode == "memory":
            return 1.0
        k = (exe, mode, cmdline)
        i = calls[k] = calls.get(k, -1) + 1
        return ns[exe][i]
    monkeypatch.setattr(bench_api, "_compiler", lambda cc: "cc")
    monkeypatch.setattr(bench_api, "build", lambda cc, d: {"odebug": "odebug", "glibc": "glibc",
                                                           "asan": "asan"})
    monkeypatch.setattr(bench_api, "_run", fake_run)
    res = bench_api.api_pairs(1000, live=10, rounds=3, ram=64)
    row = next(r for r in res["rows"] if r["workload"] == "pair" and r["config"] == "defaults")
    assert row["ns"] == 90.0 and row["ns_min"] == 60.0
    assert row["vs_asan"] == pytest.approx(0.6)            # rounds: 0.6, 0.4, 0.6
    assert row["vs_asan_range"] == pytest.approx((0.4, 0.6))
    assert row["vs_asan_best"] == pytest.approx(0.6)       # 60 / 100
    assert row["vs_glibc"] == pytest.approx(4.5)           # 6, 4, 4.5
    table = bench_api.format_table(res)
    line = next(ln for ln in table.splitlines()
                if ln.startswith("64 B alloc+free pair") and ln[30:].split()[0] == "defaults")
    assert line[30:].split()[3:6] == ["0.60", "0.40-0.60", "0.60"]


_FAKE_VALGRIND = r'''#!/usr/bin/env python3
# a stand-in for valgrind: the instructions of a run are A + B * n, B set by the
# program (glibc 100, odebug 1000) and the workload (+5 for random), A anything
import sys
args = sys.argv[1:]
out = next(a.split("=", 1)[1] for a in args if a.startswith("--cachegrind-out-file="))
exe, mode, cmdline, n = [a for a in args if not a.startswith("--")][:4]
b = (100 if "glibc" in exe else 1000) + (5 if mode == "random" else 0) + len(cmdline)
with open(out, "w") as f:
    f.write("events: Ir\nsummary: %d\n" % (123457 + b * int(n)))
'''


@pytest.mark.skipif(__import__("shutil").which("gcc") is None, reason="needs gcc")
def test_bench_api_instructions_arithmetic(tmp_path, monkeypatch):
    """``--instructions`` counts ``(I(2m) - I(m)) / m`` per row from valgrind's
    summary line (a stand-in valgrind on PATH makes the counts known); ASan's
    rows get none; the table gets the column and says how it was counted."""
    import odebug
    from odebug import bench_api
    fake = tmp_path / "valgrind"
    fake.write_text(_FAKE_VALGRIND)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{__import__('os').environ['PATH']}")
    assert bench_api._libodebug_sanitizer() == (odebug.build_info()["sanitizer"] or "")
    # a sanitizer build of libodebug: refused, valgrind cannot run it
    monkeypatch.setattr(bench_api, "_libodebug_sanitizer", lambda: "address")
    with pytest.raises(RuntimeError, match=r"sanitizer build \(address\)"):
        bench_api.api_pairs(2000, live=100, rounds=1, ram=64, instructions=True)
    # (the stand-in runs nothing, so the check is lifted for it on any build; the
    # timed rounds still run the real programs, a sanitizer build's with its runtime)
    monkeypatch.setattr(bench_api, "_libodebug_sanitizer", lambda: "")
    res = bench_api.api_pairs(2000, live=100, rounds=1, ram=64, instructions=True,
                              instr_pairs=777)
    for r in res["rows"]:
        if r["config"] == "asan":
            assert "instr" not in r
            continue
        want = ((100 if r["config"] == "glibc" else 1000) + (5 if r["workload"] == "random" else 0)
                + len(r["cmdline"]))
        assert r["instr"] == want, r
    table = bench_api.format_table(res)
    assert "instr/op" in table.splitlines()[2]
    assert "m = 777 operations" in table
    # without valgrind (a PATH with the compiler alone): a clear error before anything runs
    import shutil
    only_cc = tmp_path / "only_cc"
    only_cc.mkdir()
    (only_cc / "gcc").symlink_to(shutil.which("gcc"))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(only_cc))
    with pytest.raises(RuntimeError, match="needs valgrind on PATH"):
        bench_api.api_pairs(2000, live=100, rounds=1, ram=64, instructions=True)


@pytest.mark.skipif(__import__("shutil").which("gcc") is None
                    or __import__("shutil").which("valgrind") is None
                    or bool(__import__("odebug").build_info().get("sanitizer")),
                    reason="needs gcc and valgrind, and a plain build")
def test_bench_api_instructions_real():
    """Under the real valgrind: glibc's pair costs well under 1,000 instructions,
    odebug's no-debug pair about as much, the defaults (KASAN, quarantine, debug
    objects) several times more, and full debug more again."""
    p = _odebug("bench", "api", "--pairs", "2000", "--live", "200", "--rounds", "1",
                "--ram", "64", "--instructions", "--instr-pairs", "3000", timeout=900)
    assert p.returncode == 0, p.stderr
    ir = {}
    for ln in p.stdout.splitlines():
        if ln.startswith("64 B alloc+free pair"):
            cells = ln[30:].split()
            ir[cells[0]] = float(cells[-1].replace(",", "")) if cells[-1] != "-" else None
    assert 50 < ir["glibc"] < 1000
    assert ir["no-debug"] < 2 * ir["glibc"] + 200
    assert ir["defaults"] > 3 * ir["no-debug"]
    assert ir["full"] > ir["defaults"] and ir["full-modern"] > ir["defaults"]
