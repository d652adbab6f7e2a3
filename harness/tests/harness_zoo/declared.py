"""The zoo's ops whose contract needs one of OpSpec's declarations, or whose
shape the harness once misread on real ops (fbgemm's) and raised a false
alarm. Python kernels: to the harness they are ops like zoo.cpp's. Some
stand beside a bug that their declaration must not hide.

The correct ops, each of which must pass every check:

- keep_strides_double: an output laid out as its input, step-sliced views
  included (the harness's copies once lost the views' strides);
- sign_and_abs: an int64 output before a float one (gradcheck and opcheck's
  AOT tests once differentiated it);
- float32_mul: no float64 kernel (grad_dtype=torch.float32);
- masked_mul: int64 beside float dtypes, with grad_args leaving its mask
  out (the harness once marked the int64 inputs requires_grad);
- twice: takes int64 and float64, checked in float32 alone (accepted_dtypes);
- laplacian: three rows or more (a torch.export.Dim with that range);
- out_first_add: an out= op whose out is its first argument (out=("out",));
- weighted_code_sum: an optional weight, the only input to differentiate
  (grad_args per layout: () where it is None);
- check_finite: returns nothing (no gradient cases);
- gather_rows: an index whose values it must check (bad_values);
- accumulate_mul: a result that depends on the acc it writes (mutates=,
  differentiable=True: each gradient call gets an acc of its own);
- double_and_rms: an output with no derivative by design (grad_outputs=).

The broken ones: wrong_sign_float32_mul (gradcheck in float32 still sees a
wrong sign), last_row_out_first_add, wrong_weight_grad_code_sum,
clamping_gather_rows (reads the last row for an index past it), and
unmarked_scale_ (a write that its schema does not mark, declared in mutates=).
zoo.py declares register_autograd_mul's silent forward modes
(register_autograd_mul_silent), and mul's, which raise (mul_declared_silent).
"""

from __future__ import annotations

import torch

from extension_cpp_testing import OpSpec
from extension_cpp_testing.layouts import random_tensor

from . import zoo_checks as _checks
from .zoo import _autograd, _batch_first, _vmap, register_autograd_kernel

_LIB = torch.library.Library("harness_zoo", "FRAGMENT")
ops = torch.ops.harness_zoo


def _define(schema: str, kernel, fake) -> None:
    """harness_zoo::<schema> with a CPU kernel and a fake kernel."""
    name = schema[: schema.index("(")]
    _LIB.define(schema)
    _LIB.impl(name, kernel, "CPU")
    torch.library.register_fake(f"harness_zoo::{name}", fake, lib=_LIB)


def _batch_rule(name, out_dims=0):
    """A batching rule that moves every input's batch dimension first and
    calls the op once on the whole batch."""
    op = getattr(ops, name).default

    def rule(info, in_dims, *args):
        batched = [
            _batch_first(a, d, info.batch_size) if isinstance(a, torch.Tensor) else a
            for a, d in zip(args, in_dims)
        ]
        return op(*batched), out_dims

    torch.library.register_vmap(f"harness_zoo::{name}", rule, lib=_LIB)


# -- keep_strides_double: an output laid out as its input ---------------------


def _keep_strides(x: torch.Tensor) -> torch.Tensor:
    """An empty tensor with x's sizes and strides (a step-sliced view's too),
    as a kernel that writes each element where it read it allocates."""
    return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)


def _keep_strides_double_fake(x):
    _checks.check_dtype("harness_zoo.keep_strides_double", "x", x)
    return _keep_strides(x)


def _keep_strides_double(x):
    return _keep_strides_double_fake(x).copy_(2 * x)


# -- sign_and_abs: an int64 output, then a float one --------------------------


def _sign_and_abs_fake(x):
    _checks.check_dtype("harness_zoo.sign_and_abs", "x", x)
    return torch.empty_like(x, dtype=torch.int64), torch.empty_like(x)


def _sign_and_abs(x):
    _checks.check_dtype("harness_zoo.sign_and_abs", "x", x)
    return (x > 0).to(torch.int64) - (x < 0).to(torch.int64), x.abs()


