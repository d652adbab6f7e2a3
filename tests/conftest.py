"""Shared pytest set-up for every test directory: the RNG is seeded per test."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _seeded_rng():
    """Each test starts from seed 0 and leaves the global RNG as it found it."""
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(0)
        yield
