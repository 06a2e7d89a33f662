"""The README's "From C" program and its boot-parameter table cannot drift:
the C program and its compile commands are taken from README.md, built against
the installed package (get_include/get_library), run, and its output compared
with the README's; the table's parameters and defaults are checked against the
library's parameter table (csrc) and a freshly booted kernel."""
import os
import re
import shutil
import subprocess
import sys

import pytest

import odebug

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = open(os.path.join(ROOT, "README.md")).read()
FROM_C = README.split("\n### From C\n", 1)[1].split("\n### ", 1)[0]
OFFSET = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+")
FRAME = re.compile(r"^ \w[\w.]*\+0x[0-9a-f]+/0x[0-9a-f]+$")


def _blocks(lang):
    return re.findall(r"```" + lang + r"\n(.*?)```", FROM_C, flags=re.S)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_from_c_program_builds_runs_and_prints_the_readme_output(tmp_path):
    (prog,), (commands,), (expected,) = _blocks("c"), _blocks("sh"), _blocks("text")
    (tmp_path / "double_free.c").write_text(prog)
    bindir = tmp_path / "bin"                 # `python` in the commands: this interpreter
    bindir.mkdir()
    # (a wrapper, not a symlink: a venv's python finds its pyvenv.cfg by its own path)
    (bindir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bindir / "python").chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    if odebug.build_info().get("sanitizer"):
        # a sanitized libodebug needs the runtime the test process has preloaded
        assert "LD_PRELOAD" in env or "ODEBUG_SANITIZE" in env
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=str(tmp_path),
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    got, want = p.stdout.splitlines(), expected.splitlines()
    # stack frames and symbol offsets (function+off/size) depend on the compiler
    # (and on a sanitizer build); everything else is exact
    def stable(lines):
        return [OFFSET.sub("+OFF", ln) for ln in lines if not FRAME.match(ln)]
    assert stable(got) == stable(want)
    assert any(FRAME.match(ln) and ln.startswith(" main+") for ln in got)   # symbolised
    assert want[0] == "1 report: kasan double-free"
    assert want[-1].startswith("odb_kfree(k, 42) = -22: ")


def _table():
    sec = README.split("\n### Boot parameters\n", 1)[1].split("\n### ", 1)[0]
    rows = [r for r in sec.splitlines() if r.startswith("| `")]
    out = {}
    for r in rows:
        cells = [c.strip() for c in r.strip("|").split("|")]
        names = re.findall(r"`([\w.]+)=?`", cells[0])
        values = re.findall(r"`([^`]*)`", cells[-1])
        if len(values) == 1:                  # aliases (slub_debug / slab_debug)
            values = values * len(names)
        assert names and len(names) == len(values), r
        out.update(zip(names, values))
    return out


def _source_params():
    src = ""
    for f in ("params.c", "params.h"):
        with open(os.path.join(ROOT, "csrc", "kernel", f)) as fh:
            src += fh.read()
    return set(re.findall(r'\{\s*"([\w.]+)",\s*\w+,\s*\w+\s*\}', src))


def test_boot_parameter_table_is_complete_and_its_defaults_are_true():
    table = _table()
    assert set(table) == _source_params()
    k = odebug.Kernel()                       # the defaults: empty command line
    try:
        actual = {name: k.param(name) for name in table}
    finally:
        k.close()
    assert actual == table
