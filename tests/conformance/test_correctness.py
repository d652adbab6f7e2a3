"""Every op gives PyTorch's answer on every device, dtype and layout."""

import pytest
import torch

from .cases import (
    DTYPES,
    FUNCTIONAL_OPS,
    LAYOUTS,
    OPS,
    assert_matches_reference,
    devices,
    dtype_id,
    make_inputs,
    ops_ns,
    pkg,
)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", OPS)
def test_matches_pytorch(op_name, device, dtype, layout):
    op = OPS[op_name]
    a, b = make_inputs(layout, dtype, device)
    out = op.call(a, b)
    assert out.shape == a.shape
    assert out.dtype == dtype
    assert out.device == a.device
    assert_matches_reference(op, out, a, b)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", FUNCTIONAL_OPS)
def test_output_strides_match_torch_mul(op_name, device, layout):
    """PyTorch's layout rule: the output is laid out as torch.mul(a, b)'s."""
    a, b = make_inputs(layout, device=device)
    out = OPS[op_name].call(a, b)
    assert out.stride() == torch.mul(a, b).stride()
    assert out.storage_offset() == 0
    assert out.untyped_storage().nbytes() == out.numel() * out.element_size()  # dense


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", FUNCTIONAL_OPS)
def test_inputs_are_not_modified(op_name, device, layout):
    a, b = make_inputs(layout, device=device)
    a0, b0 = a.clone(), b.clone()
    OPS[op_name].call(a, b)
    assert torch.equal(a, a0)
    assert torch.equal(b, b0)


def test_mymuladd_computes_half_types_in_float():
    """One rounding: a*b is not rounded to float16 before c is added."""
    a = torch.tensor([1.0 + 2**-10], dtype=torch.float16)  # 1 + 1 ulp
    b = torch.tensor([1.0 + 2**-10], dtype=torch.float16)
    # a*b = 1 + 2^-9 + 2^-20; in float16 the 2^-20 is lost, so eager gives
    # (1 + 2^-9) - 1 = 2^-9, while float math gives 2^-9 + 2^-20.
    out = pkg.mymuladd(a, b, -1.0)
    assert out.item() == pytest.approx(2**-9 + 2**-20, rel=1e-3)
    assert (a * b + -1.0).item() == 2**-9


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
