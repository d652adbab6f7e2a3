"""Step slices on a GPU: bandwidth by the bytes the memory system moves.

    python scripts/bench_step_bytes.py

bench_layouts.py credits a step-sliced input (``x[:, ::2]``) with the
elements the op reads, so `mymul` on two such inputs counts 3 units of
memory (two half-width inputs read, one output written) and lands near 0.65
of a device copy. But DRAM moves whole 32-byte sectors, and every other
element of each sector is skipped, not left in memory: each input's whole
storage comes in, 5 units in all. This times, interleaved in one run, ours
and `torch.mul` on the slices, `torch.mul` on the whole unsliced inputs (6
units) and a copy, and prints each as a fraction of the copy's bandwidth,
counted both ways.
"""

import os
import sys

import torch

import extension_cpp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ratios import measure  # noqa: E402

ROWS = COLS = 4096  # 2^24 output elements, past the L2 cache


def timings(dtype) -> dict:
    """Microseconds per call of each candidate, interleaved."""
    whole_a = torch.randn(ROWS, 2 * COLS, device="cuda", dtype=dtype)
    whole_b = torch.randn(ROWS, 2 * COLS, device="cuda", dtype=dtype)
    a, b = whole_a[:, ::2], whole_b[:, ::2]
    whole_out = torch.empty_like(whole_a)
    src = torch.randn(ROWS * COLS, device="cuda", dtype=dtype)
    dst = torch.empty_like(src)
    candidates = {
        "ours, slices": lambda: extension_cpp.mymul(a, b),
        "torch.mul, slices": lambda: torch.mul(a, b),
        "torch.mul, whole inputs": lambda: torch.mul(whole_a, whole_b, out=whole_out),
        "copy": lambda: dst.copy_(src),
    }
    return measure(candidates, rounds=25, calls=20, sync=torch.cuda.synchronize)


def main() -> None:
    if not torch.cuda.is_available():
        sys.exit("bench_step_bytes.py needs a CUDA GPU: torch.cuda.is_available() is False")
    for dtype in (torch.float32, torch.bfloat16):
        t = timings(dtype)
        unit = ROWS * COLS * dtype.itemsize  # bytes of one 2^24-element operand
        copy_bandwidth = 2 * unit / t["copy"]
        for name in ("ours, slices", "torch.mul, slices"):
            counted = 3 * unit / t[name] / copy_bandwidth
            moved = 5 * unit / t[name] / copy_bandwidth
            print(
                f"{str(dtype)[6:]:8s} {name:24s} {t[name]:7.1f} us  of copy: "
                f"{counted:.2f} counted (3 units), {moved:.2f} moved (5 units)"
            )
        name = "torch.mul, whole inputs"
        whole = 6 * unit / t[name] / copy_bandwidth
        print(f"{str(dtype)[6:]:8s} {name:24s} {t[name]:7.1f} us  of copy: {whole:.2f} (6 units)")


if __name__ == "__main__":
    main()
