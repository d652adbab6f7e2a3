"""Runs the benchmark suite and writes its report: what `make bench` calls.

    python scripts/bench.py --device cpu --threads 1,2 --out docs/results/perf
    python scripts/bench.py --device cuda --out "$OUT"

Builds nothing: it benchmarks the extension_cpp that Python imports. Runs
tests/perf with EXTENSION_CPP_BENCH=full through pytest-benchmark, then
scripts/bench_report.py (plots, ratio tables, PASS/MISS) and
scripts/bench_ratios.py (the ratios timed interleaved, and per-call overhead). Files are named
<device>-<model>-torch<version>-<date>[...], so runs on different machines
sit side by side.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def label(device: str) -> str:
    import torch

    sys.path.insert(0, os.path.join(ROOT, "tests", "perf"))
    from cases import cpu_name

    # A CPU's model name alone does not tell a 2-core VM from a 16-core host.
    name = (
        torch.cuda.get_device_name() if device == "cuda" else f"{cpu_name()} {os.cpu_count()}cores"
    )
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    version = torch.__version__.split("+")[0]
    return f"{device}-{slug}-torch{version}-{datetime.date.today().isoformat()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", default="", help="CPU thread counts, e.g. 1,2")
    parser.add_argument("--dtypes", default="", help="restrict to these dtypes, e.g. float32")
    parser.add_argument("--out", default=os.environ.get("OUT") or "docs/results/perf")
    parser.add_argument("--no-compile", action="store_true", help="leave out torch.compile")
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    name = label(args.device)
    results = os.path.join(args.out, name + ".json")
    env = dict(os.environ, EXTENSION_CPP_BENCH="full", EXTENSION_CPP_BENCH_DEVICES=args.device)
    if args.threads:
        env["EXTENSION_CPP_BENCH_THREADS"] = args.threads
    if args.dtypes:
        env["EXTENSION_CPP_BENCH_DTYPES"] = args.dtypes
    if args.no_compile:
        env["EXTENSION_CPP_BENCH_COMPILE"] = "0"
    pytest = [sys.executable, "-m", "pytest", os.path.join(ROOT, "tests", "perf", "test_bench.py")]
    # -p no:warnings: the suite's warnings-as-errors guard `make test`; a full
    # run should not die on a library's UserWarning halfway through.
    pytest += ["-q", "-p", "no:cacheprovider", "-p", "no:warnings", f"--benchmark-json={results}"]
    pytest += ["--benchmark-columns=min,median,rounds", "--benchmark-group-by=group"]
    subprocess.run(pytest, env=env, cwd=ROOT, check=True)

    report = os.path.join(ROOT, "scripts", "bench_report.py")
    subprocess.run([sys.executable, report, results], check=True)
    ratios = os.path.join(ROOT, "scripts", "bench_ratios.py")
    out = os.path.join(args.out, name + "-ratios.md")
    subprocess.run([sys.executable, ratios, "--device", args.device, "--out", out], check=True)


if __name__ == "__main__":
    main()
