"""pytest plugin for extension_cpp_testing.

Registers the markers the generated tests carry (``cuda``, ``huge``), keeps
each conformance failure's check, case and fix on its test item (they reach
the JUnit XML as the testcase's properties), and ends the run with one
finding per op and cause: a table of op x cause with the failed cases'
count and checks, then each fix once with a case or two and what they
showed; and a count of the cases that showed a PyTorch limitation the
OpSpecs declare (``silent_modes``).

Installed with the harness, it is a pytest11 entry point: pytest loads it
in every process, the pytest-xdist controller (which prints the summary)
included. Where plugins don't load themselves (PYTEST_DISABLE_PLUGIN_AUTOLOAD,
or the harness on PYTHONPATH), load it from your top-level conftest.py, not a
test module: under ``-n`` pytest loads a test module's plugins in the
workers only::

    pytest_plugins = ["extension_cpp_testing.pytest_plugin"]
"""

from __future__ import annotations

import os

import pytest

from . import findings
from .case import AcceptedLimitation, ConformanceFailure
from .reproducers import ENV

_KEY = "conformance_failure"


def pytest_addoption(parser):
    parser.getgroup("extension_cpp_testing").addoption(
        "--conformance-reproducers",
        metavar="DIR",
        help="write a plain-torch reproducer of each conformance finding into DIR",
    )


def pytest_configure(config):
    folder = config.getoption("conformance_reproducers", None)
    if folder:
        # The cases run in other processes (xdist's, the harness's worker):
        # they read the folder from the environment they inherit.
        os.environ[ENV] = os.path.abspath(folder)
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
        record = (_KEY, (kind, e.check, e.case, e.what, e.fix))
        report.user_properties.append(record)
        # junitxml writes the properties of the item's last report (teardown's),
        # which copies item.user_properties.
        item.user_properties.append(record)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One finding per op and cause (findings.py), as a table, then each fix
    once with a few of its cases; then how many cases showed a PyTorch
    limitation the OpSpecs declare."""
    failures = []
    accepted: dict[str, list] = {}
    for report in terminalreporter.stats.get("failed", []) + terminalreporter.stats.get(
        "xfailed", []
    ):
        for key, value in report.user_properties:
            if key != _KEY:
                continue
            kind, check, case, what, fix = value
            if kind == "accepted":
                accepted.setdefault(fix, []).append(case)
            elif report.failed:
                failures.append(ConformanceFailure(check, case, what, fix))
    if failures:
        terminalreporter.section("conformance findings by op and cause")
        for line in findings.report(findings.group(failures)):
            terminalreporter.write_line(line)
        folder = config.getoption("conformance_reproducers", None)
        if folder and os.path.isdir(folder):
            scripts = sorted(p for p in os.listdir(folder) if p.endswith(".py"))
            terminalreporter.write_line(
                f"reproducers: {len(scripts)} in {folder}, each run with plain python"
            )
    if accepted:
        terminalreporter.section("accepted: PyTorch's limitations the OpSpecs declare")
        for fix, cases in accepted.items():
            terminalreporter.write_line(f"{len(cases)} cases, e.g. {cases[0]}")
            terminalreporter.write_line(f"  {fix}")
