"""Findings: the failed cases of a run grouped by op and cause (a fix names
one cause), and the report of them that the pytest plugin prints and
``Results.report()`` returns: a table of op x cause with each finding's
count of cases and checks, then each fix once with a case or two."""

from __future__ import annotations

from collections.abc import Iterable

from .case import ConformanceFailure
from .registrations import CAUSES

# Examples shown under each fix.
EXAMPLES = 2

Findings = dict[tuple[str, str], list[ConformanceFailure]]


def group(failures: Iterable[ConformanceFailure]) -> Findings:
    """(op, fix) -> its failures, in the order they came."""
    found: Findings = {}
    for failure in failures:
        found.setdefault((failure.op, failure.fix), []).append(failure)
    return found


def report(findings: Findings) -> list[str]:
    """The findings as lines of text: a summary line, the table, the fixes."""
    ordered = sorted(findings.items(), key=lambda kv: (kv[0][0], -len(kv[1])))
    fixes = list(dict.fromkeys(fix for (_, fix), _ in ordered))
    total = sum(len(found) for found in findings.values())
    lines = [f"{len(findings)} findings (an op and a cause each) in {total} failed cases"]
    rows = []
    for (op, fix), found in ordered:
        checks: dict[str, int] = {}
        for failure in found:
            checks[failure.check] = checks.get(failure.check, 0) + 1
        cause = CAUSES.get(fix, found[0].check)
        by_check = ", ".join(f"{c} {n}" for c, n in sorted(checks.items()))
        rows.append((op, f"{cause} [{fixes.index(fix) + 1}]", str(len(found)), by_check))
    header = ("op", "cause [fix]", "cases", "checks")
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(3)]
    for row in (header, *rows):
        lines.append(
            f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]}"
        )
    for n, fix in enumerate(fixes, 1):
        lines.append(f"[{n}] fix: {fix}")
        cases = [c for (_, f), found in findings.items() if f == fix for c in found]
        for failure in cases[:EXAMPLES]:
            lines.append(f"    {failure.case}: {failure.what.splitlines()[0][:160]}")
        if len(cases) > EXAMPLES:
            lines.append(f"    ... and {len(cases) - EXAMPLES} more")
    return lines
