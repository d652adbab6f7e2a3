"""pytest plugin for extension_cpp_testing.

Registers the markers the generated tests carry (``cuda``, ``huge``), keeps
each conformance failure's check, case and fix on its report (they reach the
JUnit XML as properties), and ends the run with the failures grouped by
check, each check's fix said once. Load it from your top-level conftest.py::

    pytest_plugins = ["extension_cpp_testing.pytest_plugin"]
"""

from __future__ import annotations

import pytest

from .case import ConformanceFailure

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
        report.user_properties.append((_KEY, (e.check, e.case, e.fix)))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    by_check: dict[str, list] = {}
    for report in terminalreporter.stats.get("failed", []):
        for key, value in report.user_properties:
            if key == _KEY:
                check, case, fix = value
                by_check.setdefault(check, [fix]).append(case)
    if not by_check:
        return
    terminalreporter.section("conformance failures by check")
    for check, (fix, *cases) in by_check.items():
        terminalreporter.write_line(f"{check}: {len(cases)} failed, e.g. {cases[0]}")
        terminalreporter.write_line(f"  fix: {fix}")