def _sign_and_abs_reference(x):
    """The sign as int64 (0 for NaN), and the magnitude."""
    return torch.sign(x).nan_to_num(0).to(torch.int64), x.abs()


# -- float32_mul: no float64 kernel -------------------------------------------


def _float32_mul(name):
    """(kernel, fake) of a product that takes float32 alone."""
    op = f"harness_zoo.{name}"

    def check(a, b):
        _checks.check_float32(op, "a", a)
        _checks.check_float32(op, "b", b)
        _checks.check_same(op, "a", a, "b", b)

    def kernel(a, b):
        check(a, b)
        return torch.mul(a, b)

    def fake(a, b):
        check(a, b)
        return _checks.output(a, b)

    return kernel, fake


# -- masked_mul and twice: int64 and float dtypes -----------------------------

INT_OR_FLOAT = (torch.int64, torch.float32, torch.float64)


def _check_int_or_float(op: str, name: str, t: torch.Tensor) -> None:
    torch._check(
        t.dtype in INT_OR_FLOAT,
        lambda: (
            f"{op}: expected {name} to have dtype torch.int64, torch.float32 or torch.float64, "
            f"got {t.dtype}"
        ),
    )


def _check_masked_mul(a, b, mask):
    op = "harness_zoo.masked_mul"
    _check_int_or_float(op, "a", a)
    _checks.check_same(op, "a", a, "b", b)
    _checks.check_same(op, "a", a, "mask", mask)


def _masked_mul(a, b, mask):
    _check_masked_mul(a, b, mask)
    return a * b * mask


def _masked_mul_fake(a, b, mask):
    _check_masked_mul(a, b, mask)
    return _checks.output(a, b)


def _masked_mul_samples(layout, dtype, device, rows):
    """[a, b, mask]: rows x 5 values of dtype, and a mask of zeros and ones
    in that dtype; stored column by column where "transposed"."""

    def make(values):
        values = values.to(device=device, dtype=dtype)
        return values.t().contiguous().t() if layout == "transposed" else values

    a, b = (random_tensor((rows, 5), dtype, "cpu") for _ in range(2))
    return [make(a), make(b), make(torch.rand(rows, 5) < 0.5)]


def _masked_mul_backward(ctx, grad):
    """a's and b's gradients; the mask selects, it has none."""
    a, b, mask = ctx.saved_tensors
    return grad * b * mask, grad * a * mask, None


def _twice_fake(x):
    _check_int_or_float("harness_zoo.twice", "x", x)
    return torch.empty_like(x)


def _twice(x):
    _twice_fake(x)
    return 2 * x


# -- laplacian: three rows or more -------------------------------------------


def _laplacian_reference(x):
    """x[i - 1] - 2 x[i] + x[i + 1] along dimension 0 (the rows), and 0 in
    the first and last row; laid out as x."""
    out = torch.zeros_like(x)
    out[1:-1] = x[:-2] - 2 * x[1:-1] + x[2:]
    return out


def _laplacian_fake(x):
    op = "harness_zoo.laplacian"
    _checks.check_dtype(op, "x", x)
    torch._check(
        x.dim() > 0 and x.shape[0] >= 3,
        lambda: f"{op}: expected x to have 3 rows or more, got sizes {list(x.shape)}",
    )
    return torch.empty_like(x)


def _laplacian(x):
    _laplacian_fake(x)
    return _laplacian_reference(x)


def _laplacian_backward(grad):
    """x[j]'s gradient: g[j + 1] - 2 g[j] + g[j - 1], where g is grad with
    its first and last row (the constant zeros) left out."""
    inner, zero = grad[1:-1], grad.new_zeros((1, *grad.shape[1:]))
    return (
        torch.cat([inner, zero, zero])
        - 2 * torch.cat([zero, inner, zero])
        + torch.cat([zero, zero, inner])
    )


def _laplacian_rule(info, in_dims, x):
    """The rows stay dimension 0: the batch goes second, in and out."""
    x = _batch_first(x, in_dims[0], info.batch_size).movedim(0, 1)
    return ops.laplacian(x), 1


