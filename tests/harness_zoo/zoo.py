"""Builds and registers the harness zoo, and describes each op to the harness.

``load()`` compiles zoo.cpp (and zoo_cuda.cu where there is a GPU) once into
build/harness_zoo with torch.utils.cpp_extension; ninja rebuilds it only when
a source changes, so a later session just loads the library. Then it
registers the fake and autograd kernels below, some with their bug, and
returns one OpSpec per op.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch
from torch.utils import cpp_extension

from extension_cpp import _checks
from extension_cpp.testing import OpSpec

HERE = Path(__file__).resolve().parent
BUILD = HERE.parents[1] / "build" / "harness_zoo"

# The harness runs the zoo on fewer cases than our own ops: each bug shows on
# the first layouts already, and the run stays a few seconds per op.
ZOO_LAYOUTS = ("contiguous", "transposed", "mixed", "0-dim")
ZOO_DTYPES = (torch.float32, torch.float64)

ops = torch.ops.harness_zoo


# The fake kernels check with extension_cpp's own Python checks (the zoo's
# C++ kernels say the same words as csrc/ops.cpp), leaving out what a bug
# leaves out.
_output = _checks.elementwise_output  # torch.mul(a, b)'s layout, as TensorIterator's


# -- registrations ------------------------------------------------------------


def _fake(name, body):
    torch.library.register_fake(f"harness_zoo::{name}")(body)


def _checked_fake(name):
    def fake(a, b):
        _checks.check_inputs(f"harness_zoo.{name}", a, b)
        return _output(a, b)

    _fake(name, fake)


def _autograd(name, sign=1.0):
    """Backward grad * b, grad * a through harness_zoo.mul (so it is differentiable
    again); sign=-1 gives the wrong-sign bug in a's gradient."""

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = ops.mul(grad, b) if ctx.needs_input_grad[0] else None
        grad_b = ops.mul(grad, a) if ctx.needs_input_grad[1] else None
        if grad_a is not None and sign != 1.0:
            grad_a = -grad_a  # the bug
        return grad_a, grad_b

    torch.library.register_autograd(f"harness_zoo::{name}", backward, setup_context=setup_context)


def _register() -> None:
    # Correct: mul, add_out, and every op whose bug is in its kernel or schema.
    kernel_bugs = ("int_count_mul", "accumulated_mul", "zero_skip_mul")
    for name in ("mul", "no_autograd_mul", "wrong_sign_mul", *kernel_bugs):
        _checked_fake(name)
    for name in ("mul", "fake_strides_mul", "unchecked_fake_mul", *kernel_bugs):
        _autograd(name)
    for name in ("add_out", "unmarked_add_out"):
        _fake(name, functools.partial(_checks.check_out, f"harness_zoo.{name}"))

    # Bug: a fresh contiguous tensor, whatever the inputs' layout; the kernel
    # returns torch.mul's layout (transposed for transposed inputs).
    def fake_strides(a, b):
        _checks.check_inputs("harness_zoo.fake_strides_mul", a, b)
        return a.new_empty(a.shape)

    _fake("fake_strides_mul", fake_strides)

    # Bug: only the dtypes are checked, not that a and b agree (in shape), so
    # compiled code accepts what eager rejects.
    def unchecked(a, b):
        _checks.check_dtype("harness_zoo.unchecked_fake_mul", "a", a)
        _checks.check_dtype("harness_zoo.unchecked_fake_mul", "b", b)
        return torch.empty_like(a)

    _fake("unchecked_fake_mul", unchecked)

    # The kernel's only dtype check is its INTERNAL ASSERT; the fake has none.
    def internal_assert(a, b):
        _checks.check_same("harness_zoo.internal_assert_mul", "a", a, "b", b)
        return _output(a, b)

    _fake("internal_assert_mul", internal_assert)
    _autograd("internal_assert_mul")

    # Bug: the fake, like the kernel, does not check overlap.
    def no_overlap_check(a, b, out):
        _checks.check_inputs("harness_zoo.overlap_add_out", a, b)
        _checks.check_dtype("harness_zoo.overlap_add_out", "out", out)
        _checks.check_same("harness_zoo.overlap_add_out", "out", out, "a", a)

    _fake("overlap_add_out", no_overlap_check)

    _autograd("wrong_sign_mul", sign=-1.0)  # the bug: a's gradient has the wrong sign
    # no_autograd_mul: the bug is that nothing is registered.

    _fake(
        "default_stream_mul",
        lambda a, b: torch.empty_like(a, memory_format=torch.contiguous_format),
    )


def _specs() -> dict[str, OpSpec]:
    zoo = dict(dtypes=ZOO_DTYPES, layouts=ZOO_LAYOUTS, devices=("cpu",), exact=True)
    # register_autograd gives reverse mode only (torch.func needs setup_context
    # on an autograd.Function).
    functional = dict(zoo, reference=torch.mul, autodiff=("reverse",))
    out = dict(zoo, reference=torch.add, out=True)
    specs = {
        name: OpSpec(getattr(ops, name).default, **functional)
        for name in (
            "mul",
            "fake_strides_mul",
            "unchecked_fake_mul",
            "no_autograd_mul",
            "wrong_sign_mul",
            "internal_assert_mul",
            "accumulated_mul",
            "zero_skip_mul",
        )
    }
    specs["int_count_mul"] = OpSpec(
        ops.int_count_mul.default,
        **{**functional, "dtypes": (torch.bfloat16, *ZOO_DTYPES)},
        huge=True,
    )
    specs["mul_huge"] = OpSpec(
        ops.mul.default, **{**functional, "dtypes": (torch.bfloat16,)}, huge=True, checks=("huge",)
    )
    for name in ("add_out", "overlap_add_out", "unmarked_add_out"):
        specs[name] = OpSpec(getattr(ops, name).default, **out)
    specs["default_stream_mul"] = OpSpec(
        ops.default_stream_mul.default,
        reference=torch.mul,
        dtypes=(torch.float32,),
        layouts=("contiguous",),
        devices=("cuda",),
        exact=True,
        checks=("results", "cuda_graph", "side_stream"),
    )
    return specs


@functools.cache
def load() -> dict[str, OpSpec]:
    """Builds (or finds built) and loads the zoo; the OpSpec of each op by name."""
    sources = [HERE / "zoo.cpp"]
    if torch.cuda.is_available():
        sources.append(HERE / "zoo_cuda.cu")
    BUILD.mkdir(parents=True, exist_ok=True)
    cpp_extension.load(
        name="harness_zoo" + ("_cuda" if len(sources) > 1 else ""),
        sources=[str(s) for s in sources],
        build_directory=str(BUILD),
        extra_cflags=["-O2"],
        # As setup.py: a static C++ runtime, where the toolchain links one in,
        # stays private (docs/troubleshooting.md).
        extra_ldflags=["-Wl,--exclude-libs,ALL"],
        is_python_module=False,
        verbose=False,
    )
    _register()
    return _specs()
