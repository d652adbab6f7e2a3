"""Input checks for the fake kernels, word for word those of csrc/ops.cpp.

The real kernels check their inputs in C++; under torch.compile and
torch.export the fake kernels run instead, so they repeat the checks in the
same order with the same messages. The conformance suite asserts that an
eager call and a compiled call fail with the same words.
"""

import torch

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def none_message(op: str, name: str) -> str:
    return f"{op}: expected {name} to be a Tensor, got None"


def check_dtype(op: str, name: str, t: torch.Tensor) -> None:
    torch._check(t is not None, lambda: none_message(op, name))
    torch._check(
        t.dtype in SUPPORTED_DTYPES,
        lambda: (
            f"{op}: expected {name} to have a floating-point dtype (torch.float16, "
            f"torch.bfloat16, torch.float32 or torch.float64), got {t.dtype}"
        ),
    )


def check_same(op: str, x_name: str, x: torch.Tensor, y_name: str, y: torch.Tensor) -> None:
    torch._check(
        x.device == y.device,
        lambda: (
            f"{op}: expected {x_name} and {y_name} to be on the same device, "
            f"got {x.device} and {y.device}"
        ),
    )
    torch._check(
        x.dtype == y.dtype,
        lambda: (
            f"{op}: expected {x_name} and {y_name} to have the same dtype, "
            f"got {x.dtype} and {y.dtype}"
        ),
    )
    torch._check(
        x.shape == y.shape,
        lambda: (
            f"{op}: expected {x_name} and {y_name} to have the same shape, "
            f"got {list(x.shape)} and {list(y.shape)}"
        ),
    )


def check_inputs(op: str, a: torch.Tensor, b: torch.Tensor) -> None:
    check_dtype(op, "a", a)
    check_dtype(op, "b", b)
    check_same(op, "a", a, "b", b)


def _provably_non_overlapping(t: torch.Tensor) -> bool:
    if t.numel() == 0:
        return True
    dims = sorted((t.stride(d), t.size(d)) for d in range(t.dim()) if t.size(d) > 1)
    reach = 0
    for stride, size in dims:
        if stride <= reach:
            return False
        reach += stride * (size - 1)
    return True


def _check_no_partial_overlap(op: str, out: torch.Tensor, name: str, t: torch.Tensor) -> None:
    if out.numel() == 0 or t.numel() == 0 or not torch._C._is_alias_of(out, t):
        return
    same = out.storage_offset() == t.storage_offset() and out.stride() == t.stride()
    torch._check(
        same,
        lambda: (
            f"{op}: out overlaps {name} in memory without being the same view of it; "
            f"pass an out that shares no memory with {name}, or {name} itself"
        ),
    )


def check_out(op: str, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    check_inputs(op, a, b)
    check_dtype(op, "out", out)
    check_same(op, "out", out, "a", a)
    torch._check(
        _provably_non_overlapping(out),
        lambda: (
            f"{op}: expected out to have no internal overlap (each element its own memory "
            f"location, unlike an expanded tensor), got strides {list(out.stride())} "
            f"for shape {list(out.shape)}"
        ),
    )
    _check_no_partial_overlap(op, out, "a", a)
    _check_no_partial_overlap(op, out, "b", b)


def elementwise_output(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """An empty tensor with the sizes and strides of ``torch.mul(a, b)``.

    That is the kernels' layout rule (PyTorch's TensorIterator rule, written
    out in csrc/elementwise.h as elementwise_output_strides). Under
    FakeTensor, ``torch.mul`` runs only its meta function, so this asks
    PyTorch itself for the layout instead of restating the rule here; the
    conformance suite checks that the C++ rule gives the same strides.
    """
    return torch.empty_like(torch.mul(a, b))


def raise_if_none(op: str, **tensors) -> None:
    """Replaces a dispatcher error about a None argument with the kernel's words.

    The schema lets None through as an undefined tensor. With another tensor
    present, the C++ check (or, under torch.compile, the fake kernel's) names
    it; with no tensor at all the dispatcher finds no kernel to run ("There
    were no tensor arguments ..."). Called only after a call has failed, so a
    good call pays nothing for it.
    """
    for name, t in tensors.items():
        if t is None:
            raise RuntimeError(none_message(op, name)) from None


def out_refuses_autograd(op: str, culprit: str) -> str:
    """csrc/autograd.cpp's error for an out= call that would need a gradient."""
    return (
        f"{op}: out= operations do not support automatic differentiation, but {culprit} "
        f"requires grad; use a + b, or call {op} under torch.no_grad()"
    )


def out_refuses_forward_ad(op: str, culprit: str) -> str:
    """csrc/autograd.cpp's error for an out= call on a dual tensor."""
    return (
        f"{op}: out= operations do not support forward-mode automatic differentiation "
        f"(torch.func.jvp, torch.autograd.forward_ad), but {culprit} has a tangent; "
        "use a + b instead"
    )


def raw_op_under_func_grad(namespace: str, op: str) -> str:
    """csrc/autograd.cpp's error for torch.ops.<namespace>.<op> under a
    torch.func reverse-mode transform, which only the public function supports."""
    return (
        f"torch.ops.{namespace}.{op} was called under a torch.func transform that needs its "
        "gradient (grad, vjp, jacrev, hessian or vmap of one of them); call "
        f"{namespace}.{op} instead, which supports every torch.func transform"
    )
