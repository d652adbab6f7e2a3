"""The public operators and their fake (meta) kernels.

Each function calls its op through the dispatcher, so it works in eager mode,
under autograd, torch.compile and torch.export alike. The kernels are in
``csrc/`` (CPU, CUDA and C++ autograd); the fake kernels below tell the
compiler what each op returns without running it, and must agree with the
real kernels exactly: same shape, dtype, device and strides (always
contiguous), and the same errors for bad input.
"""

import torch
from torch import Tensor

from . import _checks

__all__ = ["mymuladd", "mymul", "myadd_out"]

# The ops' OpOverloads, looked up once: an attribute walk through torch.ops on
# every call costs about 0.3 us, a fifth of a one-element call.
_mymuladd = torch.ops.extension_cpp.mymuladd.default
_mymul = torch.ops.extension_cpp.mymul.default
_myadd_out = torch.ops.extension_cpp.myadd_out.default


def _entry(overload):
    """The C++ function that ``overload(...)`` forwards its arguments to.

    ``OpOverload.__call__`` is a Python method that repacks ``*args`` and
    ``**kwargs`` and then calls this function, which parses the arguments
    against the schema, honours ``__torch_function__`` (tensor subclasses,
    TorchFunctionModes, FX proxies) and calls the dispatcher. Calling it
    directly is the same call without the Python layer: about 0.3 us less per
    call, the difference between matching ``torch.mul`` at small sizes and
    not. Dynamo cannot trace into a C++ function, so under torch.compile and
    torch.export the public functions call the OpOverload itself, which
    Dynamo puts in the graph. Falls back to the OpOverload if a torch release
    renames the attribute (slower, never wrong; a test notices).
    """
    return getattr(overload, "_op", overload)


_mymuladd_entry = _entry(_mymuladd)
_mymul_entry = _entry(_mymul)
_myadd_out_entry = _entry(_myadd_out)
# Bound once: Dynamo reads it as the constant True while it traces, and in
# eager mode it is a bare function returning False.
_is_dynamo_compiling = torch.compiler.is_dynamo_compiling


def mymuladd(a: Tensor, b: Tensor, c: float) -> Tensor:
    """Returns ``a * b + c`` as a new contiguous tensor.

    Args:
        a: float16, bfloat16, float32 or float64 tensor, on the CPU or a CUDA device,
            in any layout (transposed, sliced, expanded, empty or 0-dim).
        b: tensor of the same shape, dtype and device as ``a`` (no broadcasting).
        c: Python number added to every element.

    float16 and bfloat16 are computed in float32 and rounded once. Differentiable
    in ``a`` and ``b`` to any order; the backward calls :func:`mymul`.

    Raises:
        RuntimeError: naming the argument and what was received, when the dtypes,
            shapes or devices are not as above.
    """
    if _is_dynamo_compiling():
        return _mymuladd(a, b, c)
    try:
        return _mymuladd_entry(a, b, c)
    except (RuntimeError, NotImplementedError):
        _checks.raise_if_none("mymuladd", a=a, b=b)
        raise


def mymul(a: Tensor, b: Tensor) -> Tensor:
    """Returns ``a * b`` as a new contiguous tensor.

    Same arguments, layouts and errors as :func:`mymuladd`, without ``c``.
    Differentiable to any order: its backward is built from ``mymul`` itself.
    """
    if _is_dynamo_compiling():
        return _mymul(a, b)
    try:
        return _mymul_entry(a, b)
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
        _myadd_out_entry(a, b, out)
    except (RuntimeError, NotImplementedError):
        _checks.raise_if_none("myadd_out", a=a, b=b, out=out)
        raise


# Fake kernels: run by FakeTensor under torch.compile / torch.export instead of
# the real kernels. They check what the real kernels check, in the same words.


@torch.library.register_fake("extension_cpp::mymuladd")
def _mymuladd_fake(a: Tensor, b: Tensor, c: float) -> Tensor:
    _checks.check_inputs("mymuladd", a, b)
    return a.new_empty(a.shape)  # contiguous, like the real kernel


@torch.library.register_fake("extension_cpp::mymul")
def _mymul_fake(a: Tensor, b: Tensor) -> Tensor:
    _checks.check_inputs("mymul", a, b)
    return a.new_empty(a.shape)


@torch.library.register_fake("extension_cpp::myadd_out")
def _myadd_out_fake(a: Tensor, b: Tensor, out: Tensor) -> None:
    _checks.check_out("myadd_out", a, b, out)
