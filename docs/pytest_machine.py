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

from docs.render_results import commit, cpu_name


@pytest.fixture(scope="session", autouse=True)
def _record_machine(record_testsuite_property, pytestconfig) -> None:
    import torch

    args = shlex.join(pytestconfig.invocation_params.args)
    build = os.environ.get("EXTENSION_CPP_BUILD")
    record_testsuite_property("commit", commit())
    record_testsuite_property(
        "command", (f"EXTENSION_CPP_BUILD={build} " if build else "") + f"pytest {args}"
    )

    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    record_testsuite_property("python", platform.python_version())
    record_testsuite_property("torch", torch.__version__)
    record_testsuite_property("os", platform.platform())
    record_testsuite_property("cpu", f"{cpu_name()} ({os.cpu_count()} logical cores)")
    record_testsuite_property("gpu", ", ".join(gpus) if gpus else "none (CUDA tests skipped)")
    record_testsuite_property("ci", "yes" if os.environ.get("CI") else "no")
