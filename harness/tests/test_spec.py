"""extension_cpp_testing's own promises: how an OpSpec finds its op, which cases
it makes and how they read, the errors for a spec that can't work, and each
declaration for ops that are not elementwise (tests/third_party uses them on
torchvision). Each declaration is shown twice: the op fails the check without
it, and passes with it, so no declaration can stop mattering unnoticed.

The ops are the zoo's (built once per session) and small Python custom ops
defined below; nothing here needs the extension_cpp package, so the
standalone harness's tests (make matrix) run this file too.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch
from harness_zoo import zoo as zoo_module
from harness_zoo.zoo import register_autograd_kernel
from torch import Tensor

from extension_cpp_testing import (
    CHECKS,
    LAYOUTS,
    ROUNDED_ONCE,
    TOLERANCES,
    OpSpec,
    assert_same_values,
    run_all,
)
from extension_cpp_testing.conformance import DYNAMIC_OUTPUT_FIX


@pytest.fixture(scope="module")
def zoo():
    return zoo_module.load()


def test_a_packet_with_one_overload_is_its_default(zoo):
    spec = OpSpec(torch.ops.harness_zoo.mul, reference=torch.mul)
    args = spec.sample("contiguous", torch.float32, "cpu")
    assert spec.overload(args) is torch.ops.harness_zoo.mul.default
    assert spec.name == "mul"


def test_a_packet_with_several_overloads_is_refused_with_their_names():
    with pytest.raises(ValueError, match=r"aten\.add has the overloads \[.*'Tensor'.*pass one"):
        OpSpec(torch.ops.aten.add, reference=torch.add)


def test_a_python_function_is_resolved_to_the_op_it_calls(zoo):
    def muladd(a, b, c):
        return torch.ops.harness_zoo.muladd(a, b, c)

    spec = OpSpec(muladd, reference=lambda a, b, c: a * b + c, extra_args=(2.0,))
    args = spec.sample("transposed", torch.float32, "cpu")
    assert spec.overload(args) is torch.ops.harness_zoo.muladd.default
    assert spec.name == "muladd"


def test_a_function_calling_two_ops_is_reported_in_the_opcheck_check(zoo):
    def two_ops(a, b):
        return torch.ops.harness_zoo.mul(torch.ops.harness_zoo.muladd(a, b, 1.0), b)

    spec = OpSpec(two_ops, reference=lambda a, b: (a * b + 1.0) * b, checks=("opcheck",))
    failures = run_all(spec)
    message = str(failures["opcheck"][0])
    assert "two_ops should call exactly one custom op, but it called" in message
    assert "harness_zoo.muladd.default" in message
    assert "harness_zoo.mul.default" in message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(checks=("fake", "strdies")), "unknown checks ['strdies']; the checks are"),
        (dict(skip={"vamp": "typo"}), "unknown checks ['vamp']; the checks are"),
        (dict(layouts=("contiguous", "diagonal")), "unknown layouts ['diagonal']"),
    ],
    ids=["check", "skip", "layout"],
)
def test_unknown_names_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        OpSpec(torch.ops.aten.mul.Tensor, reference=torch.mul, **kwargs)


def test_one_table_holds_every_check_and_its_fix():
    assert list(CHECKS)[:3] == ["results", "strides", "fake"]
    for name, check in CHECKS.items():
        assert callable(check.run), name
        assert len(check.fix) > 40, name


def test_cases_cover_every_check_and_read_as_ids():
    spec = OpSpec(torch.ops.aten.mul.Tensor, reference=torch.mul, huge=True)
    cases = spec.cases()
    assert {c.check for c in cases} == set(CHECKS)
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "ids are unique"
    for expected in (
        "mul-results-cpu-float16-channels-last",
        "mul-fake-cpu-float32-transposed",
        "mul-fake-cpu-bfloat16-contiguous",  # fake runs on every dtype
        "mul-opcheck-cpu-float32-sliced-requires_grad",
        "mul-gradcheck-cuda-float64-offset",
        "mul-autodiff-cpu-float64-reverse",
        "mul-vmap-cpu-float32-contiguous",
        "mul-side_stream-cuda-float32",
        "mul-bad_input-cuda-device",
        "mul-internal_assert-cpu-dtype",
        "mul-huge-cpu-float16",
    ):
        assert expected in ids
    # gradcheck needs memory of its own per element: no expanded or empty inputs.
    grad_layouts = {c.layout for c in cases if c.check == "gradcheck"}
    assert grad_layouts == {name for name, layout in LAYOUTS.items() if layout.perturbable}
    assert not {"expanded", "broadcast-row", "empty"} & grad_layouts


def test_an_out_op_gets_out_checks_out_layouts_and_no_gradients(zoo):
    spec = OpSpec(torch.ops.harness_zoo.add_out.default, reference=torch.add, out=True)
    cases = spec.cases()
    assert not {"gradcheck", "gradgradcheck", "autodiff", "vmap"} & {c.check for c in cases}
    assert {"out-overlap", "out-internal-overlap"} <= set(spec.bad_inputs)
    assert {c.id for c in cases if c.variant and c.variant.startswith("out-")} >= {
        "add_out-results-cpu-float32-contiguous-out-non-contiguous",
        "add_out-results-cpu-float32-contiguous-out-transposed",
        "add_out-results-cpu-float32-channels-last-out-channels-last",
    }
    a, _, out = spec.sample("mixed", torch.float32, "cpu")
    assert out.shape == a.shape
    assert out.is_contiguous()


@pytest.mark.parametrize("arity", [1, 3])
def test_default_samples_serve_any_arity(arity):
    spec = OpSpec(torch.ops.aten.mul.Tensor, reference=torch.mul, arity=arity)
    args = spec.sample("mixed", torch.float64, "cpu")
    assert len(args) == arity
    assert args[0].is_contiguous()  # the first input in the layout's first form
    for other in args[1:]:
        assert other.shape == args[0].shape
        assert other.t().is_contiguous()  # every later one transposed


# -- tolerances ----------------------------------------------------------------


def _ulps_from(value: float, dtype, k: int):
    """(value, the value k ulps above it), both of dtype."""
    x = torch.tensor([value], dtype=dtype)
    y = x.clone()
    for _ in range(k):
        y = torch.nextafter(y, torch.tensor([float("inf")], dtype=dtype))
    return y, x


@pytest.mark.parametrize(
    ("dtype", "allowed", "value"),
    [
        # From 2^3 up (the bottom and the middle of a binade), where the atol
        # adds less than an ulp.
        (torch.float16, 1, 8.0),
        (torch.float16, 1, 12.0),
        (torch.bfloat16, 1, 8.0),
        (torch.bfloat16, 1, 12.0),
        # From 2^5 up.
        (torch.float32, 4, 2.0**10),
        (torch.float64, 4, 2.0**10),
    ],
    ids=lambda v: str(v).replace("torch.", ""),
)
def test_tolerances_allow_the_ulps_their_comment_says(dtype, allowed, value):
    """layouts.py: one ulp in float16 and bfloat16, four in float32 and float64
    at the bottom of a binade."""
    tolerance = TOLERANCES[dtype]
    got, want = _ulps_from(value, dtype, allowed)
    assert_same_values(got, want, exact=False, **tolerance)
    got, want = _ulps_from(value, dtype, allowed + 1)
    with pytest.raises(AssertionError):
        assert_same_values(got, want, exact=False, **tolerance)


@pytest.mark.parametrize(
    ("dtype", "scale"),
    [(torch.float16, 1.0), (torch.bfloat16, 1.0), (torch.float32, 32.0), (torch.float64, 32.0)],
    ids=lambda v: str(v).replace("torch.", ""),
)
def test_the_atol_is_one_ulp_of_its_scale(dtype, scale):
    """Near zero: one ulp of 1.0 in the half types, of 2^5 in the others."""
    for ulps, fits in ((1, True), (2, False)):
        got, want = _ulps_from(scale, dtype, ulps)
        diff = (got.double() - want.double()).to(dtype)  # exact: ulps of scale
        zero = torch.zeros(1, dtype=dtype)
        if fits:
            assert_same_values(diff, zero, exact=False, **TOLERANCES[dtype])
        else:
            with pytest.raises(AssertionError):
                assert_same_values(diff, zero, exact=False, **TOLERANCES[dtype])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_rounded_once_allows_no_ulp_in_half_types(dtype):
    got, want = _ulps_from(1.0, dtype, 1)
    with pytest.raises(AssertionError):
        assert_same_values(got, want, exact=False, **ROUNDED_ONCE[dtype])


def test_rounded_once_tells_the_comments_example_apart():
    """a = b = 1 + 3 * 2^-10, c = -1 in float16: rounded once, a*b + c is
    6 * 2^-10 + 2^-17; rounded after the product too, 6 * 2^-10."""
    a = torch.tensor([1 + 3 * 2**-10], dtype=torch.float16)
    once = (a.double() * a.double() - 1).to(torch.float16)
    twice = a * a - 1
    assert once.item() == 6 * 2**-10 + 2**-17
    assert twice.item() == 6 * 2**-10
    # Two ulps apart near zero: within TOLERANCES' atol, not where the op claims once.
    assert_same_values(twice, once, exact=False, **TOLERANCES[torch.float16])
    with pytest.raises(AssertionError):
        assert_same_values(twice, once, exact=False, **ROUNDED_ONCE[torch.float16])


def test_the_rounded_once_claim_chooses_the_tolerances(zoo):
    """A double-rounded a*b + c passes where the op does not claim a single
    rounding (one ulp, and an atol near zero), and fails where it does."""
    spec = zoo["double_rounded_muladd"]
    assert spec.tolerances == ROUNDED_ONCE
    relaxed = dataclasses.replace(spec, rounded_once=False, tolerances=None)
    assert relaxed.tolerances == TOLERANCES
    assert run_all(relaxed) == {}
    # Every dtype and layout, but 0-dim may pass: its one element may round
    # alike either way.
    failed = {f.case for f in run_all(spec)["results"]}
    every = {
        f"double_rounded_muladd-results-cpu-{dtype}-{layout}"
        for dtype in ("float16", "bfloat16")
        for layout in ("contiguous", "transposed", "mixed")
    }
    zero_dim = {
        f"double_rounded_muladd-results-cpu-{dtype}-0-dim" for dtype in ("float16", "bfloat16")
    }
    assert every <= failed <= every | zero_dim


# -- declarations for real signatures --------------------------------------------


# gather_rows(x, index): x's rows at positions given as a float tensor (as
# boxes or sampling coordinates are): differentiable in x only.
@torch.library.custom_op("harness_spec::gather_rows", mutates_args=())
def gather_rows(x: Tensor, index: Tensor) -> Tensor:
    return x[index.long()]


@gather_rows.register_fake
def _(x, index):
    return x.new_empty(index.shape[0], *x.shape[1:])


def _gather_rows_backward(ctx, grad):
    (index,) = ctx.saved_tensors
    grad_x = grad.new_zeros(ctx.x_shape).index_add_(0, index.long(), grad)
    return grad_x, None


def _gather_rows_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[1])
    ctx.x_shape = inputs[0].shape


register_autograd_kernel("harness_spec::gather_rows", _gather_rows_setup, _gather_rows_backward)


def _gather_samples(layout, dtype, device, rows):
    """rows rows of 6 x 4 (rows varies in the dynamic checks), 5 float indices."""
    x = torch.randn(rows + 6, 4, dtype=dtype, device=device)
    index = torch.randint(rows + 6, (5,)).to(dtype=dtype, device=device)
    return [x, index]


GATHER = OpSpec(
    torch.ops.harness_spec.gather_rows.default,
    reference=lambda x, index: x[index.long()],
    samples=_gather_samples,
    layouts=("contiguous",),
    dtypes=(torch.float32, torch.float64),
    devices=("cpu",),
    checks=("gradcheck", "autodiff", "opcheck", "export"),
    bad_inputs=(),
    # The index varies in its own length: not with x's rows.
    dynamic_dims={0: {0: "rows"}},
)


def test_grad_args_leave_indices_out_of_the_gradient_checks():
    """Without grad_args, gradcheck differentiates the float index too, which
    has no gradient: "Jacobian mismatch for output 0 with respect to input 1"."""
    failures = run_all(GATHER)
    assert "gradcheck" in failures
    assert "input 1" in failures["gradcheck"][0].what
    assert run_all(dataclasses.replace(GATHER, grad_args=(0,))) == {}


def test_dynamic_dims_say_which_dimensions_vary_together():
    """By default export names dimension 0 of every tensor "rows": x's rows and
    the index's length would have to be equal."""
    declared = dataclasses.replace(GATHER, grad_args=(0,), checks=("export",))
    assert run_all(declared) == {}
    shared = dataclasses.replace(declared, dynamic_dims=None)
    assert "export" in run_all(shared)


