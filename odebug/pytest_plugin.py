"""The odebug pytest plugin (entry point ``odebug``, loaded when odebug is installed).

* fixture ``kernel``: a fresh ``odebug.Kernel`` per test, closed afterwards; the test
  fails if the kernel made a report the test did not expect;
* marker ``@pytest.mark.odebug(cmdline=..., cpus=..., ram=..., clock=..., seed=...,
  hz=..., allow=[kinds])`` configures that kernel (``allow``: report kinds that are
  always expected in this test);
* expected reports: ``with kernel.expect_report("slab-use-after-free"): ...`` (the
  kernel's own method) or the ``expect_report`` fixture (the same, for the ``kernel``
  fixture) mark the reports the block made as expected; ``kernel.acknowledge_reports()``
  or the ``kernel_reports_ok`` fixture (a function) accept every report made so far;
* fixture ``kernel_factory``: ``kernel_factory(cmdline, **kw)`` makes more kernels,
  checked and closed the same way.

The check runs when the test function returns, so a report nobody expected makes the
test *fail* (not error), with the reports' kinds and the first report's text.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Generator, Iterator, List, Optional, Sequence, Set

import pytest

_KERNELS = pytest.StashKey[List[Any]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "odebug(cmdline='', cpus=2, ram='256M', clock='virtual', seed=0, allow=()): "
        "configure the odebug `kernel` fixture (allow: report kinds always expected)")


def _kernel_class() -> type:
    import odebug

    class CheckedKernel(odebug.Kernel):
        """An odebug.Kernel that remembers which of its reports a test expected."""

        def __init__(self, cmdline: str = "", *, allow: Sequence[str] = (), **kw: Any) -> None:
            super().__init__(cmdline, **kw)
            self._pt_acked = 0                 # reports with seq <= this are expected
            self._pt_expected: Set[int] = set()     # and these seqs
            self._pt_allow = frozenset(allow)

        @contextlib.contextmanager
        def expect_report(self, kind: Any = None, *, subsystem: Optional[str] = None,
                          count: Optional[int] = None) -> Iterator[Any]:
            """As :meth:`odebug.Kernel.expect_report`; the matched reports, and every
            report the block made, count as expected by the test."""
            start = self._pt_last_seq()
            with super().expect_report(kind, subsystem=subsystem, count=count) as got:
                yield got
            self._pt_expected.update(r.seq for r in self.reports if r.seq > start)

        def acknowledge_reports(self) -> None:
            """Every report made so far is expected by the test."""
            self._pt_acked = max(self._pt_acked, self._pt_last_seq())

        def unexpected_reports(self) -> List[Any]:
            """Reports the test did not expect (so far)."""
            return [r for r in self.reports if r.seq > self._pt_acked
                    and r.seq not in self._pt_expected and r.kind not in self._pt_allow]

        def _pt_last_seq(self) -> int:
            rs = self.reports
            return rs[-1].seq if rs else self._pt_acked

    return CheckedKernel


_CLASS: Optional[type] = None


def checked_kernel(cmdline: str = "", **kw: Any) -> Any:
    """A kernel whose unexpected reports the plugin can list (what the ``kernel``
    fixture yields): an :class:`odebug.Kernel` with ``acknowledge_reports()`` and
    ``unexpected_reports()``."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _kernel_class()
    return _CLASS(cmdline, **kw)


def _register(node: pytest.Item, k: Any) -> None:
    node.stash.setdefault(_KERNELS, []).append(k)


@pytest.fixture
def kernel(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh odebug.Kernel for this test (see the ``odebug`` marker); a report the
    test did not expect (``kernel.expect_report``) fails it."""
    m = request.node.get_closest_marker("odebug")
    kw = dict(m.kwargs) if m else {}
    if m and m.args:
        kw.setdefault("cmdline", m.args[0])
    cmdline = kw.pop("cmdline", "")
    k = checked_kernel(cmdline, **kw)
    _register(request.node, k)
    yield k
    k.close()


@pytest.fixture
def kernel_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """``kernel_factory(cmdline="", **kw)``: more checked kernels for this test."""
    made: List[Any] = []

    def make(cmdline: str = "", **kw: Any) -> Any:
        k = checked_kernel(cmdline, **kw)
        made.append(k)
        _register(request.node, k)
        return k
    yield make
    for k in made:
        k.close()


@pytest.fixture
def expect_report(kernel: Any) -> Callable[..., Any]:
    """``with expect_report(kind, subsystem=None, count=None): ...``: the block must
    make such a report (AssertionError otherwise); reports made in it are expected."""
    fn: Callable[..., Any] = kernel.expect_report
    return fn


@pytest.fixture
def kernel_reports_ok(kernel: Any) -> Callable[[], None]:
    """Call it to accept every report the kernel made so far."""
    fn: Callable[[], None] = kernel.acknowledge_reports
    return fn


def _unexpected_message(kernels: List[Any]) -> Optional[str]:
    bad: List[Any] = []
    for k in kernels:
        if not k.closed:
            bad += k.unexpected_reports()
    if not bad:
        return None
    kinds = ", ".join(f"{r.subsystem}:{r.kind}" for r in bad)
    text: str = bad[0].text
    return (f"the kernel made reports the test did not expect: {kinds}\n"
            "(wrap the code in `with kernel.expect_report(kind):`, or use "
            "@pytest.mark.odebug(allow=[...]))\n\n" + text)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, None]:
    outcome = yield
    kernels = item.stash.get(_KERNELS, [])
    if outcome.excinfo is None and kernels:
        msg = _unexpected_message(kernels)
        if msg:
            try:
                pytest.fail(msg, pytrace=False)
            except pytest.fail.Exception as e:
                outcome.force_exception(e)
