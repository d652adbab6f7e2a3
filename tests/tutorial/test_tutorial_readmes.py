"""The tutorial's READMEs work when pasted, in order, and cannot run the wrong code.

The bash blocks of tutorial/README.md ("Building one checkpoint") and of each
checkpoint's "Build and run" section run as written, README by README in a
fresh bash at the root of a fresh copy of tutorial/ (the files git tracks: no
build outputs). That copy's .venv is the one running this test, the venv
`make tutorial` made, with the reference package installed in it. PATH holds
no venv, so a block that uses `python` without entering the venv fails, as it
would for a reader. EXTENSION_CPP_CUDA=0 in the environment keeps the builds
to the CPU (make test's time); everything else is as the reader pastes it.

Each block must succeed and print what its README says it prints, from the
checkpoint's own build. A checkpoint that is not built must refuse to import,
never fall back to the reference's library. The reference's install must be
the same afterwards. TUTORIAL_DIR checks another checkout's tutorial/.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conformance.cases import classic_only

pytestmark = classic_only(
    "the tutorial does not depend on the build under test; the classic run covers it"
)

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = Path(os.environ.get("TUTORIAL_DIR", REPO / "tutorial")).resolve()
STAGES = ["01_define", "02_impl", "03_fake", "04_autograd", "05_mymul_backward", "06_stable_abi"]

# (README, the section whose bash blocks run, what the output must contain: a
# string, or several)
READMES = [
    ("README.md", "Building one checkpoint", "tensor([2., 2.])"),
    ("01_define/README.md", "Build and run", "mymuladd(Tensor a, Tensor b, float c) -> Tensor"),
    ("02_impl/README.md", "Build and run", "tensor([2., 2., 2.])"),
    ("03_fake/README.md", "Build and run", "tensor([2., 2., 2.])"),
    ("04_autograd/README.md", "Build and run", ("True", "1 passed")),
    ("05_mymul_backward/README.md", "Build and run", "extension_cpp.mymul.default"),
    ("06_stable_abi/README.md", "Build and run", "0\nTrue"),
]


def bash_blocks(readme: Path, section: str) -> str:
    """The ```bash blocks under the `## section` heading, joined."""
    text = readme.read_text()
    match = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"{readme}: no '## {section}' section"
    blocks = re.findall(r"^```bash\n(.*?)^```", match.group(1), re.M | re.S)
    assert blocks, f"{readme}: no bash block under '## {section}'"
    return "".join(blocks)


# Build outputs, never copied: what a fresh clone does not have.
BUILD_OUTPUTS = shutil.ignore_patterns("build", ".build-cache", "__pycache__", "*.so", "*.egg-info")


def tracked_copy(dest: Path) -> Path:
    """The files git tracks under TUTORIAL, copied to dest/tutorial: a fresh
    clone's. Outside a git checkout (a copy of the tree without .git), the
    files under TUTORIAL less their build outputs."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "."], cwd=TUTORIAL, capture_output=True, text=True
    )
    names = [n for n in listing.stdout.split("\0") if n] if listing.returncode == 0 else []
    if not names:
        shutil.copytree(TUTORIAL, dest / "tutorial", ignore=BUILD_OUTPUTS)
        return dest / "tutorial"
    for name in names:
        target = dest / "tutorial" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(TUTORIAL / name, target)
    return dest / "tutorial"


def reader_env() -> dict[str, str]:
    """This environment without the venv: a new shell's."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    venv_bin = os.path.realpath(os.path.join(sys.prefix, "bin"))
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if os.path.realpath(p) != venv_bin
    )
    env["EXTENSION_CPP_CUDA"] = "0"
    env.setdefault("MAX_JOBS", "2")
    return env


def reference_install() -> dict[str, str]:
    """What the venv holds for the distribution extension_cpp, and which _C it loads."""
    code = (
        "import importlib.metadata as m, extension_cpp; d = m.distribution('extension_cpp');"
        "print(d.read_text('direct_url.json')); print(sorted(map(str, d.files)));"
        "print(extension_cpp._C.__file__)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd="/", capture_output=True, text=True, check=True
    )
    direct_url, files, library = proc.stdout.splitlines()
    return {"direct_url": direct_url, "files": files, "library": library}


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    if sys.prefix == sys.base_prefix:
        pytest.fail("run this in the venv `make tutorial` makes: the READMEs source .venv")
    root = tmp_path_factory.mktemp("fresh_clone")
    tracked_copy(root)
    (root / ".venv").symlink_to(sys.prefix)
    before = reference_install()
    yield root
    assert reference_install() == before, "the READMEs' commands changed the reference's install"


def test_reference_is_the_repository_package(clone):
    library = Path(reference_install()["library"])
    assert library.parent == REPO / "extension_cpp", library


@pytest.mark.slow
@pytest.mark.parametrize(("readme", "section", "prints"), READMES, ids=[r for r, _, _ in READMES])
def test_readme_commands_work_as_written(clone, readme, section, prints):
    script = bash_blocks(TUTORIAL / readme, section)
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=clone,
        env=reader_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{readme}: exit {proc.returncode}\n{script}\n{output[-4000:]}"
    for text in (prints,) if isinstance(prints, str) else prints:
        assert text in proc.stdout, f"{readme}: expected {text!r} in:\n{proc.stdout[-3000:]}"
    if readme != "README.md":
        checkpoint = clone / "tutorial" / Path(readme).parent
        assert list((checkpoint / "extension_cpp").glob("_C*.so")), "built somewhere else"


@pytest.mark.parametrize("stage", STAGES)
def test_unbuilt_checkpoint_refuses_to_import(tmp_path, stage):
    """No silent fallback: without its own _C, importing a checkpoint fails and says why."""
    checkpoint = tracked_copy(tmp_path) / stage
    proc = subprocess.run(
        [sys.executable, "-c", "import extension_cpp"],
        cwd=checkpoint,
        env=reader_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0, f"{stage} imported without being built"
    assert "has no compiled _C: build this checkpoint first" in proc.stderr, proc.stderr[-2000:]
