"""extension_cpp_testing's own promises: how an OpSpec finds its op, which cases
it makes and how they read, the errors for a spec that can't work, and each
declaration for ops that are not elementwise (harness/tests/third_party uses them on
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
    MODES,
    ROUNDED_ONCE,
    TOLERANCES,
    OpSpec,
    assert_same_values,
    cases,
    conformance_tests,
    run_all,
)
from extension_cpp_testing.checks.bad_input import bad_args, kinds_of
from extension_cpp_testing.checks.base import assert_same_codes, assert_values
from extension_cpp_testing.checks.fake import DYNAMIC_OUTPUT_FIX

# The ops below that torch.library.custom_op can't define: schemas it can't
# infer, and Autograd kernels of their own (custom_op registers one, which
# torch 2.8 refuses to have replaced).
_LIB = torch.library.Library("harness_spec", "FRAGMENT")


@pytest.fixture(scope="module")
def zoo():
    return zoo_module.load()


def test_a_packet_with_one_overload_is_its_default(zoo):
    spec = OpSpec(torch.ops.harness_zoo.mul, reference=torch.mul)
    args = spec.sample("contiguous", torch.float32, "cpu")
    assert spec.overload(args) is torch.ops.harness_zoo.mul.default
    assert spec.name == "mul"


@pytest.mark.parametrize(
    "argument", ["known_failures", "nondeterministic_failures", "memory_unsafe"]
)
def test_an_id_that_names_no_case_is_refused(zoo, argument):
    """A misspelt id would leave its case unmarked without a word."""
    spec = OpSpec(torch.ops.harness_zoo.mul, reference=torch.mul, name="mul_no_case")
    ids = ["mul_no_case-fake-cpu-float33-contiguous"]
    value = ids if argument == "memory_unsafe" else dict.fromkeys(ids, "a bug")
    with pytest.raises(ValueError, match=rf"{argument}.* name no case of mul_no_case: .*float33"):
        conformance_tests(spec, **{argument: value})


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
        cases(OpSpec(torch.ops.aten.mul.Tensor, reference=torch.mul, **kwargs))


def test_skip_leaves_out_one_layout_or_variant_of_a_check():
    """skip={"check@label": why}: the check's cases of that layout or variant
    skip with the reason, its other cases and the other checks run; a label
    no case of the check has is refused, naming those it has."""
    spec = OpSpec(
        torch.ops.aten.mul.Tensor,
        reference=torch.mul,
        skip={"compile@transposed": "why one", "bad_input@dtype": "why two"},
    )
    made = cases(spec)
    skipped = {c.id: c.skip_reason for c in made if c.declared_skip}
    assert skipped
    assert all(c.check in ("compile", "bad_input") for c in made if c.declared_skip)
    for c in made:
        if c.check == "compile" and c.layout == "transposed":
            assert skipped[c.id] == "declared by the OpSpec: why one", c.id
        elif c.check == "bad_input" and c.variant == "dtype":
            assert skipped[c.id] == "declared by the OpSpec: why two", c.id
        else:
            assert c.id not in skipped, c.id
    with pytest.raises(ValueError, match=r"'compile@transposd' matches no case of compile; "):
        cases(dataclasses.replace(spec, skip={"compile@transposd": "typo"}))
    # opcheck's own tests are its labels too.
    cases(dataclasses.replace(spec, skip={"opcheck@test_aot_dispatch_dynamic": "why"}))


def test_one_table_holds_every_check_and_its_fix():
    assert list(CHECKS)[:3] == ["results", "strides", "fake"]
    for name, check in CHECKS.items():
        assert callable(check.run), name
        assert len(check.fix) > 40, name


def test_cases_cover_every_check_and_read_as_ids():
    spec = OpSpec(torch.ops.aten.mul.Tensor, reference=torch.mul, huge=True)
    made = cases(spec)
    assert {c.check for c in made} == set(CHECKS)
    ids = [c.id for c in made]
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
    grad_layouts = {c.layout for c in made if c.check == "gradcheck"}
    assert grad_layouts == {name for name, layout in LAYOUTS.items() if layout.perturbable}
    assert not {"expanded", "broadcast-row", "empty"} & grad_layouts


def test_an_out_op_gets_out_checks_out_layouts_and_no_gradients(zoo):
    spec = OpSpec(torch.ops.harness_zoo.add_out.default, reference=torch.add, out=True)
    made = cases(spec)
    assert not {"gradcheck", "gradgradcheck", "autodiff", "vmap"} & {c.check for c in made}
    assert {"out-overlap", "out-internal-overlap"} <= set(kinds_of(spec))
    assert {c.id for c in made if c.variant and c.variant.startswith("out-")} >= {
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
_LIB.define("gather_rows(Tensor x, Tensor index) -> Tensor")
_LIB.impl("gather_rows", lambda x, index: x[index.long()], "CompositeExplicitAutograd")


@torch.library.register_fake("harness_spec::gather_rows", lib=_LIB)
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
    autodiff=("reverse",),
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
    assert "vmap" not in {c.check for c in cases(spec)}


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


def _minmax_vmap(info, in_dims, x, with_mean):
    """One call on the batch (moved to dimension 1, which minmax keeps): its
    outputs' batch dimension is 0; the mean's too, or None where there is none."""
    x = x.movedim(in_dims[0], 1) if in_dims[0] is not None else x.unsqueeze(1)
    low, high, mean = torch.ops.harness_spec.minmax(x, with_mean)
    return (low, high, mean), (0, 0, 0 if mean is not None else None)


torch.library.register_vmap("harness_spec::minmax", _minmax_vmap, lib=_LIB)


@pytest.mark.parametrize("with_mean", [False, True])
def test_an_optional_output_left_out_passes_vmap(with_mean):
    """The harness gives vmap out_dims None for an output the op returns as None."""
    spec = dataclasses.replace(MINMAX, extra_args=(with_mean,), checks=("vmap",))
    assert run_all(spec) == {}


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
    made = [c for c in cases(spec) if c.check == "results"]
    assert len([c for c in made if c.variant and c.variant.startswith("out-")]) == 3
    assert run_all(spec) == {}


def test_declared_skips_show_their_reason():
    spec = OpSpec(
        torch.ops.aten.mul.Tensor,
        reference=torch.mul,
        skip={"gradgradcheck": "no double backward"},
    )
    skipped = [c for c in cases(spec) if c.check == "gradgradcheck"]
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


# -- arguments read and written in place -------------------------------------------


def test_mutated_arguments_come_from_the_schema(zoo):
    assert zoo["axpy_"].mutates == [0]  # Tensor(a!) y
    assert zoo["mul"].mutates == []
    with pytest.raises(ValueError, match=r"the schema of .* also writes \[0\] \(y\)"):
        OpSpec(torch.ops.harness_zoo.axpy_.default, reference=lambda y, x, a: None, mutates=(1,))


def _axpy(y, x, alpha):
    """harness_zoo.axpy_ behind a Python function: no schema to read."""
    torch.ops.harness_zoo.axpy_(y, x, alpha)


def test_a_python_function_declares_what_it_mutates(zoo):
    """Without mutates=, writing y is a finding, and says it is the OpSpec
    that does not list it (there is no schema to blame); with it, y is
    compared with the reference's."""
    spec = dataclasses.replace(zoo["axpy_"], op=_axpy, mutates=None, name="axpy")
    failures = run_all(spec, checks={"results"})["results"]
    assert failures[0].what == (
        "the op modified its input y (argument 0), which OpSpec(mutates=) does not list"
    )
    declared = dataclasses.replace(spec, mutates=(0,))
    assert run_all(declared, checks={"results", "strides", "fake", "compile"}) == {}


