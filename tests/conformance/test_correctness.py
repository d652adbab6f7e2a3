"""What our ops compute beyond the harness's checks: float math for half
types, out= into any layout and in place, the version counter.

Each op's answer against PyTorch's on every device, dtype and layout, its
output strides, and that it leaves its inputs alone are checked by
extension_cpp.testing (test_harness.py: the results and strides checks).
"""

import pytest
import torch

from .cases import (
    devices,
    make_inputs,
    ops_ns,
    pkg,
)

# 1 + 3 ulps, in each half type: a * a is 1 + 6 ulps + 9 ulps^2, whose last
# term a second rounding to the half type drops.
HALF_ULP = {torch.float16: 2**-10, torch.bfloat16: 2**-7}


@pytest.mark.parametrize("dtype", list(HALF_ULP), ids=str)
@pytest.mark.parametrize("device", devices())
def test_mymuladd_rounds_half_types_once(device, dtype):
    """a * b + c computed in float and rounded once to the half type, equal
    to the correctly rounded value; eager PyTorch rounds a * b first and
    gives another value for this input."""
    a = torch.full((4,), 1 + 3 * HALF_ULP[dtype], dtype=dtype, device=device)
    once = (a.double() * a.double() - 1.0).to(dtype)
    assert not torch.equal(a * a - 1.0, once), "this input must tell the roundings apart"
    assert torch.equal(pkg.mymuladd(a, a, -1.0), once)


# ---------------------------------------------------------------------------
# myadd_out: layouts of out, and out aliasing an input
# ---------------------------------------------------------------------------

OUT_LAYOUTS = {
    "contiguous": lambda shape, **kw: torch.empty(shape, **kw),
    "transposed": lambda shape, **kw: torch.empty(shape[::-1], **kw).t(),
    "sliced": lambda shape, **kw: torch.empty(shape[0], 2 * shape[1], **kw)[:, ::2],
}


@pytest.mark.parametrize("out_layout", OUT_LAYOUTS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "expanded"])
@pytest.mark.parametrize("device", devices())
def test_myadd_out_writes_any_out_layout(device, layout, out_layout):
    a, b = make_inputs(layout, device=device)
    out = OUT_LAYOUTS[out_layout](tuple(a.shape), device=device)
    out_stride = out.stride()
    assert pkg.myadd_out(a, b, out) is None
    assert out.stride() == out_stride  # written in place, not replaced
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)


@pytest.mark.parametrize("target", ["a", "b"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "offset"])
@pytest.mark.parametrize("device", devices())
def test_myadd_out_in_place(device, layout, target):
    """out may be exactly a or b: the in-place add."""
    a, b = make_inputs(layout, device=device)
    expected = a + b
    out = a if target == "a" else b
    pkg.myadd_out(a, b, out)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


@pytest.mark.parametrize("device", devices())
def test_myadd_out_bumps_version_counter(device):
    a, b = make_inputs("contiguous", device=device)
    out = torch.empty_like(a)
    before = out._version
    pkg.myadd_out(a, b, out)
    assert out._version > before


@pytest.mark.parametrize("device", devices())
def test_myadd_out_into_tensor_saved_for_backward_is_detected(device):
    """Overwriting a tensor autograd saved must fail at backward, not corrupt grads."""
    x = torch.randn(8, device=device, requires_grad=True)
    y = x.sin()
    z = y * y  # autograd saves y
    with torch.no_grad():
        pkg.myadd_out(y, y, y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_ops_reachable_through_torch_ops():
    a, b = make_inputs("contiguous")
    torch.testing.assert_close(ops_ns.mymuladd(a, b, 2.0), pkg.mymuladd(a, b, 2.0))
    torch.testing.assert_close(ops_ns.mymul.default(a, b), a * b)
