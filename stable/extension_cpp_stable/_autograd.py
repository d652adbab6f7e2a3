"""Autograd kernels of the stable-ABI ops, registered from Python.

The classic package differentiates its ops in C++ (csrc/autograd.cpp, on the
Autograd dispatch key). The LibTorch stable ABI has no autograd API, so this
module registers the same kernels from Python, on the same key, with the
same behaviour:

  mymuladd, mymul: a tangent (forward mode) is computed as ta * b + a * tb;
      a gradient to record goes through ops._Product (the Python
      autograd.Function the public functions use under torch.func: backward
      grad * b and grad * a). Both go through mymul, so every order of
      derivative runs our kernels. With neither, straight to the kernel
      below autograd. Under torch.func's reverse-mode transforms the raw op
      raises, as the classic one does, naming the public function.
  myadd_out: like PyTorch's out= ops, not differentiable: an input that
      requires grad under grad mode, or has a tangent, is an error with the
      classic build's words.

torch.library.register_autograd would be the one-line way, but it takes no
forward-mode formula (forward AD through torch.ops would then fail) and
refuses mutating ops such as myadd_out. So this does what register_autograd
does internally: an Autograd kernel that either applies the Function or
dispatches below autograd.

The cost: every call of these ops, with or without grad, runs a Python
function here (docs/performance.md gives the figure).
"""

import torch
import torch.autograd.forward_ad as fwAD

from . import _checks, ops

_NAMESPACE = ops._NAMESPACE
# The keys below autograd: where a call that records nothing goes, by
# redispatch (no second trip through the OpOverload, as the C++ kernel).
_BELOW_AUTOGRAD = torch._C._after_autograd_keyset
_is_grad_tracking = torch._C._functorch.is_gradtrackingtensor
_grad_enabled = torch.is_grad_enabled
_increment_version = torch.autograd.graph.increment_version


def _requires_grad(t) -> bool:
    return t is not None and t.requires_grad


def _records_nothing(a, b) -> bool:
    """True for the common call: no tangent, and no gradient to record.

    Every call of mymuladd and mymul runs this, so it is the fewest Python
    operations that decide it; anything else takes the general path below
    (which also handles None). On this repository's 2-core CPU it took the
    Autograd kernel of mymul on one element from 2.5 to 2.0 us.
    """
    return fwAD._current_level < 0 and not (
        _grad_enabled() and (_requires_grad(a) or _requires_grad(b))
    )


def _wants_grad(*tensors) -> bool:
    # A None argument needs no backward: the kernel below names it in its
    # error, eager and under FakeTensor alike (as csrc/autograd.cpp).
    if not torch.is_grad_enabled() or any(t is None for t in tensors):
        return False
    return any(t.requires_grad for t in tensors)


def _has_tangent(t) -> bool:
    # A tangent exists only inside a fwAD.dual_level(); outside one (the
    # common case) this costs a global read.
    return fwAD._current_level >= 0 and t is not None and fwAD.unpack_dual(t).tangent is not None


def _with_tangent(a, b, primal):
    """primal(a, b) on the primals, with the tangent d(a * b) = ta * b + a * tb
    (through mymul) attached: csrc/autograd.cpp's with_tangent. primal goes
    through the dispatcher again, so reverse mode still records its graph."""
    a_p, ta = fwAD.unpack_dual(a)
    b_p, tb = fwAD.unpack_dual(b)
    out = primal(a_p, b_p)
    terms = []
    if ta is not None:
        terms.append(ops._mymul(ta, b_p))
    if tb is not None:
        terms.append(ops._mymul(a_p, tb))
    return fwAD.make_dual(out, terms[0] if len(terms) == 1 else terms[0] + terms[1])


def _record(op: str, a, b) -> bool:
    """True when the call must record a backward (ops._Product)."""
    if not _wants_grad(a, b):
        return False
    # torch.func's reverse-mode transforms hand the kernel wrapped tensors,
    # which an autograd.Function applied from inside a dispatcher kernel
    # cannot reach; the public function applies it before the dispatcher.
    if any(_is_grad_tracking(t) for t in (a, b)):
        raise RuntimeError(_checks.raw_op_under_func_grad(_NAMESPACE, op))
    return True


def _mymuladd(keyset, a, b, c):
    if _records_nothing(a, b):
        return ops._mymuladd.redispatch(keyset & _BELOW_AUTOGRAD, a, b, c)
    if _has_tangent(a) or _has_tangent(b):
        return _with_tangent(a, b, lambda x, y: ops._mymuladd(x, y, c))
    if _record("mymuladd", a, b):
        return ops._Product.apply(a, b, c)
    return ops._mymuladd.redispatch(keyset & _BELOW_AUTOGRAD, a, b, c)


def _mymul(keyset, a, b):
    if _records_nothing(a, b):
        return ops._mymul.redispatch(keyset & _BELOW_AUTOGRAD, a, b)
    if _has_tangent(a) or _has_tangent(b):
        return _with_tangent(a, b, ops._mymul)
    if _record("mymul", a, b):
        return ops._Product.apply(a, b, None)
    return ops._mymul.redispatch(keyset & _BELOW_AUTOGRAD, a, b)


def _first(predicate, **tensors):
    return next((name for name, t in tensors.items() if predicate(t)), None)


def _myadd_out(keyset, a, b, out):
    # The refusals are checked only when something could be refused (the
    # same shortcut as _records_nothing).
    if _grad_enabled() and (_requires_grad(a) or _requires_grad(b) or _requires_grad(out)):
        culprit = _first(_requires_grad, a=a, b=b, out=out)
        raise RuntimeError(_checks.out_refuses_autograd("myadd_out", culprit))
    if fwAD._current_level >= 0:
        dual = _first(_has_tangent, a=a, b=b, out=out)
        if dual is not None:
            raise RuntimeError(_checks.out_refuses_forward_ad("myadd_out", dual))
    ops._myadd_out.redispatch(keyset & _BELOW_AUTOGRAD, a, b, out)
    if out is not None:
        _increment_version(out)


_lib = torch.library.Library(_NAMESPACE, "IMPL")


def register() -> None:
    for name, kernel in (("mymuladd", _mymuladd), ("mymul", _mymul), ("myadd_out", _myadd_out)):
        _lib.impl(name, kernel, "Autograd", with_keyset=True)
