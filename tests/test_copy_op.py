"""docs/copy_your_own_op.md, proven: copy the package with `python -m tools.copy_op`,
rename, add an op, build, test.

The copy is renamed as the page shows (package and namespace myproject,
mymuladd -> fused_scale), gets the page's one-input op mysquare
(tests/add_an_op.py: six product files), is built for the CPU only
(MYPROJECT_CUDA=0) with the page's build command, and must pass its own
conformance suite against torch.ops.myproject, and the harness on mysquare.
`make test-copy` (EXTENSION_CPP_COPY_SUITE=full) runs the copy's whole
suite; without it, its opcheck, gradcheck and compile tests. The build goes
to --target build/pip, so nothing is installed into this environment.
"""

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import add_an_op  # tests/, on sys.path under pytest's rootdir conftest
import pytest

from tools import copy_op  # the repository root: `python -m pytest` runs from there

REPO = Path(__file__).resolve().parents[1]

SUITE = [
    "tests/conformance/test_harness.py",
    "tests/conformance/test_autograd.py",
    "tests/conformance/test_compile.py",
]
# Of the harness's checks (extension_cpp_testing, re-exported as myproject.testing):
# opcheck, gradcheck and gradgradcheck, torch.compile, as before the harness.
SELECT = "not test_harness or opcheck or gradcheck or compile"
FULL = os.environ.get("EXTENSION_CPP_COPY_SUITE") == "full"
# The product files a one-input op touches (docs/copy_your_own_op.md).
ADDED_OP_FILES = {
    "csrc/ops.cpp",
    "csrc/elementwise.h",
    "csrc/cpu/ops_cpu.cpp",
    "csrc/autograd.cpp",
    "myproject/_library.py",
    "myproject/ops.py",
}


def test_names_match_whole_words_only():
    rename = copy_op.renamer("myproject", {"mymul": "scale", "mymuladd": "fused_scale"})
    text = (
        'TORCH_LIBRARY(extension_cpp, m) m.def("mymuladd(Tensor a) -> Tensor"); mymul_cpu; '
        "test_mymul[cpu]; EXTENSION_CPP_CUDA; -DEXTENSION_CPP_FAST=1; "
        "mymuladd2; extension_cppx; mymuls; "
        "extension_cpp_testing; extension_cpp_testingx; extension_cpp.testing"
    )
    assert rename(text) == (
        'TORCH_LIBRARY(myproject, m) m.def("fused_scale(Tensor a) -> Tensor"); scale_cpu; '
        "test_scale[cpu]; MYPROJECT_CUDA; -DMYPROJECT_FAST=1; "
        "fused_scale2; extension_cppx; mymuls; "
        "extension_cpp_testing; myproject_testingx; myproject.testing"
    )


