"""Turns a tests/perf pytest-benchmark JSON into plots, ratio tables and a verdict.

    python -m benchmarks.report RESULTS.json [--out DIR] [--md FILE]

Writes next to the JSON (or into DIR), named after it:
    <name>_<dtype>.png   bandwidth against N, one panel per op and variant
                         (CPU thread count, or CUDA kernel/call time)
    <name>.md            the ratio tables and the PASS/MISS list (or FILE);
                         python -m benchmarks puts them on the machine's page
and prints the PASS/MISS list. Every ratio compares numbers from the same
run; the exit status is 0 whatever the verdict (a miss is a finding, not a
crash). Needs only the standard library and matplotlib.
"""

from __future__ import annotations

import argparse
import collections
import json
import os

IMPLS = ("ours", "eager", "native", "compile", "copy")
BASELINES = ("eager", "native", "compile")


def load(path: str):
    """{(variant, dtype, op): {n: {impl: gbps}}} and the run's metadata."""
    with open(path) as f:
        data = json.load(f)
    table = collections.defaultdict(lambda: collections.defaultdict(dict))
    copies = collections.defaultdict(dict)
    meta = {}
    for bench in data["benchmarks"]:
        info = bench["extra_info"]
        if "gbps" not in info:
            continue
        if info["device"] == "cpu":
            variant = f"cpu, {info['threads']} thread{'s' if info['threads'] != 1 else ''}"
        else:
            variant = f"{info['device']}, {info['metric']} time"
        meta.setdefault("device_name", info["device_name"])
        meta.setdefault("torch", info["torch_version"])
        if info["impl"] == "copy":
            copies[(variant, info["dtype"])][info["n"]] = info["gbps"]
        else:
            table[(variant, info["dtype"], info["op"])][info["n"]][info["impl"]] = info["gbps"]
    for (variant, dtype, _op), by_n in table.items():
        for n, row in by_n.items():
            if n in copies[(variant, dtype)]:
                row["copy"] = copies[(variant, dtype)][n]
    meta["date"] = data.get("datetime", "")[:10]
    # The benchmarked machine's 1-minute load average, recorded by each test.
    loads = [
        b["extra_info"]["load_1min"] for b in data["benchmarks"] if "load_1min" in b["extra_info"]
    ]
    cpus = data["machine_info"].get("cpu", {}).get("count", "?")
    meta["load"] = (
        f"{min(loads):.1f} to {max(loads):.1f} on {cpus} CPUs" if loads else "not recorded"
    )
    return table, meta


def log2(n: int) -> int:
    return n.bit_length() - 1


def best_baseline(row: dict) -> float | None:
    values = [row[b] for b in BASELINES if b in row]
    return max(values) if values else None


# ---------------------------------------------------------------------------
# Targets. Each check: (description, applies(variant, n), ratio(row), minimum).
# ---------------------------------------------------------------------------


def checks(variant: str):
    if variant.startswith("cpu"):
        return [
            ("ours/native, N >= 2^16", lambda n: n >= 2**16, lambda r: r["ours"] / r["native"], 1.0)
        ]
    if variant.endswith("kernel time"):
        return [
            ("ours/copy, N >= 2^24", lambda n: n >= 2**24, lambda r: r["ours"] / r["copy"], 1.0),
            (
                "ours/best baseline, N >= 2^24",
                lambda n: n >= 2**24,
                lambda r: r["ours"] / best_baseline(r),
                1.15,
            ),
            (
                "ours/best baseline, N = 2^22",
                lambda n: n == 2**22,
                lambda r: r["ours"] / best_baseline(r),
                1.05,
            ),
        ]
    return [
        ("ours/native, all N (whole call)", lambda n: True, lambda r: r["ours"] / r["native"], 1.0)
    ]


def verdicts(table):
    """[(variant, dtype, op, check, worst ratio, at N, minimum, PASS/MISS)]."""
    out = []
    for (variant, dtype, op), by_n in sorted(table.items()):
        for name, applies, ratio, minimum in checks(variant):
            values = []
            for n, row in by_n.items():
                if not applies(n):
                    continue
                try:
                    values.append((ratio(row), n))
                except (KeyError, TypeError, ZeroDivisionError):
                    continue
            if not values:
                continue
            worst, at = min(values)
            out.append(
                (
                    variant,
                    dtype,
                    op,
                    name,
                    worst,
                    at,
                    minimum,
                    "PASS" if worst >= minimum else "MISS",
                )
            )
    return out