# -- out_first_add: out= as the first argument --------------------------------


def _out_first_add(name, skip_last_row=False):
    """(kernel, fake) of out = a + b, out first; skip_last_row is
    last_row_out_first_add's bug: a loop one row short."""
    op = f"harness_zoo.{name}"

    def kernel(out, a, b):
        _checks.check_out(op, a, b, out)
        if skip_last_row and out.dim() > 0:
            out, a, b = out[:-1], a[:-1], b[:-1]
        torch.add(a, b, out=out)

    def fake(out, a, b):
        _checks.check_out(op, a, b, out)

    return kernel, fake


def _out_first_samples(layout, dtype, device, rows):
    """[out, a, b] in the op's order: out NaN (an element left unwritten
    shows), a and b rows x 5, stored column by column where "transposed"."""

    def make():
        if layout == "transposed":
            return torch.randn(5, rows, dtype=dtype).t().to(device)
        return torch.randn(rows, 5, dtype=dtype, device=device)

    out = torch.full((rows, 5), float("nan"), dtype=dtype, device=device)
    return [out, make(), make()]


# -- weighted_code_sum: an optional weight ------------------------------------


def _weighted_code_sum_fake(name):
    op = f"harness_zoo.{name}"

    def fake(codes, weights):
        torch._check(
            codes.dtype == torch.int64,
            lambda: f"{op}: expected codes to have dtype torch.int64, got {codes.dtype}",
        )
        if weights is None:
            return codes.new_empty(codes.shape[1:])
        _checks.check_dtype(op, "weights", weights)
        torch._check(
            weights.shape == codes.shape[:-1],
            lambda: (
                f"{op}: expected weights to have sizes {list(codes.shape[:-1])} (codes' but "
                f"the last), got {list(weights.shape)}"
            ),
        )
        return weights.new_empty(codes.shape[1:])

    return fake


def _weighted_code_sum_reference(codes, weights):
    """The sums over dimension 0 of the codes (int64), or of the codes times
    their weights (in the weights' dtype)."""
    if weights is None:
        return codes.sum(0)
    return (codes * weights.unsqueeze(-1)).sum(0)


def _weighted_code_sum(name):
    fake = _weighted_code_sum_fake(name)

    def kernel(codes, weights):
        fake(codes, weights)
        return _weighted_code_sum_reference(codes, weights)

    return kernel, fake


def _weighted_code_sum_samples(layout, dtype, device, rows):
    """[codes, weights]: rows x 7 codes in [0, 100), and a positive weight
    of dtype per row ("weighted") or None ("unweighted")."""
    codes = torch.randint(0, 100, (rows, 7), device=device)
    if layout == "unweighted":
        return [codes, None]
    return [codes, torch.rand(rows, dtype=dtype, device=device) + 0.5]


def _weighted_code_sum_backward(factor=1.0):
    """The weights' gradient: their codes times the output's gradient,
    summed over the last dimension (times factor: 2.0 is
    wrong_weight_grad_code_sum's bug). The codes, integers, have none."""

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (codes,) = ctx.saved_tensors
        return None, factor * (codes.to(grad.dtype) * grad).sum(-1)

    return setup_context, backward


def _weighted_code_sum_rule(name):
    """The batch goes to dimension 1 of codes and weights (the op sums over
    dimension 0), and comes out first."""
    op = getattr(ops, name).default

    def rule(info, in_dims, codes, weights):
        codes = _batch_first(codes, in_dims[0], info.batch_size).movedim(0, 1)
        if weights is not None:
            weights = _batch_first(weights, in_dims[1], info.batch_size).movedim(0, 1)
        return op(codes, weights), 0

    torch.library.register_vmap(f"harness_zoo::{name}", rule, lib=_LIB)


# -- check_finite: returns nothing --------------------------------------------


def _check_finite_fake(x):
    _checks.check_dtype("harness_zoo.check_finite", "x", x)


def _check_finite(x):
    _check_finite_fake(x)
    if not bool(torch.isfinite(x).all()):
        raise ValueError("harness_zoo.check_finite: x holds NaN or an infinity")


