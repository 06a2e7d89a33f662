"""Nothing observable changes when odebug gets faster (issue 16): a fixed workload's
log, reports, slabinfo, SLUB/quarantine/debug-objects statistics and scenario
results equal tests/data/golden_workload.txt.gz (1.1 MB of text), recorded before the
speed work.

Regenerate the file only for a deliberate change of behaviour (and say so in the
commit): ``python tests/golden_workload.py | gzip -9n > tests/data/golden_workload.txt.gz``."""
import difflib
import gzip
import os
import subprocess
import sys

import pytest

import odebug

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import golden_workload  # noqa: E402


@pytest.mark.skipif(bool(odebug.build_info()["sanitizer"]),
                    reason="a sanitizer build inlines differently: other C frames, so other "
                           "stack-depot handles (stored in objects, printed in dumps); CI's "
                           "main stage pins the output on the normal build")
def test_fixed_workload_output_is_unchanged():
    # the workload runs in a child with *this* odebug first on its path: a script's
    # sys.path[0] is tests/, so it would otherwise import the installed (editable)
    # package, which in a second work tree is another checkout's
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(odebug.__file__))) + \
        (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run([sys.executable, os.path.join(HERE, "golden_workload.py")],
                       capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr
    with gzip.open(os.path.join(HERE, "data", "golden_workload.txt.gz"), "rt") as f:
        want = f.read()
    got = p.stdout
    if got != want:
        diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                 "golden", "now", n=2))[:80])
        raise AssertionError(f"the fixed workload's output changed:\n{diff}")


def test_the_workload_is_deterministic_and_covers_every_room():
    """Two runs in one process agree, and the output holds what it is meant to pin."""
    a = golden_workload.run_config("slub_debug=FZPU")
    assert a == golden_workload.run_config("slub_debug=FZPU")
    for needle in ("BUG: KASAN: slab-out-of-bounds", "BUG: KASAN: double-free",
                   "Right Redzone overwritten", "ODEBUG: activate not available",
                   "slabinfo - version: 2.1", "pool_free", "hackbench: 640 messages",
                   "quarantine: "):
        assert needle in a, needle
