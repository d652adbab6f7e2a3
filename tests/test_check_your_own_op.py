"""docs/check_your_op.md, run: extension_cpp.testing on an op that is not ours.

``mylib::scaled_silu`` stands for your op. It is a Python custom op here so
the page needs no build step, but the harness sees only its OpOverload: a
C++/CUDA op registered with TORCH_LIBRARY is checked the same way. The page
includes this file (literalinclude), so what it shows is what `make test` runs.
"""

import torch
from torch import Tensor

# -- your op (any OpOverload: C++, CUDA or Python) -----------------------------


def _check(x: Tensor) -> None:
    torch._check(
        x.is_floating_point(), lambda: f"scaled_silu: expected a floating-point x, got {x.dtype}"
    )


@torch.library.custom_op("mylib::scaled_silu", mutates_args=())
def scaled_silu(x: Tensor, scale: float) -> Tensor:
    _check(x)
    # float16 and bfloat16 computed in float32; float32 and float64 as they are.
    wide = x.to(torch.promote_types(x.dtype, torch.float32))
    return (torch.nn.functional.silu(wide) * scale).to(x.dtype)


@scaled_silu.register_fake
def _(x, scale):
    _check(x)
    return torch.empty_like(x)


def _backward(ctx, grad):
    (x,) = ctx.saved_tensors
    s = torch.sigmoid(x)
    return grad * ctx.scale * s * (1 + x * (1 - s)), None


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.scale = inputs[1]


scaled_silu.register_autograd(_backward, setup_context=_setup_context)

# -- check it: every check x device x dtype x layout ---------------------------
# [check-your-op]
from extension_cpp.testing import OpSpec, conformance_tests  # noqa: E402

SCALED_SILU = OpSpec(
    torch.ops.mylib.scaled_silu.default,
    # The same math in torch ops, in float64 (the op rounds once from float).
    reference=lambda x, scale: (torch.nn.functional.silu(x.double()) * scale).to(x.dtype),
    arity=1,  # one tensor input, then the extra arguments
    extra_args=(0.5,),
)

test_scaled_silu = conformance_tests(SCALED_SILU)
# [check-your-op]
