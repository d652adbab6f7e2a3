"""Claims the docs make that a file of the repository can contradict.

Each test holds one statement to its source, so that when the source moves
(a new torch pin, a rebuilt matrix, a new results page) the prose cannot be
left behind saying the old thing. These read the sources, not the built
site, and need no build.
"""

import importlib.metadata
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
TUTORIAL = REPO / "tutorial"
STAGES = sorted(p.name for p in TUTORIAL.glob("[0-9][0-9]_*"))


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _user_pages() -> list[Path]:
    """What a user reads: the hand-written pages, the READMEs the site shows."""
    pages = sorted(DOCS.glob("*.md")) + sorted(DOCS.glob("tutorial/*.md"))
    pages += [REPO / "README.md", TUTORIAL / "README.md"]
    pages += sorted(TUTORIAL.glob("*/README.md")) + sorted(TUTORIAL.glob("appendix/*/README.md"))
    return pages


# --------------------------------------------------------------------------
# Which Pythons: the ones the pinned torch publishes wheels for


def _pinned_torch() -> str:
    pins = re.findall(r"^torch==(\S+)$", _read(REPO / "requirements" / "torch.txt"), re.M)
    assert len(pins) == 1, f"requirements/torch.txt should pin one torch, found {pins}"
    return pins[0]


def _supported_pythons() -> tuple[str, str]:
    """The oldest and newest CPython the pinned torch declares (its classifiers)."""
    dist = importlib.metadata.distribution("torch")
    pin = _pinned_torch()
    if dist.version.split("+")[0] != pin:
        pytest.skip(f"torch {dist.version} is installed, not the pinned {pin}")
    versions = sorted(
        (int(m[1]), int(m[2]))
        for c in dist.metadata.get_all("Classifier") or []
        if (m := re.fullmatch(r"Programming Language :: Python :: (\d+)\.(\d+)", c))
    )
    assert versions, "torch's metadata lists no Python version"
    requires = dist.metadata["Requires-Python"] or ""
    lowest = re.search(r">=\s*(\d+)\.(\d+)", requires)
    assert lowest, f"torch's Requires-Python is {requires!r}"
    assert (int(lowest[1]), int(lowest[2])) == versions[0], (requires, versions)
    return ".".join(map(str, versions[0])), ".".join(map(str, versions[-1]))


@pytest.mark.parametrize("page", ["docs/getting_started.md", "README.md"])
def test_prerequisites_name_the_pythons_of_the_pinned_torch(page):
    oldest, newest = _supported_pythons()
    text = _read(REPO / page)
    assert f"Python {oldest} to {newest}" in text, (
        f"{page} should say the tutorial needs Python {oldest} to {newest}, the CPythons "
        f"torch {_pinned_torch()} has wheels for"
    )


