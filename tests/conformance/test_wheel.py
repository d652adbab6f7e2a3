"""The wheel users install: built once, audited, and tested as installed.

`make test` runs this (marked slow). It builds one cp39-abi3 wheel against the
torch in .venv (CUDA kernels for sm_90 only, as the rest of `make test`),
audits it, installs that same file into fresh venvs of two CPythons and runs
tests/conformance from each install, through scripts/matrix.py: the code
`make matrix` and CI run. The whole Python x torch matrix is `make matrix`.
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
# 3.11: torch and its CUDA libraries install from local disk here. The second
# CPython downloads its torch wheel (about 1 GB) once into the cache.
PYTHONS = os.environ.get("EXTENSION_CPP_WHEEL_PYTHONS", "3.11 3.12").split()
# Another torch release, to show a wheel built for ours is refused there.
OTHER_TORCH = "2.8.0"

# The stable wheel has its own audit and install test: make matrix's stable track.
pytestmark = [
    pytest.mark.slow,
    classic_only("builds the classic wheel; make matrix's stable track tests the stable one"),
]


def matrix(*args):
    subprocess.run([sys.executable, str(MATRIX), *map(str, args)], check=True)


@pytest.fixture(scope="session")  # one build, however the tests are ordered
def wheel(tmp_path_factory):
    """Builds and audits the wheel once; returns (path, summary)."""
    out = tmp_path_factory.mktemp("dist")
    matrix("build", "--out", out, "--archs", os.environ.get("TEST_CUDA_ARCHS", "9.0"))
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


@pytest.mark.parametrize("python", PYTHONS, ids=lambda v: f"py{v}")
def test_installed_wheel_passes_conformance(wheel, python, tmp_path):
    path, summary = wheel
    result = tmp_path / "result.json"
    matrix(
        "test-one-python",
        "--python", python,
        "--torch", TORCH,
        "--wheel", path,
        "--sha256", summary["sha256"],
        "--work", tmp_path,
        "--json", result,
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
