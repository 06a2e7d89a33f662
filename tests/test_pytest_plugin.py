"""The odebug pytest plugin, run in a pytester sandbox (loaded through its entry point)."""
import importlib.metadata

pytest_plugins = ["pytester"]


def test_entry_point_registered():
    eps = importlib.metadata.entry_points(group="pytest11")
    assert any(ep.name == "odebug" and ep.value == "odebug.pytest_plugin" for ep in eps)


def test_plugin_fixture_marker_and_expected_reports(pytester):
    pytester.makepyfile("""
        import pytest
        import odebug

        @pytest.mark.odebug(cmdline="kasan=off no_debug_objects", cpus=3, ram="64M")
        def test_marker(kernel):
            assert isinstance(kernel, odebug.Kernel)
            assert kernel.nr_cpus == 3 and kernel.totalram_pages == 16384

        def test_default_kernel(kernel):
            assert kernel.nr_cpus == 2 and kernel.clock == "virtual"

        def test_expected(kernel, expect_report):
            p = kernel.kmalloc(20)
            kernel.kfree(p)
            with expect_report("slab-use-after-free"):
                kernel.read(p, 1)

        def test_expected_through_the_kernel(kernel):
            p = kernel.kmalloc(20)
            kernel.kfree(p)
            with kernel.expect_report("double-free") as got:
                kernel.kfree(p)
            assert got.report.kind == "double-free"

        def test_unexpected_fails(kernel):
            p = kernel.kmalloc(20)
            kernel.kfree(p)
            kernel.read(p, 1)

        @pytest.mark.odebug(cmdline="kasan_multi_shot")
        def test_unexpected_after_an_expected_one_fails(kernel):
            p = kernel.kmalloc(20)
            kernel.kfree(p)
            with kernel.expect_report("slab-use-after-free"):
                kernel.read(p, 1)
            kernel.kfree(p)

        def test_accept(kernel, kernel_reports_ok):
            p = kernel.kmalloc(20)
            kernel.kfree(p)
            kernel.kfree(p)
            kernel_reports_ok()

        @pytest.mark.odebug(cmdline="kasan_multi_shot", allow=["slab-out-of-bounds"])
        def test_allowed_kind(kernel):
            p = kernel.kmalloc(20)
            kernel.read(p + 20, 1)
            kernel.write(p + 24, b"x")

        def test_factory_kernels_checked(kernel_factory):
            a = kernel_factory("slub_debug=FZPU kasan=off")
            b = kernel_factory("kasan=off", cpus=1)
            c = a.kmem_cache_create("x", 32)
            q = c.alloc(); c.free(q); c.free(q)       # Object already free, on kernel a
            assert b.nr_cpus == 1

        def test_missing_report(kernel, expect_report):
            with expect_report("double-free"):
                pass
    """)
    r = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=6, failed=4, errors=0)
    out = r.stdout.str()
    # count in the failure bodies: the short summary repeats the message in
    # full when CI is set (pytest does not truncate it there)
    bodies = out.split("short test summary info")[0]
    assert bodies.count("the kernel made reports the test did not expect") == 3
    assert "did not expect: kasan:slab-use-after-free" in out
    assert "did not expect: kasan:double-free" in out
    assert "did not expect: slub:Object already free" in out
    assert "BUG: KASAN: slab-use-after-free" in out
    assert "expected a double-free report" in out
    for name in ("test_unexpected_fails", "test_unexpected_after_an_expected_one_fails",
                 "test_factory_kernels_checked", "test_missing_report"):
        assert f"FAILED test_plugin_fixture_marker_and_expected_reports.py::{name}" in out
