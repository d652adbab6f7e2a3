"""The wheel users install: built once, audited, and tested as installed.

`make test` runs this (marked slow): noxfile.py's `wheel` session, the steps
of `make wheel` (python -m build, auditwheel repair, abi3audit, the contents
audit), in the tree, where the build reuses `make build`'s objects (CUDA
kernels for sm_90 only, as the rest of `make test`). That file, installed
into a fresh venv of this CPython that sees this environment's torch rather
than installing its own, runs the part of tests/conformance that tests the
kernels' results, layouts and errors. The whole suite on every CPython, each
with its own torch: `make matrix`.
"""

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import torch

from .cases import classic_only

REPO = Path(__file__).resolve().parents[2]
TORCH = torch.__version__.split("+")[0]
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


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], check=True, **kw)


@pytest.fixture(scope="session")  # one build, however the tests are ordered
def wheel(tmp_path_factory):
    """Builds and audits the wheels once; returns (path, its build record, the harness's)."""
    tools = ("nox", "uv", "build", "auditwheel", "abi3audit")
    missing = [m for m in tools if importlib.util.find_spec(m) is None]
    if missing and not os.environ.get("CI"):  # CI installs them: there a gap must fail
        pytest.skip(f"needs {', '.join(missing)} (requirements/dev.txt, which make test installs)")
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": os.environ.get("TEST_CUDA_ARCHS", "9.0")}
    nox = [sys.executable, "-m", "nox", "-f", REPO / "noxfile.py", "-s", "wheel"]
    run(*nox, "--", out, "--in-tree", env=env)
    (path,) = out.glob("extension_cpp-*.whl")
    (harness,) = out.glob("extension_cpp_testing-*.whl")
    return path, json.loads(path.with_suffix(".json").read_text()), harness


def test_one_audited_abi3_wheel(wheel):
    path, record, _ = wheel
    assert path.name.startswith("extension_cpp-")
    assert "-cp39-abi3-manylinux" in path.name
    assert record["built_against_torch"] == torch.__version__
    assert f"torch=={TORCH}" in record["requires"]
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    assert "extension_cpp/_C.abi3.so" in names
    assert not [n for n in names if "libtorch" in n or "libc10" in n or "libcudart" in n]


def test_installed_wheel_passes_conformance(wheel, tmp_path):
    path, record, harness = wheel
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    # No PYTHONPATH in the venv: a source tree on it (as a copy's tests set)
    # holds the package's egg-info, and pip would take that as installed.
    isolated = {**os.environ, "PYTHONPATH": ""}
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, env=isolated,
    ).stdout.strip()  # fmt: skip
    # This environment's packages after the venv's own: torch and the test tools.
    (Path(site) / "_shared.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # A new venv's setuptools (CPython 3.11 and older) would shadow the shared
    # one, which torch needs (setuptools>=77 in 2.14).
    run(python, "-m", "pip", "uninstall", "-q", "-y", "setuptools", env=isolated)
    run(python, "-m", "pip", "install", "-q", "--no-deps", harness, env=isolated)
    # The shared torch must satisfy its pin.
    run(python, "-m", "pip", "install", "-q", path, env=isolated)
    env = {**isolated, "EXTENSION_CPP_EXPECT_INSTALLED_IN": site}
    junit = tmp_path / "junit.xml"
    proc = subprocess.run(
        [python, "-m", "pytest", REPO / "tests" / "conformance", "-q", "-k", SELECT,
         "-p", "no:cacheprovider", "--rootdir", REPO, "-c", REPO / "pyproject.toml",
         f"--ignore={REPO / 'tests' / 'conformance' / 'test_wheel.py'}", f"--junitxml={junit}"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout
    assert " failed" not in proc.stdout


def test_wheel_refuses_another_torch_release(wheel, tmp_path):
    path, _, _ = wheel
    venv = tmp_path / "other"
    uv = Path(sys.executable).parent / "uv"
    run(uv, "venv", "-q", "-p", sys.executable, venv)
    python = venv / "bin" / "python"
    got = subprocess.run(
        [uv, "pip", "install", "-q", "--offline", "-p", python, f"torch=={OTHER_TORCH}"],
        capture_output=True, text=True,
    )  # fmt: skip
    if got.returncode != 0:
        pytest.skip(f"torch {OTHER_TORCH} is not in uv's cache (make matrix downloads it)")
    run(uv, "pip", "install", "-q", "--no-deps", "-p", python, path)
    probe = subprocess.run(
        [str(python), "-c", "import extension_cpp"], capture_output=True, text=True, cwd="/"
    )
    assert probe.returncode != 0
    message = probe.stderr.strip().splitlines()[-1]
    assert message.startswith("ImportError: extension_cpp was built against torch")
    assert torch.__version__ in message
    assert OTHER_TORCH in message
