"""Claims the docs make that a file of the repository can contradict.

Each test holds one statement to its source, so that when the source moves
(a new torch pin, a rebuilt matrix, a new results page) the prose cannot be
left behind saying the old thing. These read the sources, not the built
site, and need no build.
"""

import functools
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
def test_prerequisites_name_the_pythons_that_are_tested(page):
    """From the oldest CPython the pinned torch has wheels for to the newest
    that make matrix passed on: Getting started promised 3.14, which nothing
    tested."""
    oldest, newest = _supported_pythons()
    tested = _tested_pythons()
    assert tested, "compatibility.md's newest track passed on no CPython"
    top = max(tested, key=lambda v: tuple(map(int, v.split("."))))
    if tuple(map(int, top.split("."))) > tuple(map(int, newest.split("."))):
        top = newest
    text = _read(REPO / page)
    assert f"Python {oldest} to {top}" in text, (
        f"{page} should say Python {oldest} to {top}: torch {_pinned_torch()}'s oldest, to "
        f"the newest make matrix passed on ({tested})"
    )
    promised = re.findall(r"Python 3\.\d+ to (3\.\d+)", text)
    assert all(p == top for p in promised), f"{page} promises Python up to {promised}"


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
    path = REPO / "tools" / "tutorial" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"tutorial_{name}", path)
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
        [
            "git",
            "ls-files",
            "csrc",
            "extension_cpp",
            "stable",
            "tools",
            "benchmarks",
            "tests",
            "docs",
            "*.py",
        ],
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
    r"\bNot kept\b",
    r"\bmeasured and dropped\b",
]


