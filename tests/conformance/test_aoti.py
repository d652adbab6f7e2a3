"""torch.export plus AOTInductor: a model that calls our ops, compiled into
one package, run from Python and from a C++ program with no Python in it.

examples/aoti_runner/export_model.py exports and compiles the model and
checks the package against eager in Python; runner.cpp (built here with
CMake against the installed torch's libtorch) loads our op library, runs the
package and compares with the eager result the script saved. The same model
built from the Triton side path's ops (tutorial/appendix/triton) needs no
library of ops: AOTInductor compiles their kernels into the package.
"""

import glob
import os
import shutil
import subprocess

import pytest
import torch
from child_process import run_python

from .cases import classic_only, devices, requires_cuda

# examples/aoti_runner/export_model.py builds its model from the classic
# package's ops.
pytestmark = classic_only("examples/aoti_runner exports a model of the classic extension_cpp ops")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "aoti_runner")
TRITON_PACKAGE = os.path.join(REPO, "tutorial", "appendix", "triton")


def _cmake_args(build: str) -> list:
    args = ["cmake", "-S", EXAMPLE, "-B", build, "-DCMAKE_BUILD_TYPE=Release"]
    args.append(f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}")
    if torch.version.cuda:
        # A CUDA build of torch makes its CMake config look for the CUDA
        # toolkit, and for NVRTC, which a bare toolkit may lack; the torch
        # wheel ships its own copy beside it.
        cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
        args.append(f"-DCUDA_TOOLKIT_ROOT_DIR={cuda_home}")
        if not glob.glob(os.path.join(cuda_home, "lib64", "libnvrtc.so*")):
            site = os.path.dirname(os.path.dirname(torch.__file__))
            bundled = glob.glob(os.path.join(site, "nvidia", "*", "lib", "libnvrtc.so.*"))
            if bundled:
                args.append(f"-DCUDA_nvrtc_LIBRARY={bundled[0]}")
    return args


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> str:
    if shutil.which("cmake") is None:
        pytest.fail("cmake is not on PATH (apt-get install cmake, or pip install cmake)")
    build = str(tmp_path_factory.mktemp("aoti_runner_build"))
    for cmd in (_cmake_args(build), ["cmake", "--build", build, "-j2"]):
        result = subprocess.run(cmd, capture_output=True, text=True)
        assert result.returncode == 0, (
            f"{' '.join(cmd)}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    return os.path.join(build, "aoti_runner")


# Functions only libstdc++ itself defines (test_linkage.py's list): a library
# that exports one carries its own copy of the C++ runtime.
RUNTIME_ONLY = ("_ZNSo9_M_insertIlEERSoT_", "_ZNSt6locale7classicEv")


def _shared_cxx_runtime(tmp_path) -> dict:
    """Where the compiler Inductor uses ($CXX) puts a copy of libstdc++ into
    the libraries it builds and exports it (one that has only the static
    runtime), the documented workaround (docs/troubleshooting.md, "A segfault
    instead of the error message"): the process that loads the compiled package preloads the
    libstdc++.so.6 this one runs with, so the package's copy is not mixed
    with torch's. Elsewhere nothing. Found by building a small library."""
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None or shutil.which("nm") is None:
        return {}
    source = tmp_path / "probe.cpp"
    source.write_text(
        "#include <sstream>\n"
        "std::string f(long n) { std::ostringstream s; s << n; return s.str(); }\n"
    )
    library = tmp_path / "probe.so"
    if subprocess.run([cxx, "-shared", "-fPIC", "-O1", str(source), "-o", str(library)]).returncode:
        return {}
    exported = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True
    ).stdout
    if not any(symbol in exported for symbol in RUNTIME_ONLY):
        return {}
    with open("/proc/self/maps") as maps:
        loaded = {line.split()[-1] for line in maps if "libstdc++.so" in line}
    return {"LD_PRELOAD": sorted(loaded)[0]} if loaded else {}


def _export(tmp_path, device: str, *args: str, env=None) -> None:
    export = run_python(
        [os.path.join(EXAMPLE, "export_model.py"), str(tmp_path), "--device", device, *args],
        env={**_shared_cxx_runtime(tmp_path), **(env or {})},
    )
    assert export.returncode == 0, export.stdout + export.stderr
    assert "the package run from Python equals eager" in export.stdout


def _run_from_cpp(runner: str, tmp_path, ops_library: str, device: str) -> None:
    # A bare environment: no PYTHONPATH, no virtualenv, nothing of Python's.
    run = subprocess.run(
        [
            runner,
            str(tmp_path / "model.pt2"),
            ops_library,
            str(tmp_path / "input.bin"),
            str(tmp_path / "expected.bin"),
            "8",
            "16",
            device,
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    print(f"C++ runner ({device}):\n{run.stdout}")  # shown with pytest -s
    assert "output size: 8" in run.stdout
    assert "python in process: no" in run.stdout


@pytest.mark.slow
@pytest.mark.cpython_independent
@pytest.mark.parametrize("device", devices())
def test_aoti_package_runs_from_python_and_cpp(device, runner, tmp_path):
    _export(tmp_path, device)
    import extension_cpp

    _run_from_cpp(runner, tmp_path, extension_cpp._C.__file__, device)


@pytest.mark.slow
@requires_cuda
def test_aoti_package_of_triton_ops_runs_from_cpp_with_no_ops_library(runner, tmp_path):
    pytest.importorskip("triton")
    _export(tmp_path, "cuda", "--ops", "extension_triton", env={"PYTHONPATH": TRITON_PACKAGE})
    _run_from_cpp(runner, tmp_path, "none", "cuda")
