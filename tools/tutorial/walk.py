"""Walks the tutorial: builds each checkpoint in order, runs its checks, prints the matrix.

    python -m tools.tutorial.walk          # what `make tutorial` runs (from the repository root)

One row per checkpoint, then the installed reference package's row. Every
cell is compared with what tools/tutorial/matrix.py declares: a check that passes
where a failure is declared, or fails with another error, is reported and
makes the walk exit 1. CUDA cells are "skip (no GPU)" on a machine without
one. The matrix is also written to build/results/tutorial_matrix.{json,md}
(tutorial_matrix_gpu.{json,md} where a GPU ran the CUDA checks), outside the
tracked tree; docs/results/README.md says how a table reaches the docs.

The rows are built and checked side by side (--jobs, by default half the
CPUs, at least 2: a row spends much of its time waiting on a compiler or a
child process); each row is printed as it finishes, and the matrix in order
at the end. The checks' raw reports, each with what it was made from
(buildcache.checks_key), go to build/results/tutorial_checks.json, where
tests/tutorial/test_tutorial.py takes them instead of running the same
checks again (make tutorial runs both).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from tools.docs import render_results
from tools.tutorial import buildcache, matrix
from tools.tutorial.matrix import PASS, Fail

RESULTS = buildcache.REPO / "build" / "results"
CHECKS_REPORT = RESULTS / "tutorial_checks.json"
SYMBOL = {"pass": "✓", "fail": "✗", "skip": "-"}


def judge(stage: str, check: str, result: dict) -> dict:
    """The cell: the result, what was expected, and whether they agree."""
    expected = matrix.expected(stage, check)
    status, error = result["status"], result.get("error", "")
    cell = {"status": status, "expected": "pass" if expected == PASS else "fail"}
    if isinstance(expected, Fail):
        cell["match"] = expected.match
        cell["reason"] = expected.reason
    if status == "skip":
        cell["reason"] = f"skip ({error})"
        cell["as_expected"] = None
    elif expected == PASS:
        cell["as_expected"] = status == "pass"
    else:
        cell["as_expected"] = status == "fail" and expected.match in error
    if status == "fail":
        cell["error"] = error
    return cell


def print_header(width: int) -> None:
    titles = [title for _, title, _ in matrix.CHECKS]
    print(f"{'':{width}}  " + "  ".join(titles))


def print_row(stage: str, cells: dict, width: int) -> None:
    parts = []
    for key, title, _ in matrix.CHECKS:
        mark = SYMBOL[cells[key]["status"]] + ("!" if cells[key]["as_expected"] is False else "")
        parts.append(f"{mark:^{len(title)}}")
    print(f"{stage:{width}}  " + "  ".join(parts), flush=True)
    reasons: dict[str, list[str]] = {}
    for key, title, _ in matrix.CHECKS:
        cell = cells[key]
        if cell["status"] != "pass" and cell["as_expected"] is not False:
            reasons.setdefault(cell.get("reason", "?"), []).append(title)
    for reason, titles in reasons.items():
        print(f"{'':{width}}    {', '.join(titles)}: {reason}")
    for key, title, _ in matrix.CHECKS:
        cell = cells[key]
        if cell["as_expected"] is False:
            want = "pass" if cell["expected"] == "pass" else f"fail with {cell['match']!r}"
            got = cell.get("error", "pass").splitlines()[0][:300]
            print(f"{'':{width}}    UNEXPECTED {title}: expected {want}, got: {got}")


def results_name(report: dict) -> str:
    """tutorial_matrix, or tutorial_matrix_gpu for a run with a GPU: the docs
    show both, so a walk here (CI has no GPU) keeps the GPU machine's table."""
    return "tutorial_matrix_gpu" if report["cuda"] else "tutorial_matrix"


def write_results(report: dict) -> str:
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = results_name(report)
    (RESULTS / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(
        # The docs show both tables on one page, the GPU one second: their
        # footnotes need distinct labels, and the columns are described once.
        render_results.render_tutorial_matrix(
            report,
            matrix.CHECKS,
            label_prefix="gpu-" if report["cuda"] else "",
            describe_columns=not report["cuda"],
        )
    )
    return name


def walk_row(stage: str, path) -> tuple[dict, str]:
    """Builds the row's checkpoint (None: the reference package) and runs its
    checks: (checks.py's report, a line saying how long each took)."""
    said = []
    if path is not None:
        seconds, cached = buildcache.build(path)
        said.append(f"{'reused a cached build' if cached else 'built'} in {seconds:.1f}s")
    t0 = time.perf_counter()
    result = buildcache.run_checks(path)
    said.append(f"{len(matrix.CHECKS)} checks in {time.perf_counter() - t0:.1f}s")
    result["sources"] = buildcache.checks_key(path)
    return result, ", ".join(said)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-reference", action="store_true", help="skip the reference row")
    parser.add_argument(
        "--jobs", type=int, default=max(2, (os.cpu_count() or 2) // 2), help="rows at a time"
    )
    args = parser.parse_args()

    import torch

    cuda = torch.cuda.is_available()
    gpu = torch.cuda.get_device_name() if cuda else "none"
    print(f"torch {torch.__version__}; GPU: {gpu}")
    width = max(len(s) for s in matrix.STAGES + [matrix.REFERENCE])
    report = {
        "torch": torch.__version__,
        "cuda": cuda,
        "machine": gpu if cuda else f"{render_results.cpu_name()}, {os.cpu_count()} cores",
        "stamp": render_results.stamp("make tutorial"),
        "stages": {},
    }
    rows = [(stage, buildcache.TUTORIAL / stage) for stage in matrix.STAGES]
    if not args.no_reference:
        rows.append((matrix.REFERENCE, None))
    print(f"building and checking {len(rows)} rows, {args.jobs} at a time", flush=True)
    start = time.perf_counter()
    raw, cells_of = {}, {}
    # The second torch's venv (pip: mostly download and unpacking) is made
    # while the first rows build; each row's checks wait for it (its lock).
    with ThreadPoolExecutor(max_workers=1) as venv, ThreadPoolExecutor(args.jobs) as pool:
        other_torch = venv.submit(buildcache.other_torch_python)
        running = {pool.submit(walk_row, stage, path): stage for stage, path in rows}
        for done, future in enumerate(as_completed(running), 1):
            stage = running[future]
            raw[stage], said = future.result()
            cells = {key: judge(stage, key, raw[stage]["checks"][key]) for key in matrix.CHECK_KEYS}
            cells_of[stage] = cells
            print(f"[{done}/{len(rows)}] {stage}: {said}", flush=True)
            print_header(width)
            print_row(stage, cells, width)
            print(flush=True)
        other_torch.result()  # its failure, if the rows did not already raise it
    report["stages"] = {stage: cells_of[stage] for stage, _ in rows}
    every_cell = [cell for cells in report["stages"].values() for cell in cells.values()]
    failures = sum(cell["as_expected"] is False for cell in every_cell)

    print("The matrix (✓ pass, ✗ fails as declared, - skipped, ! not as declared):")
    print_header(width)
    for stage, cells in report["stages"].items():
        print_row(stage, cells, width)
    name = write_results(report)
    CHECKS_REPORT.write_text(json.dumps(raw, indent=1) + "\n")
    print(f"\nwrote {RESULTS / name}.json and .md, and {CHECKS_REPORT.name}")
    print(f"{time.perf_counter() - start:.0f}s in all; ", end="")
    if failures:
        print(f"{failures} cell(s) not as declared in tools/tutorial/matrix.py")
        return 1
    print("every cell as declared in tools/tutorial/matrix.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
