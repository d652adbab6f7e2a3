"""Turns the reference suite's junit XML into the Markdown of the conformance page.

`make test` runs pytest with --junitxml=docs/results/conformance.xml; the docs
build calls render_conformance() on that file (see _ext/generate.py). Run it by
hand to preview the table:

    python docs/render_results.py [docs/results/conformance.xml]

The page states when and where the run happened from the XML's own timestamp
and hostname, and lists any testsuite properties the suite recorded (such as
the torch version or the GPU), so a reader can tell a CPU-only run, where the
CUDA cases are skipped, from a run on a GPU machine.
"""

import os
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from datetime import datetime, timezone

DOCS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(DOCS)
DEFAULT_XML = os.path.join(DOCS, "results", "conformance.xml")


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


def _test_function(case: ET.Element) -> str:
    """'tests.conformance.test_ops' + 'test_values[cpu-float32]' -> 'test_ops.py::test_values'."""
    module = (case.get("classname") or "").split(".")
    name = re.sub(r"\[.*\]$", "", case.get("name") or "")
    # classname is "pkg.module" or "pkg.module.Class"; keep the file and class.
    parts = [p for p in module if p != "tests"]
    if parts and parts[-1][:1].isupper():
        return f"{'/'.join(parts[:-1])}.py::{parts[-1]}::{name}"
    return f"{'/'.join(parts)}.py::{name}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_conformance(xml_path: str, command: str = "make test") -> str:
    """The summary of a junit XML run: counts per test function, failures, skip reasons."""
    root = ET.parse(xml_path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    suite = suites[0]
    counts: dict[str, Counter] = defaultdict(Counter)
    totals: Counter = Counter()
    problems: list[tuple[str, str, str]] = []  # (outcome, test id, message)
    skip_reasons: Counter = Counter()
    for s in suites:
        for case in s.iter("testcase"):
            outcome, message = _outcome(case)
            counts[_test_function(case)][outcome] += 1
            totals[outcome] += 1
            if outcome in ("failed", "error"):
                problems.append((outcome, f"{case.get('classname')}::{case.get('name')}", message))
            elif outcome == "skipped":
                skip_reasons[message] += 1

    when = suite.get("timestamp", "")
    try:
        when = datetime.fromisoformat(when).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        when = when or "an unknown time"
    host = suite.get("hostname", "an unknown host")
    seconds = sum(float(s.get("time") or 0) for s in suites)
    lines = [
        f"Produced by `{command}` at **{when}** on host **{host}** "
        f"(`{os.path.relpath(xml_path, REPO)}`, "
        f"{seconds:.0f} s of tests).",
        "",
    ]
    properties = [(p.get("name"), p.get("value")) for s in suites for p in s.iter("property")]
    if properties:
        lines += ["| property | value |", "| --- | --- |"]
        lines += [f"| {_cell(str(k))} | {_cell(str(v))} |" for k, v in properties]
        lines.append("")
    order = ("passed", "failed", "error", "skipped", "xfailed")
    summary = ", ".join(f"{totals[o]} {o}" for o in order if totals[o])
    lines += [f"**{sum(totals.values())} tests: {summary}.**", ""]
    lines += ["| test | " + " | ".join(order) + " |", "| --- |" + " ---: |" * len(order)]
    for test in sorted(counts):
        row = " | ".join(str(counts[test][o] or "") for o in order)
        lines.append(f"| `{_cell(test)}` | {row} |")
    lines.append("")
    if problems:
        lines += ["### Failures", "", "| outcome | test | message |", "| --- | --- | --- |"]
        lines += [f"| {o} | `{_cell(t)}` | {_cell(m)[:300]} |" for o, t, m in problems]
        lines.append("")
    if skip_reasons:
        lines += ["### Why tests were skipped", "", "| tests | reason |", "| ---: | --- |"]
        lines += [f"| {n} | {_cell(r)} |" for r, n in skip_reasons.most_common()]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_conformance(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_XML))


def render_tests(xml_path: str, module: str, names: list[str]) -> str:
    """A table of how the named tests of one module fared in a junit XML run."""
    root = ET.parse(xml_path).getroot()
    rows = []
    for case in root.iter("testcase"):
        function = re.sub(r"\[.*\]$", "", case.get("name") or "")
        if case.get("classname", "").endswith(module) and function in names:
            outcome, message = _outcome(case)
            rows.append(f"| `{case.get('name')}` | {outcome} | {_cell(message[:300])} |")
    if not rows:
        return ""
    return "\n".join(["| test | result | message |", "| --- | --- | --- |", *rows]) + "\n"


SYMBOLS = {"pass": "✓", "fail": "✗", "skip": "–"}


def render_tutorial_matrix(
    report: dict, checks: list[tuple[str, str, str]], label_prefix: str = ""
) -> str:
    """The stage x check table of tutorial/walk.py's report: marks, errors in footnotes.

    checks: (key, column title, what it runs), tutorial/matrix.py's CHECKS. A
    cell is ✓, ✗ or – (skipped); each ✗ carries a footnote with the reason and
    the first line of the error the reader sees, one footnote per reason.
    label_prefix starts every footnote label, so two tables can share a page.
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
                shown = error if len(error) <= 400 else error[:400] + " [...]"
                notes[reason] = f"[^{label}]: **{reason}**" + (f": `{shown}`" if shown else "")
            text += f"[^{label}]"
        return text

    titles = [title for _, title, _ in checks]
    lines = ["| checkpoint | " + " | ".join(titles) + " |", "| --- |" + " :-: |" * len(titles)]
    for stage, cells in report["stages"].items():
        lines.append(f"| {stage} | " + " | ".join(mark(cells[key]) for key, _, _ in checks) + " |")
    lines += [
        "",
        f"✓ passes, ✗ fails as `tutorial/matrix.py` declares, – skipped. torch "
        f"{report['torch']}, {'with' if report['cuda'] else 'without'} a GPU.",
        "",
        "Columns: " + "; ".join(f"**{title}**: {what}" for _, title, what in checks) + ".",
        "",
        *[notes[reason] + "\n" for reason in notes],
    ]
    return "\n".join(lines)
