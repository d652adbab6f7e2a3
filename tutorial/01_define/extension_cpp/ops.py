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