def test_a_reference_that_does_not_update_its_copy_is_reported_as_a_difference(zoo):
    """The op's y is compared with the reference's copy: a reference that
    forgets to update it makes the results check fail on y, as it should."""
    spec = dataclasses.replace(zoo["axpy_"], reference=lambda y, x, alpha: None)
    what = run_all(spec, checks={"results"})["results"][0].what
    assert what.startswith("result differs from the reference: y (mutated in place): ")


# ema_(x, state, beta): state = beta * state + (1 - beta) * x, in place; state
# is the second argument, read and written.
def _check_ema(x, state):
    torch._check(x.shape == state.shape, lambda: f"ema_: shapes {x.shape} and {state.shape}")


@torch.library.custom_op("harness_spec::ema_", mutates_args=("state",))
def ema_(x: Tensor, state: Tensor, beta: float) -> None:
    _check_ema(x, state)
    state.mul_(beta).add_(x, alpha=1 - beta)


@ema_.register_fake
def _(x, state, beta):
    _check_ema(x, state)


def _ema_reference(x, state, beta):
    state.copy_(beta * state + (1 - beta) * x)


EMA = OpSpec(
    torch.ops.harness_spec.ema_.default,
    reference=_ema_reference,
    extra_args=(0.9,),
    layouts=("contiguous", "transposed"),
    dtypes=(torch.float32,),
    devices=("cpu",),
    bad_inputs=("shape",),
)


