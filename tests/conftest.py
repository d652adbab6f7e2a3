"""Shared pytest set-up for every test directory.

- extension_cpp_testing's pytest plugin (the harness's markers and summary).
- The RNG is seeded per test, so one test can't change another's inputs.
- ``--test-order=reversed|shuffled`` (with ``--test-order-seed=N``) runs the
  collected tests in another order, to show that no test depends on what ran
  before it (issue #13: a warning raised by whichever test compiled first).
  The header and the last lines say the order and seed; pass the same seed
  to replay it.
- A test that starts another Python (pytest, a script) does it through
  tests/child_process.py, which makes the child test the same package.
- ``EXTENSION_CPP_BUILD=classic|stable`` picks the build tests/conformance
  runs against (tests/conformance/cases.py); the header names it, and its
  kernel set (fast or simple: ``EXTENSION_CPP_EXPECT_KERNELS`` makes a run
  stop if it is not the one expected).
- Hypothesis profiles: ``default`` (what ``make test`` runs) and ``fuzz``
  (``make fuzz``: many more examples). Both print the failing example and a
  blob to replay it with ``@reproduce_failure``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import random

import pytest
import torch
from hypothesis import HealthCheck, settings

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


def pytest_addoption(parser):
    group = parser.getgroup("extension_cpp")
    group.addoption(
        "--test-order",
        choices=("declared", "reversed", "shuffled"),
        default="declared",
        help="run the collected tests in this order (default: as declared)",
    )
    group.addoption(
        "--test-order-seed",
        type=int,
        default=None,
        help="seed for --test-order=shuffled (default: a random one, printed in the header)",
    )


def pytest_configure(config):
    if config.getoption("test_order") == "shuffled" and config.getoption("test_order_seed") is None:
        config.option.test_order_seed = random.SystemRandom().randrange(2**32)


def _order_line(config) -> str:
    order = config.getoption("test_order")
    if order == "shuffled":
        return f"test order: shuffled, --test-order-seed={config.getoption('test_order_seed')}"
    return f"test order: {order}"


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
    return [_order_line(config), f"build under test: {under_test}"]


def pytest_sessionstart(session):
    # make test's run of the simple kernels says so, and stops if it got others.
    expected = os.environ.get("EXTENSION_CPP_EXPECT_KERNELS")
    if expected and _kernels() != expected:
        raise pytest.UsageError(
            f"{_PACKAGE} under test has the {_kernels()} kernels, not the {expected} ones "
            "(EXTENSION_CPP_EXPECT_KERNELS): check PYTHONPATH"
        )


def pytest_terminal_summary(terminalreporter, config):
    # Again at the end, where a failure is read, and shown even with -q.
    if config.getoption("test_order") != "declared":
        terminalreporter.write_line(_order_line(config))


def pytest_collection_modifyitems(config, items):
    order = config.getoption("test_order")
    if order == "reversed":
        items.reverse()
    elif order == "shuffled":
        random.Random(config.getoption("test_order_seed")).shuffle(items)


@pytest.fixture(autouse=True)
def _seeded_rng():
    """Each test starts from seed 0 and leaves the global RNG as it found it."""
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(0)
        yield
