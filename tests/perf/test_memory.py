"""The forward allocates its output and nothing else (CUDA, measured).

torch.cuda.max_memory_allocated sees every allocation through PyTorch's
caching allocator, so a temporary (a contiguous copy of a strided input, a
float buffer for float16) would show up as peak memory above the output.
"""

from __future__ import annotations

import pytest
import torch

import extension_cpp

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

N = 1 << 20  # a multiple of the allocator's 512-byte rounding for every dtype


def _inputs(layout: str, dtype: torch.dtype):
    if layout == "contiguous":
        return [torch.randn(N, dtype=dtype, device="cuda") for _ in range(2)]
    if layout == "transposed":
        return [torch.randn(1024, N // 1024, dtype=dtype, device="cuda").t() for _ in range(2)]
    if layout == "sliced":
        return [torch.randn(2 * N, dtype=dtype, device="cuda")[::2] for _ in range(2)]
    raise ValueError(layout)


CALLS = {
    "mymuladd": lambda a, b, out: extension_cpp.mymuladd(a, b, 0.5),
    "mymul": lambda a, b, out: extension_cpp.mymul(a, b),
    "myadd_out": lambda a, b, out: extension_cpp.myadd_out(a, b, out),
}


@requires_cuda
@pytest.mark.cuda
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16], ids=lambda d: str(d)[6:]
)
@pytest.mark.parametrize("op", sorted(CALLS))
def test_forward_allocates_only_its_output(op, dtype, layout):
    a, b = _inputs(layout, dtype)
    out = torch.empty(a.shape, dtype=dtype, device="cuda")
    CALLS[op](a, b, out)  # warm up: first-call state is not the op's cost
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    result = CALLS[op](a, b, out)
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - before
    expected = 0 if op == "myadd_out" else N * a.element_size()
    assert extra == expected, f"{op} allocated {extra} bytes, expected only its output ({expected})"
    del result
