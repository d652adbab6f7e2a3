"""Gradients: what the backward dispatches, what it saves, its layout, and the
out= op's refusal of autograd. Their math (gradcheck and gradgradcheck in
float64 on every layout) is checked by extension_cpp.testing (test_harness.py)."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .cases import FUNCTIONAL, LAYOUTS, OPS, PACKAGE, C, devices, make_inputs, pkg

# Layouts whose every element has its own memory (not expanded, not empty):
# gradcheck's and a gradient's layouts.
GRAD_LAYOUTS = [name for name, layout in LAYOUTS.items() if layout.perturbable]


@pytest.mark.parametrize("device", devices())
def test_third_derivative(device):
    """mymul's backward is built from mymul, so derivatives of any order exist."""
    a = torch.tensor(3.0, dtype=torch.float64, device=device, requires_grad=True)
    y = pkg.mymul(pkg.mymul(a, a), a)  # a^3
    (g1,) = torch.autograd.grad(y, a, create_graph=True)  # 3a^2
    (g2,) = torch.autograd.grad(g1, a, create_graph=True)  # 6a
    (g3,) = torch.autograd.grad(g2, a)  # 6
    assert (g1.item(), g2.item(), g3.item()) == (27.0, 18.0, 6.0)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_backward_with_stride_zero_gradient(op_name, device):
    """out.sum().backward() sends an expanded (stride 0) gradient."""
    a, b = make_inputs("transposed", torch.float64, device, requires_grad=True)
    OPS[op_name].call(a, b).sum().backward()
    torch.testing.assert_close(a.grad, b.detach())
    torch.testing.assert_close(b.grad, a.detach())


@pytest.mark.parametrize("requires", ["a", "b", "both"])
@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_gradient_only_for_inputs_that_need_it(op_name, requires):
    a, b = make_inputs("contiguous", torch.float64)
    a.requires_grad_(requires in ("a", "both"))
    b.requires_grad_(requires in ("b", "both"))
    OPS[op_name].call(a, b).sum().backward()
    assert (a.grad is not None) == a.requires_grad
    assert (b.grad is not None) == b.requires_grad


class RecordOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func.overloadpacket))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_backward_dispatches_mymul(op_name, device):
    a, b = make_inputs("contiguous", torch.float32, device, requires_grad=True)
    out = OPS[op_name].call(a, b)
    with RecordOps() as recorded:
        out.backward(torch.ones_like(out))
    products = [name for name in recorded.ops if name.startswith(f"{PACKAGE}.")]
    assert products == [f"{PACKAGE}.mymul"] * 2, recorded.ops
    assert "aten.mul" not in recorded.ops


class CountSaved:
    """Counts the tensors autograd saves, through the saved-tensor hooks."""

    def __init__(self):
        self.count = 0

    def pack(self, t):
        self.count += 1
        return t

    def __enter__(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)


@pytest.mark.parametrize(("requires", "saved"), [("a", 1), ("b", 1), ("both", 2), ("none", 0)])
@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_saves_only_what_backward_needs(op_name, requires, saved):
    a, b = make_inputs("contiguous")
    a.requires_grad_(requires in ("a", "both"))
    b.requires_grad_(requires in ("b", "both"))
    with CountSaved() as counter:
        OPS[op_name].call(a, b)
    assert counter.count == saved


@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_no_graph_under_no_grad(op_name):
    a, b = make_inputs("contiguous", requires_grad=True)
    with torch.no_grad():
        out = OPS[op_name].call(a, b)
    assert out.grad_fn is None
    assert not out.requires_grad


@pytest.mark.parametrize("arg", ["a", "b"])
@pytest.mark.parametrize("device", devices())
def test_myadd_out_refuses_autograd(device, arg):
    a, b = make_inputs("contiguous", device=device)
    out = torch.empty_like(a)
    {"a": a, "b": b}[arg].requires_grad_()
    with pytest.raises(
        RuntimeError,
        match=f"myadd_out: out= operations do not support automatic differentiation, "
        f"but {arg} requires grad",
    ):
        pkg.myadd_out(a, b, out)
    with torch.no_grad():
        pkg.myadd_out(a, b, out)
    torch.testing.assert_close(out, (a + b).detach())


def test_mymuladd_c_has_no_gradient():
    """c, a Python number, shifts the output and adds nothing to the
    gradients: those of a * b alone."""
    a, b = make_inputs("contiguous", torch.float64, requires_grad=True)
    out = pkg.mymuladd(a, b, C)
    (ga, gb) = torch.autograd.grad(out.sum(), (a, b))
    torch.testing.assert_close(ga, b.detach(), rtol=0, atol=0)
    torch.testing.assert_close(gb, a.detach(), rtol=0, atol=0)


@pytest.mark.parametrize("layout", GRAD_LAYOUTS)
@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_gradient_layouts_match_torch(op_name, device, layout):
    """Gradients follow the same layout rule as torch.mul's own backward."""
    a, b = make_inputs(layout, torch.float64, device, requires_grad=True)
    # A transposed incoming gradient where there are two dimensions to swap.
    grad = torch.randn(a.shape, dtype=a.dtype, device=device)
    if grad.dim() > 1:
        grad = grad.mT.contiguous().mT
    grads = torch.autograd.grad(OPS[op_name].call(a, b), (a, b), grad)
    a2, b2 = (t.detach().requires_grad_() for t in (a, b))
    want = torch.autograd.grad(OPS[op_name].reference(a2, b2), (a2, b2), grad)
    for got, ref in zip(grads, want):
        torch.testing.assert_close(got, ref)
        assert got.stride() == ref.stride()
