"""Findings: the failed cases of a run grouped by op and cause (a fix names
one cause), and the report of them that the pytest plugin prints and
``Results.report()`` returns: a row per op with each of its causes, its
count of cases and its fix's number (and the checks it failed, where the
cause is not one check), then each fix once with a case. One row per op,
not per finding, so that a library's report fits a screen.

    100 findings (an op and a cause each) in 328 failed cases, 31 ops
    op                cases  cause cases [fix]
    gemv_4bit            25  no autograd kernel 11 [8] (autodiff), crash 7 [13] (...)
    [8] fix (11 cases): register a backward (torch.library.register_autograd) ...
        e.g. gemv_4bit-autodiff-cpu-float32-jvp-raises: jvp: a mode the OpSpec ...
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

from .case import ConformanceFailure
from .registrations import CAUSES

# How wide a row may grow before its causes go on to a line of their own.
WIDTH = 120

Findings = dict[tuple[str, str], list[ConformanceFailure]]


def group(failures: Iterable[ConformanceFailure]) -> Findings:
    """(op, fix) -> its failures, in the order they came."""
    found: Findings = {}
    for failure in failures:
        found.setdefault((failure.op, failure.fix), []).append(failure)
    return found


def _cause(found: list[ConformanceFailure], fix: str, number: int) -> str:
    """One cause of an op: its name, its count of cases and its fix's number,
    and the checks it failed where the cause is not their one check."""
    checks: dict[str, int] = {}
    for failure in found:
        checks[failure.check] = checks.get(failure.check, 0) + 1
    cause = CAUSES.get(fix, found[0].check)
    text = f"{cause} {len(found)} [{number}]"
    if set(checks) != {cause}:
        text += " (" + ", ".join(f"{c} {n}" for c, n in sorted(checks.items())) + ")"
    return text


def report(findings: Findings) -> list[str]:
    """The findings as lines of text: a summary line, a row per op, the fixes."""
    ordered = sorted(findings.items(), key=lambda kv: (kv[0][0], -len(kv[1])))
    fixes = list(dict.fromkeys(fix for (_, fix), _ in ordered))
    by_op: dict[str, list[tuple[str, list[ConformanceFailure]]]] = {}
    for (op, fix), found in ordered:
        by_op.setdefault(op, []).append((fix, found))
    total = sum(len(found) for found in findings.values())
    lines = [
        f"{len(findings)} findings (an op and a cause each) in {total} failed cases, "
        f"{len(by_op)} ops"
    ]
    rows = [("op", "cases", ["cause cases [fix]"])]
    for op, causes in by_op.items():
        described = [_cause(found, fix, fixes.index(fix) + 1) for fix, found in causes]
        rows.append((op, str(sum(len(found) for _, found in causes)), described))
    op_width = max(len(r[0]) for r in rows)
    count_width = max(len(r[1]) for r in rows)
    indent = " " * (op_width + count_width + 4)
    for op, count, causes in rows:
        line = f"{op:<{op_width}}  {count:>{count_width}}  {causes[0]}"
        for part in causes[1:]:  # a cause that does not fit goes on to the next line
            if len(line) + len(part) + 2 > WIDTH:
                lines.append(line + ",")
                line = indent + part
            else:
                line += ", " + part
        lines.append(line)
    for n, fix in enumerate(fixes, 1):
        cases = [c for (_, f), found in findings.items() if f == fix for c in found]
        counted = f"{len(cases)} case{'s' if len(cases) > 1 else ''}"
        lines += textwrap.wrap(f"[{n}] fix ({counted}): {fix}", WIDTH, subsequent_indent="    ")
        lines.append(f"    e.g. {cases[0].case}: {cases[0].what.splitlines()[0][:160]}")
    return lines
