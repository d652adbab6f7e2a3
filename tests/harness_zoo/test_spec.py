"""extension_cpp.testing's own promises: how an OpSpec finds its op, which
cases it makes and how they read, and the errors for a spec that can't work."""

import re

import pytest
import torch

import extension_cpp
from extension_cpp.testing import CHECKS, LAYOUTS, OpSpec, run_all


def test_a_packet_with_one_overload_is_its_default():
    spec = OpSpec(torch.ops.extension_cpp.mymul, reference=torch.mul)
    args = spec.sample("contiguous", torch.float32, "cpu")
    assert spec.overload(args) is torch.ops.extension_cpp.mymul.default
    assert spec.name == "mymul"


def test_a_packet_with_several_overloads_is_refused_with_their_names():
    with pytest.raises(ValueError, match=r"aten\.add has the overloads \[.*'Tensor'.*pass one"):
        OpSpec(torch.ops.aten.add, reference=torch.add)


def test_a_python_function_is_resolved_to_the_op_it_calls():
    spec = OpSpec(extension_cpp.mymuladd, reference=lambda a, b, c: a * b + c, extra_args=(2.0,))
    args = spec.sample("transposed", torch.float32, "cpu")
    assert spec.overload(args) is torch.ops.extension_cpp.mymuladd.default
    assert spec.name == "mymuladd"


def test_a_function_calling_two_ops_is_reported_in_the_opcheck_check():
    def two_ops(a, b):
        return extension_cpp.mymul(extension_cpp.mymuladd(a, b, 1.0), b)

    spec = OpSpec(two_ops, reference=lambda a, b: (a * b + 1.0) * b, checks=("opcheck",))
    failures = run_all(spec)
    message = str(failures["opcheck"][0])
    assert "two_ops should call exactly one custom op, but it called" in message
    assert "extension_cpp.mymuladd.default" in message
    assert "extension_cpp.mymul.default" in message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(checks=("fake", "strdies")), "unknown checks ['strdies']; the checks are"),
        (dict(layouts=("contiguous", "diagonal")), "unknown layouts ['diagonal']"),
    ],
    ids=["check", "layout"],
)
def test_unknown_names_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        OpSpec(torch.ops.extension_cpp.mymul.default, reference=torch.mul, **kwargs)


def test_cases_cover_every_check_and_read_as_ids():
    spec = OpSpec(torch.ops.extension_cpp.mymul.default, reference=torch.mul, huge=True)
    cases = spec.cases()
    assert {c.check for c in cases} == set(CHECKS)
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "ids are unique"
    for expected in (
        "mymul-results-cpu-float16-channels-last",
        "mymul-fake-cpu-float32-transposed",
        "mymul-opcheck-cpu-float32-sliced-requires_grad",
        "mymul-gradcheck-cuda-float64-offset",
        "mymul-autodiff-cpu-float64-reverse",
        "mymul-side_stream-cuda-float32",
        "mymul-bad_input-cuda-device",
        "mymul-internal_assert-cpu-dtype",
        "mymul-huge-cpu-float16",
    ):
        assert expected in ids
    # gradcheck needs memory of its own per element: no expanded or empty inputs.
    grad_layouts = {c.layout for c in cases if c.check == "gradcheck"}
    assert grad_layouts == {name for name, layout in LAYOUTS.items() if layout.perturbable}
    assert not {"expanded", "broadcast-row", "empty"} & grad_layouts


def test_an_out_op_gets_out_checks_and_no_gradients():
    spec = OpSpec(
        torch.ops.extension_cpp.myadd_out.default, reference=torch.add, out=True, exact=True
    )
    checks = {c.check for c in spec.cases()}
    assert not {"gradcheck", "gradgradcheck", "autodiff"} & checks
    assert {"out-overlap", "out-internal-overlap"} <= set(spec.bad_inputs)
    a, _, out = spec.sample("mixed", torch.float32, "cpu")
    assert out.shape == a.shape
    assert out.is_contiguous()


@pytest.mark.parametrize("arity", [1, 3])
def test_default_samples_serve_any_arity(arity):
    spec = OpSpec(torch.ops.extension_cpp.mymul.default, reference=torch.mul, arity=arity)
    args = spec.sample("mixed", torch.float64, "cpu")
    assert len(args) == arity
    assert args[0].is_contiguous()  # the first input in the layout's first form
    for other in args[1:]:
        assert other.shape == args[0].shape
        assert other.t().is_contiguous()  # every later one transposed
