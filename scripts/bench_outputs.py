"""Functional ops against the same loop writing into an output allocated once.

    python scripts/bench_outputs.py [--threads 16] [--log2 20] [--layouts WORDS]

At 16 threads on the GPU host's Xeon (float32, 2^20 elements), `mymul` and
`mymuladd` measured 0.76-0.91 of `torch.mul` and `addcmul` on a broadcast
row, while `myadd_out` on the same inputs, the same run loop writing into an
output allocated once, measured 0.96-0.99 of `torch.add(out=)`. The
difference is the output each functional call allocates. For each layout
this times the three ops against PyTorch's, interleaved (bench_ratios'
`measure`), by the wall clock, and gives each ratio from the fastest batch
and from the median one; then the output addresses that consecutive calls
get from the allocator, ours and `torch.mul`'s. (The layout sweeps time the
calling thread's CPU time instead; at 16 threads the two clocks agreed
within 3% on every ratio, 2026-11-25.)
"""

import argparse
import os
import statistics
import sys

import torch

import extension_cpp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_layouts import layouts  # noqa: E402
from bench_ratios import measure  # noqa: E402

# (label, ours, PyTorch's): each pair is timed in the same rounds.
PAIRS = (
    ("mymul", "mymul", "torch.mul"),
    ("mymuladd", "mymuladd", "addcmul"),
    ("myadd_out", "myadd_out", "torch.add(out=)"),
)


def candidates(a, b) -> dict:
    out = torch.empty_like(a + b)
    c0 = torch.tensor(0.5, dtype=a.dtype)
    return {
        "mymul": lambda: extension_cpp.mymul(a, b),
        "torch.mul": lambda: torch.mul(a, b),
        "mymuladd": lambda: extension_cpp.mymuladd(a, b, 0.5),
        "addcmul": lambda: torch.addcmul(c0, a, b),
        "myadd_out": lambda: extension_cpp.myadd_out(a, b, out),
        "torch.add(out=)": lambda: torch.add(a, b, out=out),
        "A/A": lambda: torch.mul(a, b),
    }


def addresses(fn, calls: int = 4) -> str:
    """The low 24 bits of the output's address over consecutive calls."""
    return " ".join(hex(fn().data_ptr() % (1 << 24)) for _ in range(calls))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--log2", type=int, default=20, help="elements per operand, as 2^N")
    parser.add_argument("--layouts", default="contiguous,broadcast", help="comma-separated words")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--calls", type=int, default=100, help="calls per timed batch")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    words = args.layouts.split(",")
    print(f"{args.threads} threads, float32, 2^{args.log2} elements, torch {torch.__version__}")
    for name, make in layouts(args.log2).items():
        if not any(word in name for word in words):
            continue
        a, b = make(dtype=torch.float32, device="cpu")
        fns = candidates(a, b)
        samples = {k: [] for k in fns}
        best = measure(fns, args.rounds, args.calls, sync=lambda: None, samples=samples)
        cells = []
        for label, ours, theirs in PAIRS + (("A/A", "A/A", "torch.mul"),):
            fastest = best[theirs] / best[ours]
            median = statistics.median(samples[theirs]) / statistics.median(samples[ours])
            cells.append(f"{label} {fastest:.2f}/{median:.2f}")
        print(
            f"{name}: {'  '.join(cells)}   (fastest/median batch; ours "
            f"mymul {best['mymul']:.1f} us)",
            flush=True,
        )
        print(
            f"    output addresses: ours {addresses(fns['mymul'])}; "
            f"torch.mul {addresses(fns['torch.mul'])}",
            flush=True,
        )


if __name__ == "__main__":
    main()
