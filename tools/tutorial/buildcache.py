"""Builds a tutorial checkpoint once per set of sources, and runs its checks in a subprocess.

Kept rather than ccache: ccache caches compiler calls, but each checkpoint
would still run pip, setuptools, torch's import and the link, and this cache
skips all of that when the sources match; the check runner lives here too.

Checkpoints 02-05 compile byte-identical C++/CUDA sources (the later steps
change only Python), so the compiled extension_cpp/_C*.so is cached by a hash
of what goes into it (setup.py, csrc/, torch and Python versions, the CUDA
settings) under tutorial/.build-cache/ and copied into each checkpoint that
shares it. The build is the command the READMEs give a reader, run in the
checkpoint folder: `pip install --no-build-isolation --use-pep517 --upgrade --target
build/pip -e .` (an editable build puts _C beside the sources; --target keeps
the reference's install of extension_cpp in the environment as it is).
--use-pep517 is what pip 25 and later do anyway; pip 24.0 (Ubuntu 24.04's, on
the GPU test machine) instead runs the checkpoint's `setup.py develop`, which
setuptools 81 hands back to pip with build isolation, so the build failed
offline fetching setuptools ("No matching distribution found for
setuptools>=40.8.0").
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = REPO / "tutorial"
CACHE = TUTORIAL / ".build-cache"
# The build command the READMEs give (see the module docstring for each flag).
PIP_BUILD = [sys.executable, "-m"] + (
    "pip install --no-build-isolation --use-pep517 --upgrade --target build/pip -e ."
).split()
CHECKS = Path(__file__).resolve().parent / "checks.py"


def build_env() -> dict[str, str]:
    env = dict(os.environ)
    # sm_90 alone keeps nvcc time down; set the variable to build for more.
    env.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    env.setdefault("MAX_JOBS", "2")
    # ninja (pip-installed next to this interpreter) even when the venv is not activated,
    # as under `make tutorial`; without it BuildExtension falls back to a slow serial build.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def source_key(checkpoint: Path, env: dict[str, str] | None = None) -> str:
    import torch

    env = env or build_env()
    h = hashlib.sha256()
    for setting in (
        torch.__version__,
        sysconfig.get_config_var("EXT_SUFFIX"),
        env.get("TORCH_CUDA_ARCH_LIST", ""),
        env.get("EXTENSION_CPP_CUDA", ""),
        env.get("CUDA_HOME", ""),
        env.get("CUDA_PATH", ""),
    ):
        h.update(f"{setting}\n".encode())
    files = [checkpoint / "setup.py"] + sorted(
        p for p in (checkpoint / "csrc").rglob("*") if p.is_file()
    )
    for path in files:
        h.update(str(path.relative_to(checkpoint)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:20]


# One lock per cache entry: the walk builds checkpoints side by side, and
# steps 2-5 share an entry, which one of them builds while the others wait.
_entry_locks: dict[Path, threading.Lock] = {}
_locks_lock = threading.Lock()


def entry_lock(entry: Path) -> threading.Lock:
    with _locks_lock:
        return _entry_locks.setdefault(entry, threading.Lock())


def built_libraries(checkpoint: Path) -> list[str]:
    return glob.glob(str(checkpoint / "extension_cpp" / "_C*.so"))


def build(checkpoint: Path, log=None) -> tuple[float, bool]:
    """Makes checkpoint/extension_cpp/_C*.so current. Returns (seconds, reused from the cache)."""
    start = time.perf_counter()
    entry = CACHE / source_key(checkpoint)
    with entry_lock(entry):
        return _build(checkpoint, entry, start, log)


def _build(checkpoint: Path, entry: Path, start: float, log) -> tuple[float, bool]:
    for old in built_libraries(checkpoint):
        os.remove(old)
    if not (entry / "done").exists():
        proc = subprocess.run(
            PIP_BUILD,
            cwd=checkpoint,
            env=build_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if log is not None:
            log.write(proc.stdout)
        if proc.returncode != 0:
            raise RuntimeError(f"building {checkpoint.name} failed:\n{proc.stdout[-4000:]}")
        libraries = built_libraries(checkpoint)
        shutil.rmtree(entry, ignore_errors=True)
        entry.mkdir(parents=True)
        for library in libraries:
            shutil.copy2(library, entry)
        (entry / "done").write_text(checkpoint.name + "\n")
        return time.perf_counter() - start, False
    for library in entry.glob("_C*.so"):
        shutil.copy2(library, checkpoint / "extension_cpp" / library.name)
    return time.perf_counter() - start, True


def links_cuda(checkpoint: Path) -> bool:
    """Whether the checkpoint's built library links torch's CUDA libraries."""
    for library in built_libraries(checkpoint):
        dynamic = subprocess.run(["readelf", "-d", library], capture_output=True, text=True)
        if re.search(r"\[lib(c10_cuda|torch_cuda|cudart)\b", dynamic.stdout):
            return True
    return False


def build_cpu_only(checkpoint: Path) -> Path:
    """The checkpoint's sources built again without CUDA kernels
    (EXTENSION_CPP_CUDA=0), in a copy under the cache. Returns the folder that
    holds the copy's extension_cpp package. The library is compiled once per
    set of sources, as build() does. The "other torch" check runs this copy
    when the second torch is CPU-only and the checkpoint's own build links
    torch's CUDA libraries, which that torch does not have, whatever the ABI."""
    env = {**build_env(), "EXTENSION_CPP_CUDA": "0"}
    entry = CACHE / f"cpu-only-{source_key(checkpoint, env)}"
    with entry_lock(entry):
        return _build_cpu_only(checkpoint, env, entry)