@pytest.mark.parametrize("page", _user_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_python_older_than_the_pin_is_offered_without_its_torch(page):
    """Python 3.9 works with the wheel only next to a torch that still supports
    it (the compatibility matrix's torch 2.8 track): a sentence that offers an
    older Python must name that torch."""
    oldest, _ = _supported_pythons()
    minor = int(oldest.split(".")[1])
    older = "|".join(rf"3\.{m}\b" for m in range(8, minor))
    for paragraph in re.split(r"\n\s*\n", _read(page)):
        for match in re.finditer(rf"(?:Python|CPython)s? (?:{older})", paragraph):
            assert re.search(r"torch 2\.\d\b|cp39|oldest", paragraph), (
                f"{page.name}: {match[0]!r} without the torch that supports it:\n{paragraph}"
            )


# --------------------------------------------------------------------------
# The tutorial's libtorch symbol count: the matrix's, from one filter


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"tutorial_{name}", TUTORIAL / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _matrix_symbol_count() -> int:
    counts = set(
        re.findall(
            r"needs (\d+) libtorch C\+\+ symbols", _read(DOCS / "results" / "tutorial_matrix.md")
        )
    )
    assert len(counts) == 1, f"the tutorial matrix should give one symbol count, found {counts}"
    return int(counts.pop())


def test_readmes_give_the_matrix_symbol_count():
    count = _matrix_symbol_count()
    claims = []
    for readme in sorted(TUTORIAL.glob("*/README.md")):
        text = _read(readme)
        for pattern in (
            r"needs (\d+) libtorch C\+\+ symbols",
            r"\((\d+) from step 2 on",
            r"step 5\s+prints (\d+)",
        ):
            claims += [(readme.parent.name, int(n)) for n in re.findall(pattern, text)]
    assert claims, "no README states the symbol count"
    wrong = [(stage, n) for stage, n in claims if n != count]
    assert not wrong, f"the matrix counts {count} libtorch C++ symbols; READMEs say {wrong}"


def test_readme_nm_line_filters_as_the_matrix_check_does():
    checks = _load("checks")
    readme = _read(TUTORIAL / "06_stable_abi" / "README.md")
    filters = re.findall(r"nm -D --undefined-only --demangle \S+ \| grep -cE '([^']+)'", readme)
    assert filters == [checks._LIBTORCH_CXX.pattern], (filters, checks._LIBTORCH_CXX.pattern)


# --------------------------------------------------------------------------
# What runs on a GPU: only what a recorded GPU run shows


def _gpu_matrix_rows() -> dict[str, list[str]]:
    text = _read(DOCS / "results" / "tutorial_matrix_gpu.md")
    header = next(line for line in text.splitlines() if line.startswith("| checkpoint"))
    titles = [c.strip() for c in header.strip("|").split("|")]
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if re.match(r"^\d\d_|^reference$", cells[0]):
            rows[cells[0]] = dict(zip(titles, cells))
    return rows


@pytest.mark.parametrize("stage", STAGES)
def test_cuda_passes_only_where_a_gpu_run_shows_it(stage):
    readme = _read(TUTORIAL / stage / "README.md")
    works = re.search(r"## What works now\n(.*?)(?=\n## )", readme, re.S)
    assert works, f"{stage}: no 'What works now' section"
    if not re.search(r"on CPU and CUDA", works[1]):
        return
    row = _gpu_matrix_rows().get(stage)
    assert row, f"{stage} says CUDA works, but the GPU matrix has no {stage} row"
    assert row["eager CUDA"].startswith("✓"), f"{stage}: GPU matrix eager CUDA is {row}"


# --------------------------------------------------------------------------
# Measurements and verdicts


def test_no_page_promises_no_absolute_times():
    """The pages show microseconds for scale; none may claim there are none."""
    for page in _user_pages():
        assert not re.search(r"never an absolute time", _read(page), re.I), page


def test_verdicts_live_on_results_pages_only():
    """'Target met' in prose went stale beside a results table saying MISS."""
    for page in _user_pages():
        found = re.findall(r"[Tt]arget[^:\n]{0,40}: (?:met|missed)\b", _read(page))
        assert not found, f"{page.name}: {found}; state the measurement, link the results page"


def test_every_results_page_is_stamped():
    for page in sorted((DOCS / "results").rglob("*.md")):
        if page.name == "README.md":
            continue
        text = _read(page)
        assert re.search(r"commit `[0-9a-f]{7,}", text), f"{page.name}: no commit"
        assert re.search(r"20\d\d-\d\d-\d\d", text), f"{page.name}: no date"
        assert re.search(r"`[^`\n]+` at commit `", text), f"{page.name}: no command"


def test_results_hold_no_raw_data():
    tracked = subprocess.run(
        ["git", "ls-files", "docs/results"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    raw = [f for f in tracked if not f.endswith(".md")]
    assert not raw, f"docs/results holds raw data: {raw}"


# --------------------------------------------------------------------------
# Named notes: what the code cites by name exists, in the design notes or the code


def test_every_cited_note_exists():
    tracked = subprocess.run(
        ["git", "ls-files", "csrc", "extension_cpp", "stable", "scripts", "tests", "docs", "*.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    notes = set(re.findall(r"^### Note \[([^\]]+)\]$", _read(DOCS / "design_notes.md"), re.M))
    cited = {}
    for name in tracked:
        path = REPO / name
        if path.suffix in (".png", ".so") or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        # A note may also live in the code, as PyTorch's do: its title alone on a line.
        notes |= set(re.findall(r"^\s*(?://|#) Note \[([^\]\n]+)\]$", text, re.M))
        for note in re.findall(r"Note \[([^\]\n]+)\]", text):
            cited.setdefault(note, name)
    missing = {note: where for note, where in cited.items() if note not in notes}
    assert not missing, f"cited but not in docs/design_notes.md or the code: {missing}"


# --------------------------------------------------------------------------
# Voice: user pages describe the code, not the sessions that wrote it

LAB_NOTEBOOK = [
    r"\bsession \d+",
    r"\bissue #\d+",
    r"\bwe saw\b",
    r"\bour GPU machine\b",
    r"\bthe review'?s\b",
    r"\bthe GPU host\b",
    r"\bthis repository's (?:2-core|EPYC|VM|machine)",
]


@pytest.mark.parametrize("page", _user_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_lab_notebook_voice(page):
    text = _read(page)
    found = [m[0] for pattern in LAB_NOTEBOOK for m in re.finditer(pattern, text, re.I)]
    assert not found, f"{page.relative_to(REPO)}: {found}"


def test_git_grep_finds_no_session_or_issue_numbers_in_docs():
    result = subprocess.run(
        ["git", "grep", "-n", "-i", "-E", r"session [0-9]+|issue #[0-9]+|we saw", "--", "docs"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if result.returncode not in (0, 1):
        pytest.skip("not a git checkout")
    assert result.stdout == "", result.stdout


# --------------------------------------------------------------------------
# One way to read a ratio: the baseline's time over the candidate's

# "(> 1: Triton is faster)", "above 1.0 ours is faster", "> 1: the stable build is slower"
_RATIO_READING = re.compile(
    r"(?:>|above) ?1(?:\.0)?[:,]? ([\w+ ]+?) (?:is|are|runs?) (faster|slower)"
)
BASELINES = ("Triton", "PyTorch", "eager", "classic", "torch", "native")


def _ratio_sources() -> list[Path]:
    """The pages a reader meets and the scripts that write the results pages
    (the recorded pages follow their script at the next run; until then the
    docs build marks them stale)."""
    scripts = subprocess.run(
        ["git", "ls-files", "scripts/*.py", "scripts/**/*.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout.split()
    return _user_pages() + [DOCS / "design_notes.md"] + [REPO / s for s in scripts]


@pytest.mark.parametrize("source", _ratio_sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_a_ratio_above_one_means_the_candidate_is_faster(source):
    """Performance read "> 1" as ours faster while the Triton and stable pages
    read it as ours slower. Every ratio is the baseline's time over the
    candidate's (ours, the stable build, the C++ op): above 1 it is faster."""
    for subject, verb in _RATIO_READING.findall(_read(source)):
        assert verb == "faster", f"{source.name}: above 1, {subject} is {verb}"
        assert not any(b in subject for b in BASELINES), (
            f"{source.name}: above 1 {subject} is faster, but a ratio puts the baseline on top"
        )


def test_performance_claims_no_tie_that_a_results_page_misses():
    """'Where PyTorch has the same op, it is a tie' sat above a results table
    ending "MISS. Worst ratio 0.86"."""
    missed = [
        p.name for p in sorted((DOCS / "results" / "perf").glob("*.md")) if "MISS" in _read(p)
    ]
    if missed:
        text = _read(DOCS / "performance.md")
        found = [s for s in re.findall(r"[^.]*\ba tie\b[^.]*", text) if "A/A" not in s]
        assert not found, f"performance.md claims a tie; {missed} report a MISS: {found}"


def test_stable_page_gives_pytorchs_advice_and_where_ours_differs():
    """PyTorch's tutorial recommends the stable ABI from torch 2.10 on; the
    page that compares the builds says so, links it, and says when not."""
    text = _read(DOCS / "stable_abi.md")
    advice = re.search(r"^## PyTorch's advice.*?(?=^## )", text, re.M | re.S)
    assert advice, "stable_abi.md has no section on PyTorch's advice"
    assert "https://docs.pytorch.org/tutorials/advanced/cpp_custom_ops.html" in advice[0]
    assert re.search(r"recommends the stable ABI from torch 2\.10", advice[0])
    assert re.search(r"advises the classic ABI", advice[0])
    assert text.index("## PyTorch's advice") < text.index("## What each costs"), "put it first"
