"""Child processes of the suite test the same package as the suite.

tests/child_process.py starts every child Python the suite needs; these tests
hold it to that: a child imports the parent's copy of the package from any
working directory, and a child that would import another copy (here a decoy
package in its working directory, as the source tree is for a wheel under
test) fails at once, with -c code, a script and a pytest run alike. The last
test keeps every other test on run_python.
"""

import re
from pathlib import Path

import pytest
from child_process import run_python

from .cases import PACKAGE, pkg

TESTS = Path(__file__).resolve().parents[1]

# Tests that start Python for another package on purpose, and why.
OTHER_PACKAGES = {
    "test_copy_op.py": "builds and tests a renamed copy of the package (myproject)",
    "tutorial/test_tutorial_readmes.py": "builds and imports the tutorial's checkpoints",
    "tutorial/test_tutorial_appendix.py": "builds the tutorial's side paths",
    "conformance/test_wheel.py": "builds wheels and tests them in venvs of their own",
}


@pytest.fixture
def decoy(tmp_path) -> Path:
    """A working directory holding another, importable copy of the package."""
    (tmp_path / PACKAGE).mkdir()
    (tmp_path / PACKAGE / "__init__.py").write_text("")
    return tmp_path


def test_child_imports_the_parents_package():
    run = run_python(["-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"])
    assert run.returncode == 0, run.stderr
    assert Path(run.stdout.strip()) == Path(pkg.__file__).resolve()


@pytest.mark.parametrize("kind", ["code", "script", "pytest"])
def test_child_importing_another_copy_fails(decoy, kind):
    if kind == "code":
        args = ["-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"]
    elif kind == "script":
        script = decoy / "probe.py"
        script.write_text(f"import {PACKAGE}\nprint({PACKAGE}.__file__)\n")
        args = [str(script)]
    else:
        args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--co", __file__]
    run = run_python(args, cwd=decoy)
    assert run.returncode != 0, run.stdout
    assert (
        f"this child process imported {PACKAGE} from {decoy / PACKAGE}" in run.stdout + run.stderr
    )


def test_every_child_python_goes_through_run_python():
    """A test that starts sys.executable itself would skip the check above."""
    starts_python = re.compile(r"sys\.executable|subprocess\.\w+\(\s*\[\s*['\"]python")
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        name = path.relative_to(TESTS).as_posix()
        if (
            name in ("child_process.py", "conformance/test_child_process.py")
            or name in OTHER_PACKAGES
        ):
            continue
        if starts_python.search(path.read_text()):
            offenders.append(name)
    assert not offenders, (
        f"{offenders} start Python without tests/child_process.run_python (or start_python); "
        "use it, or list the file in OTHER_PACKAGES with the reason"
    )
