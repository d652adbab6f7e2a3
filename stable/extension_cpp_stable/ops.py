"""The public operators of the stable-ABI build.

As the classic package's (extension_cpp/ops.py): each calls its op through
the dispatcher. The one difference: the stable ABI has no C++ autograd API,
so this build's derivatives are Python (_autograd.py), and torch.func can
differentiate a Python autograd.Function only where it is applied from
Python, outside the dispatcher. So under a torch.func transform each function
applies it here (``_autograd.product``); everywhere else the op's Autograd
kernel (_autograd.py again) attaches the same derivatives.
"""

import torch
from torch import Tensor

from . import _autograd, _library

__all__ = ["mymuladd", "mymul", "myadd_out"]

_mymuladd, _mymul, _myadd_out = _library.mymuladd, _library.mymul, _library.myadd_out
_functorch_active = torch._C._are_functorch_transforms_active


def mymuladd(a: Tensor, b: Tensor, c: float) -> Tensor:
    """Returns ``a * b + c``: :func:`extension_cpp.mymuladd`, from this build."""
    if _functorch_active():
        return _autograd.product(a, b, c)
    return _mymuladd(a, b, c)


def mymul(a: Tensor, b: Tensor) -> Tensor:
    """Returns ``a * b``: :func:`extension_cpp.mymul`, from this build."""
    if _functorch_active():
        return _autograd.product(a, b)
    return _mymul(a, b)


def myadd_out(a: Tensor, b: Tensor, out: Tensor) -> None:
    """Writes ``a + b`` into ``out``: :func:`extension_cpp.myadd_out`, from this build."""
    _myadd_out(a, b, out)
