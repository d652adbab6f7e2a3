"""Runs the benchmarks and writes the machine's results page: what `make bench` calls.

    python -m benchmarks --device cpu --threads 1,2 [--parts layouts,ratios] [--out DIR]
    python -m benchmarks --device cuda

Builds nothing: it benchmarks the extension_cpp that Python imports. A machine
is known by its kind, `cpu-<N>cores` or `cuda`, and each part of a run writes
its tables, stamped with its command, commit and date, to build/bench/<kind>/:

  layouts    benchmarks/layouts.py: every memory layout, dtype and op against
             the fastest PyTorch implementation (eager, addcmul, torch.compile),
             interleaved, with an A/A control. The page's headline comes from it.
  ratios     benchmarks/ratios.py: whole calls from one element up, against
             the native op, and the cost of one call.
  stable     benchmarks/stable.py: the stable-ABI build against the classic one.
  bandwidth  benchmarks/test_bench.py through pytest-benchmark, then
             benchmarks/report.py: GB/s, the fraction of a device copy, plots.

The page, <kind>.md (benchmarks/page.py), is assembled from the last results
of every part in that folder (so a part can be rerun alone) and written to
--out: build/bench by default, outside the tracked tree. `--out
docs/results/perf` (make bench BENCH_OUT=docs/results/perf) replaces the
docs' page for this kind of machine; the raw measurements stay in build/bench.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

from tools.docs.render_results import stamp

from .ops import cpu_name
from .page import PARTS, assemble

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAW = os.path.join(ROOT, "build", "bench")


def kind(device: str) -> str:
    """The kind of machine a page describes: cpu-2cores, cpu-16cores, cuda."""
    return "cuda" if device == "cuda" else f"cpu-{os.cpu_count()}cores"


def machine(device: str) -> str:
    import torch

    if device == "cuda":
        return torch.cuda.get_device_name()
    return f"{cpu_name()}, {os.cpu_count()} cores"


def run_part(part: str, args, raw: str) -> None:
    """Runs one part, writing raw/<part>.md and raw/<part>.json (its stamp)."""
    import torch

    md = os.path.join(raw, f"{part}.md")
    started = time.time()
    if part == "bandwidth":
        shown = run_bandwidth(args, raw, md)
    else:
        command = ["-m", f"benchmarks.{part}", "--device", args.device]
        if part == "layouts" and args.device == "cpu" and args.threads:
            command += ["--threads", args.threads]
        shown = "python " + shlex.join(command)
        print(f"==> {part}: {shown}", flush=True)
        subprocess.run([sys.executable, *command, "--out", md], cwd=ROOT, check=True)
    record = stamp(shown)
    record.update(machine=machine(args.device), torch=torch.__version__)
    with open(os.path.join(raw, f"{part}.json"), "w") as f:
        json.dump(record, f, indent=1)
    print(f"<== {part}: done in {time.time() - started:.0f} s", flush=True)


def run_bandwidth(args, raw: str, md: str) -> str:
    """pytest-benchmark over tests/perf, then its tables and plots; returns the command."""
    results = os.path.join(raw, "bandwidth-raw.json")
    env = dict(os.environ, EXTENSION_CPP_BENCH="full", EXTENSION_CPP_BENCH_DEVICES=args.device)
    if args.threads:
        env["EXTENSION_CPP_BENCH_THREADS"] = args.threads
    shown = f"EXTENSION_CPP_BENCH=full EXTENSION_CPP_BENCH_DEVICES={args.device} " + (
        f"EXTENSION_CPP_BENCH_THREADS={args.threads} " if args.threads else ""
    )
    shown += "pytest benchmarks/test_bench.py, then python -m benchmarks.report"
    print(f"==> bandwidth: {shown}", flush=True)
    pytest = [sys.executable, "-m", "pytest", os.path.join(ROOT, "benchmarks", "test_bench.py")]
    # -p no:warnings: the suite's warnings-as-errors guard `make test`; a full
    # run should not die on a library's UserWarning halfway through.
    pytest += ["-q", "-p", "no:cacheprovider", "-p", "no:warnings", f"--benchmark-json={results}"]
    pytest += ["--benchmark-columns=min,median,rounds", "--benchmark-group-by=group"]
    subprocess.run(pytest, env=env, cwd=ROOT, check=True)
    report = [sys.executable, "-m", "benchmarks.report", results, "--md", md]
    subprocess.run(report, cwd=ROOT, check=True)
    return shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", default="", help="CPU thread counts, e.g. 1,2")
    parser.add_argument("--parts", default=",".join(PARTS), help="some of " + ", ".join(PARTS))
    parser.add_argument("--out", default=RAW, help="where the page goes (default build/bench)")
    parser.add_argument(
        "--page-only", action="store_true", help="run nothing: rebuild the page from build/bench"
    )
    args = parser.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts: expected some of {', '.join(PARTS)}, got {', '.join(unknown)}")
    name = kind(args.device)
    raw = os.path.join(RAW, name)
    os.makedirs(raw, exist_ok=True)
    if not args.page_only:
        for part in parts:
            run_part(part, args, raw)
    path = assemble(name, raw, args.out)
    print(f"wrote {path} (raw results in {os.path.relpath(raw, ROOT)}/)")


if __name__ == "__main__":
    main()
