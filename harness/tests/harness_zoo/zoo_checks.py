"""The zoo's input checks for its fake kernels, in zoo.cpp's words.

The zoo stands for someone else's extension, built apart from extension_cpp
and tested with the standalone harness alone (make matrix's harness track:
torch and extension-cpp-testing, nothing else), so it keeps its own copy of
these few checks, as zoo.cpp keeps its own C++ ones.
"""

from __future__ import annotations

import torch

FLOATING = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_dtype(op: str, name: str, t: torch.Tensor) -> None:
    torch._check(
        t.dtype in FLOATING,
        lambda: (
            f"{op}: expected {name} to have a floating-point dtype (torch.float16, "
            f"torch.bfloat16, torch.float32 or torch.float64), got {t.dtype}"
        ),
    )


def check_float32(op: str, name: str, t: torch.Tensor) -> None:
    torch._check(
        t.dtype == torch.float32,
        lambda: f"{op}: expected {name} to have dtype torch.float32, got {t.dtype}",
    )


def check_same(op: str, x_name: str, x: torch.Tensor, y_name: str, y: torch.Tensor) -> None:
    def expected(what: str, got: str):
        return lambda: f"{op}: expected {x_name} and {y_name} to {what}, got {got}"

    torch._check(
        x.device == y.device, expected("be on the same device", f"{x.device} and {y.device}")
    )
    torch._check(x.dtype == y.dtype, expected("have the same dtype", f"{x.dtype} and {y.dtype}"))
    torch._check(
        x.shape == y.shape,
        expected("have the same shape", f"{list(x.shape)} and {list(y.shape)}"),
    )


def check_inputs(op: str, a: torch.Tensor, b: torch.Tensor) -> None:
    check_dtype(op, "a", a)
    check_dtype(op, "b", b)
    check_same(op, "a", a, "b", b)


def _no_internal_overlap(t: torch.Tensor) -> bool:
    dims = sorted((t.stride(d), t.size(d)) for d in range(t.dim()) if t.size(d) > 1)
    reach = 0
    for stride, size in dims:
        if stride <= reach:
            return False
        reach += stride * (size - 1)
    return True


def check_out(op: str, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    check_inputs(op, a, b)
    check_dtype(op, "out", out)
    check_same(op, "out", out, "a", a)
    torch._check(
        out.numel() == 0 or _no_internal_overlap(out),
        lambda: (
            f"{op}: expected out to have no internal overlap (each element its own memory "
            f"location, unlike an expanded tensor), got strides {list(out.stride())} "
            f"for shape {list(out.shape)}"
        ),
    )
    for name, x in (("a", a), ("b", b)):
        partial = (
            out.numel() > 0
            and x.numel() > 0
            and torch._C._is_alias_of(out, x)
            and not (out.storage_offset() == x.storage_offset() and out.stride() == x.stride())
        )
        torch._check(
            not partial,
            lambda name=name: (
                f"{op}: out overlaps {name} in memory without being the same view of it; "
                f"pass an out that shares no memory with {name}, or {name} itself"
            ),
        )


def output(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """An empty tensor laid out as torch.mul(a, b), as zoo.cpp's kernels allocate."""
    return torch.empty_like(torch.mul(a, b))
