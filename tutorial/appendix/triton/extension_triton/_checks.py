"""The ops' input checks, in the words of the C++ ops.

Each check is a ``torch._check``: in eager mode it raises a RuntimeError,
and under torch.compile and torch.export, where the op's function runs on
fake tensors as its own fake kernel, it raises the same error at trace
time. So an eager call and a compiled call fail alike.

The words are those of extension_cpp's C++ ops (csrc/checks.h, where the
reference package writes each message once). This package does not import
extension_cpp for them: extension_cpp is compiled against one torch release
and refuses any other, and a Triton op needs no compiler and runs on any
torch with Triton; depending on the C++ build would take that away.
tests/tutorial/test_tutorial_appendix.py checks that every message below is, word
for word, the C++ one. ``cuda`` is this package's own: the C++ ops also run
on the CPU.
"""

import torch
from torch import Tensor

MESSAGES = {
    "none": "{op}: expected {name} to be a Tensor, got None",
    "dtype": "{op}: expected {name} to have a floating-point dtype (torch.float16, "
    "torch.bfloat16, torch.float32 or torch.float64), got {dtype}",
    "device": "{op}: expected {x} and {y} to be on the same device, got {x_got} and {y_got}",
    "same_dtype": "{op}: expected {x} and {y} to have the same dtype, got {x_got} and {y_got}",
    "shape": "{op}: expected {x} and {y} to have the same shape, got {x_got} and {y_got}",
    "internal_overlap": "{op}: expected out to have no internal overlap (each element its own "
    "memory location, unlike an expanded tensor), got strides {strides} for shape {shape}",
    "partial_overlap": "{op}: out overlaps {name} in memory without being the same view of it; "
    "pass an out that shares no memory with {name}, or {name} itself",
    "unmergeable": "{op}: tensors with more than {max} non-mergeable dimensions are not "
    "supported, got a tensor of shape {shape} and strides {strides}",
    "cuda": "{op}: expected {name} to be on a CUDA device (the Triton kernels run on GPUs "
    "only), got {device}",
}

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def message(key: str, **fields) -> str:
    """MESSAGES[key] with its {fields} filled in."""
    return MESSAGES[key].format(**fields)


def _check_dtype(op: str, name: str, t: Tensor) -> None:
    # The schema lets None through for a Tensor argument (as an undefined tensor).
    torch._check(t is not None, lambda: message("none", op=op, name=name))
    torch._check(
        t.dtype in SUPPORTED_DTYPES, lambda: message("dtype", op=op, name=name, dtype=t.dtype)
    )


def _check_same(op: str, x_name: str, x: Tensor, y_name: str, y: Tensor) -> None:
    names = {"op": op, "x": x_name, "y": y_name}
    torch._check(
        x.device == y.device, lambda: message("device", **names, x_got=x.device, y_got=y.device)
    )
    torch._check(
        x.dtype == y.dtype, lambda: message("same_dtype", **names, x_got=x.dtype, y_got=y.dtype)
    )
    torch._check(
        x.shape == y.shape,
        lambda: message("shape", **names, x_got=list(x.shape), y_got=list(y.shape)),
    )


def check_inputs(op: str, a: Tensor, b: Tensor, *, interpreted: bool) -> None:
    """a and b: one floating dtype, shape and device, a CUDA one unless the
    kernels run in Triton's interpreter (TRITON_INTERPRET=1), which takes
    CPU tensors."""
    _check_dtype(op, "a", a)
    _check_dtype(op, "b", b)
    _check_same(op, "a", a, "b", b)
    torch._check(
        interpreted or a.device.type == "cuda",
        lambda: message("cuda", op=op, name="a", device=a.device),
    )


def _provably_non_overlapping(t: Tensor) -> bool:
    """Every element of t has its own memory: each dimension, innermost
    first, steps past the whole reach of the ones inside it."""
    dims = sorted((t.stride(d), t.size(d)) for d in range(t.dim()) if t.size(d) > 1)
    reach = 0
    for stride, size in dims:
        if stride <= reach:
            return False
        reach += stride * (size - 1)
    return True


def _check_no_partial_overlap(op: str, out: Tensor, name: str, t: Tensor) -> None:
    """out is t itself (same memory and strides: an in-place call) or shares none of it."""
    if out.numel() == 0 or t.numel() == 0 or not torch._C._is_alias_of(out, t):
        return
    same = out.storage_offset() == t.storage_offset() and out.stride() == t.stride()
    torch._check(same, lambda: message("partial_overlap", op=op, name=name))


def check_out(op: str, a: Tensor, b: Tensor, out: Tensor, *, interpreted: bool) -> None:
    """check_inputs, and out like a, with no internal overlap, and either an
    input itself or apart from both."""
    check_inputs(op, a, b, interpreted=interpreted)
    _check_dtype(op, "out", out)
    _check_same(op, "out", out, "a", a)
    torch._check(
        _provably_non_overlapping(out),
        lambda: message(
            "internal_overlap", op=op, strides=list(out.stride()), shape=list(out.shape)
        ),
    )
    _check_no_partial_overlap(op, out, "a", a)
    _check_no_partial_overlap(op, out, "b", b)
