"""The odebug pytest plugin (entry point ``odebug``, loaded when odebug is installed).

* fixture ``kernel``: a fresh ``odebug.Kernel`` per test, closed afterwards; the test
  fails if the kernel made a report the test did not expect;
* marker ``@pytest.mark.odebug(cmdline=..., cpus=..., ram=..., clock=..., seed=...)``
  configures that kernel;
* fixture ``expect_report``: ``with expect_report("slab-use-after-free"): ...`` marks
  reports as expected (it is ``kernel.expect_report`` and also accepts reports made by
  the block); ``kernel_reports_ok`` (a function) accepts every report made so far.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Optional

import pytest


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "odebug(cmdline='', cpus=2, ram='256M', clock='virtual', seed=0): "
        "configure the odebug `kernel` fixture")


class _Expected:
    def __init__(self) -> None:
        self.upto = 0            # reports [0, upto) are expected


@pytest.fixture
def kernel(request):
    """A fresh odebug.Kernel for this test (see the ``odebug`` marker); reports the
    test did not expect (through ``expect_report``) fail it at teardown."""
    import odebug

    m = request.node.get_closest_marker("odebug")
    kw = dict(m.kwargs) if m else {}
    cmdline = kw.pop("cmdline", "")
    k = odebug.Kernel(cmdline, **kw)
    k._pytest_expected = _Expected()
    yield k
    try:
        unexpected = k.reports[k._pytest_expected.upto:]
        if unexpected:
            kinds = ", ".join(f"{r.subsystem}:{r.kind}" for r in unexpected)
            pytest.fail(f"the kernel made reports the test did not expect: {kinds}\n\n"
                        + unexpected[0].text, pytrace=False)
    finally:
        k.close()


@pytest.fixture
def expect_report(kernel):
    """``with expect_report(kind, subsystem=None, count=None): ...``: the block must
    make such a report (AssertionError otherwise); reports made in it are expected."""
    @contextlib.contextmanager
    def _expect(kind: Optional[str] = None, *, subsystem: Optional[str] = None,
                count: Optional[int] = None) -> Iterator[object]:
        with kernel.expect_report(kind, subsystem=subsystem, count=count) as got:
            yield got
        kernel._pytest_expected.upto = kernel.report_count
    return _expect


@pytest.fixture
def kernel_reports_ok(kernel):
    """Call it to accept every report the kernel made so far."""
    def _ok() -> None:
        kernel._pytest_expected.upto = kernel.report_count
    return _ok
