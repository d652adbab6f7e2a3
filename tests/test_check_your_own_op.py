"""docs/check_your_op.md, run: the harness (extension_cpp_testing) on ops that are not ours.

``mylib::scaled_silu`` (elementwise) and ``mylib::segment_sum`` (not: its own
samples) stand for your op. They are written as PyTorch's custom-ops tutorial
writes a Python op (torch.library.custom_op, register_fake, register_autograd,
register_vmap), with public APIs only, so the page needs no build step; the
harness sees only their OpOverloads, and tests/test_check_your_cpp_op.py checks
a C++ op the same way. The page includes this file (literalinclude) from top to
bottom, so what it shows is what `make test` runs.
"""

# [op]
import torch
from torch import Tensor

FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _check(x: Tensor) -> None:
    # The kernel and the fake kernel check the same things in the same words,
    # so eager and compiled code fail alike.
    torch._check(
        x.dtype in FLOATS, lambda: f"scaled_silu: expected a floating-point x, got {x.dtype}"
    )


@torch.library.custom_op("mylib::scaled_silu", mutates_args=())
def scaled_silu_op(x: Tensor, scale: float) -> Tensor:
    """silu(x) * scale, in x's layout; float16 and bfloat16 computed in float32."""
    _check(x)
    wide = x.to(torch.promote_types(x.dtype, torch.float32))
    return (torch.nn.functional.silu(wide) * scale).to(x.dtype)


@scaled_silu_op.register_fake
def _(x, scale):
    _check(x)
    return torch.empty_like(x)


def _derivative(x: Tensor, scale: float) -> Tensor:
    """d(scaled_silu)/dx, in torch ops (so it is itself differentiable)."""
    s = torch.sigmoid(x)
    return scale * s * (1 + x * (1 - s))


def _setup_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[0])
    ctx.scale = inputs[1]


def _backward(ctx, grad: Tensor):
    (x,) = ctx.saved_tensors
    return grad * _derivative(x, ctx.scale), None  # no gradient for scale


# Reverse mode only: register_autograd gives forward mode no derivative and no error.
scaled_silu_op.register_autograd(_backward, setup_context=_setup_context)


@scaled_silu_op.register_vmap
def _(info, in_dims, x, scale):
    # Elementwise: the whole batch in one call, its batch dimension where it was.
    return scaled_silu_op(x, scale), in_dims[0]


# [op]


# -- check it: every check x device x dtype x layout ---------------------------
# [check-your-op]
from extension_cpp_testing import FORWARD_MODES, OpSpec, conformance_tests  # noqa: E402

SCALED_SILU = OpSpec(
    torch.ops.mylib.scaled_silu.default,
    # The same math in torch ops, in float64 (the op rounds once from float).
    reference=lambda x, scale: (torch.nn.functional.silu(x.double()) * scale).to(x.dtype),
    arity=1,  # one tensor input, then the extra arguments
    extra_args=(0.5,),
    autodiff=("reverse",),  # backward(); torch.func transforms raise on this op
    silent_modes=FORWARD_MODES,  # register_autograd's limitation, not the op's bug
)

test_scaled_silu = conformance_tests(SCALED_SILU)
# [check-your-op]


# -- forward mode, made right with public APIs ----------------------------------
# [forward-mode]
class _ScaledSilu(torch.autograd.Function):
    """scaled_silu_op with a jvp: forward mode (torch.func.jvp, jacfwd,
    hessian, torch.autograd.forward_ad), which register_autograd can't give."""

    @staticmethod
    def forward(x, scale):
        return scaled_silu_op(x, scale)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _setup_context(ctx, inputs, output)
        ctx.save_for_forward(inputs[0])

    backward = staticmethod(_backward)

    @staticmethod
    def jvp(ctx, tangent, _):
        (x,) = ctx.saved_tensors
        return tangent * _derivative(x, ctx.scale)

    # torch.vmap runs forward under vmap, which calls the op's own batching rule.
    generate_vmap_rule = True


