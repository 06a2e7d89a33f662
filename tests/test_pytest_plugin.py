"""The odebug pytest plugin, run in a pytester sandbox."""
pytest_plugins = ["pytester"]


def test_plugin_fixture_marker_and_expected_reports(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.odebug(cmdline="kasan=off no_debug_objects", cpus=3, ram="64M")
        def test_marker(kernel):
            assert kernel.nr_cpus == 3 and kernel.totalram_pages == 16384

        def test_expected(kernel, expect_report):
            p = kernel.kmalloc(20)
            kernel.kfree(p)
            with expect_report("slab-use-after-free"):
                kernel.read(p, 1)

        def test_unexpected_fails(kernel):
            p = kernel.kmalloc(20)
            kernel.kfree(p)
            kernel.read(p, 1)

        def test_accept(kernel, kernel_reports_ok):
            p = kernel.kmalloc(20)
            kernel.kfree(p)
            kernel.kfree(p)
            kernel_reports_ok()

        def test_missing_report(kernel, expect_report):
            with expect_report("double-free"):
                pass
    """)
    r = pytester.runpytest_subprocess("-q")     # the plugin loads through its entry point
    # the unexpected report fails test_unexpected_fails at teardown: an error
    r.assert_outcomes(passed=4, failed=1, errors=1)
    out = r.stdout.str()
    assert "the kernel made reports the test did not expect: kasan:slab-use-after-free" in out
    assert "expected a double-free report" in out