def test_an_argument_written_in_the_middle_is_compared_and_the_others_kept():
    assert EMA.mutates == [1]
    assert not EMA.differentiable  # an in-place update
    assert "vmap" not in {c.check for c in cases(EMA)}
    assert run_all(EMA) == {}
    # A reference that updates the wrong argument: state differs.
    wrong = dataclasses.replace(
        EMA, reference=lambda x, state, beta: _ema_reference(state, x, beta)
    )
    what = run_all(wrong, checks={"results"})["results"][0].what
    assert what.startswith("result differs from the reference: state (mutated in place)")


# -- integer outputs -------------------------------------------------------------


def test_integer_tolerance_allows_codes_on_a_fraction_of_elements(zoo):
    """The zoo's quantizer rounds ties away from zero, its reference to even:
    one code apart on about 2.5% of its samples. Exact comparison fails on
    them; integer_tolerance=dict(codes=1, fraction=0.05) accepts them."""
    spec = zoo["quantize"]
    assert run_all(spec) == {}
    exact = run_all(dataclasses.replace(spec, integer_tolerance=None), checks={"results"})
    assert "Tensor-likes are not equal" in exact["results"][0].what


@pytest.mark.parametrize(
    ("diff", "where", "fits"),
    [(1, 5, True), (1, 6, False), (2, 1, False)],
    ids=["1-code-on-5", "1-code-on-6", "2-codes-on-1"],
)
def test_integer_tolerance_bounds_codes_and_fraction(diff, where, fits):
    """Within 1 code on at most 5% of 100 elements."""
    want = torch.zeros(100, dtype=torch.uint8)
    got = want.clone()
    got[:where] = diff
    if fits:
        assert_same_codes(got, want, codes=1, fraction=0.05)
    else:
        with pytest.raises(AssertionError, match=f"{where} of 100 codes differ"):
            assert_same_codes(got, want, codes=1, fraction=0.05)


def test_integer_tolerance_is_refused_without_its_two_keys():
    with pytest.raises(ValueError, match=r"integer_tolerance is dict\(codes=k, fraction=f\)"):
        OpSpec(torch.ops.aten.mul.Tensor, reference=torch.mul, integer_tolerance=dict(codes=1))


# -- every autodiff mode -----------------------------------------------------------


def test_a_mode_that_works_but_is_not_claimed_says_to_claim_it():
    """aten.mul gives every mode's derivative: claiming reverse alone makes
    each other mode fail with the fix that claims it; claiming all passes."""
    mul = dict(
        reference=torch.mul, layouts=("contiguous",), dtypes=(torch.float64,), devices=("cpu",)
    )
    reverse = OpSpec(torch.ops.aten.mul.Tensor, **mul, autodiff=("reverse",))
    failures = run_all(reverse, checks={"autodiff"})["autodiff"]
    assert len(failures) == len(MODES) - 1
    assert all("returned the reference's derivative" in f.what for f in failures)
    jvp = next(f for f in failures if f.case.endswith("-jvp-raises"))
    assert jvp.fix.endswith("OpSpec(autodiff=(..., 'jvp'))")
    every = OpSpec(torch.ops.aten.mul.Tensor, **mul)  # the default claims every mode
    assert every.autodiff == tuple(MODES)
    assert run_all(every, checks={"autodiff"}) == {}


def test_every_mode_gets_a_case_claimed_or_not():
    spec = OpSpec(
        torch.ops.aten.mul.Tensor, reference=torch.mul, devices=("cpu",), autodiff=("reverse",)
    )
    variants = {c.variant for c in cases(spec) if c.check == "autodiff"}
    assert variants == {"reverse"} | {f"{m}-raises" for m in MODES if m != "reverse"}
    claimed = dataclasses.replace(spec, autodiff=tuple(MODES))
    assert {c.variant for c in cases(claimed) if c.check == "autodiff"} == set(MODES)
    with pytest.raises(ValueError, match=r"unknown autodiff modes \['jvps'\]"):
        OpSpec(torch.ops.aten.mul.Tensor, reference=torch.mul, autodiff=("jvps",))


# -- bad input for the op's real signature -----------------------------------------


def test_samples_leave_the_shape_kind_out():
    """A wider input can be valid for an op with samples= (an index, a
    batch): the kinds are those that hold for any signature."""
    assert GATHER.bad_inputs == ()  # declared
    spec = dataclasses.replace(GATHER, bad_inputs=None)
    assert kinds_of(spec) == ["dtype", "device"]  # x and index
    one = OpSpec(torch.ops.aten.neg.default, reference=torch.neg, samples=_vector)
    assert kinds_of(one) == ["dtype"]  # one tensor: nothing to put on two devices