def markdown(table, meta, results) -> str:
    lines = [
        f"# Benchmarks: {meta['device_name']}, torch {meta['torch']}, {meta['date']}",
        "",
        "Effective bandwidth counts 2 reads + 1 write per element (copy: 1 + 1). "
        "Ratios are of GB/s measured in the same run; > 1 means ours is faster. "
        "`best` is the fastest of eager, the native op and torch.compile. "
        f"Host load average (1 min) during the run: {meta['load']}.",
        "",
        "Each implementation is timed in its own test, one after another, so "
        "the machine's drift between tests is in these ratios; the interleaved "
        "tables (the layout sweep and the whole-call ratios, with their A/A "
        "control) are the measurement of record. See Note [Interleaved timing].",
        "",
    ]
    by_variant = collections.defaultdict(dict)
    for (variant, dtype, op), by_n in table.items():
        by_variant[(variant, dtype)][op] = by_n
    for (variant, dtype), ops in sorted(by_variant.items()):
        names = sorted(ops)
        lines += [f"## {dtype}, {variant}", ""]
        header = "| N | copy GB/s |" + "".join(
            f" {op} GB/s | /copy | /native | /best |" for op in names
        )
        lines += [header, "|" + "---|" * (2 + 4 * len(names))]
        sizes = sorted({n for by_n in ops.values() for n in by_n})
        for n in sizes:
            first = next(iter(ops.values())).get(n, {})
            cells = [f"2^{log2(n)}", f"{first.get('copy', float('nan')):.1f}"]
            for op in names:
                row = ops[op].get(n, {})
                ours = row.get("ours")
                best = best_baseline(row)
                cells += [
                    f"{ours:.1f}" if ours else "-",
                    f"{ours / row['copy']:.2f}" if ours and "copy" in row else "-",
                    f"{ours / row['native']:.2f}" if ours and "native" in row else "-",
                    f"{ours / best:.2f}" if ours and best else "-",
                ]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Targets", "", "| variant | dtype | op | check | worst | at N | target | |"]
    lines.append("|---|---|---|---|---|---|---|---|")
    for variant, dtype, op, name, worst, at, minimum, verdict in results:
        lines.append(
            f"| {variant} | {dtype} | {op} | {name} | {worst:.2f} | 2^{log2(at)} | "
            f">= {minimum} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def plot(table, meta, prefix: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    dtypes = sorted({dtype for (_v, dtype, _op) in table})
    for dtype in dtypes:
        variants = sorted({v for (v, d, _op) in table if d == dtype})
        ops = sorted({op for (_v, d, op) in table if d == dtype})
        fig, axes = plt.subplots(
            len(variants), len(ops), figsize=(5 * len(ops), 3.6 * len(variants)), squeeze=False
        )
        for i, variant in enumerate(variants):
            for j, op in enumerate(ops):
                ax = axes[i][j]
                by_n = table.get((variant, dtype, op), {})
                sizes = sorted(by_n)
                for impl in IMPLS:
                    points = [(n, by_n[n][impl]) for n in sizes if impl in by_n[n]]
                    if points:
                        style = dict(lw=2.5) if impl == "ours" else dict(lw=1.2)
                        if impl == "copy":
                            style.update(ls="--", color="gray")
                        ax.plot(*zip(*points), marker="o", ms=3, label=impl, **style)
                ax.set_xscale("log", base=2)
                ax.set_title(f"{op} ({variant})", fontsize=10)
                ax.set_xlabel("N (elements)")
                ax.set_ylabel("effective GB/s")
                ax.grid(True, alpha=0.3)
                ax.legend(fontsize=8)
        fig.suptitle(f"{dtype}: {meta['device_name']}, torch {meta['torch']}, {meta['date']}")
        fig.tight_layout()
        path = f"{prefix}_{dtype}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json")
    parser.add_argument("--out", help="folder for the outputs (default: the JSON's)")
    parser.add_argument("--md", help="write the tables here instead")
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args()
    table, meta = load(args.json)
    out = args.out or os.path.dirname(os.path.abspath(args.json))
    os.makedirs(out, exist_ok=True)
    prefix = os.path.join(out, os.path.splitext(os.path.basename(args.json))[0])
    results = verdicts(table)
    md = args.md or prefix + ".md"
    with open(md, "w") as f:
        f.write(markdown(table, meta, results))
    written = [] if args.no_plots else plot(table, meta, prefix)
    width = max((len(r[0]) for r in results), default=10)
    print(f"\nTargets ({meta['device_name']}, torch {meta['torch']}):")
    for variant, dtype, op, name, worst, at, minimum, verdict in results:
        print(
            f"  {verdict:4s}  {variant:{width}s}  {dtype:8s}  {op:9s}  {name:32s} "
            f"worst {worst:5.2f} at 2^{log2(at):<2d} (target >= {minimum})"
        )
    missed = sum(r[-1] == "MISS" for r in results)
    print(f"  {len(results) - missed} PASS, {missed} MISS")
    print("wrote", md, *written)


if __name__ == "__main__":
    main()
