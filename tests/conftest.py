"""Test configuration: the hypothesis profiles of odebug.testing (dev/ci/fuzz)."""
from odebug.testing import register_profiles

PROFILE = register_profiles()


def pytest_report_header(config):
    import odebug
    return [f"odebug hypothesis profile: {PROFILE}; build: {odebug.build_info()}"]
