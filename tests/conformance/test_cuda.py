"""CUDA-only promises: 64-bit indexing, no hidden copies, the device guard."""

import pytest
import torch

from .cases import pkg, requires_cuda, requires_two_gpus

pytestmark = [requires_cuda, pytest.mark.cuda]

# 65537 x 32768 = 2^31 + 2^15 elements: indices past int32's range.
BIG_ROWS, BIG_COLS = 65537, 32768


def _free_bytes():
    free, _ = torch.cuda.mem_get_info()
    return free


# Each kernel past 2^31: contiguous (vectorised), transposed (both inputs:
# the same dense run, output transposed too), one transposed (tiled kernel,
# 64-bit tile bases), broadcast (the int64_t strided kernel).
@pytest.mark.slow
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "one-transposed", "broadcast"])
def test_more_than_2_31_elements(layout):
    if _free_bytes() < 24 * 2**30:
        pytest.skip("needs 24 GiB of free GPU memory")
    kw = dict(dtype=torch.float16, device="cuda")
    if layout == "contiguous":
        a, b = torch.randn(BIG_ROWS, BIG_COLS, **kw), torch.randn(BIG_ROWS, BIG_COLS, **kw)
    elif layout == "transposed":
        a, b = torch.randn(BIG_COLS, BIG_ROWS, **kw).t(), torch.randn(BIG_COLS, BIG_ROWS, **kw).t()
    elif layout == "one-transposed":
        a, b = torch.randn(BIG_ROWS, BIG_COLS, **kw), torch.randn(BIG_COLS, BIG_ROWS, **kw).t()
    else:
        a, b = (
            torch.randn(1, BIG_COLS, **kw).expand(BIG_ROWS, BIG_COLS),
            torch.randn(BIG_ROWS, BIG_COLS, **kw),
        )
    assert a.numel() > 2**31
    out = pkg.mymul(a, b)
    assert torch.equal(out, a * b)
    out.fill_(float("nan"))
    pkg.myadd_out(a, b, out)
    assert torch.equal(out, a + b)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "expanded"])
@pytest.mark.parametrize("op_name", ["mymuladd", "mymul"])
def test_forward_allocates_only_its_output(op_name, layout):
    n = 1 << 22
    if layout == "contiguous":
        a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    elif layout == "transposed":
        a, b = (
            torch.randn(1024, n // 1024, device="cuda").t(),
            torch.randn(n // 1024, 1024, device="cuda"),
        )
    else:
        a, b = torch.randn(1, n, device="cuda").expand(4, n), torch.randn(4, n, device="cuda")
    op = getattr(pkg, op_name)
    args = (a, b, 1.0) if op_name == "mymuladd" else (a, b)
    op(*args)  # warm up: first-call allocations are not the op's
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = op(*args)
    torch.cuda.synchronize()
    assert torch.cuda.max_memory_allocated() - before == out.untyped_storage().nbytes()


def test_myadd_out_allocates_nothing():
    a, b = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    out = torch.empty_like(a)
    pkg.myadd_out(a, b, out)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    pkg.myadd_out(a, b, out)
    torch.cuda.synchronize()
    assert torch.cuda.max_memory_allocated() == before


@requires_two_gpus
def test_runs_on_the_inputs_device_not_the_current_one():
    with torch.cuda.device(0):
        a = torch.randn(1000, device="cuda:1")
        b = torch.randn(1000, device="cuda:1")
        out = pkg.mymuladd(a, b, 3.0)
        assert out.device == torch.device("cuda:1")
        torch.testing.assert_close(out, a * b + 3.0)
