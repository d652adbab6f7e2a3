"""pytest plugin: records the run and its machine in the junit XML.

`make test` loads it (`-p docs.pytest_machine`) next to --junitxml, so the
conformance page can say which commit, command, Python, torch and GPU the
results come from (docs/render_results.py prints these testsuite properties).
A run on a machine without a GPU skips the CUDA tests; the page must make that
visible.
"""

import os
import platform
import shlex

import pytest
from _pytest.junitxml import xml_key

from docs.render_results import commit, cpu_name


def _properties(config: pytest.Config) -> dict:
    import torch

    args = shlex.join(config.invocation_params.args)
    build = os.environ.get("EXTENSION_CPP_BUILD")
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {
        "commit": commit(),
        "command": (f"EXTENSION_CPP_BUILD={build} " if build else "") + f"pytest {args}",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "os": platform.platform(),
        "cpu": f"{cpu_name()} ({os.cpu_count()} logical cores)",
        "gpu": ", ".join(gpus) if gpus else "none (CUDA tests skipped)",
        "ci": "yes" if os.environ.get("CI") else "no",
    }


@pytest.fixture(scope="session", autouse=True)
def _record_machine(record_testsuite_property, pytestconfig) -> None:
    for name, value in _properties(pytestconfig).items():
        record_testsuite_property(name, value)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under pytest-xdist (-n) the fixture above runs in the workers, which
    write no XML (pytest-dev/pytest#7767): the controller, which writes it,
    records the run here."""
    xml = session.config.stash.get(xml_key, None)
    if xml is not None and session.config.pluginmanager.hasplugin("dsession"):
        for name, value in _properties(session.config).items():
            xml.add_global_property(name, value)
