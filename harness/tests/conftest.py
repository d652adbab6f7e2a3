"""pytest set-up for the harness's own tests (this folder).

They need torch, pytest and the harness only: the installed
extension_cpp_testing (this tree's editable install, or its wheel next to
another torch) and the zoo beside them (harness_zoo/), so they run wherever
the harness is installed. The RNG is seeded per test, so one test can't
change another's inputs.
"""

from __future__ import annotations

import pytest
import torch

pytest_plugins = ["extension_cpp_testing.pytest_plugin"]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Tests marked slow (tens of seconds, most of it in child processes)
    run first, each group in the order it was given (pytest-randomly's,
    say): under xdist they start side by side on the first workers while
    the short ones fill the rest, rather than one starting last and running
    alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _seeded_rng():
    """Each test starts from seed 0 and leaves the global RNG as it found it."""
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(0)
        yield
