"""The stable-ABI ops' derivatives and Autograd kernels, in Python.

The classic package writes its derivatives in C++ (csrc/autograd.cpp: a
backward node and a tangent per op, attached by the Autograd kernels). The
LibTorch stable ABI has no autograd API, so this build writes the same
formulas once here, in ``_Product``, and registers Autograd kernels from
Python with the classic kernels' behaviour:

  mymuladd, mymul: a call with nothing to differentiate goes straight to the
      kernel below autograd; a call with a tangent runs on the primals and
      gets ``_Product``'s tangent; a call that records a backward applies
      ``_Product``. Under a torch.func transform the public functions apply
      ``_Product`` themselves (``product``, from ops.py): torch.func can
      differentiate an autograd.Function applied from Python, not one applied
      inside a dispatcher kernel.
  myadd_out: like PyTorch's out= ops, not differentiable: an argument that
      requires grad under grad mode, or has a tangent, is an error, in the
      words of csrc/checks.h.

torch.library.register_autograd would be the one-line way, but it drops
tangents (a silently zero forward mode) and refuses mutating ops such as
myadd_out. Unlike the C++ kernels, these run Python on every call (the
Performance page gives the cost).
"""

from typing import Optional

import torch
import torch.autograd.forward_ad as fwAD
from torch import Tensor

from . import _checks, _library

# d(a * b + c) = da * b + a * db, for mymuladd and mymul alike.


class _Product(torch.autograd.Function):
    """mymul (``c is None``) and mymuladd, differentiable: this build's one
    place for their derivatives.

    Backward ``grad * b``, ``grad * a`` and tangent ``ta * b + a * tb``, all
    through ``product`` (``_Product`` again), so every order of derivative runs
    our kernels.
    Under vmap the forward is vmapped through the ops' batching rules, and so
    are backward and jvp.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(a: Tensor, b: Tensor, c: Optional[float]) -> Tensor:
        return _library.mymul(a, b) if c is None else _library.mymuladd(a, b, c)

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b, _ = inputs
        # Each gradient needs the other factor only; the tangent needs both.
        ctx.save_for_backward(
            b if ctx.needs_input_grad[0] else None, a if ctx.needs_input_grad[1] else None
        )
        ctx.save_for_forward(a, b)

    @staticmethod
    def backward(ctx, grad):
        b, a = ctx.saved_tensors
        grad_a = product(grad, b) if ctx.needs_input_grad[0] else None
        grad_b = product(grad, a) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b, None

    @staticmethod
    def jvp(ctx, ta, tb, _):
        a, b = ctx.saved_tensors
        return _tangent(a, b, ta, tb, product)


def product(a: Tensor, b: Tensor, c: Optional[float] = None) -> Tensor:
    """mymul(a, b), or mymuladd(a, b, c), with its derivatives attached."""
    return _Product.apply(a, b, c)


def _tangent(a: Tensor, b: Tensor, ta: Optional[Tensor], tb: Optional[Tensor], mul) -> Tensor:
    """The tangent of a * b (+ c): ta * b + a * tb, either of ta, tb None.

    The Autograd kernels pass the raw op as ``mul``: they run inside the
    dispatcher, where an autograd.Function can't be applied under torch.func,
    and mymul's own Autograd kernel differentiates the tangent again for a
    higher-order derivative."""
    terms = [mul(t, x) for t, x in ((ta, b), (tb, a)) if t is not None]
    return terms[0] if len(terms) == 1 else terms[0] + terms[1]


_is_grad_tracking = torch._C._functorch.is_gradtrackingtensor


def _differentiable(op: str, a: Tensor, b: Tensor, c: Optional[float] = None) -> Tensor:
    """``op`` (mymuladd or mymul) on a, b with its derivatives recorded. A raw
    ``torch.ops`` call under a torch.func transform that needs its gradient
    cannot be differentiated from inside the dispatcher; it is refused with
    the way out (the public function)."""
    if any(_is_grad_tracking(t) and t.requires_grad for t in (a, b)):
        raise RuntimeError(
            _checks.message("raw_op_under_func_grad", namespace=_library.NAMESPACE, op=op)
        )
    return _Product.apply(a, b, c)


# The keys below autograd: where a call with nothing to differentiate goes.
_BELOW_AUTOGRAD = torch._C._after_autograd_keyset
_grad_enabled = torch.is_grad_enabled
_increment_version = torch.autograd.graph.increment_version


def _requires_grad(t) -> bool:
    return t is not None and t.requires_grad


def _has_tangent(t) -> bool:
    # A tangent exists only inside a fwAD.dual_level(); outside one (the
    # common case) this costs a global read.
    return fwAD._current_level >= 0 and t is not None and fwAD.unpack_dual(t).tangent is not None


def _nothing_to_differentiate(a, b) -> bool:
    """No gradient to record, no tangent to carry. Every call runs it, so it
    is the fewest Python operations that decide."""
    if a is None or b is None:
        return True  # the kernel below names the None argument
    if _grad_enabled() and (a.requires_grad or b.requires_grad):
        return False
    return not (_has_tangent(a) or _has_tangent(b))


def _with_tangent(a, b, primal):
    """primal(a, b) on the primals, carrying their product's tangent. primal
    goes through autograd again, so a gradient is still recorded where one is
    needed."""
    (a, ta), (b, tb) = fwAD.unpack_dual(a), fwAD.unpack_dual(b)
    return fwAD.make_dual(primal(a, b), _tangent(a, b, ta, tb, _library.mymul))


def _mymuladd(keyset, a, b, c):
    if _nothing_to_differentiate(a, b):
        return _library.mymuladd.redispatch(keyset & _BELOW_AUTOGRAD, a, b, c)
    if _has_tangent(a) or _has_tangent(b):
        return _with_tangent(a, b, lambda x, y: _library.mymuladd(x, y, c))
    return _differentiable("mymuladd", a, b, c)


def _mymul(keyset, a, b):
    if _nothing_to_differentiate(a, b):
        return _library.mymul.redispatch(keyset & _BELOW_AUTOGRAD, a, b)
    if _has_tangent(a) or _has_tangent(b):
        return _with_tangent(a, b, _library.mymul)
    return _differentiable("mymul", a, b)


def _first(predicate, **tensors):
    return next((name for name, t in tensors.items() if predicate(t)), None)


def _myadd_out(keyset, a, b, out):
    if _grad_enabled():
        culprit = _first(_requires_grad, a=a, b=b, out=out)
        if culprit is not None:
            raise RuntimeError(_checks.message("out_autograd", op="myadd_out", name=culprit))
    dual = _first(_has_tangent, a=a, b=b, out=out)
    if dual is not None:
        raise RuntimeError(_checks.message("out_forward_ad", op="myadd_out", name=dual))
    _library.myadd_out.redispatch(keyset & _BELOW_AUTOGRAD, a, b, out)
    if out is not None:
        _increment_version(out)  # out changed in place


_lib = torch.library.Library(_library.NAMESPACE, "IMPL")


def register() -> None:
    for name, kernel in (("mymuladd", _mymuladd), ("mymul", _mymul), ("myadd_out", _myadd_out)):
        _lib.impl(name, kernel, "Autograd", with_keyset=True)
