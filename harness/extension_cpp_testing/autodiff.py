"""Autodiff modes, each a way to differentiate a function of tensors.

A mode is a function ``(f, xs, ts) -> result``: ``f`` takes the tensors
``xs`` and returns one tensor, ``ts`` are tangents (or cotangents) shaped
like ``xs``. The harness runs a mode on the op and on its reference and
compares the results, so an op that claims a mode must give the derivative
of the reference's math there, never a silent zero or a missing tangent.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.autograd.forward_ad as fwAD
from torch import func


def scalar(f):
    """sum(sin(f(xs))): a non-linear scalar, so second derivatives are not trivial."""
    return lambda *xs: f(*xs).sin().sum()


def every(xs) -> tuple:
    """argnums for every input."""
    return tuple(range(len(xs)))


def forward_ad(f, xs, ts, which=None):
    """f's tangent for tangents ts; with ``which``, only those inputs are dual."""
    with fwAD.dual_level():
        duals = [
            fwAD.make_dual(x, t) if which is None or i in which else x
            for i, (x, t) in enumerate(zip(xs, ts))
        ]
        return fwAD.unpack_dual(f(*duals)).tangent


# The modes, each a function of its own: a reproducer prints its source.


def reverse(f, xs, ts):
    leaves = [x.detach().requires_grad_() for x in xs]
    return torch.autograd.grad(scalar(f)(*leaves), leaves)


def grad(f, xs, ts):
    return func.grad(scalar(f), argnums=every(xs))(*xs)


def vjp(f, xs, ts):
    """The vector-Jacobian product for a cotangent shaped like f's output:
    distinct values in [-1, 1], the same for the op and its reference, and
    made without a random generator, which torch.compile can't trace."""
    out, pull = func.vjp(f, *xs)
    index = torch.arange(out.numel(), dtype=out.dtype, device=out.device)
    return pull(torch.sin(index + 0.5).reshape(out.shape))


def jacrev(f, xs, ts):
    return func.jacrev(f, argnums=every(xs))(*xs)


def jacfwd(f, xs, ts):
    return func.jacfwd(f, argnums=every(xs))(*xs)


def hessian(f, xs, ts):
    return func.hessian(scalar(f))(*xs)


def jvp(f, xs, ts):
    return func.jvp(f, tuple(xs), tuple(ts))


def jvp_first_only(f, xs, ts):
    return func.jvp(lambda x: f(x, *xs[1:]), (xs[0],), (ts[0],))


def vmap_grad(f, xs, ts):
    """vmap of grad over a batch of 3: the first input varies, the others are shared."""
    first = torch.stack([xs[0] * ts[0] * k for k in (1.0, 2.0, 3.0)])
    rest = [x.unsqueeze(0).expand(3, *x.shape) for x in xs[1:]]
    return func.vmap(func.grad(scalar(f)))(first, *rest)


def forward_ad_last_only(f, xs, ts):
    return forward_ad(f, xs, ts, which={len(xs) - 1})


def forward_over_reverse(f, xs, ts):
    return func.jvp(func.grad(scalar(f)), tuple(xs), tuple(ts))


MODES: dict[str, Callable] = {
    "reverse": reverse,
    "grad": grad,
    "vjp": vjp,
    "jacrev": jacrev,
    "jacfwd": jacfwd,
    "hessian": hessian,
    "jvp": jvp,
    "jvp-first-only": jvp_first_only,
    "vmap-grad": vmap_grad,
    "forward_ad": forward_ad,
    "forward_ad-last-only": forward_ad_last_only,
    "forward-over-reverse": forward_over_reverse,
}
# What the modes call besides torch: a reproducer prints those it needs.
HELPERS = (scalar, every, forward_ad)

# The modes a backward formula serves: reverse mode, and the torch.func
# transforms built on it (which need an autograd.Function with setup_context,
# applied where torch.func sees it).
REVERSE_MODES = ("reverse", "grad", "vjp", "jacrev", "vmap-grad")
# Modes that need a forward-mode formula (a jvp) as well.
FORWARD_MODES = ("jvp", "jvp-first-only", "jacfwd", "forward_ad", "forward_ad-last-only")