# positive(x): the positive elements of x, a size only the data knows.
@torch.library.custom_op("harness_spec::positive", mutates_args=())
def positive(x: Tensor) -> Tensor:
    return x[x > 0]


@positive.register_fake
def _(x):
    return x.new_empty(torch.library.get_ctx().new_dynamic_size())


POSITIVE = OpSpec(
    torch.ops.harness_spec.positive.default,
    reference=lambda x: x[x > 0],
    arity=1,
    layouts=("contiguous", "transposed"),
    dtypes=(torch.float32,),
    devices=("cpu",),
    differentiable=False,
    checks=("results", "strides", "fake", "opcheck", "compile", "dynamic", "export"),
    bad_inputs=(),
)


def test_dynamic_output_checks_a_data_dependent_size():
    undeclared = run_all(POSITIVE)
    # torch before 2.14 also breaks the compiled graph at the unbacked size.
    assert {"fake", "opcheck"} <= set(undeclared) <= {"fake", "opcheck", "compile", "dynamic"}
    assert undeclared["fake"][0].fix == DYNAMIC_OUTPUT_FIX
    assert run_all(dataclasses.replace(POSITIVE, dynamic_output=True)) == {}


def test_dynamic_output_takes_no_vmap_case():
    spec = dataclasses.replace(POSITIVE, checks=tuple(CHECKS), dynamic_output=True)
    assert "vmap" not in {c.check for c in spec.cases()}


