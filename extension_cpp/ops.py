"""The public operators, their fake kernels and their batching rules.

Each function calls its op through the dispatcher, so it works in eager mode,
under autograd and torch.func, torch.compile and torch.export alike. The
kernels are in ``csrc/``: CPU, CUDA, and the Autograd kernels that hold the
ops' derivatives (csrc/autograd.cpp). What the ops need from Python is here,
one section each:

- the fake kernels tell the compiler what each op returns without running
  it, and must agree with the real kernels exactly: same shape, dtype,
  device and strides (those of ``torch.mul(a, b)``), and the same errors for
  bad input (_checks.py);
- the batching rules for torch.vmap.

The stable-ABI package (extension_cpp_stable, stable/) ships this same file
for its own ops, which live in a namespace named after it. Its derivatives
are Python (its _autograd.py), since the stable ABI has no autograd API.
"""

from typing import Callable, Optional

import torch
from torch import Tensor

from . import _checks

__all__ = ["mymuladd", "mymul", "myadd_out"]

# The op namespace: this package's name.
_NAMESPACE = __package__
_ops = getattr(torch.ops, _NAMESPACE)

# The ops' OpOverloads, looked up once: an attribute walk through torch.ops on
# every call would be a measurable part of a small call (Note [Per-call cost]).
_mymuladd = _ops.mymuladd.default
_mymul = _ops.mymul.default
_myadd_out = _ops.myadd_out.default


# The stable-ABI build's derivatives, set by its _autograd.py: a Python
# autograd.Function, which torch.func can differentiate only when it is
# applied here, outside the dispatcher. None in the classic build, whose
# derivatives (csrc/autograd.cpp) every transform sees through.
_python_derivatives: Optional[Callable[..., Tensor]] = None
_functorch_active = torch._C._are_functorch_transforms_active
# Bound once: Dynamo reads it as the constant True while it traces (the
# compiled graph needs no try/except around the op), and in eager mode it is
# a bare function returning False.
_is_dynamo_compiling = torch.compiler.is_dynamo_compiling


def mymuladd(a: Tensor, b: Tensor, c: float) -> Tensor:
    """Returns ``a * b + c`` as a new tensor laid out as ``torch.mul(a, b)`` would be.

    The output follows PyTorch's rule for elementwise ops: inputs that share a
    dense layout (contiguous, channels_last, transposed, any permutation) give
    an output of that layout; otherwise its dimensions are ordered by ``a``'s
    strides, then ``b``'s. So the sizes and strides always equal those of
    ``torch.mul(a, b)``, in eager mode and under ``torch.compile``.

    Args:
        a: float16, bfloat16, float32 or float64 tensor, on the CPU or a CUDA device,
            in any layout (transposed, sliced, expanded, empty or 0-dim).
        b: tensor of the same shape, dtype and device as ``a`` (no broadcasting).
        c: Python number added to every element.

    float16 and bfloat16 are computed in float32 and rounded once. Differentiable
    in ``a`` and ``b`` to any order, in every autodiff mode; the derivatives call
    :func:`mymul`.

    Raises:
        RuntimeError: naming the argument and what was received, when the dtypes,
            shapes or devices are not as above.
    """
    if _python_derivatives is not None and _functorch_active():
        return _python_derivatives(a, b, c)
    if _is_dynamo_compiling():
        return _mymuladd(a, b, c)
    try:
        return _mymuladd(a, b, c)
    except (RuntimeError, NotImplementedError):
        _checks.raise_if_none("mymuladd", a=a, b=b)
        raise


def mymul(a: Tensor, b: Tensor) -> Tensor:
    """Returns ``a * b`` as a new tensor laid out as ``torch.mul(a, b)`` would be.

    Same arguments, output layout and errors as :func:`mymuladd`, without ``c``.
    Differentiable to any order: its backward is built from ``mymul`` itself.
    """
    if _python_derivatives is not None and _functorch_active():
        return _python_derivatives(a, b, None)
    if _is_dynamo_compiling():
        return _mymul(a, b)
    try:
        return _mymul(a, b)
    except (RuntimeError, NotImplementedError):
        _checks.raise_if_none("mymul", a=a, b=b)
        raise


def myadd_out(a: Tensor, b: Tensor, out: Tensor) -> None:
    """Writes ``a + b`` into ``out`` and returns None.

    Args:
        a, b: as for :func:`mymuladd`.
        out: tensor of the same shape, dtype and device, in any layout without
            internal overlap. It may be ``a`` or ``b`` itself (an in-place add);
            any other sharing of memory with them is an error.

    Like PyTorch's ``out=`` variants it does not support autograd: under grad
    mode, an argument that requires grad raises. ``out``'s version counter is
    bumped, so autograd notices if ``out`` was saved for a backward.
    """
    if _is_dynamo_compiling():
        _myadd_out(a, b, out)
        return
    try:
        _myadd_out(a, b, out)
    except (RuntimeError, NotImplementedError):
        _checks.raise_if_none("myadd_out", a=a, b=b, out=out)
        raise


# Fake kernels: run by FakeTensor under torch.compile / torch.export instead of
# the real kernels. They check what the real kernels check, in the same words.


@torch.library.register_fake(f"{_NAMESPACE}::mymuladd")
def _mymuladd_fake(a: Tensor, b: Tensor, c: float) -> Tensor:
    _checks.check_inputs("mymuladd", a, b)
    return _checks.elementwise_output(a, b)


@torch.library.register_fake(f"{_NAMESPACE}::mymul")
def _mymul_fake(a: Tensor, b: Tensor) -> Tensor:
    _checks.check_inputs("mymul", a, b)
    return _checks.elementwise_output(a, b)


@torch.library.register_fake(f"{_NAMESPACE}::myadd_out")
def _myadd_out_fake(a: Tensor, b: Tensor, out: Tensor) -> None:
    _checks.check_out("myadd_out", a, b, out)


# Batching rules for torch.vmap: the batch dimension moves to the front of
# each batched argument, unbatched ones are expanded to match (a stride-0
# view, no copy), and one call of the op covers the whole batch.


def _batch_first(info, in_dims, *tensors: Tensor) -> list:
    return [
        t.unsqueeze(0).expand(info.batch_size, *t.shape) if d is None else t.movedim(d, 0)
        for t, d in zip(tensors, in_dims)
    ]


@torch.library.register_vmap(f"{_NAMESPACE}::mymuladd")
def _mymuladd_vmap(info, in_dims, a: Tensor, b: Tensor, c: float):
    a, b = _batch_first(info, in_dims[:2], a, b)
    return _mymuladd(a, b, c), 0


@torch.library.register_vmap(f"{_NAMESPACE}::mymul")
def _mymul_vmap(info, in_dims, a: Tensor, b: Tensor):
    a, b = _batch_first(info, in_dims, a, b)
    return _mymul(a, b), 0


@torch.library.register_vmap(f"{_NAMESPACE}::myadd_out")
def _myadd_out_vmap(info, in_dims, a: Tensor, b: Tensor, out: Tensor):
    # Each sample writes its own slice of out, so out must carry the batch
    # dimension; an unbatched out would receive every sample's result at once.
    torch._check(in_dims[2] is not None, lambda: _checks.message("vmap_out", op="myadd_out"))
    a, b, out = _batch_first(info, in_dims, a, b, out)
    _myadd_out(a, b, out)
    return None, None  # no output, so no output batch dimension
