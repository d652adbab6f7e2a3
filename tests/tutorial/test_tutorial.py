"""Each tutorial checkpoint builds, and passes and fails exactly what
tools/tutorial/matrix.py declares.

Each checkpoint is built once per set of C++ sources (tools/tutorial/buildcache.py:
steps 2-5 share one build) and checked in its own interpreter, since they all
define the extension_cpp namespace. A declared failure must fail with its
declared message; a pass where a failure is declared fails the test. CUDA
cells skip without a GPU. Also checked: each step changes only the files it
teaches, and each README shows the real diff and the real errors.
"""

import functools
import json
import re
from pathlib import Path

import pytest
from conformance.cases import classic_only

from tools.tutorial import buildcache, matrix, readme_diff, walk

pytestmark = [
    classic_only("the tutorial does not depend on the build under test; the classic run covers it"),
    # buildcache.build replaces a checkpoint's library in tutorial/ itself:
    # under `make tutorial`'s workers (--dist loadgroup), one process does.
    pytest.mark.xdist_group("checkpoints"),
]

TUTORIAL = Path(__file__).resolve().parents[2] / "tutorial"

ROWS = [*matrix.STAGES, matrix.REFERENCE]


@functools.cache
def walked() -> dict:
    """The walk's reports (make tutorial runs it first), by row."""
    path = walk.CHECKS_REPORT
    return json.loads(path.read_text()) if path.exists() else {}


@functools.cache
def report(stage: str) -> dict:
    """Builds (or reuses) the checkpoint and runs its checks, once per
    session; or the walk's report of the same sources (buildcache.checks_key)."""
    path = None if stage == matrix.REFERENCE else TUTORIAL / stage
    if path is not None:
        buildcache.build(path)
    made = walked().get(stage)
    if made is not None and made.get("sources") == buildcache.checks_key(path):
        return made
    return buildcache.run_checks(path)


@pytest.mark.slow
@pytest.mark.parametrize("check", matrix.CHECK_KEYS)
@pytest.mark.parametrize("stage", ROWS)
def test_cell(stage, check):
    result = report(stage)["checks"][check]
    expected = matrix.expected(stage, check)
    if result["status"] == "skip":
        assert check in matrix.MAY_SKIP, f"only {sorted(matrix.MAY_SKIP)} may skip, got {result}"
        pytest.skip(result["error"])
    if expected == matrix.PASS:
        assert result["status"] == "pass", result.get("error")
    else:
        assert result["status"] == "fail", f"{stage}/{check} passed, declared: {expected}"
        assert expected.match in result["error"], result["error"]


@pytest.mark.slow
@pytest.mark.parametrize("stage", matrix.STAGES)
def test_imports_the_checkpoint(stage):
    assert report(stage)["package"] == str((TUTORIAL / stage / "extension_cpp").resolve())


def test_reference_is_not_a_checkpoint():
    assert not report(matrix.REFERENCE)["package"].startswith(str(TUTORIAL))


@pytest.mark.parametrize("stage", matrix.STAGES[1:])
def test_step_changes_only_its_files(stage):
    prev = matrix.STAGES[matrix.STAGES.index(stage) - 1]
    old, new = readme_diff.files(TUTORIAL / prev), readme_diff.files(TUTORIAL / stage)
    changed = {f for f in set(old) | set(new) if old.get(f) != new.get(f)} - {"README.md"}
    assert changed == matrix.STEP_FILES[stage]
    for name in matrix.ONLY_ADDS.get(stage, ()):
        removed = [
            line
            for line in readme_diff.difflib.ndiff(
                old[name].decode().splitlines(), new[name].decode().splitlines()
            )
            if line.startswith("- ")
        ]
        assert removed == [], f"{stage}/{name} should only add lines"
    for name, pattern in matrix.ONLY_LINES_MATCHING.get(stage, {}).items():
        for line in readme_diff.difflib.ndiff(
            old[name].decode().splitlines(), new[name].decode().splitlines()
        ):
            if line[:2] in ("- ", "+ "):
                assert re.search(pattern, line[2:]), f"{stage}/{name}: {line!r} is not this step"


@pytest.mark.parametrize("stage", matrix.STAGES[1:])
def test_readme_diff_is_the_real_diff(stage):
    readme = (TUTORIAL / stage / "README.md").read_text()
    assert readme_diff.current(readme) == readme_diff.block(stage), (
        "run python -m tools.tutorial.readme_diff"
    )


@pytest.mark.parametrize("stage", matrix.STAGES[1:])
def test_readme_diff_shows_or_links_every_changed_file(stage):
    """A README may show part of a long step's diff (show= on its diff:begin
    line); each file it leaves out, or shows in part, is linked below it."""
    prev = matrix.STAGES[matrix.STAGES.index(stage) - 1]
    shown = readme_diff.current((TUTORIAL / stage / "README.md").read_text())
    for name in matrix.STEP_FILES[stage]:
        if name not in readme_diff.files(TUTORIAL / prev):
            assert f"`{name}`" in shown, f"{stage}: the new file {name} is not named"
            continue
        old = readme_diff.files(TUTORIAL / prev)[name].decode().splitlines()
        new = readme_diff.files(TUTORIAL / stage)[name].decode().splitlines()
        changed = [line for line in readme_diff.difflib.ndiff(old, new) if line[:2] in ("- ", "+ ")]
        whole = all(line[0] + line[2:] in shown.splitlines() for line in changed)
        assert whole or f"[`{name}`]({name})" in shown, (
            f"{stage}: {name} is neither shown nor linked"
        )


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("stage", matrix.STAGES)
def test_readme_shows_the_real_errors(stage):
    readme = (TUTORIAL / stage / "README.md").read_text()
    for heading in (
        "What you will learn",
        "What changed",
        "Build and run",
        "What works now",
        "What still fails",
    ):
        assert heading in readme
    for check in matrix.CHECK_KEYS:
        expected = matrix.expected(stage, check)
        if isinstance(expected, matrix.Fail):
            assert _words(expected.match) in _words(readme), (stage, check, expected.match)
