"""Functional ops against the same loop writing into an output allocated once.

    python scripts/bench_outputs.py [--threads 16] [--log2 20] [--layouts WORDS]

For each layout this times the three ops against PyTorch's eager ones
(bench_layouts' `candidates`, without torch.compile), interleaved
(bench_ratios' `measure`) by the wall clock, and gives each ratio against
the fastest PyTorch implementation from the fastest batch and from the
median one; then, for `mymul` and `torch.mul`, the output addresses that
consecutive calls get from the allocator and the minor page faults per
call. (The layout sweeps time the calling thread's CPU time instead; at 16
threads the two clocks agreed within 3% on every ratio, 2026-11-25.)

It was written to test one lead. At 16 threads on the GPU host's Xeon
(float32, 2^20 elements), before the run loop loaded two vectors before
storing either, `mymul` and `mymuladd` measured 0.76-0.91 of `torch.mul`
and `addcmul` on a broadcast row while `myadd_out`, the same loop writing
into an output allocated once, measured 0.96-0.99: the output each
functional call allocates was the suspect. It is not the cause: ours and
`torch.mul` get the same address on every call and take no page faults up
to 2^22 elements, and the two loops built side by side (2026-11-25, the
results page `...-16threads-two-vector-loop.md`) put the functional ops
on a broadcast row at 0.83-1.02 of PyTorch's before the change and
0.95-1.03 after, with A/A 0.96-1.07. Past 32 MiB (glibc's largest mmap
threshold; 16385 faults per call at 2^24 float32 elements, none at 2^22)
every functional call, PyTorch's included, maps a fresh output and faults
in each of its pages; that costs the same for ours and for PyTorch's, and
`myadd_out` into a reused output avoids it.
"""

import argparse
import os
import resource
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_layouts import OPS, candidates, layouts  # noqa: E402
from bench_ratios import measure  # noqa: E402


def fastest_native(fns: dict, best: dict, op: str) -> tuple:
    """The key of PyTorch's fastest implementation of op (eager or addcmul)."""
    return min((k for k in fns if k[0] == op and k[1] != "ours"), key=best.get)


def addresses(fn, calls: int = 4) -> str:
    """The low 24 bits of the output's address over consecutive calls."""
    return " ".join(hex(fn().data_ptr() % (1 << 24)) for _ in range(calls))


def page_faults(fn, calls: int = 20) -> float:
    """Minor page faults per call of fn (the process's count, over `calls` calls)."""
    fn()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


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
        fns = candidates(a, b, compiled=False)
        samples = {k: [] for k in fns}
        best = measure(fns, args.rounds, args.calls, sync=lambda: None, samples=samples)
        median = {k: statistics.median(v) for k, v in samples.items()}
        # (label, ours, PyTorch's fastest eager implementation), then the A/A control.
        pairs = [(op, (op, "ours"), fastest_native(fns, best, op)) for op in OPS]
        pairs.append(("A/A", ("mymul", "eager"), ("control", "eager")))
        cells = [
            f"{label} {best[t] / best[o]:.2f}/{median[t] / median[o]:.2f}" for label, o, t in pairs
        ]
        print(
            f"{name}: {'  '.join(cells)}   (fastest/median batch; fastest "
            f"mymul {best[('mymul', 'ours')]:.1f} us, torch.mul "
            f"{best[('mymul', 'eager')]:.1f}, myadd_out {best[('myadd_out', 'ours')]:.1f}, "
            f"torch.add(out=) {best[('myadd_out', 'eager')]:.1f})",
            flush=True,
        )
        ours, native = fns[("mymul", "ours")], fns[("mymul", "eager")]
        print(
            f"    output addresses: ours {addresses(ours)}; torch.mul {addresses(native)}; "
            f"page faults per call: ours {page_faults(ours):.0f}, "
            f"torch.mul {page_faults(native):.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
