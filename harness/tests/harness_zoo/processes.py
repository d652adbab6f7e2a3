"""Child Pythons for the harness's tests: the same interpreter and packages
as the test that starts them, with the zoo importable."""

from __future__ import annotations

import json
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


# The server run_scripts starts: it imports torch, then runs each script given
# on its command line as `python SCRIPT` would (as __main__, its folder first
# on sys.path, its exit status that of an uncaught exception or sys.exit), in
# a child forked for it, `jobs` at a time, each child's output in files; it
# prints one JSON list of the children's exit statuses.
_SCRIPT_SERVER = r"""
import json, os, runpy, sys, traceback
import torch

def child(script, out, err):
    for fd, name in ((1, out), (2, err)):
        os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    sys.argv = [script]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            code = exit.code or 0
        else:
            print(exit.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

jobs, scripts = int(sys.argv[1]), sys.argv[2:]
status, running = {}, {}
for i, script in enumerate(scripts):
    while len(running) >= jobs:
        pid, wait = os.wait()
        status[running.pop(pid)] = os.waitstatus_to_exitcode(wait)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        child(script, script + ".out", script + ".err")
    running[pid] = i
while running:
    pid, wait = os.wait()
    status[running.pop(pid)] = os.waitstatus_to_exitcode(wait)
print(json.dumps([status[i] for i in range(len(scripts))]))
"""


def run_scripts(
    scripts: list, jobs: int = 4, timeout: float = 900
) -> list[subprocess.CompletedProcess]:
    """Each script run as run_python([script]) would, with its exit status and
    output, but each in a child forked from one interpreter that has imported
    torch: torch's import, seconds of CPU, is paid once, not once a script."""
    scripts = [str(Path(s).resolve()) for s in scripts]
    server = run_python(["-c", _SCRIPT_SERVER, str(jobs), *scripts], timeout=timeout)
    if server.returncode != 0:
        output = server.stdout[-3000:] + server.stderr[-3000:]
        raise RuntimeError(f"run_scripts' server failed:\n{output}")
    codes = json.loads(server.stdout.splitlines()[-1])
    return [
        subprocess.CompletedProcess(
            [sys.executable, script],
            code,
            Path(script + ".out").read_text(errors="replace"),
            Path(script + ".err").read_text(errors="replace"),
        )
        for script, code in zip(scripts, codes)
    ]