@pytest.mark.parametrize("page", _user_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_lab_notebook_voice(page):
    text = _read(page)
    found = [m[0] for pattern in LAB_NOTEBOOK for m in re.finditer(pattern, text, re.I)]
    assert not found, f"{page.relative_to(REPO)}: {found}"


def _git_grep(*args: str) -> str:
    """What `git grep -n <args>` finds (empty where nothing matches)."""
    result = subprocess.run(["git", "grep", "-n", *args], cwd=REPO, capture_output=True, text=True)
    if result.returncode not in (0, 1):
        pytest.skip("not a git checkout")
    return result.stdout


def test_git_grep_finds_no_session_or_issue_numbers_in_docs():
    found = _git_grep("-i", "-E", r"session [0-9]+|issue #[0-9]+|we saw", "--", "docs")
    assert found == "", found


def test_code_names_no_machine_and_no_issue_of_ours():
    """Machine names and this project's issue numbers belong in docs/ (a named
    note), not in the code; a cited upstream bug (pytorch/pytorch#N) may stay."""
    found = _git_grep(
        "-E", r"\b(H100|H200|A100|EPYC|Xeon)\b|(^|[^a-z/])#[0-9]{2,}\b", "--",
        *("*.py", "*.sh", "*.h", "*.cpp", "*.cu", "*.cuh", "*.toml", "*.cfg", "Makefile"),
        ":!docs", ":!tests/docs",
    )  # fmt: skip
    assert found == "", found


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
        ["git", "ls-files", "benchmarks/*.py", "tools/*.py", "tools/**/*.py"],
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


# --------------------------------------------------------------------------
# Which make target runs which tests: read from the Makefile, not restated


@functools.cache
def _dry_run(target: str) -> str:
    """What `make target` would run, as make itself expands it: make -n
    prints each command (the prerequisites' too) and runs none."""
    run = subprocess.run(
        ["make", "-n", "--no-print-directory", target],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return run.stdout.replace("\\\n", " ")


def _pytest_runs(target: str) -> list[dict]:
    """Each pytest the target runs: its paths, ignores and environment."""
    runs = []
    for line in _dry_run(target).splitlines():
        if "-m pytest" not in line:
            continue
        env, _, args = line.rpartition("-m pytest")
        words = args.replace("'", "").split()
        paths = [_relative(w) for w in words if _relative(w).startswith(("tests", "harness"))]
        ignores = [_relative(w.split("=", 1)[1]) for w in words if w.startswith("--ignore=")]
        runs.append({"paths": paths, "ignores": ignores, "env": env})
    return runs


def _relative(path: str) -> str:
    """A path make printed (relative, or under $(CURDIR)) as the repository's."""
    return path.removeprefix(f"{REPO}/").removeprefix("./")


def _build(run: dict) -> str:
    """Which build a pytest run tests: classic, stable, or the simple kernels."""
    if "EXTENSION_CPP_EXPECT_KERNELS=simple" in run["env"]:
        return "simple"
    return "stable" if "EXTENSION_CPP_BUILD=stable" in run["env"] else "classic"


def _runs_file(target: str, test_file: str, build: str = "classic") -> bool:
    """Whether `make target` runs test_file against the given build."""
    for run in _pytest_runs(target):
        if _build(run) != build:
            continue
        inside = any(
            test_file == p or test_file.startswith(p.rstrip("/") + "/") for p in run["paths"]
        )
        ignored = any(
            Path(test_file).match(i) or test_file.startswith(i.rstrip("/") + "/") or test_file == i
            for i in run["ignores"]
        )
        if inside and not ignored:
            return True
    return False


def _tutorial_test_files() -> list[str]:
    return sorted(str(p.relative_to(REPO)) for p in REPO.glob("tests/**/test_tutorial*.py"))


def test_the_makefile_reader_sees_what_make_runs():
    """The helpers above on facts that hold as long as the Makefile has the
    targets at all: make test runs the conformance suite and not the tutorial's
    tests; make tutorial runs those."""
    assert _runs_file("test", "tests/conformance/test_errors.py")
    assert _tutorial_test_files()
    for name in _tutorial_test_files():
        assert _runs_file("tutorial", name), name
        assert not _runs_file("test", name), name


def test_appendix_pages_name_the_target_that_runs_their_tests(tmp_path, monkeypatch):
    from tools.docs import generate

    monkeypatch.setattr(generate, "GENERATED", str(tmp_path))
    name = generate._appendix_page(str(TUTORIAL / "appendix" / "jit"), str(tmp_path), str(TUTORIAL))
    text = (tmp_path / f"{name}.md").read_text()
    said = re.findall(r"tests run in `make ([\w-]+)`", text)
    assert said, "the appendix pages no longer say where their tests run"
    appendix_tests = [f for f in _tutorial_test_files() if "appendix" in f]
    assert appendix_tests
    for target in said:
        assert all(_runs_file(target, f) for f in appendix_tests), (
            f"the appendix pages say `make {target}` runs their tests {appendix_tests}"
        )


_RUNS_CLAIM = re.compile(r"`(tests/[\w/]+\.py)`,? which `make ([\w-]+)` runs")
_SIMPLE_CLAIM = re.compile(
    r"`make ([\w-]+)`\s+runs\s+the\s+(whole\s+)?conformance\s+suite\s+on\s+(both|the\s+simple)"
)


@pytest.mark.parametrize("page", _user_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_what_a_page_says_a_target_runs_it_runs(page):
    """ "`tests/x.py`, which `make test` runs", and "`make X` runs the
    conformance suite on both" kernel sets, held to the Makefile."""
    text = _read(page)
    for test_file, target in _RUNS_CLAIM.findall(text):
        assert _runs_file(target, test_file), f"{page.name}: make {target} does not run {test_file}"
    for target, _, _ in _SIMPLE_CLAIM.findall(text):
        runs = _pytest_runs(target)
        whole = [r for r in runs if _build(r) == "simple" and "tests/conformance" in r["paths"]]
        assert whole, (
            f"{page.name}: make {target} does not run the whole suite on the simple kernels"
        )


def test_readme_says_which_targets_ci_runs():
    """README: "CI (`.ci/run`) runs ..." names every target .ci/run runs."""
    ci = re.findall(r'"(make [\w-]+)"', _read(REPO / ".ci" / "run"))
    assert ci, ".ci/run names no make target"
    sentence = re.search(r"CI \(`\.ci/run`\) runs (.*?)\.(?:\s|$)", _read(REPO / "README.md"), re.S)
    assert sentence, "README no longer says what CI runs"
    named = re.findall(r"`(make [\w-]+)`", sentence[1])
    assert sorted(named) == sorted(ci), f"README says CI runs {named}; .ci/run runs {ci}"


# A section a comment cites: the page in docs/, a comma, the title in quotes.
_SECTION_REF = re.compile(r"\((docs/[\w/]+\.md), \"([A-Z][^\"()\[\]{}=]{2,80})\"")


def test_references_to_a_docs_section_name_one_that_exists():
    """The Makefile sent "Fuzzing and sanitizers" to docs/troubleshooting.md,
    a page without that section."""
    tracked = subprocess.run(
        ["git", "ls-files", "Makefile", "*.py", "*.h", "*.cpp", "*.cu", "*.cuh", "*.sh", "*.toml"],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout.split()
    wrong = []
    for name in tracked:
        text = re.sub(r"\s*\n\s*(?:#|//)?\s*", " ", (REPO / name).read_text(errors="replace"))
        for page, section in _SECTION_REF.findall(text):
            if not (REPO / page).exists():
                wrong.append(f"{name}: {page} does not exist")
                continue
            headings = re.findall(r"^#+ (.+)$", _read(REPO / page), re.M)
            if not any(h.replace("`", "").startswith(section.replace("`", "")) for h in headings):
                wrong.append(f"{name}: {page} has no section {section!r}")
    assert not wrong, "\n".join(wrong)


# --------------------------------------------------------------------------
# What the tutorial's steps say works, against the recorded matrix


def _matrix_rows(name: str) -> dict[str, list[str]]:
    rows = {}
    for line in _read(DOCS / "results" / name).splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and re.match(r"^\d\d_", cells[0]):
            rows[cells[0]] = cells[1:]
    return rows


@pytest.mark.parametrize("stage", STAGES)
def test_every_check_works_only_where_the_matrix_row_has_no_failure(stage):
    """Step 5 said "Every check in the matrix" beside its own "other torch ✗"."""
    works = re.search(
        r"## What works now\n(.*?)(?=\n## )", _read(TUTORIAL / stage / "README.md"), re.S
    )
    assert works, f"{stage}: no 'What works now' section"
    if not re.search(r"\bEvery check in the matrix\b(?!\s+but)", works[1]):
        return
    row = _matrix_rows("tutorial_matrix.md").get(stage)
    assert row, f"{stage} claims every check, but the matrix has no {stage} row"
    assert not any(c.startswith("✗") for c in row), f"{stage} claims every check; its row: {row}"


def test_the_last_step_leads_to_every_side_path():
    last = _read(TUTORIAL / STAGES[-1] / "README.md")
    nxt = last[last.rindex("\nNext:") :]
    for side in sorted(TUTORIAL.glob("appendix/*/README.md")):
        assert f"../appendix/{side.parent.name}/README.md" in nxt, (
            f"Next leaves out {side.parent.name}"
        )


# --------------------------------------------------------------------------
# Claims about GPU runs and Pythons, against the recorded runs


def test_dtensor_on_gpus_is_claimed_only_where_a_gpu_run_shows_it():
    """api.md said DTensor "passed on two H200s", citing a run whose page
    shows test_dtensor.py skipped."""
    api = _read(DOCS / "api.md")
    if not re.search(r"passed\s+on\s+\w+\s+(?:H100|H200|GPU)", api):
        return
    row = re.search(
        r"^\| `conformance/test_dtensor\.py` \|([^\n]*)",
        _read(DOCS / "results" / "conformance-gpu.md"),
        re.M,
    )
    assert row, "api.md claims a GPU DTensor run; the GPU conformance page has no test_dtensor row"
    passed = row[1].split("|")[0].strip()
    assert int(passed or 0) > 0, f"the GPU run's test_dtensor row: {row[0]}"


def _tested_pythons() -> list[str]:
    """The CPythons on which the newest track of make matrix passed."""
    text = _read(DOCS / "results" / "compatibility.md")
    track = re.search(r"^## newest: .*?(?=^## )", text, re.M | re.S)
    assert track, "compatibility.md has no newest track"
    return re.findall(r"^\| (3\.\d+)\.\d+ \| [\w.+]+ \| pass \|", track[0], re.M)


@pytest.mark.parametrize("page", _user_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_register_autograd_is_offered_with_what_it_lacks(page):
    """ "Add an op" taught register_autograd without saying that it gives
    reverse mode only (forward mode silently wrong): every page that offers it
    says so."""
    text = _read(page)
    if "register_autograd" in text:
        assert re.search(r"reverse[ -]mode", text), f"{page.name} offers register_autograd"


# --------------------------------------------------------------------------
# Numbers the harness pages state: checks, findings, torchvision's version


def _check_counts() -> dict[str, int]:
    """Test ids per device of the ten-line example (Check your own op's)."""
    source = _read(REPO / "tests" / "test_check_your_own_op.py")
    block = source.split("# [check-your-op]")[1]
    test = re.search(r"^(test_\w+) = conformance_tests\(", block, re.M)
    assert test, "the ten-line example defines no conformance_tests"
    from child_process import run_python  # tests/: the child tests this run's package

    collected = run_python(
        [
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:randomly",
            f"{REPO}/tests/test_check_your_own_op.py::{test[1]}",
        ]
    )
    ids = re.findall(r"::\w+\[([^\]]+)\]", collected.stdout)
    assert ids, collected.stdout[-2000:] + collected.stderr[-2000:]
    return {d: sum(f"-{d}" in i for i in ids) for d in ("cpu", "cuda")}


def test_check_your_op_states_the_number_of_checks_per_device():
    """ "181 checks on the CPU and as many on a GPU": a GPU adds cuda_graph and
    side_stream."""
    text = re.sub(r"\s+", " ", _read(DOCS / "check_your_op.md"))
    claim = re.search(r"runs (\d+) checks on the CPU and (\d+|as many) on a GPU", text)
    if not claim:
        return  # no count stated, none to contradict
    counts = _check_counts()
    assert int(claim[1]) == counts["cpu"], f"{claim[0]!r}; the example has {counts}"
    gpu = counts["cpu"] if claim[2] == "as many" else int(claim[2])
    assert gpu == counts["cuda"], f"{claim[0]!r}; the example has {counts}"


def test_pages_count_the_torchvision_findings_there_are():
    """Check your own op said six bugs in torchvision; the findings page and its
    reproducers have nine."""
    findings = _read(REPO / "harness" / "tests" / "third_party" / "torchvision_findings.py")
    count = len(set(re.findall(r"^# \[(\w+-[\w-]+)\]$", findings, re.M)))
    words = dict(
        zip("one two three four five six seven eight nine ten eleven twelve".split(), range(1, 13))
    )
    for page in _user_pages():
        for n in re.findall(r"(\w+) bugs in torchvision", re.sub(r"\s+", " ", _read(page))):
            said = int(n) if n.isdigit() else words.get(n.lower())
            assert said == count, f"{page.name}: {n} bugs in torchvision; the reproducers: {count}"


def test_torchvision_versions_are_the_makefiles_or_name_their_torch():
    """The torchvision page installed 0.26.0 while the Makefile uses 0.29.1: a
    version other than the Makefile's must say which torch it is for."""
    pinned = re.search(r"^TORCHVISION \?= (\S+)$", _read(REPO / "Makefile"), re.M)[1]
    for page in _user_pages():
        for line in _read(page).splitlines():
            for version in re.findall(r"torchvision==([\d.]+)", line):
                if version != pinned:
                    other = re.search(r"torch (2\.\d+)", line)
                    assert other, f"{page.name}: torchvision {version} (Makefile: {pinned}): {line}"
                    assert not _pinned_torch().startswith(other[1]), line


# --------------------------------------------------------------------------
# Every file a page names exists


TOP = (
    "csrc",
    "extension_cpp",
    "stable",
    "harness",
    "tests",
    "scripts",
    "tutorial",
    "docs",
    "examples",
    "requirements",
    ".ci",
    ".github",
)
# Written by builds and runs, not tracked; and the placeholders pages use. A
# {doc}`role target` is a page name, not a path.
NOT_FILES = re.compile(r"^(docs/_build|docs/_generated)|\*|<|\$|\{|/build/|\.build-cache|\.so$")


@pytest.mark.parametrize(
    "page", _user_pages() + [DOCS / "design_notes.md"], ids=lambda p: str(p.relative_to(REPO))
)
def test_every_path_a_page_names_exists(page):
    """Where the derivatives live moved from extension_cpp/_autograd.py into
    C++; a page that still named the file would send a reader nowhere."""
    missing = []
    top = "|".join(re.escape(t) for t in TOP)
    for path in re.findall(rf"(?<!\}})`((?:{top})/[\w./-]*)`", _read(page)):
        path = path.rstrip("/.")
        if NOT_FILES.search(path):
            continue
        if not (REPO / path).exists() and not (page.parent / path).exists():
            missing.append(path)
    assert not missing, f"{page.relative_to(REPO)} names files that do not exist: {missing}"


def test_troubleshooting_output_shows_no_machines_paths():
    """A traceback showed one machine's /opt/torch/.venv and /work/main; the
    pages shorten paths to .../site-packages/ and $TMP, as reproduce.py does."""
    page = _read(DOCS / "troubleshooting.md")
    shown = re.findall(r"^```\{literalinclude\} (troubleshooting/\S+\.txt)", page, re.M)
    assert shown
    for name in shown:
        found = re.findall(r"(?<![\w.$])/(?:opt|work|home|root|tmp)/\S*", _read(DOCS / name))
        assert not found, f"docs/{name} shows a machine's paths: {found}"


def test_step_6_gives_the_target_version_its_setup_py_defines():
    """Step 6 explains TORCH_TARGET_VERSION's layout and STD_TORCH_CHECK; the
    number it shows is the one its setup.py passes, and decodes as it says."""
    readme = _read(TUTORIAL / "06_stable_abi" / "README.md").split("<!-- diff:begin")[0]
    setup = _read(TUTORIAL / "06_stable_abi" / "setup.py")
    defined = re.search(r"-DTORCH_TARGET_VERSION=(0x[0-9A-Fa-f]{16})", setup)
    assert defined, "tutorial/06_stable_abi/setup.py defines no TORCH_TARGET_VERSION"
    shown = re.search(
        r"torch (\d+)\.(\d+) is `(\d+) << 56 \| (\d+) << 48`,\s+`(0x[0-9A-Fa-f]{16})`", readme
    )
    assert shown, "Step 6 no longer spells out TORCH_TARGET_VERSION's layout"
    major, minor = int(shown[1]), int(shown[2])
    assert (int(shown[3]), int(shown[4])) == (major, minor)
    assert int(shown[5], 16) == int(defined[1], 16) == (major << 56 | minor << 48)
    assert "STD_TORCH_CHECK" in readme
