"""extension_cpp's three ops, written in Triton and registered with torch.library.triton_op.

Each op is a Python function: it checks its inputs, allocates its output and
launches a Triton kernel (kernels.py) through ``wrap_triton``. ``triton_op``
makes it an operator of the dispatcher, ``torch.ops.extension_triton.<name>``,
with the schema read from the type hints, and uses the same function three
ways:

* eager: called with real tensors, it runs the kernel;
* fake kernel: under torch.compile and torch.export it runs on fake tensors
  (sizes, strides, dtype and device, no data), where ``wrap_triton`` records
  the launch instead of running it. So no ``register_fake`` is needed: the
  checks and the output allocation are the real ones, and cannot drift from
  them;
* torch.compile: Inductor sees the Triton kernel itself and can compile it
  into the graph, next to the kernels it generates (a C++ op is opaque to it).
  torch.export keeps the op as one node; AOTInductor then compiles the kernel
  into the package.

Derivatives: ``register_autograd`` gives each op its backward, and the
public functions ``mymuladd`` and ``mymul`` add forward mode (a jvp), which
PyTorch has no registration for (see Note [Forward mode] below). Batching
rules for torch.vmap, with ``register_vmap``, call each op once for the
whole batch.
"""

import functools

import torch
from torch import Tensor
from torch.library import triton_op
from triton.runtime.interpreter import InterpretedFunction

from . import _checks
from .kernels import _dense_kernel, launch

__all__ = ["mymuladd", "mymul", "myadd_out"]

# TRITON_INTERPRET=1 at import: Triton's interpreter runs the kernels on the
# CPU, one program at a time in NumPy (slowly: for debugging), and takes CPU
# tensors.
INTERPRETED = isinstance(_dense_kernel, InterpretedFunction)


def _output(a: Tensor, b: Tensor) -> Tensor:
    """An empty tensor laid out as ``torch.mul(a, b)`` would be."""
    if a.is_contiguous() and b.is_contiguous():
        return torch.empty(a.shape, dtype=a.dtype, device=a.device)
    strides = _mul_strides(a.shape, a.stride(), b.stride())
    return torch.empty_strided(a.shape, strides, dtype=a.dtype, device=a.device)


def _mul_strides(shape, a_strides, b_strides) -> tuple:
    """torch.mul's output strides for inputs of these strides: PyTorch's own
    layout rule (TensorIterator's), asked of tensors on the meta device, which
    have sizes and strides but no memory, so no kernel runs. A call on the
    meta device costs more than a kernel launch, so the answer is remembered
    per layout where the sizes are plain ints (not symbolic, as they are under
    torch.compile with dynamic shapes)."""
    key = (tuple(shape), tuple(a_strides), tuple(b_strides))
    if all(type(x) is int for part in key for x in part):
        return _remembered_mul_strides(*key)
    return _meta_mul_strides(*key)


def _meta_mul_strides(shape, a_strides, b_strides) -> tuple:
    a = torch.empty_strided(shape, a_strides, device="meta")
    b = torch.empty_strided(shape, b_strides, device="meta")
    return torch.mul(a, b).stride()


_remembered_mul_strides = functools.lru_cache(maxsize=1024)(_meta_mul_strides)


@triton_op("extension_triton::mymuladd", mutates_args=())
def mymuladd_op(a: Tensor, b: Tensor, c: float) -> Tensor:
    """Returns ``a * b + c``, laid out as ``torch.mul(a, b)`` would be.

    a, b: one shape, dtype (float16, bfloat16, float32 or float64) and CUDA
    device, in any layout that merges into at most four dimensions (every
    dense layout, slices, broadcasts, one input transposed against the other).
    float16 and bfloat16 are computed in float32 and rounded once.
    Differentiable in a and b; the backward calls :func:`mymul`.
    """
    _checks.check_inputs("mymuladd", a, b, interpreted=INTERPRETED)
    out = _output(a, b)
    launch("mymuladd", a, b, out, c)
    return out


@triton_op("extension_triton::mymul", mutates_args=())
def mymul_op(a: Tensor, b: Tensor) -> Tensor:
    """Returns ``a * b``; as :func:`mymuladd_op` without c."""
    _checks.check_inputs("mymul", a, b, interpreted=INTERPRETED)
    out = _output(a, b)
    launch("mymul", a, b, out)
    return out


