"""Child Pythons for the harness's tests: the same interpreter and packages
as the test that starts them, with the zoo importable."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

# harness/tests: the folder that holds harness_zoo.
TESTS = Path(__file__).resolve().parents[1]


def run_python(
    args: list, cwd=None, timeout: float = 600, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``python args...`` with harness/tests first on PYTHONPATH, from cwd (by
    default an empty folder, so that nothing there shadows a package), with
    env's variables added to this process's."""
    path = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, **(env or {}), PYTHONPATH=path)
    with tempfile.TemporaryDirectory(prefix="harness-child-") as empty:
        return subprocess.run(
            [sys.executable, *map(str, args)],
            cwd=cwd or empty,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