@pytest.fixture(scope="module")
def renamed_copy(tmp_path_factory):
    dest = tmp_path_factory.mktemp("copy") / "myproject"
    proc = subprocess.run(
        [sys.executable, "-m", "tools.copy_op", str(dest), "--name", "myproject"]
        + ["--op", "mymuladd=fused_scale"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert add_an_op.add(dest, "myproject") == ADDED_OP_FILES
    return dest


def test_copy_has_the_listed_files_and_no_old_name(renamed_copy):
    for name in ("setup.py", "pyproject.toml", "csrc/ops.cpp", "myproject/ops.py"):
        assert (renamed_copy / name).is_file(), name
    assert (renamed_copy / "tests/conformance/test_harness.py").is_file()
    assert (renamed_copy / "myproject/testing/__init__.py").is_file()
    assert (renamed_copy / "noxfile.py").is_file(), "the matrix comes as the noxfile"
    for tutorial_tests in ("test_tutorial*", "test_triton*"):
        assert not list(renamed_copy.rglob(tutorial_tests)), "the tutorial's tests are not copied"
    for path in renamed_copy.rglob("*"):
        parts = path.relative_to(renamed_copy).parts
        # Build outputs: the module's other tests build the copy, in any order.
        if {"build", "__pycache__"} & set(parts) or path.suffix in (".so", ".o", ".pyc"):
            continue
        if path.is_file() and parts[0] != "harness":
            # The harness is a distribution of its own, which the copy requires.
            text = path.read_text().replace(copy_op.HARNESS, "")
            assert "extension_cpp" not in text, path
            assert "mymuladd" not in text, path


@pytest.fixture(scope="module")
def built_copy(renamed_copy):
    """The copy built with the page's command; returns the environment that imports it."""
    # This venv's tools first on PATH, as make build has them: the copy's
    # wheel test then builds with the same ninja and reuses these objects.
    # Another ninja release keeps another log, and would compile them again.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    env = {**os.environ, "MYPROJECT_CUDA": "0", "PYTHONPATH": str(renamed_copy), "PATH": path}
    env.setdefault("MAX_JOBS", "2")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
        + ["--use-pep517", "--upgrade", "--target", "build/pip", "-e", "."],
        cwd=renamed_copy,
        env=env,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return env


@pytest.mark.slow
def test_renamed_copy_builds_and_passes_its_conformance_suite(renamed_copy, built_copy):
    env = built_copy
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.distribution("myproject")  # nothing installed here

    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch, myproject; print(torch.ops.myproject.fused_scale, myproject._C.KERNELS)",
        ],
        cwd=renamed_copy,
        env=env,
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, probe.stderr
    assert "myproject.fused_scale" in probe.stdout
    assert probe.stdout.split()[-1] == "fast", (
        "the copy must build the fast kernels, as this one does"
    )

    # The whole suite on make test's workers (pytest-xdist), a file to each.
    workers = ["-n", os.environ.get("TEST_WORKERS", "2"), "--dist", "loadfile"]
    select = ["tests/conformance", *workers] if FULL else ["-k", SELECT, *SUITE]
    suite = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *select],
        cwd=renamed_copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600 if FULL else 900,
    )
    assert suite.returncode == 0, suite.stdout[-5000:]
    for test in (
        "test_fused_scale[fused_scale-opcheck-",
        "test_fused_scale[fused_scale-gradcheck-",
        "test_fused_scale[fused_scale-compile-",
        "test_compile_fullgraph_matches_eager[",
    ):
        assert re.search(rf"^PASSED \S+::{re.escape(test)}[^\]]*\]", suite.stdout, re.M), test
    passed = int(re.search(r"(\d+) passed", suite.stdout).group(1))
    assert passed >= 100, suite.stdout[-2000:]


ADDED_OP_CHECK = """
import torch, myproject
from extension_cpp_testing import cases, MODES, OpSpec, run_all

a = torch.tensor([1.5, -2.0, 3.0])
assert torch.equal(myproject.mysquare(a), a * a)
# The harness's defaults, then every autodiff mode claimed, on the public
# function and on the raw op.
specs = [
    OpSpec(myproject.mysquare, reference=lambda a: a * a, arity=1),
    OpSpec(myproject.mysquare, reference=lambda a: a * a, arity=1, autodiff=tuple(MODES),
           checks=("autodiff",)),
    OpSpec(torch.ops.myproject.mysquare.default, reference=lambda a: a * a, arity=1,
           autodiff=tuple(MODES), checks=("autodiff",)),
]
for spec in specs:
    failures = run_all(spec)
    assert not failures, {check: [str(f) for f in fs] for check, fs in failures.items()}
print("cases", len([c for c in cases(specs[0]) if not c.skip_reason]))
"""


@pytest.mark.slow
def test_added_op_passes_the_harness(renamed_copy, built_copy):
    """mysquare, added to six product files, passes every check of the
    harness that runs here (results, strides, fake, opcheck, gradcheck,
    compile, export, errors) on every layout and dtype, and every autodiff
    mode."""
    run = subprocess.run(
        [sys.executable, "-c", ADDED_OP_CHECK],
        cwd=renamed_copy,
        env=built_copy,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    assert int(run.stdout.split()[-1]) >= 100, run.stdout
