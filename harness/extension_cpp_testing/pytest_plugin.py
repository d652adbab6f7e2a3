"""pytest plugin for extension_cpp_testing.

Registers the markers the generated tests carry (``cuda``, ``huge``), keeps
each conformance failure's check, case and fix on its report (they reach the
JUnit XML as properties), and ends the run with the failures grouped by
cause (a check and its fix), a few cases each with what it showed, and a
count of the cases that showed a PyTorch limitation the OpSpecs declare
(``silent_modes``). Load it from your top-level conftest.py::

    pytest_plugins = ["extension_cpp_testing.pytest_plugin"]
"""

from __future__ import annotations

import pytest

from .case import AcceptedLimitation, ConformanceFailure

_KEY = "conformance_failure"


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU (skipped without one)")
    config.addinivalue_line(
        "markers", "huge: tensors past 2^31 elements (run when EXTENSION_CPP_HUGE=1)"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and isinstance(call.excinfo.value, ConformanceFailure):
        e = call.excinfo.value
        kind = "accepted" if isinstance(e, AcceptedLimitation) else "failure"
        report.user_properties.append((_KEY, (kind, e.check, e.case, e.what, e.fix)))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The failures grouped by cause (a check and its fix: each fix names
    one cause), a few cases and what each showed; then how many cases showed
    a PyTorch limitation the OpSpecs declare."""
    causes: dict[tuple[str, str], list] = {}
    accepted: dict[str, list] = {}
    for status in ("failed", "xfailed"):
        for report in terminalreporter.stats.get(status, []):
            for key, value in report.user_properties:
                if key != _KEY:
                    continue
                kind, check, case, what, fix = value
                if kind == "accepted":
                    accepted.setdefault(fix, []).append(case)
                elif status == "failed":
                    causes.setdefault((check, fix), []).append((case, what))
    if causes:
        terminalreporter.section("conformance failures by cause")
        for (check, fix), found in sorted(causes.items(), key=lambda kv: -len(kv[1])):
            terminalreporter.write_line(f"{check}: {len(found)} failed; fix: {fix}")
            for case, what in found[:3]:
                terminalreporter.write_line(f"  {case}: {what.splitlines()[0][:160]}")
            if len(found) > 3:
                terminalreporter.write_line(f"  ... and {len(found) - 3} more")
    if accepted:
        terminalreporter.section("accepted: PyTorch's limitations the OpSpecs declare")
        for fix, cases in accepted.items():
            terminalreporter.write_line(f"{len(cases)} cases, e.g. {cases[0]}")
            terminalreporter.write_line(f"  {fix}")
