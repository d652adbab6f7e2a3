"""pytest plugin: records the machine a test run happened on in its junit XML.

`make test` loads it (`-p docs.pytest_machine`) next to --junitxml, so the
conformance page can say which Python, torch and GPU the results come from
(docs/render_results.py prints these testsuite properties). A run on a machine
without a GPU skips the CUDA tests; the page must make that visible.
"""

import os
import platform

import pytest


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@pytest.fixture(scope="session", autouse=True)
def _record_machine(record_testsuite_property) -> None:
    import torch

    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    record_testsuite_property("python", platform.python_version())
    record_testsuite_property("torch", torch.__version__)
    record_testsuite_property("os", platform.platform())
    record_testsuite_property("cpu", f"{_cpu()} ({os.cpu_count()} logical cores)")
    record_testsuite_property("gpu", ", ".join(gpus) if gpus else "none (CUDA tests skipped)")
    record_testsuite_property("ci", "yes" if os.environ.get("CI") else "no")
