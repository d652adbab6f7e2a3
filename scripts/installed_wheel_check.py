"""pytest plugin: fail the session unless extension_cpp is the installed wheel.

scripts/matrix.py runs tests/conformance with `-p installed_wheel_check` and
EXTENSION_CPP_EXPECT_INSTALLED_IN set to the venv's site-packages, so a test
run that picks up the source tree (an editable install, a stray sys.path entry)
stops at once instead of reporting on the wrong copy.
"""

import os
from pathlib import Path

import pytest


def pytest_sessionstart(session):
    import extension_cpp

    expected = Path(os.environ["EXTENSION_CPP_EXPECT_INSTALLED_IN"]).resolve()
    found = Path(extension_cpp.__file__).resolve()
    if expected not in found.parents:
        raise pytest.UsageError(f"extension_cpp was imported from {found}, not from {expected}")
    print(f"extension_cpp under test: {found}")
