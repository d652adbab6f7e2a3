"""The wheel users install: built once, audited, and tested as installed.

`make test` runs this (marked slow), through scripts/matrix.py, the code
`make matrix` runs. It builds one cp39-abi3 wheel against the torch in .venv
(CUDA kernels for sm_90 only, as the rest of `make test`) in the tree, where
the build reuses `make build`'s objects, audits it, installs that same file
into a fresh venv of this CPython (which sees this environment's torch rather
than installing its own) and runs the part of tests/conformance that tests
the kernels' results, layouts and errors from that install. The whole suite
on every CPython, each with its own torch, is `make matrix`.
"""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from .cases import classic_only

REPO = Path(__file__).resolve().parents[2]
MATRIX = REPO / "scripts" / "matrix.py"
CACHE = Path(os.environ.get("EXTENSION_CPP_CACHE", Path.home() / ".cache" / "extension_cpp"))
TORCH = torch.__version__.split("+")[0]
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
# What the installed wheel runs: every op, dtype and layout's results and
# strides, the bad-input errors, and the correctness tests.
SELECT = "results or strides or bad_input or test_errors or test_correctness"
# Another torch release, to show a wheel built for ours is refused there.
OTHER_TORCH = "2.8.0"

# The stable wheel has its own audit and install test: make matrix's stable track.
pytestmark = [
    pytest.mark.slow,
    classic_only("builds the classic wheel; make matrix's stable track tests the stable one"),
]


def matrix(*args, **env):
    env = {**os.environ, **env}
    subprocess.run([sys.executable, str(MATRIX), *map(str, args)], check=True, env=env)


@pytest.fixture(scope="session")  # one build, however the tests are ordered
def wheel(tmp_path_factory):
    """Builds and audits the wheel once; returns (path, summary)."""
    out = tmp_path_factory.mktemp("dist")
    archs = os.environ.get("TEST_CUDA_ARCHS", "9.0")
    matrix("build", "--out", out, "--archs", archs, "--in-tree")
    summary = json.loads((out / "wheel.json").read_text())
    return out / summary["wheel"], summary


def test_one_audited_abi3_wheel(wheel):
    path, summary = wheel
    assert [p.name for p in path.parent.glob("*.whl")] == [path.name]
    assert path.name.startswith("extension_cpp-")
    assert "-cp39-abi3-manylinux" in path.name
    assert summary["built_against_torch"] == torch.__version__
    assert f"torch=={TORCH}" in summary["requires"]
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    assert "extension_cpp/_C.abi3.so" in names
    assert not [n for n in names if "libtorch" in n or "libc10" in n or "libcudart" in n]


def test_installed_wheel_passes_conformance(wheel, tmp_path):
    path, summary = wheel
    result = tmp_path / "result.json"
    matrix(
        "test-one-python",
        "--python", sys.executable,
        "--torch", TORCH,
        "--wheel", path,
        "--sha256", summary["sha256"],
        "--work", tmp_path,
        "--json", result,
        "--shared-torch",
        "--select", SELECT,
        # As a copy's own suite runs it (tests/test_copy_op.py): the source
        # tree, with its editable build's .egg-info, on PYTHONPATH must not
        # pass for the installed wheel.
        PYTHONPATH=str(REPO),
    )  # fmt: skip
    got = json.loads(result.read_text())
    assert got["sha256"] == summary["sha256"]
    assert got["passed"] > 0
    assert got["failed"] == 0
    assert got["errors"] == 0


def other_torch_venv():
    """A kept venv with torch OTHER_TORCH, made from `make matrix`'s downloads."""
    venv = CACHE / "venvs" / f"mismatch-torch-{OTHER_TORCH}"
    python = venv / "bin" / "python"
    if (venv / ".ready").exists():
        return python
    house = CACHE / "wheelhouse" / f"torch-{OTHER_TORCH}"
    if not list(house.glob(f"torch-{OTHER_TORCH}-cp311-*.whl")):
        pytest.skip(f"no torch {OTHER_TORCH} wheel in {house}: `make matrix` downloads it")
    base = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base), "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(house),
         f"torch=={OTHER_TORCH}"],
        check=True,
    )  # fmt: skip
    (venv / ".ready").touch()
    return python


def test_wheel_refuses_another_torch_release(wheel):
    path, _ = wheel
    python = other_torch_venv()
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(path)],
        check=True,
    )
    probe = subprocess.run(
        [str(python), "-c", "import extension_cpp"], capture_output=True, text=True, cwd="/"
    )
    assert probe.returncode != 0
    message = probe.stderr.strip().splitlines()[-1]
    assert message.startswith("ImportError: extension_cpp was built against torch")
    assert torch.__version__ in message
    assert OTHER_TORCH in message
