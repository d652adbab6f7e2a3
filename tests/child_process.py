"""Child Python processes that test the same packages as the test that starts them.

Some tests start another Python: a pytest run under another environment
variable, a script with two ranks, a fresh interpreter to check an import. The
child must import the very copy of extension_cpp (or extension_cpp_stable)
that its parent is testing, whether that is an installed wheel, an editable
build or a ``pip install --target`` build. Two things get in the way:

- ``python -m`` and ``python -c`` put the working directory first on
  ``sys.path``; from the repository root that is the source tree, whose own
  build may be for another torch;
- a ``--target`` build is reached through the parent's ``sys.path``, which a
  child does not inherit.

``run_python`` starts every such child from a neutral working directory, puts
the directories the parent imported its packages from first on
``PYTHONPATH``, and names the expected files in ``EXTENSION_CPP_EXPECT_FILES``.
``check_packages`` compares them with what the child imports. Every child
runs it before anything else (``GUARD``: run_python starts ``python -c``, which
then runs the code, module or script asked for), so a child that would test
another copy stops at once and says which.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# The op packages a child must share with its parent (the classic and the
# stable-ABI build); only those the parent has imported are passed on.
PACKAGES = ("extension_cpp", "extension_cpp_stable")
ENV = "EXTENSION_CPP_EXPECT_FILES"
TESTS = Path(__file__).resolve().parent

# Every child runs this first, then what it was started for.
GUARD = "import child_process; child_process.check_packages()\n"
# `python -m MODULE ARGS...` and `python SCRIPT ARGS...`, after GUARD.
RUN_MODULE = (
    "import runpy, sys; sys.argv = sys.argv[1:]; "
    "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)"
)
RUN_SCRIPT = (
    "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _imported() -> dict[str, Path]:
    return {
        name: Path(sys.modules[name].__file__).resolve()
        for name in PACKAGES
        if name in sys.modules and getattr(sys.modules[name], "__file__", None)
    }


def child_env(**extra: str) -> dict[str, str]:
    """os.environ plus ``extra`` for a child that must test this process's
    packages: their directories come first on PYTHONPATH, then tests/, then
    ``extra``'s PYTHONPATH and this process's."""
    packages = _imported()
    roots = [str(path.parent.parent) for path in packages.values()]
    path = [*dict.fromkeys(roots), str(TESTS)]
    for more in (extra.pop("PYTHONPATH", None), os.environ.get("PYTHONPATH")):
        if more:
            path.append(more)
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(path)
    env[ENV] = os.pathsep.join(f"{name}={file}" for name, file in packages.items())
    return env


def _child(args: list[str], cwd, env: dict | None) -> tuple[list[str], dict]:
    if args[0] == "-c":
        code, rest = args[1], args[2:]
    elif args[0] == "-m":
        code, rest = RUN_MODULE, args[1:]
    elif args[0].endswith(".py"):
        code, rest = RUN_SCRIPT, args
    else:
        raise ValueError(f"run_python takes -c CODE, -m MODULE or SCRIPT.py, got {args[0]!r}")
    options = {
        "cwd": tempfile.gettempdir() if cwd is None else cwd,
        "env": child_env(**(env or {})),
    }
    return [sys.executable, "-c", GUARD + code, *rest], options


def run_python(args: list[str], *, cwd=None, env: dict | None = None, **kwargs):
    """subprocess.run([sys.executable, *args]) as a child of this test run.

    ``cwd`` defaults to the temporary directory, never the source tree; ``env``
    adds variables to child_env(). ``args`` are ``-c CODE``, ``-m MODULE`` or
    ``SCRIPT.py``, then their arguments, as for python itself; the package
    check runs before any of them. Output is captured as text unless other
    keyword arguments (passed on to subprocess.run) say otherwise.
    """
    command, options = _child(args, cwd, env)
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    return subprocess.run(command, **options, **kwargs)


def start_python(args: list[str], *, cwd=None, env: dict | None = None, **kwargs):
    """run_python's child as a subprocess.Popen, for a test that talks to it."""
    command, options = _child(args, cwd, env)
    return subprocess.Popen(command, **options, **kwargs)


def check_packages() -> None:
    """Raises ImportError if this process imports another copy of a package
    than the parent named in EXTENSION_CPP_EXPECT_FILES; nothing if unset."""
    for entry in filter(None, os.environ.get(ENV, "").split(os.pathsep)):
        name, expected = entry.split("=", 1)
        found = Path(importlib.import_module(name).__file__).resolve()
        if found != Path(expected):
            raise ImportError(
                f"this child process imported {name} from {found}, but its parent test run "
                f"tests {expected}: run it with tests/child_process.run_python, from a "
                "working directory outside the source tree"
            )