def scaled_silu(x: Tensor, scale: float) -> Tensor:
    """silu(x) * scale, differentiable in every autodiff mode: the function
    your users call. Dynamo can't trace an autograd.Function with a jvp, so
    compiled code calls the op, whose register_autograd backward it uses."""
    if torch.compiler.is_compiling():
        return scaled_silu_op(x, scale)
    return _ScaledSilu.apply(x, scale)


SCALED_SILU_EVERY_MODE = OpSpec(
    scaled_silu,  # a Python function that calls the op is checked through it
    reference=SCALED_SILU.reference,
    name="scaled_silu_public",
    arity=1,
    extra_args=(0.5,),
    # Every autodiff mode, by default. The kernel is test_scaled_silu's, checked
    # there on every layout and dtype; a few of each keep this run short.
    layouts=("contiguous", "transposed", "0-dim"),
    dtypes=(torch.float32, torch.float64),
)

test_scaled_silu_every_mode = conformance_tests(SCALED_SILU_EVERY_MODE)
# [forward-mode]


# -- an op that is not elementwise: samples= and the declarations it needs -----
# [samples]
def _check_segments(values: Tensor, segment_ids: Tensor) -> None:
    torch._check(
        segment_ids.device == values.device,
        lambda: (
            f"segment_sum: expected segment_ids on the device of values ({values.device}), "
            f"got {segment_ids.device}"
        ),
    )
    torch._check(
        values.dtype in FLOATS,
        lambda: f"segment_sum: expected floating-point values, got {values.dtype}",
    )
    torch._check(
        segment_ids.dtype == torch.int64,
        lambda: f"segment_sum: expected int64 segment_ids, got {segment_ids.dtype}",
    )
    torch._check(
        segment_ids.shape == values.shape[:1],
        lambda: (
            f"segment_sum: expected one segment id per row of values ({values.shape[0]}), "
            f"got segment_ids of shape {list(segment_ids.shape)}"
        ),
    )


@torch.library.custom_op("mylib::segment_sum", mutates_args=())
def segment_sum(values: Tensor, segment_ids: Tensor, segments: int) -> Tensor:
    """out[s] = the sum of the rows of values whose segment id is s."""
    _check_segments(values, segment_ids)
    # As a product with the one-hot matrix of the ids: the same sum in the
    # same order on every run (index_add_ sums with atomic adds on a GPU).
    one_hot = torch.nn.functional.one_hot(segment_ids, segments).to(values.dtype)
    return one_hot.t() @ values


@segment_sum.register_fake
def _(values, segment_ids, segments):
    _check_segments(values, segment_ids)
    return values.new_empty(segments, values.shape[1])


def _segment_sum_setup_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[1])


def _segment_sum_backward(ctx, grad: Tensor):
    (segment_ids,) = ctx.saved_tensors
    return grad[segment_ids], None, None  # a gradient for values only


segment_sum.register_autograd(_segment_sum_backward, setup_context=_segment_sum_setup_context)

SEGMENTS = 5


def segment_samples(layout, dtype, device, rows):
    """rows rows of 8 values (rows is what the dynamic and export checks vary),
    in the layout asked for, and a valid segment id for each row."""
    if layout == "transposed":  # the values stored column by column
        values = torch.randn(8, rows, dtype=dtype, device=device).t()
    else:
        values = torch.randn(rows, 8, dtype=dtype, device=device)
    segment_ids = torch.randint(SEGMENTS, (rows,), device=device)
    return [values, segment_ids, SEGMENTS]


SEGMENT_SUM = OpSpec(
    torch.ops.mylib.segment_sum.default,
    # The sum in float64, rounded once to the values' dtype.
    reference=lambda values, ids, n: (
        torch.zeros(n, values.shape[1], dtype=torch.float64, device=values.device)
        .index_add(0, ids, values.double())
        .to(values.dtype)
    ),
    samples=segment_samples,
    layouts=("contiguous", "transposed"),
    grad_args=(0,),  # the values; segment ids are integers
    autodiff=("reverse",),
    silent_modes=FORWARD_MODES,
    skip={"vmap": "no batching rule registered yet (torch.library.register_vmap)"},
)

test_segment_sum = conformance_tests(SEGMENT_SUM)
# [samples]
