"""One name per thing (issue 19 item 4): values are properties, actions methods.

Each other spelling still works for one release and warns (DeprecationWarning
naming the one to use); odebug's own code, README and the notebooks use only the
kept names (pyproject's filterwarnings makes a deprecated call from odebug's
modules an error in the test suite)."""
import json
import os
import re
import warnings

import pytest

import odebug
from odebug import _core

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: deprecated spelling -> (kept spelling, how to call each on a kernel)
DEPRECATED = {
    "current_cpu()": ("cpu", lambda k: k.current_cpu(), lambda k: k.cpu),
    "current_pid()": ("pid", lambda k: k.current_pid(), lambda k: k.pid),
    "lock_bias_info()": ("lock_bias", lambda k: k.lock_bias_info(), lambda k: k.lock_bias),
    "hz": ("HZ", lambda k: k.hz, lambda k: k.HZ),
    "fault_get()": ("fault()", lambda k: k.fault_get("failslab"),
                    lambda k: {n: v for n, v in k.fault("failslab").items()
                               if n not in ("ignore_gfp_wait", "cache_filter")}),
    "stack_text()": ("stack()", lambda k: k.stack_text(_handle(k)),
                     lambda k: k.stack(_handle(k))),
}


def _handle(k):
    if "_test_handle" not in k.__dict__:
        k.__dict__["_test_handle"] = k.stack_save()
    return k.__dict__["_test_handle"]


@pytest.fixture
def k():
    with odebug.Kernel(ram="32M", cpus=2, hz=250) as kk:
        yield kk


@pytest.mark.parametrize("old", sorted(DEPRECATED))
def test_old_spelling_warns_and_agrees(k, old):
    new, call_old, call_new = DEPRECATED[old]
    with pytest.warns(DeprecationWarning, match=re.escape(f"Kernel.{old} is deprecated")) as w:
        got = call_old(k)
    assert f"use Kernel.{new}" in str(w[0].message)
    assert w[0].filename == __file__            # attributed to the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert call_new(k) == got


def test_kept_spellings_do_not_warn(k):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert k.HZ == 250 and k.msecs_to_jiffies(9) == 3
        assert k.cpu == 0 and k.pid >= 1
        assert set(k.lock_bias) == {"threshold", "grants", "revocations"}
        assert "Kernel_stack" not in k.stack(k.stack_save())
        f = k.fault("fail_page_alloc")
        assert (f["min_order"], f["ignore_gfp_highmem"], f["ignore_gfp_wait"]) == (1, 1, 1)
        k.set_fault("fail_page_alloc", probability=5, min_order=0, ignore_gfp_wait=False)
        f = k.fault("fail_page_alloc")
        assert (f["probability"], f["min_order"], f["ignore_gfp_highmem"],
                f["ignore_gfp_wait"]) == (5, 0, 1, 0)
        assert k.fault("failslab")["cache_filter"] == 0


def test_fault_setters_deprecated_but_working(k):
    with pytest.warns(DeprecationWarning, match=r"Kernel\.fault_set\(\) is deprecated"):
        k.fault_set("failslab", 7, 2, 3)
    with pytest.warns(DeprecationWarning, match=r"Kernel\.fault_set_flag\(\) is deprecated"):
        k.fault_set_flag("failslab", "cache-filter", 1)
    f = k.fault("failslab")
    assert (f["probability"], f["interval"], f["times"], f["cache_filter"]) == (7, 2, 3, 1)


def test_a_bad_knob_changes_nothing(k):
    before = k.fault("failslab")
    for kw in ({"min_order": 0}, {"cache_filter": 2}, {"ignore_gfp_wait": -1}):
        with pytest.raises(odebug.InvalidArgument):
            k.set_fault("failslab", probability=50, **kw)
    assert k.fault("failslab") == before


def test_the_c_binding_keeps_its_c_names(k):
    """``odebug._core.Kernel`` is the thin C layer: its names are the C API's and do not warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _core.Kernel.current_cpu(k) == 0
        assert _core.Kernel.hz.__get__(k) == 250
        assert _core.Kernel.fault_get_flag(k, "fail_page_alloc", "min-order") == 1


def _docs():
    yield "README.md", open(os.path.join(ROOT, "README.md")).read()
    nb = os.path.join(ROOT, "notebooks")
    for f in sorted(os.listdir(nb)):
        if f.endswith(".ipynb"):
            cells = json.load(open(os.path.join(nb, f)))["cells"]
            yield f, "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    pkg = os.path.dirname(odebug.__file__)
    for f in sorted(os.listdir(pkg)):
        if f.endswith(".py") and f not in ("kernel.py", "testing.py"):
            yield f, open(os.path.join(pkg, f)).read()


def test_docs_and_package_use_only_kept_names():
    pat = re.compile(r"\bk\w*\.(current_cpu|current_pid|lock_bias_info|hz|fault_get|fault_set"
                     r"|fault_set_flag|stack_text)\b")
    found = [(name, m.group(0)) for name, text in _docs() for m in pat.finditer(text)]
    assert found == []
