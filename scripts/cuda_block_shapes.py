"""Sweeps the contiguous CUDA kernel's block shape: how csrc/cuda's was chosen.

    python scripts/cuda_block_shapes.py      # on a machine with a CUDA GPU

Builds scripts/cuda_block_shapes.cu (out = a * b, 16-byte vectors, one tile
of threads x vectors-per-thread per block, for each shape in SHAPES) and
prints, for bfloat16 and float32 from 2^16 to 2^28 elements, the effective
bandwidth (2 reads + 1 write) of the device copy, torch.mul and each shape,
with each shape's ratio to torch.mul. Kernel time only: each candidate's
calls are captured once in a CUDA graph and replayed, interleaved across the
candidates, and the fastest replay counts. Every shape's result is checked
against torch.mul before it is timed.
"""

from __future__ import annotations

import os
import sys
import time

import torch
from torch.utils.cpp_extension import load

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "perf")
)
import cases as perf_cases  # noqa: E402  (tests/perf/cases.py: the graph capture)

# (threads per block, 16-byte vectors per thread), in the .cu's switch order.
SHAPES = [(256, 2), (256, 1), (128, 1), (128, 2), (512, 1), (128, 4), (256, 4), (64, 2)]
EXPONENTS = (16, 18, 20, 21, 22, 23, 24, 26, 28)
REPLAYS = 15


def build():
    here = os.path.dirname(os.path.abspath(__file__))
    major, minor = torch.cuda.get_device_capability()
    arch = f"-gencode=arch=compute_{major}{minor},code=sm_{major}{minor}"
    return load(
        name="cuda_block_shapes",
        sources=[os.path.join(here, "cuda_block_shapes.cu")],
        extra_cuda_cflags=["-O3", arch],
    )


def seconds_per_call(cases: dict, calls: int) -> dict:
    graphs = {name: perf_cases.captured(fn, calls) for name, fn in cases.items()}
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(REPLAYS):
        for name, graph in graphs.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            graph.replay()
            torch.cuda.synchronize()
            best[name] = min(best[name], (time.perf_counter() - t0) / calls)
    return best


def row(module, names: list, dtype: torch.dtype, n: int) -> dict:
    """GB/s of copy, torch.mul and every shape at one size."""
    a = torch.randn(n, device="cuda", dtype=dtype)
    b = torch.randn_like(a)
    out = torch.empty_like(a)
    expected = a * b
    cases = {"copy": lambda: out.copy_(a), "mul": lambda: torch.mul(a, b)}
    for i, name in enumerate(names):
        out.fill_(float("nan"))
        module.run(i, out, a, b)
        torch.testing.assert_close(out, expected, rtol=0, atol=0)
        cases[name] = lambda i=i: module.run(i, out, a, b)
    size = a.element_size()
    t = seconds_per_call(cases, calls=max(10, min(400, int(2e9 / (3 * n * size)))))
    return {k: (2 if k == "copy" else 3) * n * size / s / 1e9 for k, s in t.items()}


def main() -> None:
    module = build()
    names = [f"{t}x{u}" for t, u in SHAPES]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}: GB/s (ratio to torch.mul)")
    for dtype in (torch.bfloat16, torch.float32):
        print(
            f"\n{dtype}\n{'N':6s} {'copy':>6s} {'mul':>6s} " + " ".join(f"{n:>13s}" for n in names)
        )
        for e in EXPONENTS:
            gbps = row(module, names, dtype, 2**e)
            cells = " ".join(f"{gbps[k]:6.0f} ({gbps[k] / gbps['mul']:.2f})" for k in names)
            print(f"2^{e:<4d} {gbps['copy']:6.0f} {gbps['mul']:6.0f} {cells}", flush=True)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
