"""pytest plugin: fail the session unless the package under test is the installed wheel.

scripts/matrix.py runs tests/conformance with `-p installed_wheel_check` and
EXTENSION_CPP_EXPECT_INSTALLED_IN set to the venv's site-packages, so a test
run that picks up the source tree (an editable install, a stray sys.path entry)
stops at once instead of reporting on the wrong copy.
"""

import importlib
import os
from pathlib import Path

import pytest

# EXTENSION_CPP_BUILD -> package, as tests/conformance/cases.py.
PACKAGES = {"classic": "extension_cpp", "stable": "extension_cpp_stable"}


def pytest_sessionstart(session):
    name = PACKAGES[os.environ.get("EXTENSION_CPP_BUILD", "classic")]
    package = importlib.import_module(name)
    expected = Path(os.environ["EXTENSION_CPP_EXPECT_INSTALLED_IN"]).resolve()
    found = Path(package.__file__).resolve()
    if expected not in found.parents:
        raise pytest.UsageError(f"{name} was imported from {found}, not from {expected}")
    print(f"{name} under test: {found}")
