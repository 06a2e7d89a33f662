"""Test configuration: the hypothesis profiles of odebug.testing (dev/ci/fuzz)."""
from odebug.testing import register_profiles

PROFILE = register_profiles()


def pytest_report_header(config):
    import odebug
    return [f"odebug hypothesis profile: {PROFILE}; build: {odebug.build_info()}"]


# ---- every report kind the suite sees is a documented odebug.ReportKind ------------------
# (issue 19: report kinds are a stable enumeration; a new kind in the C core
# must be added to odebug/report.py, and so to the documentation)
_UNKNOWN_KINDS: dict = {}


def _install_kind_check():
    import odebug
    from odebug import _core
    from odebug.report import Report

    def factory(d):
        r = Report._from_dict(d)
        # user-published reports (k.report(), k.warn(): any subsystem, titles such
        # as "WARNING: ..." or "BUG: KASAN: ...") are the user's words, not odebug's
        user = r.subsystem in ("user", "kernel") or ":" in str(r.kind)
        if not user and not isinstance(r.kind, odebug.ReportKind):
            _UNKNOWN_KINDS.setdefault((r.subsystem, r.kind), r.text[:300])
        return r

    _core._set_report_factory(factory)


_install_kind_check()


def pytest_sessionfinish(session, exitstatus):
    if _UNKNOWN_KINDS:
        lines = [f"  [{s}] {k!r}: {t.splitlines()[0] if t else ''}"
                 for (s, k), t in sorted(_UNKNOWN_KINDS.items())]
        print("\nreport kinds missing from odebug.ReportKind (odebug/report.py):\n"
              + "\n".join(lines))
        session.exitstatus = 1