def test_a_bad_input_failure_names_the_argument_and_what_it_became(zoo):
    what = run_all(zoo["unchecked_fake_mul"], checks={"bad_input"})["bad_input"][0].what
    assert what.startswith("b became sizes [37, 130] (from [37, 129]): the fake kernel accepted it")
    spec = dataclasses.replace(zoo["unchecked_fake_mul"], bad_inputs=("dtype-b",))
    args, what = bad_args(spec, "dtype-b", "cpu")
    assert what == "b became torch.int64 (from torch.float32)"
    assert args[1].dtype == torch.int64


# dequant_into(codes, scale, out): int8 codes times scale into a float32 out.
_LIB.define("dequant_into(Tensor codes, float scale, Tensor(a!) out) -> ()")


def _dequant_into(codes, scale, out):
    if torch._C._is_alias_of(out, codes):
        raise RuntimeError("dequant_into: expected out to share no memory with codes")
    out.copy_(codes * scale)


_LIB.impl("dequant_into", _dequant_into, "CompositeExplicitAutograd")


@torch.library.register_fake("harness_spec::dequant_into", lib=_LIB)
def _(codes, scale, out):
    torch._check(
        not torch._C._is_alias_of(out, codes),
        lambda: "dequant_into: expected out to share no memory with codes",
    )


def _codes(layout, dtype, device, rows):
    codes = torch.randint(-127, 128, (rows, 8), dtype=torch.int8, device=device)
    return [codes, 0.5, torch.empty(rows, 8, dtype=dtype, device=device)]


DEQUANT_INTO = OpSpec(
    torch.ops.harness_spec.dequant_into.default,
    reference=lambda codes, scale: codes * scale,
    samples=_codes,
    out=True,
    layouts=("contiguous",),
    dtypes=(torch.float32,),
    devices=("cpu",),
    checks=("results", "bad_input"),
    bad_inputs=("out-overlap",),
)


def test_an_overlapping_out_has_outs_dtype_and_shape():
    """out-overlap makes out share memory with codes, in out's own dtype and
    shape, so the op's overlap check is what is tested, not its dtype check."""
    args, what = bad_args(DEQUANT_INTO, "out-overlap", "cpu")
    codes, _, out = args
    assert (out.dtype, out.shape) == (torch.float32, (37, 8))
    assert torch._C._is_alias_of(out, codes)
    assert what == "out became a view into codes's memory, one element in"
    assert run_all(DEQUANT_INTO) == {}


# -- arguments that are not tensors ------------------------------------------------
#
# unpack(codes, scale, shape, dtype, mode, bias): codes [n] times scale,
# reshaped to shape, in dtype, plus an optional bias: an int[] (or SymInt[])
# that follows the input's size, a ScalarType, a str and an optional tensor.
for _name, _ints in (("unpack", "int[]"), ("unpack_symint", "SymInt[]")):
    _LIB.define(
        f"{_name}(Tensor codes, Tensor scale, {_ints} shape, ScalarType dtype, str mode, "
        "Tensor? bias=None) -> Tensor"
    )


def _check_unpack(codes, scale, shape, dtype, mode):
    torch._check(mode == "linear", lambda: f"unpack: expected mode 'linear', got {mode!r}")
    torch._check(
        codes.dtype == torch.int8, lambda: f"unpack: expected int8 codes, got {codes.dtype}"
    )
    torch._check(
        codes.device == scale.device,
        lambda: (
            f"unpack: expected codes and scale on one device, got {codes.device} and {scale.device}"
        ),
    )


def _unpack(codes, scale, shape, dtype, mode, bias=None):
    _check_unpack(codes, scale, shape, dtype, mode)
    out = (codes.float() * scale).reshape(shape)
    return (out if bias is None else out + bias.float()).to(dtype)


def _unpack_fake(codes, scale, shape, dtype, mode, bias=None):
    _check_unpack(codes, scale, shape, dtype, mode)
    return codes.new_empty(shape, dtype=dtype)


