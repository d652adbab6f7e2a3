"""Shared pytest set-up for every test directory.

- extension_cpp_testing's pytest plugin (the harness's markers and summary).
- The RNG is seeded per test, so one test can't change another's inputs.
- pytest-randomly shuffles the tests (the header prints ``--randomly-seed=N``,
  which replays an order; ``-p no:randomly`` keeps the declared one), to
  show that no test depends on what ran before it. Under pytest-xdist every
  worker collects the same shuffled order from the controller's seed.
- The run's facts (commit, command, torch, CPU, GPU, seed) are pytest-metadata
  entries, written into the JUnit XML as testsuite properties, which
  tools/docs/render_results.py shows.
- A test that starts another Python (pytest, a script) does it through
  tests/child_process.py, which makes the child test the same package.
- ``EXTENSION_CPP_BUILD=classic|stable`` picks the build tests/conformance
  runs against (tests/conformance/cases.py); the header names it, and its
  kernel set (fast or simple: ``EXTENSION_CPP_EXPECT_KERNELS`` makes a run
  stop if it is not the one expected). ``EXTENSION_CPP_EXPECT_INSTALLED_IN``
  makes it stop unless the package comes from that site-packages (the
  installed wheel, not the source tree).
- Hypothesis profiles: ``default`` (what ``make test`` runs) and ``fuzz``
  (``make fuzz``: many more examples). Both print the failing example and a
  blob to replay it with ``@reproduce_failure``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import shlex
import subprocess
from pathlib import Path

import pytest
import torch
from _pytest.junitxml import xml_key
from hypothesis import HealthCheck, settings
from pytest_metadata.plugin import metadata_key

# derandomize: the examples come from a seed derived from each test's name, so
# `make test` draws the same inputs on every run and machine. No database:
# what a run finds is printed, not kept in a folder a later run would read.
_COMMON = dict(
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("default", derandomize=True, **_COMMON)
# fuzz: random examples; `make fuzz` passes --hypothesis-seed and prints it.
settings.register_profile("fuzz", derandomize=False, max_examples=1000, **_COMMON)
settings.load_profile("default")

# The harness's markers and its summary of failures by check. The harness is
# a distribution of its own (harness/), so this works in a venv with either
# package, or with the harness alone (make matrix's harness track).
pytest_plugins = ["extension_cpp_testing.pytest_plugin"]
# The package under test (tests/conformance/cases.py, EXTENSION_CPP_BUILD).
_PACKAGE = (
    "extension_cpp_stable" if os.environ.get("EXTENSION_CPP_BUILD") == "stable" else "extension_cpp"
)


def _kernels() -> str | None:
    """The kernel set the package under test was built with (fast or simple);
    None where it is not installed (the harness's own tests run without it)."""
    if importlib.util.find_spec(_PACKAGE) is None:
        return None
    return importlib.import_module(f"{_PACKAGE}._C").KERNELS


def pytest_report_header(config):
    build = os.environ.get("EXTENSION_CPP_BUILD", "classic")
    kernels = _kernels()
    under_test = f"{build} (EXTENSION_CPP_BUILD), {kernels} kernels" if kernels else "none"
    return [f"build under test: {under_test}"]


def pytest_sessionstart(session):
    # make test's run of the simple kernels says so, and stops if it got others.
    expected = os.environ.get("EXTENSION_CPP_EXPECT_KERNELS")
    if expected and _kernels() != expected:
        raise pytest.UsageError(
            f"{_PACKAGE} under test has the {_kernels()} kernels, not the {expected} ones "
            "(EXTENSION_CPP_EXPECT_KERNELS): check PYTHONPATH"
        )
    # make matrix and make sanitize test an installed copy, never the tree.
    site = os.environ.get("EXTENSION_CPP_EXPECT_INSTALLED_IN")
    if site:
        found = Path(importlib.import_module(_PACKAGE).__file__).resolve()
        if Path(site).resolve() not in found.parents:
            raise pytest.UsageError(f"{_PACKAGE} was imported from {found}, not from {site}")
    # The controller writes the JUnit XML, also under pytest-xdist, whose
    # workers record no testsuite property (pytest-dev/pytest#7767).
    metadata = session.config.stash.get(metadata_key, {})
    if session.config.pluginmanager.hasplugin("randomly"):  # resolved by now
        metadata["seed"] = session.config.getoption("randomly_seed")
    xml = session.config.stash.get(xml_key, None)
    if xml is not None:
        for name, value in metadata.items():
            xml.add_global_property(name, str(value))


def _commit() -> str:
    """This checkout's commit, or EXTENSION_CPP_COMMIT for a copy of the tree."""
    git = ["git", "describe", "--always", "--dirty=+local-changes", "--abbrev=10"]
    here = Path(__file__).parent
    found = subprocess.run(git, cwd=here, capture_output=True, text=True).stdout.strip()
    return os.environ.get("EXTENSION_CPP_COMMIT") or found or "unknown"


@pytest.hookimpl(optionalhook=True)
def pytest_metadata(metadata, config):
    """The run's facts, for the header (-v) and the JUnit XML (tools/docs/render_results.py)."""
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    build = os.environ.get("EXTENSION_CPP_BUILD")
    metadata.update(
        commit=_commit(),
        command=(f"EXTENSION_CPP_BUILD={build} " if build else "")
        + "pytest "
        + shlex.join(config.invocation_params.args),
        python=platform.python_version(),
        torch=str(torch.__version__),  # a plain str: pytest-xdist sends it to the controller
        cpu=f"{_cpu_name()} ({os.cpu_count()} logical cores)",
        gpu=", ".join(gpus) if gpus else "none (CUDA tests skipped)",
        ci="yes" if os.environ.get("CI") else "no",
    )


def _cpu_name() -> str:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    return names[0] if names else platform.machine()


@pytest.fixture(autouse=True)
def _seeded_rng():
    """Each test starts from seed 0 and leaves the global RNG as it found it."""
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(0)
        yield
