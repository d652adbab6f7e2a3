"""The kernels' input checks, for the fake kernels, in the kernels' words.

The real kernels check their inputs in C++ (csrc/input_checks.h); under
torch.compile and torch.export the fake kernels run instead, on FakeTensors,
so they repeat the checks in the same order. The words are not repeated:
every message is written once, in csrc/checks.h, and reaches Python as
``_C.MESSAGES``. The conformance suite asserts that an eager call and a
compiled call fail alike (test_errors.py), and that the C++ and Python checks
give the same answer case by case (test_check_parity.py).
"""

import torch

from ._C import MAX_DIMS, MESSAGES

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def message(key: str, **fields) -> str:
    """csrc/checks.h's message ``key`` with its {fields} filled in."""
    return MESSAGES[key].format(**fields)


def check_dtype(op: str, name: str, t: torch.Tensor) -> None:
    torch._check(t is not None, lambda: message("none", op=op, name=name))
    torch._check(
        t.dtype in SUPPORTED_DTYPES, lambda: message("dtype", op=op, name=name, dtype=t.dtype)
    )


def check_same(op: str, x_name: str, x: torch.Tensor, y_name: str, y: torch.Tensor) -> None:
    names = {"op": op, "x": x_name, "y": y_name}
    torch._check(
        x.device == y.device,
        lambda: message("device", **names, x_got=x.device, y_got=y.device),
    )
    torch._check(
        x.dtype == y.dtype,
        lambda: message("same_dtype", **names, x_got=x.dtype, y_got=y.dtype),
    )
    torch._check(
        x.shape == y.shape,
        lambda: message("shape", **names, x_got=list(x.shape), y_got=list(y.shape)),
    )


def check_rank(op: str, a: torch.Tensor) -> None:
    torch._check(a.dim() <= MAX_DIMS, lambda: message("rank", op=op, max=MAX_DIMS, dim=a.dim()))


def check_input(op: str, a: torch.Tensor) -> None:
    """A one-input op's check (csrc/input_checks.h's check_input)."""
    check_dtype(op, "a", a)
    check_rank(op, a)


def check_inputs(op: str, a: torch.Tensor, b: torch.Tensor) -> None:
    check_dtype(op, "a", a)
    check_dtype(op, "b", b)
    check_same(op, "a", a, "b", b)
    check_rank(op, a)


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
    torch._check(same, lambda: message("partial_overlap", op=op, name=name))


def check_out(op: str, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    check_inputs(op, a, b)
    check_dtype(op, "out", out)
    check_same(op, "out", out, "a", a)
    torch._check(
        _provably_non_overlapping(out),
        lambda: message(
            "internal_overlap", op=op, strides=list(out.stride()), shape=list(out.shape)
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