def _build_cpu_only(checkpoint: Path, env: dict, entry: Path) -> Path:
    copy = CACHE / "cpu-only" / checkpoint.name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(
        checkpoint, copy, ignore=shutil.ignore_patterns("build", "__pycache__", "_C*.so")
    )
    if (entry / "done").exists():
        for library in entry.glob("_C*.so"):
            shutil.copy2(library, copy / "extension_cpp" / library.name)
        return copy
    proc = subprocess.run(
        PIP_BUILD,
        cwd=copy,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"building {checkpoint.name} for CPU only failed:\n{proc.stdout[-4000:]}"
        )
    shutil.rmtree(entry, ignore_errors=True)
    entry.mkdir(parents=True)
    for library in built_libraries(copy):
        shutil.copy2(library, entry)
    (entry / "done").write_text(checkpoint.name + "\n")
    return copy


# The second torch release for the "other torch" check: a CPU-only wheel, so
# the venv stays under 1 GB. Another release than the one this repository
# builds against (requirements/torch.txt); TUTORIAL_OTHER_TORCH picks another.
OTHER_TORCH = os.environ.get("TUTORIAL_OTHER_TORCH", "torch==2.13.0+cpu")


def other_torch_python() -> tuple[str | None, str]:
    """(A Python whose torch is OTHER_TORCH, or None; why not). The venv is
    made once (about a minute where the wheel is on disk) and kept under
    .build-cache/."""
    with entry_lock(CACHE / "other-torch"):
        return _other_torch_python()


def _other_torch_python() -> tuple[str | None, str]:
    venv = CACHE / ("other-" + "".join(c if c.isalnum() else "_" for c in OTHER_TORCH))
    python = venv / "bin" / "python"
    if (venv / "done").exists():
        return str(python), ""
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "--progress-bar", "off", "-q", OTHER_TORCH],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"no second torch: pip install {OTHER_TORCH} failed ({last})"
    (venv / "done").write_text(OTHER_TORCH + "\n")
    return str(python), ""


def other_torch_has_cuda(python: str) -> bool:
    """Whether the second torch is a CUDA build (asked once, kept in its venv)."""
    answer = Path(python).parent.parent / "has_cuda"
    if not answer.exists():
        code = "import torch; print(torch.version.cuda is not None)"
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
        answer.write_text(out.stdout.strip() + "\n")
    return answer.read_text().strip() == "True"


def checks_key(package_dir: Path | None) -> str:
    """What a run of checks.py on package_dir depends on: checks.py, the
    torch, whether a GPU is there, and every file of the checkpoint (or of
    the installed reference package, its library included) but build
    outputs. The walk records it with each report; the tutorial's tests
    reuse a report only where it matches (walk.py's --save)."""
    import importlib.util

    import torch

    h = hashlib.sha256()
    for setting in (torch.__version__, torch.cuda.is_available(), OTHER_TORCH, sys.executable):
        h.update(f"{setting}\n".encode())
    h.update(CHECKS.read_bytes())
    if package_dir is None:
        spec = importlib.util.find_spec("extension_cpp")
        folder = Path(next(iter(spec.submodule_search_locations)))
        files = sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    else:
        folder = package_dir
        skip = {"build", "__pycache__"}
        files = sorted(
            p
            for p in folder.rglob("*")
            if p.is_file()
            and not skip & set(p.relative_to(folder).parts)
            and not p.name.endswith(".egg-info")
            and ".egg-info" not in str(p.relative_to(folder))
        )
    for path in files:
        h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:20]


def run_checks(package_dir: Path | None, timeout: float = 900) -> dict:
    """Runs checks.py in a fresh interpreter (the extension_cpp namespace can be
    defined once per process). package_dir: the checkpoint to import, or None
    for the installed reference package. Returns checks.py's JSON report."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    # Every checkpoint defines the same ops with its own fake kernels, and
    # Inductor's on-disk graph cache does not key on them: a graph compiled
    # for one checkpoint would be served to another, with the first one's
    # output strides. So each package compiles without that cache.
    env["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
    env["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
    other, why_not = other_torch_python()
    if other:
        env["TUTORIAL_OTHER_PYTHON"] = other
    else:
        env["TUTORIAL_OTHER_PYTHON_MISSING"] = why_not
    which = ["--reference"]
    if package_dir is not None:
        env["PYTHONPATH"] = str(package_dir)
        which = ["--expect-package", str(package_dir / "extension_cpp")]
        if other and links_cuda(package_dir) and not other_torch_has_cuda(other):
            env["TUTORIAL_OTHER_FOLDER"] = str(build_cpu_only(package_dir))
    proc = subprocess.run(
        [sys.executable, str(CHECKS), *which],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(
            f"checks.py failed for {package_dir} (rc {proc.returncode}):\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return json.loads(lines[-1])
