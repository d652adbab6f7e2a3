"""Builds and registers the harness zoo, and describes each op to the harness.

``load()`` compiles zoo.cpp (and zoo_cuda.cu where there is a GPU) once with
torch.utils.cpp_extension, into its build folder (TORCH_EXTENSIONS_DIR, by
default ~/.cache/torch_extensions) under a name that carries the torch
release; ninja rebuilds it only when a source changes, so a later session
just loads the library. Then it
registers the fake, autograd and batching (vmap) kernels below, some with
their bug, defines declared.py's Python ops (those whose contract needs a
declaration of the OpSpec), and returns one OpSpec per op. It needs torch
and the harness only (zoo_checks.py holds its fake kernels' checks), so the
standalone harness's tests run it too.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import torch
from torch.utils import cpp_extension

from extension_cpp_testing import FORWARD_MODES, OpSpec

from . import zoo_checks as _checks

HERE = Path(__file__).resolve().parent
# One library per torch release: a build for another torch would not load.
NAME = "harness_zoo_torch" + re.sub(r"\W", "_", torch.__version__)

# The harness runs the zoo on fewer cases than our own ops: each bug shows on
# the first layouts already, and the run stays a few seconds per op.
ZOO_LAYOUTS = ("contiguous", "transposed", "mixed", "0-dim")
ZOO_DTYPES = (torch.float32, torch.float64)

ops = torch.ops.harness_zoo


# The fake kernels check what zoo.cpp checks, in its words (zoo_checks.py),
# leaving out what a bug leaves out.
_output = _checks.output  # torch.mul(a, b)'s layout, as TensorIterator's


# -- registrations ------------------------------------------------------------


def _fake(name, body):
    torch.library.register_fake(f"harness_zoo::{name}")(body)


def _checked_fake(name):
    def fake(a, b):
        _checks.check_inputs(f"harness_zoo.{name}", a, b)
        return _output(a, b)

    _fake(name, fake)


# The Autograd kernels registered below (kept alive with the module).
_AUTOGRAD: dict[str, torch.library.Library] = {}


def register_autograd_kernel(qualname: str, setup_context, backward, jvp=None) -> None:
    """An autograd.Function (setup_context, backward, and jvp if given)
    registered as the op's Autograd kernel, which torch.library.register_autograd
    also registers, but applied on every call.

    Without a jvp, forward mode raises (NotImplementedError: "You must
    implement the jvp function"), and so does every torch.func transform,
    which can't see into a dispatcher kernel: reverse mode is all it gives,
    as the zoo's OpSpecs declare (autodiff=("reverse",)). register_autograd
    instead skips autograd where no input requires grad, so a forward-mode
    tangent is dropped without an error."""
    namespace, name = qualname.split("::")
    op = getattr(getattr(torch.ops, namespace), name).default
    methods = {
        "forward": staticmethod(lambda *args: _below_autograd(op, args)),
        "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward),
    }
    if jvp is not None:
        methods["jvp"] = staticmethod(jvp)
    function = type(f"{name}_autograd", (torch.autograd.Function,), methods)
    lib = _AUTOGRAD.setdefault(namespace, torch.library.Library(namespace, "IMPL"))
    lib.impl(name, lambda *args: function.apply(*args), "Autograd")


def _below_autograd(op, args):
    with torch._C._AutoDispatchBelowAutograd():
        return op(*args)


def _autograd(name, sign=1.0, jvp_error=None):
    """Backward grad * b, grad * a through harness_zoo.mul (so it is
    differentiable again); sign=-1 gives the wrong-sign bug in a's gradient.
    jvp_error adds a jvp, off by that relative error (jvp_off_mul's bug)."""

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = ops.mul(grad, b) if ctx.needs_input_grad[0] else None
        grad_b = ops.mul(grad, a) if ctx.needs_input_grad[1] else None
        if grad_a is not None and sign != 1.0:
            grad_a = -grad_a  # the bug
        return grad_a, grad_b

    def jvp(ctx, tangent_a, tangent_b):
        a, b = ctx.saved_tensors
        tangent = torch.zeros_like(a)
        if tangent_a is not None:
            tangent = tangent + tangent_a * b
        if tangent_b is not None:
            tangent = tangent + a * tangent_b
        return tangent * (1 + jvp_error)  # the bug

    register_autograd_kernel(
        f"harness_zoo::{name}", setup_context, backward, jvp if jvp_error is not None else None
    )


def _batch_first(x: torch.Tensor, dim, size: int) -> torch.Tensor:
    """x with its vmap batch dimension first (expanded to size if it has none)."""
    return x.movedim(dim, 0) if dim is not None else x.expand(size, *x.shape)


def _vmap(name):
    """A batching rule for an elementwise zoo op: both inputs batched first,
    then one call of the op on the whole batch (its inputs share one shape)."""
    op = getattr(ops, name).default

    def rule(info, in_dims, a, b, *rest):
        a, b = (_batch_first(x, d, info.batch_size) for x, d in zip((a, b), in_dims))
        return op(a, b, *rest), 0

    torch.library.register_vmap(f"harness_zoo::{name}", rule)


# Every functional op has a batching rule but no_vmap_mul (its bug).
FUNCTIONAL = (
    "mul",
    "fake_strides_mul",
    "unchecked_fake_mul",
    "no_autograd_mul",
    "wrong_sign_mul",
    "internal_assert_mul",
    "int_count_mul",
    "accumulated_mul",
    "zero_skip_mul",
    "ulp_off_mul",
    "float32_fake_mul",
    "int_size_fake_mul",
    "no_fake_mul",
    "contiguous_mul",
    "mutating_mul",
    "muladd",
    "double_rounded_muladd",
    "register_autograd_mul",
    "jvp_off_mul",
    "jvp_mul",
)


def _register() -> None:
    # Correct: mul, add_out, and every op whose bug is in its kernel or schema.
    kernel_bugs = ("int_count_mul", "accumulated_mul", "zero_skip_mul", "ulp_off_mul")
    for name in ("mul", "no_autograd_mul", "wrong_sign_mul", "no_vmap_mul", *kernel_bugs):
        _checked_fake(name)
    for name in ("mul", "fake_strides_mul", "unchecked_fake_mul", "no_vmap_mul", *kernel_bugs):
        _autograd(name)
    for name in ("float32_fake_mul", "int_size_fake_mul", "no_fake_mul", "mutating_mul"):
        _autograd(name)
    _autograd("contiguous_mul")
    for name in ("add_out", "unmarked_add_out", "contiguous_out_add_out"):
        _fake(name, functools.partial(_checks.check_out, f"harness_zoo.{name}"))
    for name in FUNCTIONAL:
        _vmap(name)

    # contiguous_mul's fake kernel agrees with its kernel (and both with
    # neither torch.mul): only the strides check can tell.
    def contiguous(a, b):
        _checks.check_inputs("harness_zoo.contiguous_mul", a, b)
        return a.new_empty(a.shape)

    _fake("contiguous_mul", contiguous)

    # mutating_mul's fake kernel is right: the bug is in the kernel alone.
    _checked_fake("mutating_mul")

    for name in ("muladd", "double_rounded_muladd"):

        def fake_muladd(a, b, c, name=name):
            _checks.check_inputs(f"harness_zoo.{name}", a, b)
            return _output(a, b)

        _fake(name, fake_muladd)

    # Bug: float32 whatever the inputs' dtype.
    def float32_fake(a, b):
        _checks.check_inputs("harness_zoo.float32_fake_mul", a, b)
        return torch.empty_like(_output(a, b), dtype=torch.float32)

    _fake("float32_fake_mul", float32_fake)

    # Bug: a scratch buffer sized with int(), which turns the symbolic element
    # count into a constant of the compiled graph.
    def int_size_fake(a, b):
        _checks.check_inputs("harness_zoo.int_size_fake_mul", a, b)
        a.new_empty(int(a.numel()))
        return _output(a, b)

    _fake("int_size_fake_mul", int_size_fake)

    # Bug: an out= op's fake kernel written like a functional op's: it returns
    # a new tensor, where the kernel returns nothing.
    def returning_fake(a, b, out):
        _checks.check_out("harness_zoo.returning_fake_add_out", a, b, out)
        return torch.empty_like(out)

    _fake("returning_fake_add_out", returning_fake)

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
    _fake("device_synced_mul", lambda a, b: _output(a, b))

    # In place: check what the kernel checks, change nothing, return None.
    for name in ("axpy_", "off_by_one_axpy_"):

        def fake_axpy(y, x, alpha, name=name):
            _checks.check_inputs(f"harness_zoo.{name}", y, x)

        _fake(name, fake_axpy)

    for name in ("quantize", "two_codes_off_quantize"):

        def fake_quantize(x, scale, name=name):
            _checks.check_float32(f"harness_zoo.{name}", "x", x)
            return torch.empty_like(x, dtype=torch.int8)

        _fake(name, fake_quantize)
        _vmap_one(name)

    _checked_fake("abort_on_empty_mul")

    # Bug: torch.library.register_autograd, whose kernel skips autograd when
    # no input requires grad, so a forward-mode tangent is dropped without an
    # error: forward AD gives None, torch.func.jvp and jacfwd zeros.
    _checked_fake("register_autograd_mul")

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return ops.mul(grad, b), ops.mul(grad, a)

    torch.library.register_autograd(
        "harness_zoo::register_autograd_mul", backward, setup_context=setup_context
    )

    _checked_fake("jvp_off_mul")
    _autograd("jvp_off_mul", jvp_error=1e-4)  # the bug: a tangent 1e-4 too large
    _checked_fake("jvp_mul")
    _autograd("jvp_mul", jvp_error=0.0)  # its twin: the right tangent


def _vmap_one(name):
    """A batching rule for a one-input elementwise zoo op."""
    op = getattr(ops, name).default

    def rule(info, in_dims, x, *rest):
        return op(_batch_first(x, in_dims[0], info.batch_size), *rest), 0

    torch.library.register_vmap(f"harness_zoo::{name}", rule)


def _register_synced_mul() -> None:
    """synced_mul: a Python op that checks its input for NaN before computing,
    which copies a value to the host: fine eagerly, impossible in a CUDA graph."""

    @torch.library.custom_op("harness_zoo::synced_mul", mutates_args=())
    def synced_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if bool(torch.isnan(a).any()):  # the host sync
            raise ValueError("harness_zoo.synced_mul: a holds NaN")
        return torch.mul(a, b)

    synced_mul.register_fake(lambda a, b: _output(a, b))


def _register_stream_leaking_mul() -> None:
    """stream_leaking_mul: a Python op that makes another CUDA stream current
    and leaves it so."""

    @torch.library.custom_op("harness_zoo::stream_leaking_mul", mutates_args=())
    def stream_leaking_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.mul(a, b)
        torch.cuda.set_stream(torch.cuda.Stream())  # the bug: never set back
        return out

    stream_leaking_mul.register_fake(lambda a, b: _output(a, b))


def _axpy_reference(y, x, alpha):
    """y += alpha * x, in place, as the op does; None, as the op returns."""
    y.add_(x, alpha=alpha)


def quantize_samples(layout, dtype, device, rows):
    """rows x 129 values around [-4, 4], one in ten a tie between two codes of
    QUANT_SCALE (k + 1/2 codes exactly), where rounding rules differ; stored
    column by column for the "transposed" layout."""
    values = torch.randn(rows, 129) * 1.5
    ties = torch.randint(-250, 251, values.shape) * (QUANT_SCALE / 2)
    x = torch.where(torch.rand(values.shape) < 0.1, ties, values)
    if layout == "transposed":
        x = x.t().contiguous().t()
    return [x.to(device), QUANT_SCALE]


# 2^-5: x / QUANT_SCALE is exact, so a tie in the samples is a tie in the kernel.
QUANT_SCALE = 2.0**-5


def _specs() -> dict[str, OpSpec]:
    zoo = dict(dtypes=ZOO_DTYPES, layouts=ZOO_LAYOUTS, devices=("cpu",), exact=True)
    # Reverse mode only: _autograd's Function raises in every other mode.
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
            "ulp_off_mul",
            "float32_fake_mul",
            "int_size_fake_mul",
            "no_fake_mul",
            "no_vmap_mul",
            "contiguous_mul",
            "mutating_mul",
            "register_autograd_mul",
            "catch_all_mul",
        )
    }
    # Declared: register_autograd's forward modes give zeros or None (PyTorch's
    # limitation), accepted. Bug: mul's raise, yet they are declared silent.
    declared_silent = dict(functional, layouts=("contiguous",), dtypes=(torch.float32,))
    for name, op in (
        ("register_autograd_mul_silent", ops.register_autograd_mul),
        ("mul_declared_silent", ops.mul),
    ):
        specs[name] = OpSpec(op.default, name=name, silent_modes=FORWARD_MODES, **declared_silent)
    specs["jvp_off_mul"] = OpSpec(
        ops.jvp_off_mul.default,
        **{**functional, "autodiff": ("reverse", "forward_ad", "forward_ad-last-only")},
    )
    # y is read and written: the schema's Tensor(a!) says so, and the
    # reference updates its copy of y as the op does. The kernel rounds y + alpha * x
    # in two steps where torch.add_ may fuse them: within the tolerance.
    for name in ("axpy_", "off_by_one_axpy_"):
        specs[name] = OpSpec(
            getattr(ops, name).default,
            reference=_axpy_reference,
            extra_args=(0.5,),
            dtypes=ZOO_DTYPES,
            layouts=ZOO_LAYOUTS,
            devices=("cpu",),
        )
    # int8 codes: the kernel rounds ties away from zero, torch.round (the
    # reference) to even, so the two are one code apart on about 2.5% of the
    # samples.
    for name in ("quantize", "two_codes_off_quantize"):
        specs[name] = OpSpec(
            getattr(ops, name).default,
            reference=lambda x, scale: (
                torch.round(x.double() / scale).clamp(-127, 127).to(torch.int8)
            ),
            samples=quantize_samples,
            layouts=("contiguous", "transposed"),
            dtypes=(torch.float32,),
            devices=("cpu",),
            integer_tolerance=dict(codes=1, fraction=0.05),
            differentiable=False,  # integer codes: no derivative
        )
    # The checks that call the kernel, torch.compile's included.
    specs["abort_on_empty_mul"] = OpSpec(
        ops.abort_on_empty_mul.default,
        reference=torch.mul,
        layouts=("contiguous", "empty"),
        dtypes=(torch.float32,),
        devices=("cpu",),
        checks=("results", "strides", "fake", "compile"),
    )
    specs["int_count_mul"] = OpSpec(
        ops.int_count_mul.default,
        **{**functional, "dtypes": (torch.bfloat16, *ZOO_DTYPES)},
        huge=True,
    )
    specs["mul_huge"] = OpSpec(
        ops.mul.default, **{**functional, "dtypes": (torch.bfloat16,)}, huge=True, checks=("huge",)
    )
    for name in ("add_out", "overlap_add_out", "unmarked_add_out", "contiguous_out_add_out"):
        specs[name] = OpSpec(getattr(ops, name).default, **out)
    specs["returning_fake_add_out"] = OpSpec(ops.returning_fake_add_out.default, **out)
    # a*b + c, promised rounded once: in float16 and bfloat16 the result must
    # equal the exact value rounded to the dtype, which the reference is.
    for name in ("muladd", "double_rounded_muladd"):
        specs[name] = OpSpec(
            getattr(ops, name).default,
            reference=lambda a, b, c: torch.mul(a, b).copy_(a.double() * b.double() + c),
            extra_args=(1.25,),
            dtypes=(torch.float16, torch.bfloat16),
            layouts=ZOO_LAYOUTS,
            devices=("cpu",),
            rounded_once=True,
            checks=("results",),
        )
    cuda = dict(
        reference=torch.mul,
        dtypes=(torch.float32,),
        layouts=("contiguous",),
        devices=("cuda",),
        exact=True,
        checks=("results", "cuda_graph", "side_stream"),
    )
    specs["default_stream_mul"] = OpSpec(ops.default_stream_mul.default, **cuda)
    specs["synced_mul"] = OpSpec(ops.synced_mul.default, **cuda)
    specs["device_synced_mul"] = OpSpec(ops.device_synced_mul.default, **cuda)
    specs["stream_leaking_mul"] = OpSpec(ops.stream_leaking_mul.default, **cuda)
    return specs


@functools.cache
def load() -> dict[str, OpSpec]:
    """Builds (or finds built) and loads the zoo; the OpSpec of each op by name."""
    sources = [HERE / "zoo.cpp"]
    if torch.cuda.is_available():
        sources.append(HERE / "zoo_cuda.cu")
    cpp_extension.load(
        name=NAME + ("_cuda" if len(sources) > 1 else ""),
        sources=[str(s) for s in sources],
        extra_cflags=["-O2"],
        # For this machine's GPU, as nvcc finds it: without an architecture,
        # torch would ask the GPU, which initialises CUDA in this process (and
        # then run_all's forked child could not compile).
        extra_cuda_cflags=[] if os.environ.get("TORCH_CUDA_ARCH_LIST") else ["-arch=native"],
        # As setup.py: a static C++ runtime, where the toolchain links one in,
        # stays private (docs/troubleshooting.md).
        extra_ldflags=["-Wl,--exclude-libs,ALL"],
        is_python_module=False,
        verbose=False,
    )
    _register()
    _register_synced_mul()
    _register_stream_leaking_mul()
    # The ops that need a declaration, built on this module's helpers.
    from . import declared

    declared.register()
    return {**_specs(), **declared.specs()}