@triton_op("extension_triton::myadd_out", mutates_args={"out"})
def myadd_out(a: Tensor, b: Tensor, out: Tensor) -> None:
    """Writes ``a + b`` into ``out``, a tensor like a in any layout without
    internal overlap; it may be a or b itself (an in-place add)."""
    _checks.check_out("myadd_out", a, b, out, interpreted=INTERPRETED)
    launch("myadd_out", a, b, out)


# Derivatives: d(a * b + c) = da * b + a * db, for mymuladd and mymul alike.
# The backward calls mymul, whose own backward is this one: every order of
# derivative runs the Triton kernels.


def _setup_context(ctx, inputs, output) -> None:
    a, b = inputs[:2]
    # Each gradient needs the other factor only.
    ctx.save_for_backward(
        b if ctx.needs_input_grad[0] else None, a if ctx.needs_input_grad[1] else None
    )


def _backward(ctx, grad: Tensor):
    b, a = ctx.saved_tensors
    grad_a = mymul(grad, b) if ctx.needs_input_grad[0] else None
    grad_b = mymul(grad, a) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


def _backward_muladd(ctx, grad: Tensor):
    return *_backward(ctx, grad), None  # no gradient for c


mymul_op.register_autograd(_backward, setup_context=_setup_context)
mymuladd_op.register_autograd(_backward_muladd, setup_context=_setup_context)


# Note [Forward mode]
# register_autograd gives an op a backward only. Forward-mode AD
# (torch.func.jvp, jacfwd, hessian, torch.autograd.forward_ad) passes the op
# no tangent and gets none back: without more, the ops would return zeros
# there, silently. PyTorch has no public way to register a jvp for a custom
# op, so the public functions below add one: in eager mode they apply
# _Product, an autograd.Function whose jvp is the tangent
# da * b + a * db and whose backward is the op's own; torch.func uses
# autograd.Function's jvp, backward and vmap rule. Dynamo can't trace an
# autograd.Function with a jvp, so under torch.compile and torch.export they
# call the op itself, whose register_autograd backward the compiled graph
# differentiates.


class _Product(torch.autograd.Function):
    """``a * b``, plus ``c`` where c is not None: mymul_op or mymuladd_op."""

    @staticmethod
    def forward(a: Tensor, b: Tensor, c: float | None) -> Tensor:
        return mymul_op(a, b) if c is None else mymuladd_op(a, b, c)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        _setup_context(ctx, inputs, output)
        ctx.save_for_forward(*inputs[:2])

    backward = staticmethod(_backward_muladd)

    @staticmethod
    def jvp(ctx, tangent_a, tangent_b, _) -> Tensor:
        a, b = ctx.saved_tensors
        terms = [mymul(t, f) for t, f in ((tangent_a, b), (a, tangent_b)) if t is not None]
        return terms[0] if len(terms) == 1 else terms[0] + terms[1]

    # torch.vmap runs forward under vmap: the ops' own batching rules.
    generate_vmap_rule = True


def mymuladd(a: Tensor, b: Tensor, c: float) -> Tensor:
    """Returns ``a * b + c`` (:func:`mymuladd_op`), differentiable in a and b
    in every autodiff mode (Note [Forward mode])."""
    if torch.compiler.is_compiling():
        return mymuladd_op(a, b, c)
    return _Product.apply(a, b, c)


def mymul(a: Tensor, b: Tensor) -> Tensor:
    """Returns ``a * b`` (:func:`mymul_op`), differentiable in a and b in every
    autodiff mode (Note [Forward mode])."""
    if torch.compiler.is_compiling():
        return mymul_op(a, b)
    return _Product.apply(a, b, None)


# Batching rules for torch.vmap: the batch dimension moves to the front of
# each batched argument, unbatched ones are expanded to match (a stride-0
# view, no copy, which the tiled kernel reads as a broadcast), and one call
# of the op covers the whole batch.


def _batch_first(info, in_dims, *tensors: Tensor) -> list:
    return [
        t.unsqueeze(0).expand(info.batch_size, *t.shape) if d is None else t.movedim(d, 0)
        for t, d in zip(tensors, in_dims)
    ]


@mymuladd_op.register_vmap
def _mymuladd_vmap(info, in_dims, a: Tensor, b: Tensor, c: float):
    return mymuladd_op(*_batch_first(info, in_dims[:2], a, b), c), 0


@mymul_op.register_vmap
def _mymul_vmap(info, in_dims, a: Tensor, b: Tensor):
    return mymul_op(*_batch_first(info, in_dims, a, b)), 0
