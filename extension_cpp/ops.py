"""The public operators.

Each function calls its op through the dispatcher, so it works in eager mode,
under autograd and torch.func, torch.compile and torch.export alike. The
kernels are in ``csrc/``: CPU, CUDA, and the Autograd kernels that hold the
ops' derivatives (csrc/autograd.cpp). What the ops need from Python, their
fake kernels and batching rules, is _library.py.
"""

from torch import Tensor

from . import _library

__all__ = ["mymuladd", "mymul", "myadd_out"]

_mymuladd, _mymul, _myadd_out = _library.mymuladd, _library.mymul, _library.myadd_out


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
    return _mymuladd(a, b, c)


def mymul(a: Tensor, b: Tensor) -> Tensor:
    """Returns ``a * b`` as a new tensor laid out as ``torch.mul(a, b)`` would be.

    Same arguments, output layout and errors as :func:`mymuladd`, without ``c``.
    Differentiable to any order: its backward is built from ``mymul`` itself.
    """
    return _mymul(a, b)


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
    _myadd_out(a, b, out)
