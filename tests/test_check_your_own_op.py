"""docs/check_your_op.md, run: the harness (extension_cpp_testing) on ops that are not ours.

``mylib::scaled_silu`` (elementwise) and ``mylib::segment_sum`` (not: its own
samples) stand for your op. They are Python custom ops here so the page needs
no build step, but the harness sees only their OpOverloads: a C++/CUDA op
registered with TORCH_LIBRARY is checked the same way. The page includes this
file (literalinclude), so what it shows is what `make test` runs.
"""

import torch
from torch import Tensor

# -- your op (any OpOverload: C++, CUDA or Python) -----------------------------
#
# Defined with torch.library.Library, as TORCH_LIBRARY does in C++: a schema,
# a kernel, a fake kernel, an Autograd kernel and a batching rule.
_lib = torch.library.Library("mylib", "DEF")
_lib.define("scaled_silu(Tensor x, float scale) -> Tensor")


def _check(x: Tensor) -> None:
    torch._check(
        x.is_floating_point(), lambda: f"scaled_silu: expected a floating-point x, got {x.dtype}"
    )


def _scaled_silu(x: Tensor, scale: float) -> Tensor:
    _check(x)
    # float16 and bfloat16 computed in float32; float32 and float64 as they are.
    wide = x.to(torch.promote_types(x.dtype, torch.float32))
    return (torch.nn.functional.silu(wide) * scale).to(x.dtype)


def _scaled_silu_fake(x, scale):
    _check(x)
    return torch.empty_like(x)


class _ScaledSiluDerivative(torch.autograd.Function):
    """scaled_silu's derivative, applied by the op's Autograd kernel on every call.

    It has no jvp, so forward mode raises, and so does every torch.func
    transform (they can't see into a dispatcher kernel): the op gives reverse
    mode only, which its OpSpec declares. The Autograd kernel that
    torch.library.register_autograd registers skips it where no input
    requires grad, and then drops a forward-mode tangent without an error.
    """

    @staticmethod
    def forward(x, scale):
        # On to the kernel below the Autograd one, as register_autograd's does.
        with torch._C._AutoDispatchBelowAutograd():
            return torch.ops.mylib.scaled_silu(x, scale)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.scale = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * ctx.scale * s * (1 + x * (1 - s)), None


def _scaled_silu_vmap(info, in_dims, x, scale):
    # Elementwise: the whole batch in one call, its batch dimension where it was.
    return torch.ops.mylib.scaled_silu(x, scale), in_dims[0]


_lib.impl("scaled_silu", _scaled_silu, "CompositeExplicitAutograd")
_lib.impl("scaled_silu", _ScaledSiluDerivative.apply, "Autograd")
torch.library.register_fake("mylib::scaled_silu", _scaled_silu_fake, lib=_lib)
torch.library.register_vmap("mylib::scaled_silu", _scaled_silu_vmap, lib=_lib)


# -- check it: every check x device x dtype x layout ---------------------------
# [check-your-op]
from extension_cpp_testing import OpSpec, conformance_tests  # noqa: E402

SCALED_SILU = OpSpec(
    torch.ops.mylib.scaled_silu.default,
    # The same math in torch ops, in float64 (the op rounds once from float).
    reference=lambda x, scale: (torch.nn.functional.silu(x.double()) * scale).to(x.dtype),
    arity=1,  # one tensor input, then the extra arguments
    extra_args=(0.5,),
    autodiff=("reverse",),  # reverse mode only: every other mode must raise
)

test_scaled_silu = conformance_tests(SCALED_SILU)
# [check-your-op]


# -- an op that is not elementwise: samples= and the declarations it needs -----


def _check_segments(values: Tensor, segment_ids: Tensor) -> None:
    torch._check(
        segment_ids.device == values.device,
        lambda: (
            f"segment_sum: expected segment_ids on the device of values ({values.device}), "
            f"got {segment_ids.device}"
        ),
    )
    torch._check(
        values.is_floating_point(),
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


_lib.define("segment_sum(Tensor values, Tensor segment_ids, int segments) -> Tensor")


def _segment_sum(values: Tensor, segment_ids: Tensor, segments: int) -> Tensor:
    """out[s] = the sum of the rows of values whose segment id is s."""
    _check_segments(values, segment_ids)
    # As a product with the one-hot matrix of the ids: the same sum in the
    # same order on every run (index_add_ sums with atomic adds on a GPU).
    one_hot = torch.nn.functional.one_hot(segment_ids, segments).to(values.dtype)
    return one_hot.t() @ values


def _segment_sum_fake(values, segment_ids, segments):
    _check_segments(values, segment_ids)
    return values.new_empty(segments, values.shape[1])


class _SegmentSumDerivative(torch.autograd.Function):
    """segment_sum's derivative in values, as scaled_silu's (reverse mode only)."""

    @staticmethod
    def forward(values, segment_ids, segments):
        with torch._C._AutoDispatchBelowAutograd():
            return torch.ops.mylib.segment_sum(values, segment_ids, segments)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[1])

    @staticmethod
    def backward(ctx, grad):
        (segment_ids,) = ctx.saved_tensors
        return grad[segment_ids], None, None


_lib.impl("segment_sum", _segment_sum, "CompositeExplicitAutograd")
_lib.impl("segment_sum", _SegmentSumDerivative.apply, "Autograd")
torch.library.register_fake("mylib::segment_sum", _segment_sum_fake, lib=_lib)

# [samples]
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
    skip={"vmap": "no batching rule registered yet (torch.library.register_vmap)"},
)

test_segment_sum = conformance_tests(SEGMENT_SUM)
# [samples]
