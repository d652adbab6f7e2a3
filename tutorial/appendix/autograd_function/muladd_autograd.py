"""Two ways to give a custom op a backward: an autograd.Function wrapper, or register_autograd.

Both ops below compute a * b + c with the same kernel; they differ only in
where the backward lives.

* ``muladd_function``: the op ``tutorial_fn::muladd_plain`` has no autograd
  formula; ``MulAddFunction`` (a ``torch.autograd.Function``) wraps it in
  Python. Gradients flow through the wrapper, and only through it: code that
  reaches the op through the dispatcher (``torch.ops``, torch.export,
  ``opcheck``, C++) gets none.
* ``muladd_registered``: the op ``tutorial_fn::muladd_registered`` carries its
  formula in the dispatcher (``torch.library.register_autograd``, step 4 of
  the tutorial), so every caller gets it.

The ops are defined in Python with ``torch.library.Library``, the Python
twin of TORCH_LIBRARY / TORCH_LIBRARY_IMPL, so this appendix needs no
compiler; with a C++ kernel the comparison is the same.
"""

import torch
from torch import Tensor

_lib = torch.library.Library("tutorial_fn", "DEF")  # noqa: TOR901 (kept alive by the module)
for _name in ("muladd_plain", "muladd_registered"):
    _lib.define(f"{_name}(Tensor a, Tensor b, float c) -> Tensor")


def _muladd_cpu(a: Tensor, b: Tensor, c: float) -> Tensor:
    # Like a C++ kernel, compute on the data without recording autograd
    # history: a kernel's output gets its gradient from the op's formula or
    # from nowhere.
    with torch.no_grad():
        return a * b + c


def _muladd_fake(a: Tensor, b: Tensor, c: float) -> Tensor:
    return torch.empty(a.shape, dtype=a.dtype, device=a.device)


for _name in ("muladd_plain", "muladd_registered"):
    _lib.impl(_name, _muladd_cpu, "CPU")
    torch.library.register_fake(f"tutorial_fn::{_name}", _muladd_fake, lib=_lib)


# The wrapper: a Python-side autograd.Function around the op.
class MulAddFunction(torch.autograd.Function):
    @staticmethod
    def forward(a: Tensor, b: Tensor, c: float) -> Tensor:
        return torch.ops.tutorial_fn.muladd_plain.default(a, b, c)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        a, b, _ = inputs
        ctx.save_for_backward(a, b)

    @staticmethod
    def backward(ctx, grad: Tensor):
        a, b = ctx.saved_tensors
        return grad * b, grad * a, None


def muladd_function(a: Tensor, b: Tensor, c: float) -> Tensor:
    return MulAddFunction.apply(a, b, c)


# The registration: the same formula, attached to the op itself.
def _setup_context(ctx, inputs, output) -> None:
    a, b, _ = inputs
    ctx.save_for_backward(a, b)


def _backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    return grad * b, grad * a, None


torch.library.register_autograd(
    "tutorial_fn::muladd_registered", _backward, setup_context=_setup_context, lib=_lib
)


def muladd_registered(a: Tensor, b: Tensor, c: float) -> Tensor:
    return torch.ops.tutorial_fn.muladd_registered.default(a, b, c)
