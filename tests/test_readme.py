"""README's examples run as shown (issue 19, item 1).

Every ```python block of README.md is an example: the HTML comment just before
it names it, ``<!-- example: NAME -->`` (``NAME`` is the file it is written to;
``, pytest`` runs it with pytest instead of python).  A ``` block preceded by
``<!-- output: NAME -->`` is that example's pasted real output, compared with a
fresh run modulo addresses, hashes and timings (hex numbers and floats); a
mode may follow the name:

* (none): the whole output, line by line;
* ``trimmed``: a ``...`` line in the pasted text stands for any run of lines;
* ``lines``: each pasted line appears in the output, in order.

Each example runs as a script in a fresh directory (``python NAME``), so an
example that needs ``if __name__ == "__main__":`` (a process pool with the
spawn context) must have it.  Stack frames are compared by name (the offsets
are hex): a renamed function makes the pasted output stale, and this test
fails.  Not on sanitizer builds (other inlining, other frames).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Dict, List, Tuple

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_README = os.path.join(_ROOT, "README.md")

pytestmark = pytest.mark.skipif(bool(os.environ.get("ODEBUG_SANITIZE")),
                                reason="frames differ on sanitizer builds")

_MARK = re.compile(r"^<!--\s*(example|output):\s*([^,\s]+)\s*(?:,\s*([a-z]+))?\s*-->\s*$")


def _blocks() -> Tuple[Dict[str, Tuple[str, str, int]], Dict[str, Tuple[str, str]], List[int]]:
    """(examples: name -> (code, mode, line), outputs: name -> (text, mode),
    line numbers of python blocks without an example mark)."""
    lines = open(_README, encoding="utf-8").read().split("\n")
    examples: Dict[str, Tuple[str, str, int]] = {}
    outputs: Dict[str, Tuple[str, str]] = {}
    unmarked: List[int] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("```"):
            lang = ln.strip()[3:]
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            body = "\n".join(lines[i + 1:j])
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            m = _MARK.match(lines[k].strip()) if k >= 0 else None
            if lang == "python":
                if m and m.group(1) == "example":
                    examples[m.group(2)] = (body + "\n", m.group(3) or "", i + 1)
                else:
                    unmarked.append(i + 1)
            elif m and m.group(1) == "output":
                outputs[m.group(2)] = (body, m.group(3) or "")
            i = j + 1
            continue
        i += 1
    return examples, outputs, unmarked


_EXAMPLES, _OUTPUTS, _UNMARKED = _blocks()


def _norm(s: str) -> List[str]:
    s = re.sub(r"0x[0-9a-fA-F]+", "0x?", s)
    s = re.sub(r"\b[0-9a-f]{8,}\b", "?", s)        # dump addresses, schedule hashes
    s = re.sub(r"\d+\.\d+", "N.N", s)              # timings
    return [ln.rstrip() for ln in s.strip("\n").split("\n")]


def _match(expected: List[str], got: List[str], mode: str) -> Tuple[bool, str]:
    if mode == "lines":
        it = iter(got)
        for e in expected:
            if not any(e in g for g in it):
                return False, f"line not found (in order): {e!r}"
        return True, ""
    if mode != "trimmed":
        for n, (e, g) in enumerate(zip(expected, got)):
            if e != g:
                return False, f"line {n + 1}: expected {e!r}, got {g!r}"
        if len(expected) != len(got):
            return False, f"{len(expected)} lines pasted, {len(got)} printed"
        return True, ""
    # trimmed: "..." matches any run of lines
    pos = 0
    wild = False
    for e in expected:
        if e.strip() == "...":
            wild = True
            continue
        if wild:
            while pos < len(got) and got[pos] != e:
                pos += 1
        if pos >= len(got) or got[pos] != e:
            return False, f"expected {e!r} at printed line {pos + 1}, got {got[pos] if pos < len(got) else 'EOF'!r}"
        pos += 1
        wild = False
    return True, ""


def test_every_python_block_is_an_example():
    assert not _UNMARKED, (f"README.md lines {_UNMARKED}: a ```python block without an "
                           f"'<!-- example: NAME -->' mark before it")
    assert set(_OUTPUTS) <= set(_EXAMPLES), "an output block names no example"
    assert len(_EXAMPLES) >= 6


@pytest.mark.parametrize("name", sorted(_EXAMPLES))
def test_readme_example_runs_as_shown(name, tmp_path):
    code, mode, line = _EXAMPLES[name]
    path = tmp_path / name
    path.write_text(code)
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0", COLUMNS="250")
    env["PYTHONPATH"] = _ROOT + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", name] if mode == "pytest" \
        else [sys.executable, name]
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout
    if name in _OUTPUTS:
        text, omode = _OUTPUTS[name]
        ok, why = _match(_norm(text), _norm(out), omode)
        assert ok, f"README.md example {name} (line {line}): output differs: {why}\n--- printed:\n{out}\n{r.stderr}"
    if mode != "pytest" or name not in _OUTPUTS:
        assert r.returncode == 0, f"README.md example {name} (line {line}) failed:\n{out}\n{r.stderr}"
