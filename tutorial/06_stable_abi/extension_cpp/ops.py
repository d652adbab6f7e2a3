"""The public functions of the tutorial's operators.

Each one calls its op through the dispatcher (torch.ops.extension_cpp), which
picks the kernel for the inputs' device. Later steps register, below, what the
dispatcher needs besides the kernels: fake kernels (step 3) and autograd
formulas (step 4).
"""

import torch
from torch import Tensor

__all__ = ["mymuladd", "mymul", "myadd_out"]


def mymuladd(a: Tensor, b: Tensor, c: float) -> Tensor:
    """Returns ``a * b + c``; a and b: same shape, device and dtype (float32 or float64)."""
    return torch.ops.extension_cpp.mymuladd.default(a, b, c)


def mymul(a: Tensor, b: Tensor) -> Tensor:
    """Returns ``a * b``; a and b as for :func:`mymuladd`."""
    return torch.ops.extension_cpp.mymul.default(a, b)


def myadd_out(a: Tensor, b: Tensor, out: Tensor) -> None:
    """Writes ``a + b`` into ``out`` (contiguous, like a; may be a or b itself)."""
    torch.ops.extension_cpp.myadd_out.default(a, b, out)


# Step 3: fake kernels. torch.compile and torch.export trace with fake tensors
# (shape, dtype and device, no data) and ask each op what it would return.
# The answer must match the real kernel exactly, strides included: the C++
# kernels return a new contiguous tensor (at::empty), so the fake ones do too
# (torch.empty_like would copy a transposed input's strides and lie).
# The checks repeat the C++ TORCH_CHECKs, so compiled code fails like eager.


def _check_inputs(op: str, a: Tensor, b: Tensor) -> None:
    torch._check(
        a.dtype in (torch.float32, torch.float64),
        lambda: f"{op}: expected a to be float32 or float64, got {a.dtype}",
    )
    torch._check(
        b.dtype == a.dtype, lambda: f"{op}: expected b to have a's dtype {a.dtype}, got {b.dtype}"
    )
    torch._check(
        a.shape == b.shape,
        lambda: (
            f"{op}: expected a and b to have the same shape, got {list(a.shape)} and "
            f"{list(b.shape)}"
        ),
    )
    torch._check(
        a.device == b.device,
        lambda: f"{op}: expected a and b to be on the same device, got {a.device} and {b.device}",
    )


@torch.library.register_fake("extension_cpp::mymuladd")
def _(a: Tensor, b: Tensor, c: float) -> Tensor:
    _check_inputs("mymuladd", a, b)
    return torch.empty(a.shape, dtype=a.dtype, device=a.device)


@torch.library.register_fake("extension_cpp::mymul")
def _(a: Tensor, b: Tensor) -> Tensor:
    _check_inputs("mymul", a, b)
    return torch.empty(a.shape, dtype=a.dtype, device=a.device)


@torch.library.register_fake("extension_cpp::myadd_out")
def _(a: Tensor, b: Tensor, out: Tensor) -> None:
    _check_inputs("myadd_out", a, b)
    torch._check(
        out.dtype == a.dtype and out.shape == a.shape and out.device == a.device,
        lambda: (
            f"myadd_out: expected out to match a, got {out.dtype} {list(out.shape)} on {out.device}"
        ),
    )
    torch._check(out.is_contiguous(), lambda: "myadd_out: expected out to be contiguous")


# Step 4: autograd. setup_context runs after the forward and saves what the
# backward needs; the backward gets the gradient of the output and returns
# one gradient per input (None for c, which is a number). Registered this way
# the formula sits in the dispatcher's Autograd key, so it applies to every
# caller of torch.ops.extension_cpp.mymuladd, compiled or not.


def _mymuladd_setup_context(ctx, inputs, output) -> None:
    a, b, c = inputs
    ctx.save_for_backward(a, b)


def _mymuladd_backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    grad_a = grad_b = None
    if ctx.needs_input_grad[0]:
        grad_a = mymul(grad, b)
    if ctx.needs_input_grad[1]:
        grad_b = mymul(grad, a)
    return grad_a, grad_b, None


def _mymul_setup_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs)


def _mymul_backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    grad_a = grad_b = None
    if ctx.needs_input_grad[0]:
        grad_a = mymul(grad, b)
    if ctx.needs_input_grad[1]:
        grad_b = mymul(grad, a)
    return grad_a, grad_b


torch.library.register_autograd(
    "extension_cpp::mymuladd", _mymuladd_backward, setup_context=_mymuladd_setup_context
)
torch.library.register_autograd(
    "extension_cpp::mymul", _mymul_backward, setup_context=_mymul_setup_context
)