# -- unmarked_scale_: writes x, which its schema does not mark (a!) -----------


def _unmarked_scale_fake(x, alpha):
    _checks.check_dtype("harness_zoo.unmarked_scale_", "x", x)


def _unmarked_scale_(x, alpha):
    _unmarked_scale_fake(x, alpha)
    x.mul_(alpha)


def _scale_reference(x, alpha):
    """x *= alpha on the harness's copy of x, returning None as the op does."""
    x.mul_(alpha)


# -- gather_rows: an index the op must check -----------------------------------


def _gather_rows(name, clamps):
    op = f"harness_zoo.{name}"

    def fake(x, index):
        torch._check(
            x.is_floating_point(),
            lambda: f"{op}: expected x to have a floating-point dtype, got {x.dtype}",
        )
        torch._check(
            index.dtype == torch.int64,
            lambda: f"{op}: expected index to have dtype torch.int64, got {index.dtype}",
        )
        return x.new_empty((index.shape[0], *x.shape[1:]))

    def kernel(x, index):
        fake(x, index)
        if clamps:  # the bug: an index out of range reads the nearest row
            return x.index_select(0, index.clamp(0, x.shape[0] - 1))
        outside = (index < 0) | (index >= x.shape[0])
        if outside.any():
            raise RuntimeError(
                f"{op}: expected every index in [0, {x.shape[0]}), got {index[outside][0].item()}"
            )
        return x.index_select(0, index)

    return kernel, fake


def _gather_rows_samples(layout, dtype, device, rows):
    """[x, index]: rows x 5 values, and 4 indices into its rows."""
    x = torch.randn(rows, 5, dtype=dtype, device=device)
    return [x, torch.randint(0, rows, (4,), device=device)]


def _index_out_of_range(args):
    x, index = args
    index = index.clone()
    index[-1] = x.shape[0]
    return [x, index]


# -- double_and_rms: 2 * x, and each row's root mean square beside it ----------
# The rms is a statistic for the caller, with no derivative by design: its
# autograd formula gives it none (grad_outputs=(0,)).


def _double_and_rms_fake(x):
    return torch.empty_like(x), x.new_empty(x.shape[:-1])


def _double_and_rms(x):
    return 2 * x, x.square().mean(-1).sqrt()


def _double_and_rms_reference(x):
    return 2 * x, x.square().mean(-1).sqrt()


# -- accumulate_mul: adds a * b into acc and returns the sum ---------------------
# Its result depends on what acc held: each gradient call needs an acc of its
# own, or the previous call's sum leaks into gradcheck's finite differences.
# A mutable op can't take torch.library's autograd: an autograd.Function in
# the public function gives it one, as a library's Python wrapper would.


def _accumulate_mul_fake(a, b, acc):
    return torch.empty_like(acc)


def _accumulate_mul(a, b, acc):
    acc.add_(a * b)
    return acc.clone()


class _AccumulateMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, acc):
        ctx.save_for_backward(a, b)
        return ops.accumulate_mul(a, b, acc)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b, grad * a, None


def accumulate_mul(a, b, acc):
    """harness_zoo::accumulate_mul, differentiable in a and b."""
    return _AccumulateMul.apply(a, b, acc)


def _accumulate_mul_reference(a, b, acc):
    acc.add_(a * b)  # the op's write, on the reference's copy
    return acc.clone()


def _accumulate_mul_samples(layout, dtype, device, rows):
    """[a, b, acc]: acc holds values already, as an accumulator does."""
    return [torch.randn(rows, 4, dtype=dtype, device=device) for _ in range(3)]


# -- registration and specs ---------------------------------------------------


