"""Autograd kernels of the stable-ABI ops, registered from Python.

The classic package's Autograd kernels are C++ (csrc/autograd.cpp); the
LibTorch stable ABI offers no autograd API, so this module registers the same
kernels from Python, on the same dispatch key, with the same behaviour:

  mymuladd, mymul: a call with nothing to differentiate goes straight to the
      kernel below autograd; a call with a tangent runs on the primals and
      gets ``ops.tangent``'s tangent; a call that records a backward runs
      ``ops.differentiable``. The derivatives are written there, once, and
      the classic package's C++ kernels call the same functions.
  myadd_out: like PyTorch's out= ops, not differentiable: an argument that
      requires grad under grad mode, or has a tangent, is an error, in the
      words of csrc/checks.h.

torch.library.register_autograd would be the one-line way, but it takes no
forward-mode formula and refuses mutating ops such as myadd_out. So this does
what register_autograd does internally: an Autograd kernel that either
applies the autograd.Function or dispatches below autograd. Unlike the C++
kernels, it runs Python on every call (the Performance page gives the cost).
"""

import torch
import torch.autograd.forward_ad as fwAD

from . import _checks, ops

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
    """No gradient to record, no tangent to carry (csrc/autograd.cpp's test).
    Every call runs it, so it is the fewest Python operations that decide."""
    if a is None or b is None:
        return True  # the kernel below names the None argument
    if _grad_enabled() and (a.requires_grad or b.requires_grad):
        return False
    return not (_has_tangent(a) or _has_tangent(b))


def _with_tangent(a, b, primal):
    """primal(a, b) on the primals, carrying ops.tangent's tangent (as
    csrc/autograd.cpp's with_tangent). primal goes through autograd again, so
    a gradient is still recorded where one is needed."""
    (a, ta), (b, tb) = fwAD.unpack_dual(a), fwAD.unpack_dual(b)
    return fwAD.make_dual(primal(a, b), ops.tangent(a, b, ta, tb))


def _mymuladd(keyset, a, b, c):
    if _nothing_to_differentiate(a, b):
        return ops._mymuladd.redispatch(keyset & _BELOW_AUTOGRAD, a, b, c)
    if _has_tangent(a) or _has_tangent(b):
        return _with_tangent(a, b, lambda x, y: ops._mymuladd(x, y, c))
    return ops.differentiable("mymuladd", a, b, c)


def _mymul(keyset, a, b):
    if _nothing_to_differentiate(a, b):
        return ops._mymul.redispatch(keyset & _BELOW_AUTOGRAD, a, b)
    if _has_tangent(a) or _has_tangent(b):
        return _with_tangent(a, b, ops._mymul)
    return ops.differentiable("mymul", a, b)


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
    ops._myadd_out.redispatch(keyset & _BELOW_AUTOGRAD, a, b, out)
    if out is not None:
        _increment_version(out)  # out changed in place


_lib = torch.library.Library(ops._NAMESPACE, "IMPL")


def register() -> None:
    for name, kernel in (("mymuladd", _mymuladd), ("mymul", _mymul), ("myadd_out", _myadd_out)):
        _lib.impl(name, kernel, "Autograd", with_keyset=True)