for _name in ("unpack", "unpack_symint"):
    _LIB.impl(_name, _unpack, "CompositeExplicitAutograd")
    torch.library.register_fake(f"harness_spec::{_name}", _unpack_fake, lib=_LIB)

    def _unpack_vmap(info, in_dims, codes, scale, shape, dtype, mode, bias=None, name=_name):
        """One call on the whole batch, a leading dimension of codes, scale,
        bias and shape."""

        def first(x, dim):
            return x.movedim(dim, 0) if dim is not None else x.expand(info.batch_size, *x.shape)

        codes, scale = first(codes, in_dims[0]), first(scale, in_dims[1])[:, None]
        if bias is not None:
            bias = first(bias, in_dims[5])[:, None]
        op = getattr(torch.ops.harness_spec, name).default
        return op(codes, scale, [info.batch_size, *shape], dtype, mode, bias), 0

    torch.library.register_vmap(f"harness_spec::{_name}", _unpack_vmap, lib=_LIB)


def _unpack_samples(layout, dtype, device, rows):
    codes = torch.randint(-127, 128, (rows * 4,), dtype=torch.int8, device=device)
    scale = torch.rand((), device=device)
    return [codes, scale, [rows, 4], dtype, "linear", torch.randn(4, dtype=dtype, device=device)]


UNPACK = OpSpec(
    torch.ops.harness_spec.unpack_symint.default,
    reference=lambda codes, scale, shape, dtype, mode, bias: (
        (codes.double() * scale.double()).reshape(shape) + bias.double()
    ).to(dtype),
    samples=_unpack_samples,
    layouts=("contiguous",),
    dtypes=(torch.float32, torch.bfloat16),
    devices=("cpu",),
    differentiable=False,  # integer codes in
    # Only codes has rows; scale is a 0-dim tensor, bias a column per row.
    dynamic_dims={0: {0: "codes"}},
    checks=("results", "fake", "opcheck", "vmap", "compile", "dynamic", "export", "bad_input"),
)


def test_non_tensor_arguments_pass_through_every_check():
    """A ScalarType, a str and a SymInt[] are constants or fixed inputs of the
    export, None-dimensioned under vmap, and bad input changes tensors only."""
    assert run_all(UNPACK) == {}


def test_an_int_list_that_follows_the_sizes_is_named_in_the_fix():
    """The same op with `int[] shape`: torch.compile recompiles for each
    shape and torch.export fails its guard. The fix names the schema's
    argument, not the fake kernel."""
    spec = dataclasses.replace(UNPACK, op=torch.ops.harness_spec.unpack.default, name="unpack")
    failures = run_all(spec)
    assert set(failures) == {"dynamic", "export"}
    for check in ("dynamic", "export"):
        fix = failures[check][0].fix
        assert fix.startswith("the schema's `int[] shape`: its value follows the input's sizes")
        assert fix.endswith(
            "Declare `SymInt[] shape` in the schema, so that a size can stay symbolic"
        )


def test_every_output_that_differs_is_shown_with_its_values():
    """A mismatch names each output that differs (not the first alone) and
    the first differing element's values, NaN and infinities included."""
    spec = OpSpec(torch.ops.aten.mul.Tensor, reference=torch.mul)
    nan, inf = float("nan"), float("inf")
    right = torch.tensor([1.0, nan, inf, 2.0])
    wrong = torch.tensor([1.0, 1.0, inf, 2.0])
    with pytest.raises(AssertionError) as e:
        assert_values(spec, (right, wrong, right), (right, right, wrong))
    lines = str(e.value).splitlines()
    assert lines[0].startswith("output 1: 1 element(s) differ; first at index [1]: 1.0, ")
    assert lines[0].split("; ")[1] == "first at index [1]: 1.0, the reference's nan"
    assert lines[1].startswith("output 2: 1 element(s) differ; first at index [1]: nan, ")
    with pytest.raises(AssertionError, match=r"index \[2\]: -inf, the reference's inf"):
        assert_values(spec, torch.tensor([0.0, 0.0, -inf]), torch.tensor([0.0, 0.0, inf]))


@pytest.mark.parametrize(
    ("kinds", "words"),
    [
        (("out-overlap",), "'out-overlap' needs an out argument, and mul has none"),
        (("dtypo",), "unknown kind of bad input 'dtypo'"),
    ],
)
def test_bad_input_kinds_are_checked_against_the_spec(zoo, kinds, words):
    """A kind the op can't have is the OpSpec's error, said when the cases are
    made, not an error inside the harness reported as the op's failure."""
    spec = dataclasses.replace(zoo["mul"], bad_inputs=kinds)
    with pytest.raises(ValueError, match=re.escape(words)):
        cases(spec)


def test_slow_tests_come_first(request):
    """conftest.py puts the tests marked slow ahead of the rest, so that
    under xdist none starts last and runs alone."""
    slow = [item.get_closest_marker("slow") is not None for item in request.session.items]
    assert slow == sorted(slow, reverse=True)