def register() -> None:
    """Defines the ops, with their fake, autograd and batching kernels."""
    _define(
        "keep_strides_double(Tensor x) -> Tensor", _keep_strides_double, _keep_strides_double_fake
    )
    _define("sign_and_abs(Tensor x) -> (Tensor, Tensor)", _sign_and_abs, _sign_and_abs_fake)
    for name in ("float32_mul", "wrong_sign_float32_mul"):
        _define(f"{name}(Tensor a, Tensor b) -> Tensor", *_float32_mul(name))
    _define("masked_mul(Tensor a, Tensor b, Tensor mask) -> Tensor", _masked_mul, _masked_mul_fake)
    _define("twice(Tensor x) -> Tensor", _twice, _twice_fake)
    _define("laplacian(Tensor x) -> Tensor", _laplacian, _laplacian_fake)
    for name, bug in (("out_first_add", False), ("last_row_out_first_add", True)):
        _define(f"{name}(Tensor(a!) out, Tensor a, Tensor b) -> ()", *_out_first_add(name, bug))
    for name in ("weighted_code_sum", "wrong_weight_grad_code_sum"):
        _define(f"{name}(Tensor codes, Tensor? weights) -> Tensor", *_weighted_code_sum(name))
    _define("check_finite(Tensor x) -> ()", _check_finite, _check_finite_fake)
    _define("unmarked_scale_(Tensor x, float alpha) -> ()", _unmarked_scale_, _unmarked_scale_fake)
    for name, clamps in (("gather_rows", False), ("clamping_gather_rows", True)):
        _define(f"{name}(Tensor x, Tensor index) -> Tensor", *_gather_rows(name, clamps))
    _define("double_and_rms(Tensor x) -> (Tensor, Tensor)", _double_and_rms, _double_and_rms_fake)
    _define(
        "accumulate_mul(Tensor a, Tensor b, Tensor(a!) acc) -> Tensor",
        _accumulate_mul,
        _accumulate_mul_fake,
    )

    # Backwards, each an autograd.Function (reverse mode only).
    def save_x(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def save_inputs(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    for name in ("keep_strides_double", "twice"):
        register_autograd_kernel(f"harness_zoo::{name}", save_x, lambda ctx, grad: 2 * grad)
    # The sign has no gradient; the magnitude's is the sign.
    register_autograd_kernel(
        "harness_zoo::sign_and_abs",
        save_x,
        lambda ctx, _, grad: grad * torch.sign(ctx.saved_tensors[0]),
    )
    _autograd("float32_mul")
    _autograd("wrong_sign_float32_mul", sign=-1.0)  # the bug
    register_autograd_kernel("harness_zoo::masked_mul", save_inputs, _masked_mul_backward)
    register_autograd_kernel(
        "harness_zoo::laplacian", save_x, lambda ctx, grad: _laplacian_backward(grad)
    )
    register_autograd_kernel("harness_zoo::weighted_code_sum", *_weighted_code_sum_backward())
    register_autograd_kernel(
        "harness_zoo::wrong_weight_grad_code_sum", *_weighted_code_sum_backward(factor=2.0)
    )
    register_autograd_kernel(
        "harness_zoo::double_and_rms", lambda ctx, inputs, output: None, lambda ctx, g, _: 2 * g
    )

    # Batching rules.
    for name in ("keep_strides_double", "masked_mul", "twice"):
        _batch_rule(name)
    _batch_rule("sign_and_abs", out_dims=(0, 0))
    for name in ("float32_mul", "wrong_sign_float32_mul"):
        _vmap(name)
    torch.library.register_vmap("harness_zoo::laplacian", _laplacian_rule, lib=_LIB)
    for name in ("weighted_code_sum", "wrong_weight_grad_code_sum"):
        _weighted_code_sum_rule(name)

    def check_finite_rule(info, in_dims, x):
        ops.check_finite(x)  # every sample at once
        return None, None

    torch.library.register_vmap("harness_zoo::check_finite", check_finite_rule, lib=_LIB)


def specs() -> dict[str, OpSpec]:
    """Each op's OpSpec, its declarations commented. In float32 (where the
    cause is not the dtype) and on two layouts: the zoo stays fast."""
    cpu = dict(devices=("cpu",), dtypes=(torch.float32,))
    zoo = dict(cpu, layouts=("contiguous", "transposed"), exact=True, autodiff=("reverse",))
    found = {
        # "sliced": a step-sliced view in, one out.
        "keep_strides_double": OpSpec(
            ops.keep_strides_double.default,
            reference=lambda x: _keep_strides(x).copy_(2 * x),
            arity=1,
            **{**zoo, "layouts": ("contiguous", "sliced")},
        ),
        "sign_and_abs": OpSpec(
            ops.sign_and_abs.default, reference=_sign_and_abs_reference, arity=1, **zoo
        ),
        # int64 checked too; the mask is not differentiated.
        "masked_mul": OpSpec(
            ops.masked_mul.default,
            reference=lambda a, b, mask: a * b * mask,
            samples=_masked_mul_samples,
            grad_args=(0, 1),
            **{**zoo, "dtypes": (torch.int64, torch.float32)},
        ),
        # Checked in float32 alone, but it takes int64 and float64 too: the
        # bad-input check's wrong dtype is another (int32).
        "twice": OpSpec(
            ops.twice.default,
            reference=lambda x: 2 * x,
            arity=1,
            accepted_dtypes=INT_OR_FLOAT,
            **zoo,
        ),
        # Three rows or more, as its fake kernel says: export's rows too.
        "laplacian": OpSpec(
            ops.laplacian.default,
            reference=_laplacian_reference,
            arity=1,
            dynamic_dims={0: {0: torch.export.Dim("rows", min=3)}},
            **zoo,
        ),
        # Returns nothing: no derivative to check.
        "check_finite": OpSpec(
            ops.check_finite.default,
            reference=lambda x: None,
            arity=1,
            **{**zoo, "exact": False},  # no -specials cases: it rejects NaN
        ),
        # Writes x, which its schema does not say (the bug): declared here.
        "unmarked_scale_": OpSpec(
            ops.unmarked_scale_.default,
            reference=_scale_reference,
            arity=1,
            extra_args=(0.5,),
            mutates=(0,),
            **zoo,
        ),
    }
    for name in ("float32_mul", "wrong_sign_float32_mul"):
        # No float64 kernel: the derivatives in float32.
        found[name] = OpSpec(
            getattr(ops, name).default, reference=torch.mul, grad_dtype=torch.float32, **zoo
        )
    for name in ("out_first_add", "last_row_out_first_add"):
        # out is the first argument: named, and samples give it first.
        found[name] = OpSpec(
            getattr(ops, name).default,
            reference=torch.add,
            out=("out",),
            samples=_out_first_samples,
            **zoo,
        )
    for name in ("weighted_code_sum", "wrong_weight_grad_code_sum"):
        # The weights alone are differentiated: nothing where there are none.
        found[name] = OpSpec(
            getattr(ops, name).default,
            reference=_weighted_code_sum_reference,
            samples=_weighted_code_sum_samples,
            grad_args={"weighted": (1,), "unweighted": ()},
            **{**zoo, "layouts": ("weighted", "unweighted"), "exact": False},
        )
    for name in ("gather_rows", "clamping_gather_rows"):
        # Its index is a value the op must check: declared as a bad value.
        found[name] = OpSpec(
            getattr(ops, name).default,
            reference=lambda x, index: x.index_select(0, index),
            samples=_gather_rows_samples,
            bad_values={"an index past the last row": _index_out_of_range},
            checks=("results", "bad_input", "internal_assert"),
            **cpu,
        )
    # The rms output has no derivative by design: only the first is differentiated.
    found["double_and_rms"] = OpSpec(
        ops.double_and_rms.default,
        reference=_double_and_rms_reference,
        arity=1,
        grad_outputs=(0,),
        checks=("results", "gradcheck", "gradgradcheck", "autodiff"),
        **{**zoo, "exact": False},
    )
    # Writes acc, which its result depends on: the gradients of a and b (its
    # autograd.Function has no forward mode).
    found["accumulate_mul"] = OpSpec(
        accumulate_mul,
        reference=_accumulate_mul_reference,
        samples=_accumulate_mul_samples,
        mutates=(2,),
        differentiable=True,
        grad_args=(0, 1),
        checks=("results", "gradcheck", "gradgradcheck", "autodiff"),
        **{**cpu, "dtypes": (torch.float64,), "autodiff": ("reverse",)},
    )
    return found
