"""Renders a run's raw results as the Markdown pages the docs show.

The commands that produce results write them outside the tracked tree, into
build/ (`make test`: build/results/conformance*.xml; `make tutorial`:
build/results/tutorial_matrix*.{json,md}; `make bench`: build/bench/), so
running them never changes a tracked file. A page reaches the docs only when
someone copies it into docs/results/ on purpose (docs/results/README.md says
how, page by page), and every page says where it came from: the command, the
commit it ran at and when.

    python -m tools.docs.render_results build/results/conformance.xml \
        [--out docs/results/conformance.md]

renders a junit XML of the test suite (the conformance page's tables).
walk.py and benchmarks/ import stamp() and render their own pages; --matrix
renders make matrix's cells (build/results/matrix/*.xml) as the compatibility page.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from datetime import datetime, timezone

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(REPO, "docs")


def commit() -> str:
    """This checkout's commit, short, with "+ local changes" when tracked files
    differ. A copy of the tree run on another machine (a GPU host's, whose
    .git, if any, is not this one's) names its commit in EXTENSION_CPP_COMMIT."""
    if os.environ.get("EXTENSION_CPP_COMMIT"):
        return os.environ["EXTENSION_CPP_COMMIT"]

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        head = git("rev-parse", "--short=10", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + (" + local changes" if dirty else "")


def cpu_name() -> str:
    """The CPU's model name, as /proc/cpuinfo gives it (else what platform knows)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def stamp(command: str) -> dict[str, str]:
    """What every results page states about its run."""
    return {
        "command": command,
        "commit": commit(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def stamp_line(s: dict[str, str]) -> str:
    """`command` at commit `abc`, date (and, for runs stamped by hand from the
    history, the commit that recorded the results)."""
    recorded = f" (results recorded in `{s['recorded']}`)" if s.get("recorded") else ""
    return f"`{s['command']}` at commit `{s['commit']}`{recorded}, {s['date']}"


def value_range(values) -> str:
    """Numbers as "low-high" to two decimals, or one number where both ends
    round alike: the spread of a set of ratios or A/A controls."""
    values = sorted(values)
    low, high = f"{values[0]:.2f}", f"{values[-1]:.2f}"
    return low if low == high else f"{low}-{high}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# --------------------------------------------------------------------------
# The test suite's junit XML


def _outcome(case: ET.Element) -> tuple[str, str]:
    """('passed' | 'failed' | 'error' | 'skipped' | 'xfailed', reason)."""
    for tag in ("failure", "error", "skipped"):
        node = case.find(tag)
        if node is not None:
            message = (node.get("message") or "").strip()
            if tag == "skipped" and node.get("type") == "pytest.xfail":
                return "xfailed", message
            return {"failure": "failed"}.get(tag, tag), message
    return "passed", ""


def _test_file(case: ET.Element) -> str:
    """'tests.conformance.test_ops[.Class]' -> 'conformance/test_ops.py'."""
    parts = [p for p in (case.get("classname") or "").split(".") if p != "tests"]
    if parts and parts[-1][:1].isupper():
        parts = parts[:-1]
    return "/".join(parts) + ".py"


ORDER = ("passed", "failed", "error", "skipped", "xfailed")
# Testsuite properties worth a reader's attention (tests/conftest.py records them).
SHOWN_PROPERTIES = ("python", "torch", "cpu", "gpu", "selection")


def render_conformance(xml_path: str) -> str:
    """The run's stamp, its totals, one row per test file, then failures and skips."""
    root = ET.parse(xml_path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    by_file: dict[str, Counter] = defaultdict(Counter)
    totals: Counter = Counter()
    problems: list[tuple[str, str, str]] = []  # (outcome, test id, message)
    skip_reasons: Counter = Counter()
    for s in suites:
        for case in s.iter("testcase"):
            outcome, message = _outcome(case)
            by_file[_test_file(case)][outcome] += 1
            totals[outcome] += 1
            if outcome in ("failed", "error"):
                problems.append((outcome, f"{case.get('classname')}::{case.get('name')}", message))
            elif outcome == "skipped":
                skip_reasons[message] += 1

    when = suites[0].get("timestamp", "")
    try:
        when = datetime.fromisoformat(when).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        when = when or "an unknown time"
    seconds = sum(float(s.get("time") or 0) for s in suites)
    properties = dict((p.get("name"), p.get("value")) for s in suites for p in s.iter("property"))
    run = {
        "command": properties.get("command", "pytest"),
        "commit": properties.get("commit", "not recorded"),
        "date": when,
        "recorded": properties.get("recorded", ""),
    }
    lines = [f"{stamp_line(run)}: {seconds:.0f} s of tests.", "", "| run | |", "| --- | --- |"]
    lines += [
        f"| {name} | {_cell(str(properties[name]))} |"
        for name in SHOWN_PROPERTIES
        if name in properties
    ]
    summary = ", ".join(f"{totals[o]} {o}" for o in ORDER if totals[o])
    lines += ["", f"**{sum(totals.values())} tests: {summary}.**", ""]
    lines += ["| test file | " + " | ".join(ORDER) + " |", "| --- |" + " ---: |" * len(ORDER)]
    for name in sorted(by_file):
        row = " | ".join(str(by_file[name][o] or "") for o in ORDER)
        lines.append(f"| `{name}` | {row} |")
    lines.append("")
    if problems:
        lines += ["**Failures:**", "", "| outcome | test | message |", "| --- | --- | --- |"]
        lines += [f"| {o} | `{_cell(t)}` | {_cell(m)[:300]} |" for o, t, m in problems]
        lines.append("")
    if skip_reasons:
        lines += ["**Why tests were skipped:**", "", "| tests | reason |", "| ---: | --- |"]
        lines += [f"| {n} | {_cell(r)[:200]} |" for r, n in skip_reasons.most_common()]
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# The tutorial's stage x check matrix (tools/tutorial/walk.py's report)

SYMBOLS = {"pass": "✓", "fail": "✗", "skip": "–"}


def render_tutorial_matrix(
    report: dict,
    checks: list[tuple[str, str, str]],
    label_prefix: str = "",
    describe_columns: bool = True,
) -> str:
    """The stage x check table of tools/tutorial/walk.py's report: marks, errors in footnotes.

    checks: (key, column title, what it runs), tools/tutorial/matrix.py's CHECKS. A
    cell is ✓, ✗ or – (skipped); each ✗ carries a footnote with the reason and
    the first line of the error the reader sees, one footnote per reason.
    label_prefix starts every footnote label, so two tables can share a page;
    the second of them need not describe the columns again.
    """
    notes: dict[str, str] = {}  # reason -> footnote text

    def mark(cell: dict) -> str:
        text = SYMBOLS[cell["status"]]
        if cell["status"] == "skip":
            reason = cell.get("reason", "skip")
            error = ""
        elif cell["status"] == "fail":
            reason = cell.get("reason", "unexpected failure")
            # The line with the declared message: often a cause, not the first line.
            lines = cell.get("error", "").splitlines() or [""]
            error = next((x for x in lines if cell.get("match", "\0") in x), lines[0])
            error = error.strip().removeprefix("caused by: ").replace("builtins.", "", 1)
        else:
            reason = error = ""
        if cell.get("as_expected") is False:
            text += " (not as declared)"
        if reason:
            label = label_prefix + re.sub(r"[^a-z0-9]+", "-", reason.lower()).strip("-")
            if reason not in notes:
                shown = error if len(error) <= 160 else error[:160] + " [...]"
                notes[reason] = f"[^{label}]: **{reason}**" + (f": `{shown}`" if shown else "")
            text += f"[^{label}]"
        return text

    titles = [title for _, title, _ in checks]
    lines = ["| checkpoint | " + " | ".join(titles) + " |", "| --- |" + " :-: |" * len(titles)]
    for stage, cells in report["stages"].items():
        lines.append(f"| {stage} | " + " | ".join(mark(cells[key]) for key, _, _ in checks) + " |")
    machine = report.get("machine", "")
    lines += [
        "",
        f"✓ passes, ✗ fails as `tools/tutorial/matrix.py` declares, – skipped. torch "
        f"{report['torch']}, {'with' if report['cuda'] else 'without'} a GPU"
        + (f" ({machine})" if machine else "")
        + (f"; {stamp_line(report['stamp'])}" if "stamp" in report else "")
        + ".",
        "",
        *(
            ["Columns: " + "; ".join(f"**{title}**: {what}" for _, title, what in checks) + ".", ""]
            if describe_columns
            else []
        ),
        *[notes[reason] + "\n" for reason in notes],
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------
# The compatibility matrix (make matrix: noxfile.py, one JUnit XML per cell)


def matrix_cells(folder: str) -> list[dict]:
    """One record per cell's JUnit XML: its metadata and its counts."""
    cells = []
    for path in sorted(glob.glob(os.path.join(folder, "*.xml"))):
        root = ET.parse(path).getroot()
        suite = root if root.tag == "testsuite" else next(root.iter("testsuite"))
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        counts = Counter(_outcome(case)[0] for case in suite.iter("testcase"))
        failed = counts["failed"] + counts["error"]
        cells.append(
            {
                "session": os.path.basename(path)[: -len(".xml")],
                **{k: props.get(k, "") for k in ("track", "python", "torch", "wheel", "sha256")},
                **{k: props.get(k, "") for k in ("seed", "refused", "commit")},
                "passed": counts["passed"],
                "failed": failed,
                "skipped": counts["skipped"],
                "seconds": round(float(suite.get("time") or 0)),
                "date": (suite.get("timestamp") or "")[:10],
                "ok": failed == 0 and counts["passed"] > 0,
            }
        )
    return cells


def render_compatibility(cells: list[dict]) -> str:
    """One section per track: its wheel (one sha256, or FAIL), then a row per cell."""
    lines = [
        "# Compatibility matrix",
        "",
        "Each track builds **one** wheel, installs that same file (sha256 checked) into a",
        "fresh venv per cell next to one torch release from PyPI, and runs its tests against",
        "the installed copy in a shuffled order (`pytest -p randomly --randomly-seed=N`",
        "replays a cell's). Rendered from the cells' JUnit files (`make matrix`).",
        "The tests marked `cpython_independent` (the AOTInductor package run from C++,",
        "the kernels' loops, the eager property tests) run in the first CPython's cell",
        "of each torch release of a track, and are deselected in the others.",
        "",
    ]
    for track in ("oldest", "newest", "stable", "harness"):
        rows = [c for c in cells if c["track"] == track]
        if not rows:
            continue
        hashes = {c["sha256"] for c in rows}
        commits = ", ".join(sorted({f"`{c['commit']}`" for c in rows}))
        dates = ", ".join(sorted({c["date"] for c in rows}))
        one = f"`{rows[0]['sha256']}`" if len(hashes) == 1 else f"FAIL: {len(hashes)} files"
        lines += [
            f"## {track}: `{rows[0]['wheel']}`",
            "",
            f"`nox -t {track}` at commit {commits}, {dates}; sha256 {one}; "
            f"{sum(c['seconds'] for c in rows) / 60:.1f} min of tests.",
            "",
            "| CPython | torch | result | passed | failed | skipped | seed | pytest |",
            "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for c in rows:
            result = "pass" if c["ok"] and len(hashes) == 1 else "FAIL"
            lines.append(
                f"| {c['python']} | {c['torch']} | {result} | {c['passed']} | {c['failed']} "
                f"| {c['skipped']} | {c['seed']} | {c['seconds']} s |"
            )
        refused = [c["refused"] for c in rows if c["refused"]]
        if refused:
            lines += [
                "",
                f"Each cell first installed the other track's wheel; its import failed, "
                f"naming both torch releases ({len(refused)} of {len(rows)} cells):",
                "",
                "```text",
                refused[0],
                "```",
            ]
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description="Renders a junit XML run as Markdown.")
    parser.add_argument("xml", help="e.g. build/results/conformance.xml (from make test)")
    parser.add_argument("--out", help="write the page here (e.g. docs/results/conformance.md)")
    parser.add_argument(
        "--matrix", action="store_true", help="xml is make matrix's folder of cells"
    )
    args = parser.parse_args()
    if args.matrix:
        cells = matrix_cells(args.xml)
        with open(os.path.splitext(args.out)[0] + ".json", "w", encoding="utf-8") as f:
            json.dump(cells, f, indent=1)
        text = render_compatibility(cells)
    else:
        text = render_conformance(args.xml)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