# first_half(x): a view of x's first half; the strides check compares the view.
@torch.library.custom_op("harness_spec::first_half", mutates_args=())
def first_half(x: Tensor) -> Tensor:
    return x.clone()[: x.shape[0] // 2]


@first_half.register_fake
def _(x):
    return x.new_empty(x.shape)[: x.shape[0] // 2]


def _vector(layout, dtype, device, rows):
    return [torch.randn(2 * rows, dtype=dtype, device=device)]


def test_compare_storage_is_for_dense_outputs_only():
    """A slice of a larger buffer is a fine output unless the spec compares storage."""
    spec = OpSpec(
        torch.ops.harness_spec.first_half.default,
        reference=lambda x: x[: x.shape[0] // 2].clone(),
        samples=_vector,
        layouts=("contiguous",),
        dtypes=(torch.float32,),
        devices=("cpu",),
        checks=("strides",),
    )
    assert spec.compare_storage is False  # custom samples: the view only
    assert run_all(spec) == {}
    failures = run_all(dataclasses.replace(spec, compare_storage=True))
    assert "storage offset 0 in 296 bytes" in failures["strides"][0].what


# checked_sqrt(x): its fake kernel checks the dtype in other words than the kernel.
@torch.library.custom_op("harness_spec::checked_sqrt", mutates_args=())
def checked_sqrt(x: Tensor) -> Tensor:
    if not x.is_floating_point():
        raise RuntimeError(f"checked_sqrt: x must be floating-point, got {x.dtype}")
    return x.sqrt()


@checked_sqrt.register_fake
def _(x):
    torch._check(x.is_floating_point(), lambda: "expected a float tensor")
    return torch.empty_like(x)


def test_same_error_words_can_be_relaxed_but_an_error_stays_required():
    spec = OpSpec(
        torch.ops.harness_spec.checked_sqrt.default,
        reference=torch.sqrt,
        arity=1,
        dtypes=(torch.float32,),
        devices=("cpu",),
        checks=("bad_input",),
    )
    assert "is not the real kernel's" in run_all(spec)["bad_input"][0].what
    assert run_all(dataclasses.replace(spec, same_error_words=False)) == {}


# add_int8(a, b): an integer op (quantized kernels take int8).
@torch.library.custom_op("harness_spec::add_int8", mutates_args=())
def add_int8(a: Tensor, b: Tensor) -> Tensor:
    torch._check(a.dtype == torch.int8, lambda: f"add_int8: expected int8, got {a.dtype}")
    torch._check(a.shape == b.shape, lambda: f"add_int8: shapes {a.shape} and {b.shape}")
    return a + b


@add_int8.register_fake
def _(a, b):
    torch._check(a.dtype == torch.int8, lambda: f"add_int8: expected int8, got {a.dtype}")
    torch._check(a.shape == b.shape, lambda: f"add_int8: shapes {a.shape} and {b.shape}")
    return torch.empty_like(a)


def test_integer_ops_get_inputs_without_randn():
    """int8 inputs, fresh and bad: randn has no int8 kernel ("normal_kernel_cpu
    not implemented for 'Char'")."""
    spec = OpSpec(
        torch.ops.harness_spec.add_int8.default,
        reference=torch.add,
        dtypes=(torch.int8,),
        layouts=("contiguous", "transposed"),
        devices=("cpu",),
        checks=("results", "fake", "opcheck", "bad_input"),
        bad_inputs=("dtype", "shape"),
    )
    assert not spec.differentiable
    assert spec.tolerance(torch.int8) == dict(rtol=0, atol=0)
    assert run_all(spec) == {}


# minmax(x, with_mean): several outputs, one of them optional (a schema that
# torch.library.custom_op can't infer, so it is written out).
_LIB = torch.library.Library("harness_spec", "FRAGMENT")
_LIB.define("minmax(Tensor x, bool with_mean) -> (Tensor, Tensor, Tensor?)")


def _minmax(x, with_mean):
    return x.amin(dim=0), x.amax(dim=0), x.mean(dim=0) if with_mean else None


_LIB.impl("minmax", _minmax, "CompositeExplicitAutograd")


@torch.library.register_fake("harness_spec::minmax", lib=_LIB)
def _(x, with_mean):
    row = x.new_empty(x.shape[1:])
    return row, torch.empty_like(row), torch.empty_like(row) if with_mean else None


MINMAX = OpSpec(
    torch.ops.harness_spec.minmax.default,
    reference=_minmax,
    arity=1,
    extra_args=(False,),
    layouts=("contiguous", "transposed"),
    dtypes=(torch.float32,),
    devices=("cpu",),
    differentiable=False,
    checks=("results", "strides", "fake", "opcheck", "compile"),
    bad_inputs=(),
)


def test_several_and_optional_outputs_are_compared_one_by_one():
    assert run_all(MINMAX) == {}
    assert run_all(dataclasses.replace(MINMAX, extra_args=(True,))) == {}
    wrong = dataclasses.replace(MINMAX, reference=lambda x, m: (x.amin(0), x.amin(0), None))
    assert "output 1" in run_all(wrong)["results"][0].what


def test_an_out_overload_with_a_keyword_out_that_returns_out():
    """aten::add.out: `*, Tensor(a!) out) -> Tensor(a!)`: out is passed by name,
    and checked in every out layout."""
    spec = OpSpec(
        torch.ops.aten.add.out,
        reference=torch.add,
        out=True,
        exact=True,
        layouts=("contiguous", "channels-last"),
        dtypes=(torch.float32,),
        devices=("cpu",),
        checks=("results", "strides", "fake"),
    )
    cases = [c for c in spec.cases() if c.check == "results"]
    assert len([c for c in cases if c.variant and c.variant.startswith("out-")]) == 3
    assert run_all(spec) == {}


def test_declared_skips_show_their_reason():
    spec = OpSpec(
        torch.ops.aten.mul.Tensor,
        reference=torch.mul,
        skip={"gradgradcheck": "no double backward"},
    )
    skipped = [c for c in spec.cases() if c.check == "gradgradcheck"]
    assert skipped
    assert all(c.skip_reason == "declared by the OpSpec: no double backward" for c in skipped)


def _float32_add_out(op, *checks):
    """An OpSpec for an out= sum on the CPU in float32, with some checks."""
    return OpSpec(
        op,
        reference=torch.add,
        out=True,
        layouts=("contiguous",),
        dtypes=(torch.float32,),
        devices=("cpu",),
        checks=checks,
    )


# add_into(a, b, out): an out= op whose fake kernel flattens out, where the
# kernel writes it in place.
@torch.library.custom_op("harness_spec::add_into", mutates_args=("out",))
def add_into(a: Tensor, b: Tensor, out: Tensor) -> None:
    torch.add(a, b, out=out)


@add_into.register_fake
def _(a, b, out):
    out.resize_(out.numel())  # the bug


def test_an_out_ops_fake_kernel_must_leave_out_as_the_kernel_does():
    failures = run_all(_float32_add_out(torch.ops.harness_spec.add_into.default, "fake"))
    assert "the fake kernel left out as sizes [4773]" in failures["fake"][0].what


# add_into_returning(a, b, out) -> out: its fake kernel returns a new tensor
# where the kernel returns out (the schema's Tensor(a!)).
_LIB.define("add_into_returning(Tensor a, Tensor b, Tensor(a!) out) -> Tensor(a!)")


def _add_into_returning(a, b, out):
    return torch.add(a, b, out=out)


_LIB.impl("add_into_returning", _add_into_returning, "CompositeExplicitAutograd")


@torch.library.register_fake("harness_spec::add_into_returning", lib=_LIB)
def _(a, b, out):
    return torch.empty_like(out)  # the bug


def test_an_out_ops_fake_kernel_must_return_out_itself():
    failures = run_all(_float32_add_out(torch.ops.harness_spec.add_into_returning.default, "fake"))
    assert failures["fake"][0].what == (
        "the fake kernel returns a tensor other than out; the real kernel returns out"
    )


# restriding_add(a, b, out): writes the sum into a new tensor of other strides
# and makes out a view of it. The values read right; only out's layout shows it.
_LIB.define("restriding_add(Tensor a, Tensor b, Tensor(a!) out) -> ()")


def _restriding_add(a, b, out):
    reverse = list(range(out.dim()))[::-1]
    fresh = out.new_empty([out.shape[d] for d in reverse]).permute(reverse)  # column-major
    torch.add(a, b, out=fresh)
    out.set_(fresh)


_LIB.impl("restriding_add", _restriding_add, "CompositeExplicitAutograd")


@torch.library.register_fake("harness_spec::restriding_add", lib=_LIB)
def _(a, b, out):
    return None


def test_an_out_op_that_replaces_out_fails_the_strides_check():
    failures = run_all(
        _float32_add_out(torch.ops.harness_spec.restriding_add.default, "results", "strides")
    )
    assert set(failures) == {"strides"}
    assert failures["strides"][0].what.startswith("out was resized or replaced: sizes [37, 129]")


# -- each output of the fake kernel ----------------------------------------------


# halves(x): x's two halves, as a list; the fake kernel's list is one longer.
@torch.library.custom_op("harness_spec::halves", mutates_args=())
def halves(x: Tensor) -> list[Tensor]:
    return [x[: x.shape[0] // 2].clone(), x[x.shape[0] // 2 :].clone()]


@halves.register_fake
def _(x):
    n = x.shape[0] // 2
    return [x.new_empty(n), x.new_empty(x.shape[0] - n), x.new_empty(0)]  # the bug


# amin_mean(x): (min, mean) of the columns; the fake kernel gives None for the mean.
_LIB.define("amin_mean(Tensor x) -> (Tensor, Tensor?)")


def _amin_mean(x):
    return x.amin(dim=0), x.mean(dim=0)


_LIB.impl("amin_mean", _amin_mean, "CompositeExplicitAutograd")


@torch.library.register_fake("harness_spec::amin_mean", lib=_LIB)
def _(x):
    return x.new_empty(x.shape[1:]), None  # the bug


def _fake_only(op, reference, **kw):
    """An OpSpec for a one-input op on the CPU in float32, its fake check only."""
    return OpSpec(
        op,
        reference=reference,
        arity=1,
        layouts=("contiguous", "transposed"),
        dtypes=(torch.float32,),
        devices=("cpu",),
        differentiable=False,
        checks=("fake",),
        bad_inputs=(),
        **kw,
    )


def test_the_fake_check_compares_the_number_of_outputs():
    spec = _fake_only(
        torch.ops.harness_spec.halves.default,
        lambda x: [x[: x.shape[0] // 2], x[x.shape[0] // 2 :]],
        samples=_vector,
    )
    failures = run_all(spec)
    assert failures["fake"][0].what == "fake kernel returns 3 outputs; the real kernel 2"


def test_the_fake_check_names_the_output_that_differs(zoo):
    failures = run_all(_fake_only(torch.ops.harness_spec.amin_mean.default, _amin_mean))
    assert failures["fake"][0].what.startswith("output 1: fake kernel gives None; the real sizes")
    # One output: no number.
    failures = run_all(zoo["float32_fake_mul"], checks={"fake"})
    assert failures["fake"][0].what.startswith("fake kernel gives sizes")


# shifted(x): the positive elements of x twice, as rows 1 and 2 of a 3-row
# buffer: sizes, strides and storage offset that only the data knows.
@torch.library.custom_op("harness_spec::shifted", mutates_args=())
def shifted(x: Tensor) -> Tensor:
    positive = x[x > 0]
    buffer = x.new_empty(3, positive.numel())
    buffer[1:] = positive
    return buffer[1:]


@shifted.register_fake
def _(x):
    return x.new_empty(3, torch.library.get_ctx().new_dynamic_size())[1:]


def test_dynamic_output_strides_and_offsets_are_data_dependent_too():
    spec = _fake_only(
        torch.ops.harness_spec.shifted.default,
        lambda x: torch.stack([x[x > 0]] * 2),
        dynamic_output=True,
    )
    assert run_all(spec) == {}


# -- the values check ------------------------------------------------------------


def test_assert_same_values_defaults_to_no_tolerance():
    with pytest.raises(AssertionError):
        assert_same_values(torch.tensor([1.5]), torch.tensor([1.0]), exact=False)


def test_the_tolerance_is_relative_to_the_reference():
    """|got - want| <= atol + rtol * |want|: 1.5 is 0.5 off 1.0, more than 0.4
    of the reference, though not of itself."""
    with pytest.raises(AssertionError):
        assert_same_values(torch.tensor([1.5]), torch.tensor([1.0]), exact=False, rtol=0.4)
    assert_same_values(torch.tensor([1.0]), torch.tensor([1.5]), exact=False, rtol=0.4)


def test_the_sign_of_zero_counts_where_exact_only():
    got, want = torch.tensor([-0.0, 0.0, 1.0]), torch.tensor([0.0, 0.0, 1.0])
    assert_same_values(got, want, exact=False, **TOLERANCES[torch.float32])
    with pytest.raises(AssertionError, match=r"^1 zero\(s\) of the wrong sign, e\.g\. -0\.0 where"):
        assert_same_values(got, want, exact=True)
    # The example is the first zero of the wrong sign.
    with pytest.raises(
        AssertionError, match=r"^2 zero\(s\) .* e\.g\. 0\.0 where the reference has -0\.0$"
    ):
        assert_same_values(torch.tensor([0.0, -0.0]), torch.tensor([-0.0, 0.0]), exact=True)


def test_a_missing_output_is_the_results_checks_finding():
    """minmax without its mean, against a reference that returns one: the
    results check reports output 2; the strides check has nothing to compare."""
    spec = dataclasses.replace(
        MINMAX,
        reference=lambda x, with_mean: _minmax(x, True),
        layouts=("contiguous",),
        checks=("results", "strides"),
    )
    failures = run_all(spec)
    assert set(failures) == {"results"}
    assert failures["results"][0].what.startswith("result differs from the reference: output 2")
