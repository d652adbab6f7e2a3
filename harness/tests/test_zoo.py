"""The harness catches real bugs: each zoo op fails the check meant for its
bug, and the correct zoo ops (mul, add_out, muladd, ...) pass every check,
those whose contract needs a declaration of the OpSpec (harness_zoo/declared.py)
included, each of which fails a check without it.

BUGS is the table bug x check: the check meant to catch each bug, and every
check that fails on it (some bugs show in more than one place; the set is
asserted exactly, so a check that stops failing, or starts to, is noticed).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import textwrap
from xml.etree import ElementTree

import pytest
import torch
from harness_zoo import zoo as zoo_module
from harness_zoo.processes import run_python, run_scripts

from extension_cpp_testing import (
    CHECKS,
    FIXES,
    FORWARD_MODES,
    ConformanceFailure,
    OpSpec,
    cases,
    run_all,
)
from extension_cpp_testing.case import slug
from extension_cpp_testing.checks.bad_input import BAD_VALUE_FIX
from extension_cpp_testing.checks.cuda import STREAM_LEFT_CURRENT_FIX
from extension_cpp_testing.checks.gradients import (
    SILENT_MODE_FIX,
    SILENT_MODE_GONE_FIX,
    UNCLAIMED_MODE_FIX,
)
from extension_cpp_testing.checks.opcheck import UNMARKED_WRITE_FIX
from extension_cpp_testing.checks.results import INPUT_MODIFIED_FIX
from extension_cpp_testing.registrations import (
    CATCH_ALL_FIX,
    NO_AUTOGRAD_FIX,
    NO_BATCHING_RULE_FIX,
    NO_FAKE_KERNEL_FIX,
    _from_python,
    missing,
    registrations,
)

HUGE = os.environ.get("EXTENSION_CPP_HUGE") == "1"

# [bugs]
# op -> (its bug, the check meant to catch it, every check that fails on the CPU;
# "name?" where that check catches it on some torch releases only)
BUGS = {
    "fake_strides_mul": (
        "fake strides disagree with the real kernel for transposed input",
        "fake",
        # Compiled code returns the kernel's tensor where the graph expected the
        # fake's strides. opcheck's test_faketensor compares strides on torch
        # 2.14.1 but not on 2.11 (measured on our GPU machine): "opcheck?".
        {"fake", "opcheck?", "compile"},
    ),
    "no_autograd_mul": (
        "no autograd registration",
        "gradcheck",
        # autodiff (reverse: no gradient at all). gradgradcheck, and opcheck's
        # AOT test, which meets PyTorch's "autograd kernel was not registered"
        # warning, fail on torch 2.14.1 and pass on 2.11 (measured on our GPU
        # machine): "?".
        {"gradcheck", "gradgradcheck?", "autodiff", "opcheck?"},
    ),
    "wrong_sign_mul": ("a backward with a wrong sign", "gradcheck", {"gradcheck", "autodiff"}),
    "internal_assert_mul": (
        "TORCH_INTERNAL_ASSERT on a wrong dtype",
        "internal_assert",
        # The fake kernel can't say the same words as an internal assert.
        {"internal_assert", "bad_input"},
    ),
    "unchecked_fake_mul": (
        "a fake kernel that forgets the shape check",
        "bad_input",
        {"bad_input"},
    ),
    # Both pass on random inputs: the results check's "specials" cases (exact
    # ops: inputs holding -0.0, 0.0, infinities and NaN) catch them.
    "accumulated_mul": (
        "an accumulator from +0.0 that turns -0.0 into 0.0",
        "results",
        {"results"},
    ),
    "zero_skip_mul": ("a zero shortcut: 0 * inf and 0 * NaN give 0", "results", {"results"}),
    # Within every tolerance: only the exact comparison the op asks for sees it.
    "ulp_off_mul": ("every product one ulp too large", "results", {"results"}),
    "overlap_add_out": (
        "an out= op that accepts overlapping memory",
        "bad_input",
        # internal_assert has no error to judge: bad_input's finding alone.
        {"bad_input"},
    ),
    "unmarked_add_out": (
        "a mutable op whose schema lacks (a!)",
        "opcheck",
        # Functionalization does not know out is written: compiled code returns
        # out untouched.
        {"opcheck", "compile", "dynamic"},
    ),
    "float32_fake_mul": (
        "a fake kernel that returns float32 whatever the dtype",
        "fake",
        # opcheck's test_faketensor sees it in the dtypes past float32 too.
        {"fake", "opcheck"},
    ),
    "contiguous_out_add_out": (
        "an out= kernel that writes out as if it were contiguous",
        "results",
        {"results"},
    ),
    "no_vmap_mul": ("no batching rule: vmap falls back to a loop", "vmap", {"vmap"}),
    "mutating_mul": (
        "a kernel that writes into its input",
        "results",
        # opcheck's test_schema sees the write; autograd's saved input changes
        # under the gradient checks.
        {"results", "opcheck", "gradcheck", "gradgradcheck", "autodiff"},
    ),
    "contiguous_mul": (
        "a contiguous output whatever the inputs' layout (its fake kernel agrees)",
        "strides",
        {"strides"},
    ),
    "int_size_fake_mul": (
        "a fake kernel that reads a size as a Python int",
        "export",
        # torch.compile(dynamic=True) recompiles for each size.
        {"export", "dynamic"},
    ),
    "returning_fake_add_out": (
        "an out= op's fake kernel that returns a new tensor",
        "fake",
        # Everything that traces the op meets the same error.
        {"fake", "opcheck", "compile", "dynamic", "export"},
    ),
    "double_rounded_muladd": (
        "a*b + c rounded twice in float16 and bfloat16, where it claims once",
        "results",
        {"results"},
    ),
    "off_by_one_axpy_": (
        "an in-place update that leaves the last element of its argument as it was",
        "results",
        {"results"},
    ),
    "two_codes_off_quantize": (
        "a quantizer two codes low at the top of its range",
        "results",
        {"results"},
    ),
    "register_autograd_mul": (
        "torch.library.register_autograd: forward mode gives None or zeros, no error",
        "autodiff",
        {"autodiff"},
    ),
    "jvp_off_mul": ("a forward-mode derivative off by a relative 1e-4", "autodiff", {"autodiff"}),
    # The contracts that need a declaration (harness_zoo/declared.py): it
    # must not hide a bug.
    "wrong_sign_float32_mul": (
        "a backward with a wrong sign, its derivatives in float32 (grad_dtype)",
        "gradcheck",
        {"gradcheck", "autodiff"},
    ),
    "last_row_out_first_add": (
        "an out= op, out its first argument (out=('out',)), that leaves out's last row",
        "results",
        {"results"},
    ),
    "wrong_weight_grad_code_sum": (
        "the weights' gradient twice too large (grad_args per layout)",
        "gradcheck",
        {"gradcheck", "autodiff"},
    ),
    "unmarked_scale_": (
        "a write its schema does not mark (a!), declared in OpSpec(mutates=)",
        "opcheck",
        # As unmarked_add_out's: compiled code leaves x as it was.
        {"opcheck", "compile", "dynamic"},
    ),
    "mul_declared_silent": (
        "forward modes declared silent (silent_modes=) that raise: a stale declaration",
        "autodiff",
        {"autodiff"},
    ),
    "clamping_gather_rows": (
        "an index past the last row read as the last row, no error (bad_values)",
        "bad_input",
        {"bad_input"},
    ),
    "catch_all_mul": (
        "a kernel registered without a dispatch key: a legacy catch-all",
        "fake",
        # Whatever runs the op on tensors without data (fake, batched) or
        # needs its autograd; its checks in the kernel still answer bad input.
        {"fake", "opcheck", "compile", "dynamic", "export"}
        | {"gradcheck", "gradgradcheck", "autodiff", "vmap"},
    ),
}
# The fix shown where the finding calls for a more specific one than the check's.
SPECIFIC_FIXES = {
    "no_vmap_mul": NO_BATCHING_RULE_FIX,
    "no_autograd_mul": NO_AUTOGRAD_FIX,
    "mutating_mul": INPUT_MODIFIED_FIX,
    "stream_leaking_mul": STREAM_LEFT_CURRENT_FIX,
    "register_autograd_mul": UNCLAIMED_MODE_FIX,
    "unmarked_scale_": UNMARKED_WRITE_FIX,
    "unmarked_add_out": UNMARKED_WRITE_FIX,
    "mul_declared_silent": SILENT_MODE_GONE_FIX,
    "catch_all_mul": CATCH_ALL_FIX,
    "clamping_gather_rows": BAD_VALUE_FIX,
}
# Past 2^31 elements (EXTENSION_CPP_HUGE=1: a 4 GiB float16 output).
HUGE_BUGS = {"int_count_mul": ("an int element count that overflows", "huge", {"huge"})}
# CUDA only.
CUDA_BUGS = {
    "default_stream_mul": (
        "a kernel launched on the legacy default stream",
        "side_stream",
        # Capturing a CUDA graph fails too: the launch leaves the captured stream.
        {"side_stream", "cuda_graph"},
    ),
    "stream_leaking_mul": (
        "an op that makes another stream current and leaves it so",
        "results",
        # Each check that calls it outside a capture sees the stream it left.
        {"results", "side_stream", "cuda_graph?"},
    ),
}
# [bugs]


@pytest.fixture(scope="session")
def zoo():
    """The zoo's OpSpecs, built once per session (and cached in build/harness_zoo)."""
    return zoo_module.load()


def _assert_caught(failures, op_name, bug, meant, expected):
    """failures (check -> ConformanceFailures) show the bug where BUGS says."""
    summary = {check: str(fs[0]).splitlines()[0] for check, fs in failures.items()}
    assert meant in failures, f"{op_name} ({bug}): the {meant} check passed; failures: {summary}"
    # "name?": a check that catches the bug on some torch releases only.
    required = {c for c in expected if not c.endswith("?")}
    optional = {c[:-1] for c in expected if c.endswith("?")}
    assert required <= set(failures) <= required | optional, summary
    first = failures[meant][0]
    # The failure names the check, the case (a test id) and the fix.
    assert first.check == meant
    assert first.case.startswith(f"{op_name}-{meant}-")
    assert first.fix == SPECIFIC_FIXES.get(op_name, FIXES[meant])
    assert str(first).startswith(f"[{meant}] {first.case}: ")
    assert f"fix: {first.fix}" in str(first)


@pytest.mark.parametrize("op_name", list(BUGS))
def test_harness_catches_the_bug(zoo, op_name):
    _assert_caught(run_all(zoo[op_name]), op_name, *BUGS[op_name])


# The correct ops of declared.py, and register_autograd_mul with its silent
# forward modes declared.
DECLARED = [
    "keep_strides_double",
    "sign_and_abs",
    "float32_mul",
    "masked_mul",
    "twice",
    "laplacian",
    "out_first_add",
    "weighted_code_sum",
    "check_finite",
    "gather_rows",
    "accumulate_mul",
    "double_and_rms",
    "register_autograd_mul_silent",
]


@pytest.mark.parametrize(
    "op_name", ["mul", "add_out", "muladd", "int_count_mul", "axpy_", "quantize", *DECLARED]
)
def test_correct_ops_pass_every_check(zoo, op_name):
    spec = zoo[op_name]
    # int_count_mul is correct below 2^31 elements: its bug shows only in the
    # huge check (test_harness_catches_an_int_element_count).
    chosen = spec.checks or CHECKS
    checks = [c for c in chosen if not (op_name == "int_count_mul" and c == "huge")]
    failures = run_all(spec, checks)
    assert not failures, {check: str(fs[0]) for check, fs in failures.items()}


@pytest.mark.parametrize("op_name", ["accumulated_mul", "zero_skip_mul"])
def test_only_the_specials_cases_hold_special_values(zoo, op_name):
    """Both bugs pass on random inputs: each results case that fails is one of
    the -specials cases, which all fail but the 0-dim ones (one element holds
    one special value)."""
    spec = zoo[op_name]
    specials = {c.id for c in cases(spec) if c.check == "results" and c.variant == "specials"}
    failed = {f.case for f in run_all(spec, checks={"results"})["results"]}
    assert {c for c in specials if "-0-dim-" not in c} <= failed <= specials


def test_without_a_fake_kernel_every_fix_points_at_the_missing_kernel(zoo):
    failures = run_all(zoo["no_fake_mul"])
    assert set(failures) == {"fake", "opcheck", "compile", "dynamic", "export", "bad_input"}
    for check, found in failures.items():
        assert found[0].fix == NO_FAKE_KERNEL_FIX, check
    assert "dynamic" in failures  # the check whose fix spoke of symbolic sizes


def test_a_catch_all_op_gets_one_fix_in_every_check_it_fails(zoo):
    """An op registered the legacy way (m.def(schema, fn)) has no fake kernel
    to repair: every check it fails says so, with the fix for its
    registration style, where the dispatcher alone would say it decomposes."""
    regs = registrations(torch.ops.harness_zoo.catch_all_mul.default)
    assert regs.catch_all
    assert "CompositeImplicitAutograd" in regs.kernels
    failures = run_all(zoo["catch_all_mul"])
    fixes = {check: {f.fix for f in found} for check, found in failures.items()}
    assert fixes == {check: {CATCH_ALL_FIX} for check in BUGS["catch_all_mul"][2]}
    # One finding, which the report shows as one row and its fix once.
    (key,) = failures.findings()
    assert key == ("catch_all_mul", CATCH_ALL_FIX)
    total = sum(len(found) for found in failures.values())
    report = failures.report()
    assert f"1 findings (an op and a cause each) in {total} failed cases, 1 ops" in report
    row = re.search(rf"\ncatch_all_mul +{total}  catch-all kernel {total} \[1\] \((.*)\)\n", report)
    # (one cause: its checks stay on one line however many they are)
    assert row, report
    assert "fake " in row.group(1), report
    assert "vmap " in row.group(1), report
    assert report.count("[1] fix") == 1


def test_skip_drops_one_of_opchecks_tests(zoo):
    """skip={"opcheck@<test>": why} leaves that test out of opcheck's cases:
    no_fake_mul fails test_faketensor, then the AOT tests, which need a fake
    kernel too; with all three left out, opcheck passes."""
    why = "no fake kernel by design"
    spec = dataclasses.replace(
        zoo["no_fake_mul"], checks=("opcheck",), skip={"opcheck@test_faketensor": why}
    )
    failures = run_all(spec)["opcheck"]
    assert all("test_aot_dispatch_" in f.what for f in failures), failures[0].what
    aot = {f"opcheck@test_aot_dispatch_{kind}": why for kind in ("static", "dynamic")}
    assert not run_all(dataclasses.replace(spec, skip={**spec.skip, **aot}))


def test_the_dispatcher_says_what_each_op_lacks(zoo):
    """registrations() reads the op's own kernels: a fake, autograd or vmap
    registration from Python or C++, a Python composite op (which
    decomposes: not a catch-all), and what an out= op needs no autograd for."""
    ops = torch.ops.harness_zoo

    def lacking(op):
        return [m.cause for m in missing(registrations(op.default))]

    assert lacking(ops.mul) == []
    assert registrations(ops.mul.default).kernels["CPU"] == "C++"
    assert lacking(ops.no_fake_mul) == ["no fake kernel"]
    assert lacking(ops.no_autograd_mul) == ["no autograd kernel"]
    assert lacking(ops.no_vmap_mul) == ["no batching rule"]
    assert lacking(ops.add_out) == ["no batching rule"]
    assert lacking(ops.catch_all_mul) == ["catch-all kernel"]
    lib = torch.library.Library("harness_zoo_composite", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CompositeImplicitAutograd")
    try:
        composite = registrations(torch.ops.harness_zoo_composite.twice.default)
        assert not composite.catch_all
        assert composite.kernels == {"CompositeImplicitAutograd": "Python"}
        assert missing(composite) == []
        # Python code from no file, and the place torch 2.8 prints for every
        # Python registration, are Python too.
        exec("lib.impl('twice', lambda x: x * 2, 'CPU')", {"lib": lib})
        twice = registrations(torch.ops.harness_zoo_composite.twice.default)
        assert twice.kernels["CPU"] == "Python"
        assert _from_python("registered at /dev/null:3")
        assert not _from_python("registered at /src/csrc/ops.cpp:12")
    finally:
        lib._destroy()


def test_an_out_ops_fake_check_compares_the_fake_kernels_effect(zoo):
    """The fake check of an out= op can fail (it once compared out with itself):
    here on a fake kernel that returns a tensor where the kernel returns None."""
    failures = run_all(zoo["returning_fake_add_out"], checks={"fake"})
    assert failures["fake"][0].case == "returning_fake_add_out-fake-cpu-float32-contiguous"


def test_an_accepted_bad_input_is_one_finding_not_two(zoo):
    """An op that takes bad input without an error fails bad_input; the
    internal_assert check, which has no error to judge, does not count it again."""
    failures = run_all(zoo["overlap_add_out"], checks={"bad_input", "internal_assert"})
    assert set(failures) == {"bad_input"}
    assert "the op accepted it without an error" in failures["bad_input"][0].what


def test_forward_mode_silence_fails_each_forward_mode(zoo):
    """register_autograd_mul claims reverse mode only. Its forward modes
    return None or zeros, so each fails; the torch.func reverse modes raise,
    as a mode it does not claim must, and pass."""
    failures = run_all(zoo["register_autograd_mul"], checks={"autodiff"})["autodiff"]
    expected = {f"register_autograd_mul-autodiff-cpu-float64-{m}-raises" for m in FORWARD_MODES}
    assert {f.case for f in failures} == expected
    assert all(f.fix == UNCLAIMED_MODE_FIX for f in failures)
    prefix = "register_autograd_mul-autodiff-cpu-float64-"
    whats = {f.case[len(prefix) : -len("-raises")]: f.what for f in failures}
    assert "returned None where a derivative belongs" in whats["forward_ad"]
    assert "returned zeros where the reference's derivative is not zero" in whats["jvp"]


def test_a_forward_derivative_off_by_1e_4_fails_the_modes_that_reach_it(zoo):
    """jvp_off_mul's jvp is 1e-4 too large: the claimed forward_ad modes fail
    (the tolerance is far below 1e-4), reverse mode and gradcheck pass."""
    failures = run_all(zoo["jvp_off_mul"], checks={"autodiff", "gradcheck"})
    assert set(failures) == {"autodiff"}
    assert {f.case for f in failures["autodiff"]} == {
        "jvp_off_mul-autodiff-cpu-float64-forward_ad",
        "jvp_off_mul-autodiff-cpu-float64-forward_ad-last-only",
    }


def test_a_mutated_argument_is_compared_not_called_modified(zoo):
    """off_by_one_axpy_ writes y, as its schema says: the failure compares y
    with the reference's, and never says the op modified an input."""
    failures = run_all(zoo["off_by_one_axpy_"])["results"]
    assert all(f.what.startswith("result differs from the reference: y (mutated") for f in failures)
    # Every layout but 0-dim, whose one element is the last (and skipped) too.
    assert "off_by_one_axpy_-results-cpu-float32-0-dim" in {f.case for f in failures}


# Each declaration of declared.py's ops (and register_autograd_mul_silent's)
# set back to its default: (the change, the check that then fails, words of
# its first failure).
WITHOUT_DECLARATION = {
    "float32_mul": (
        dict(grad_dtype=None),
        "gradcheck",
        "expected a to have dtype torch.float32, got torch.float64",
    ),
    # The mask differentiated: its backward gives it no gradient.
    "masked_mul": (dict(grad_args=None), "gradcheck", "with respect to input 2"),
    # The fix names the declaration.
    "twice": (dict(accepted_dtypes=None), "bad_input", "it takes in OpSpec(accepted_dtypes=)"),
    # The fix names the range to declare.
    "laplacian": (dict(dynamic_dims=None), "export", "range (rows = Dim('rows', min=3))"),
    # b taken for out (out=True means the last argument), and out for an
    # argument it mutates.
    "out_first_add": (dict(out=True, mutates=None), "results", "result differs"),
    "weighted_code_sum": (dict(grad_args=None), "gradcheck", "no argument to differentiate"),
    "unmarked_scale_": (dict(mutates=None), "results", "the op modified its input x"),
    "register_autograd_mul_silent": (dict(silent_modes=()), "autodiff", "so it must raise"),
}


@pytest.mark.parametrize("op_name", sorted(WITHOUT_DECLARATION))
def test_each_declaration_is_needed(zoo, op_name):
    """Without its declaration the op fails a check, so that none can stop
    mattering unnoticed (with it, test_correct_ops_pass_every_check)."""
    changes, check, words = WITHOUT_DECLARATION[op_name]
    failures = run_all(dataclasses.replace(zoo[op_name], checks=(check,), **changes))
    assert set(failures) == {check}, failures
    assert words in str(failures[check][0])


def test_a_declared_silent_mode_is_accepted_not_failed(zoo):
    """register_autograd_mul's forward modes give None or zeros, which its
    OpSpec declares (silent_modes=FORWARD_MODES): run_all returns those
    cases apart, as accepted, with the fix that would make them right."""
    results = run_all(zoo["register_autograd_mul_silent"], checks={"autodiff"})
    assert results == {}
    prefix = "register_autograd_mul_silent-autodiff-cpu-float64-"
    assert {a.case for a in results.accepted} == {f"{prefix}{m}-silent" for m in FORWARD_MODES}
    assert all(a.fix == SILENT_MODE_FIX for a in results.accepted)


def test_a_silent_mode_that_raises_fails_its_declaration(zoo):
    """mul's forward modes raise, as a mode it does not claim must: declared
    silent, each of them fails, saying to drop the declaration."""
    failures = run_all(zoo["mul_declared_silent"], checks={"autodiff"})
    prefix = "mul_declared_silent-autodiff-cpu-float64-"
    assert {f.case for f in failures["autodiff"]} == {f"{prefix}{m}-silent" for m in FORWARD_MODES}
    assert not failures.accepted


def test_grad_args_per_layout_leave_the_unweighted_layout_without_gradients(zoo):
    """wrong_weight_grad_code_sum differentiates its weights: the weighted
    layout's gradcheck catches its bug; the unweighted layout has nothing to
    differentiate, so no gradient case and no requires_grad one."""
    made = cases(zoo["wrong_weight_grad_code_sum"])
    assert {c.id for c in made if c.check in ("gradcheck", "gradgradcheck")} == {
        "wrong_weight_grad_code_sum-gradcheck-cpu-float32-weighted"
    }
    unweighted = {c.variant for c in made if c.check == "opcheck" and c.layout == "unweighted"}
    assert unweighted == {"no_grad"}


@pytest.mark.parametrize(
    ("op_name", "written", "schema"),
    [
        ("unmarked_scale_", "x", "(Tensor x, float alpha) -> ()"),
        ("unmarked_add_out", "out", "(Tensor a, Tensor b, Tensor out) -> ()"),
    ],
)
def test_a_write_the_schema_does_not_mark_is_named(zoo, op_name, written, schema):
    """unmarked_scale_ declares in mutates= the x it writes, unmarked_add_out
    in out= its out: the opcheck check names the schema that misses the (a!)."""
    failures = run_all(zoo[op_name], checks={"opcheck"})["opcheck"]
    assert failures[0].what == (
        f"the op writes {written} (OpSpec(out=) or mutates=), but its schema "
        f"harness_zoo::{op_name}{schema} does not mark it Tensor(a!)"
    )


@pytest.mark.slow
def test_an_opcheck_failure_names_its_test_and_no_trace_to_scroll_to(zoo):
    """opcheck's own message ends "(scroll up for stack trace)", and a report
    shows no trace: the failure gives opcheck's failed test and its error."""
    failures = run_all(zoo["float32_fake_mul"], checks={"opcheck"})["opcheck"]
    assert failures
    for failure in failures:
        assert re.match(r"opcheck's test_\w+: \w+", failure.what), failure.what
        assert "scroll up" not in failure.what, failure.what


def test_a_schema_finding_keeps_its_fix_beside_a_missing_fake_kernel():
    """An out= op whose schema lacks the (a!) and which has no fake kernel
    has two causes: opcheck names the schema, the tracing checks the kernel."""
    lib = torch.library.Library("harness_zoo_unmarked", "DEF")
    lib.define("copy_out(Tensor x, Tensor out) -> ()")
    lib.impl("copy_out", lambda x, out: out.copy_(x) and None, "CPU")
    try:
        spec = OpSpec(
            torch.ops.harness_zoo_unmarked.copy_out.default,
            reference=torch.clone,
            arity=1,
            out=True,
            devices=("cpu",),
            layouts=("contiguous",),
            dtypes=(torch.float32,),
        )
        failures = run_all(spec, checks={"opcheck", "fake"})
        assert {f.fix for f in failures["opcheck"]} == {UNMARKED_WRITE_FIX}
        assert {f.fix for f in failures["fake"]} == {NO_FAKE_KERNEL_FIX}
    finally:
        lib._destroy()


def test_an_out_named_first_is_what_is_compared(zoo):
    """last_row_out_first_add's out is its first argument (out=("out",)):
    every results case compares it, and finds its last row (5 of 37 x 5
    elements) unwritten."""
    spec = zoo["last_row_out_first_add"]
    failures = run_all(spec, checks={"results"})["results"]
    assert {f.case for f in failures} == {c.id for c in cases(spec) if c.check == "results"}
    first = next(f for f in failures if f.case.endswith("-contiguous"))
    assert "Mismatched elements: 5 / 185" in first.what


@pytest.mark.slow
def test_a_failed_compile_reads_without_log_records(tmp_path):
    """pytest attaches its log capture to torch's structured trace log, which
    logs a blank DEBUG record per compile step; the harness keeps them out of
    a failure's report (here in pytest's process, where they would show)."""
    module = tmp_path / "test_compile_failure.py"
    module.write_text(
        "import dataclasses\n"
        "from extension_cpp_testing import conformance_tests\n"
        "from harness_zoo import zoo\n"
        "spec = zoo.load()['fake_strides_mul']\n"
        "test_compile = conformance_tests(\n"
        "    dataclasses.replace(spec, checks=('compile',), layouts=('transposed',))\n"
        ")\n"
    )
    proc = run_python(
        ["-m", "pytest", "-p", "no:cacheprovider", "-q", str(module)],
        cwd=tmp_path,
        env={"EXTENSION_CPP_TESTING_ISOLATE": "0"},
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[compile] fake_strides_mul-compile-cpu-float32-transposed" in proc.stdout
    assert "DEBUG" not in proc.stdout


@pytest.mark.huge
@pytest.mark.skipif(not HUGE, reason="set EXTENSION_CPP_HUGE=1: a 4 GiB output")
def test_harness_catches_an_int_element_count(zoo):
    failures = run_all(zoo["int_count_mul"], checks={"huge"})
    _assert_caught(failures, "int_count_mul", *HUGE_BUGS["int_count_mul"])
    assert run_all(zoo["mul_huge"]) == {}  # the same loop with int64_t passes


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("op_name", sorted(CUDA_BUGS))
def test_harness_catches_a_cuda_stream_bug(op_name):
    """In a process of its own: an op that breaks a CUDA graph capture or
    leaves a stream current must not leave the GPU in a state that later
    tests would inherit."""
    child = textwrap.dedent(
        f"""
        import json
        from extension_cpp_testing import run_all
        from harness_zoo import zoo

        failures = run_all(zoo.load()[{op_name!r}])
        found = {{c: [[f.case, f.what, f.fix] for f in fs] for c, fs in failures.items()}}
        print(json.dumps(found))
        """
    )
    proc = run_python(["-c", child])
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    failures = {c: [ConformanceFailure(c, *f) for f in fs] for c, fs in found.items()}
    _assert_caught(failures, op_name, *CUDA_BUGS[op_name])


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_side_stream_check_outlasts_a_slow_host():
    """The side stream's sleep must still run when a slow host (a busy
    machine, a Python wrapper) launches the kernel, or a launch on the
    legacy default stream comes after the fill and passes: the op here waits
    0.1 s on the host first, longer than the first try's sleep."""
    child = textwrap.dedent(
        """
        import dataclasses, json, time
        from extension_cpp_testing import run_all
        from harness_zoo import zoo

        spec = zoo.load()["default_stream_mul"]
        op = spec.op

        def slow(*args, **kwargs):
            time.sleep(0.1)
            return op(*args, **kwargs)

        failures = run_all(dataclasses.replace(spec, op=slow), checks={"side_stream"})
        print(json.dumps(sorted(failures)))
        """
    )
    proc = run_python(["-c", child])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == ["side_stream"]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_capture_check_restores_the_sync_debug_mode_under_warnings_as_errors():
    """The cuda_graph check looks for host syncs with torch's sync debug mode,
    whose first use in a process warns that it is a prototype. Under
    warnings-as-errors (pytest here, and this suite) that warning must not
    leave the mode on: every later case would then fail on its own syncs.
    A fresh process, so that the warning is its first."""
    child = textwrap.dedent(
        """
        import warnings
        warnings.simplefilter("error")
        import torch
        from extension_cpp_testing import OpSpec, run_all

        spec = OpSpec(torch.ops.aten.mul.Tensor, reference=torch.mul, devices=("cuda",),
                      layouts=("contiguous",), exact=True)
        failures = run_all(spec, checks={"cuda_graph", "results"})
        print(sorted(failures), torch.cuda.get_sync_debug_mode())
        """
    )
    proc = run_python(["-c", child])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[] 0"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.slow
def test_a_failed_capture_leaves_nothing_behind():
    """In a process of its own, two ops that break a CUDA graph capture (a
    launch on the legacy default stream, a host sync not declared), then
    correct ops on the GPU, whose checks draw random numbers, capture and
    replay: they must all pass, as in a fresh process. The sync is also
    declared (capturable=False), and then the capture must fail clearly."""
    child = textwrap.dedent(
        """
        import dataclasses, json
        import torch
        from extension_cpp_testing import OpSpec, run_all
        from harness_zoo import zoo

        specs = zoo.load()
        cuda = dict(devices=("cuda",), layouts=("contiguous", "transposed"), exact=True)
        found = {
            "default_stream": run_all(specs["default_stream_mul"], checks={"cuda_graph"}),
            "synced": run_all(specs["synced_mul"], checks={"cuda_graph"}),
            "synced_declared": run_all(
                dataclasses.replace(specs["synced_mul"], capturable=False), checks={"cuda_graph"}
            ),
            "device_synced": run_all(specs["device_synced_mul"], checks={"cuda_graph"}),
            "after": run_all(
                OpSpec(torch.ops.aten.mul.Tensor, reference=torch.mul, **cuda),
                checks={"results", "cuda_graph", "side_stream", "gradcheck", "compile"},
            ),
        }
        found = {k: {c: str(fs[0]) for c, fs in v.items()} for k, v in found.items()}
        found["stream"] = str(torch.cuda.current_stream())
        found["default"] = str(torch.cuda.default_stream())
        print(json.dumps(found))
        """
    )
    proc = run_python(["-c", child])
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    # A launch on the legacy stream during capture either breaks the capture
    # or runs at once, outside the graph, which the replay then lacks.
    default_stream = found["default_stream"]["cuda_graph"]
    assert (
        "capture failed" in default_stream or "replayed graph's result is wrong" in default_stream
    )
    assert "synchronizes with the host" in found["synced"]["cuda_graph"]
    assert found["synced_declared"] == {}
    assert "capture failed" in found["device_synced"]["cuda_graph"]
    assert found["after"] == {}
    # Not the capture's stream: an op that launches on the legacy default
    # stream would race with its own work there.
    assert found["stream"] == found["default"]


def _wrapped(text: str) -> str:
    """A pattern for text as the report wraps it: any run of spaces in it may
    be a line break and an indent."""
    return r"\s+".join(map(re.escape, text.split()))


@pytest.mark.slow
def test_generated_pytest_tests_name_check_case_and_fix(tmp_path):
    """End to end: conformance_tests() in a test module, run by pytest with the plugin."""
    module = tmp_path / "test_wrong_sign.py"
    module.write_text(
        textwrap.dedent(
            """
            import dataclasses
            from extension_cpp_testing import conformance_tests
            from harness_zoo import zoo

            specs = zoo.load()
            test_mul = conformance_tests(
                dataclasses.replace(specs["mul"], checks=("gradcheck",), layouts=("contiguous",))
            )
            test_wrong_sign = conformance_tests(
                dataclasses.replace(
                    specs["wrong_sign_mul"], checks=("gradcheck",), layouts=("contiguous",)
                )
            )
            test_catch_all = conformance_tests(
                dataclasses.replace(
                    specs["catch_all_mul"], checks=("fake", "vmap"), layouts=("contiguous",)
                )
            )
            """
        )
    )
    junit = tmp_path / "junit.xml"
    proc = run_python(
        ["-m", "pytest", "-p", "extension_cpp_testing.pytest_plugin", f"--junitxml={junit}"]
        + ["-p", "no:cacheprovider", "-rf", "--rootdir", str(tmp_path), str(module)],
        cwd=tmp_path,
    )
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-3000:]
    assert "4 failed, 1 passed" in out, out[-3000:]
    case = "wrong_sign_mul-gradcheck-cpu-float64-contiguous"
    assert f"test_wrong_sign[{case}]" in out
    assert f"[gradcheck] {case}: GradcheckError: Jacobian mismatch" in out
    # What a person reads: the case, what differed and the fix, none of the
    # harness's frames (their file names) or the OpSpec's repr.
    failure = out[out.index("= FAILURES =") : out.index("conformance findings by op and cause")]
    assert "extension_cpp_testing/" not in failure, failure
    assert "OpSpec(" not in failure, failure
    blocks = re.split(r"\n_{3,} test_", failure)
    wrong_sign = next(b for b in blocks if b.startswith(f"wrong_sign[{case}]"))
    assert len(wrong_sign.splitlines()) < 15, wrong_sign
    # The summary: a row per op and cause, then the fix with a case and what it showed.
    # One row per op and cause, whichever checks it failed in.
    table = out[out.index("conformance findings by op and cause") :]
    assert "2 findings (an op and a cause each) in 4 failed cases, 2 ops" in table, table
    found = re.search(r"\nwrong_sign_mul +1  gradcheck 1 \[(\d)\]\n", table)
    assert found, table
    n = found.group(1)
    fix = f"[{n}] fix (1 case): {FIXES['gradcheck']}"
    shown = rf"{_wrapped(fix)}\n    e\.g\. {re.escape(case)}: GradcheckError: Jacobian mismatch"
    assert re.search(shown, table), table
    row = r"\ncatch_all_mul +3  catch-all kernel 3 \[(\d)\] \(fake 2, vmap 1\)\n"
    found = re.search(row, table)
    assert found, table
    assert re.search(_wrapped(f"[{found.group(1)}] fix (3 cases): {CATCH_ALL_FIX}"), table)
    # The JUnit XML carries the check, case and fix as the testcase's properties.
    properties = ElementTree.parse(junit).findall(".//testcase/properties/property")
    assert [p.get("name") for p in properties] == ["conformance_failure"] * 4
    assert any(FIXES["gradcheck"] in p.get("value") for p in properties)


@pytest.mark.slow
def test_the_summary_is_printed_once_under_xdist(tmp_path):
    """The plugin loads itself (an entry point), so the pytest-xdist
    controller prints the findings even where only a test module names the
    plugin, which the worker then loads once."""
    module = tmp_path / "test_under_xdist.py"
    module.write_text(
        'pytest_plugins = ["extension_cpp_testing.pytest_plugin"]\n'
        "import dataclasses\n"
        "import torch\n"
        "from extension_cpp_testing import conformance_tests\n"
        "from harness_zoo import zoo\n\n"
        'spec = zoo.load()["wrong_sign_mul"]\n'
        "test_wrong_sign = conformance_tests(dataclasses.replace(\n"
        '    spec, checks=("gradcheck",), layouts=("contiguous",), dtypes=(torch.float64,)))\n'
    )
    proc = run_python(
        ["-m", "pytest", "-n", "1", "-p", "no:cacheprovider", str(module)],
        cwd=tmp_path,
    )
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-3000:]
    assert "1 failed" in out, out[-3000:]
    assert out.count("conformance findings by op and cause") == 1, out[-3000:]
    assert re.search(r"\nwrong_sign_mul +1  gradcheck 1 \[1\]\n", out), out[-3000:]


# Buggy zoo ops: the checks that show each bug, the reproducers the findings
# write (their causes), and a correct twin that each reproducer passes on.
ZOO_OP = "torch.ops.harness_zoo.{}.default"
REPRODUCED = {
    # reverse mode's script prints its helpers (scalar) too
    "wrong_sign_mul": (("gradcheck", "autodiff"), {"gradcheck", "autodiff"}, ZOO_OP.format("mul")),
    "catch_all_mul": (("fake",), {"catch-all-kernel"}, ZOO_OP.format("mul")),
    "fake_strides_mul": (("fake",), {"fake"}, ZOO_OP.format("mul")),
    "no_vmap_mul": (("vmap",), {"no-batching-rule"}, ZOO_OP.format("mul")),
    "ulp_off_mul": (("results",), {"results"}, ZOO_OP.format("mul")),
    # its argument y, written in place, compared with the reference's
    "off_by_one_axpy_": (("results",), {"results"}, ZOO_OP.format("axpy_")),
    "clamping_gather_rows": (("bad_input",), {"bad-input"}, ZOO_OP.format("gather_rows")),
    "int_size_fake_mul": (("export", "dynamic"), {"export", "dynamic"}, ZOO_OP.format("mul")),
    # eager raises, the fake kernel does not
    "unchecked_fake_mul": (("bad_input",), {"bad-input"}, ZOO_OP.format("mul")),
    # a mode it does not claim returns zeros; a claimed one is off by 1e-4
    "register_autograd_mul": (("autodiff",), {"autodiff"}, ZOO_OP.format("mul")),
    "jvp_off_mul": (("autodiff",), {"autodiff"}, ZOO_OP.format("jvp_mul")),
}
CUDA_REPRODUCED = {
    "default_stream_mul": (
        ("cuda_graph", "side_stream"),
        {"cuda-graph", "side-stream"},
        "torch.ops.aten.mul.Tensor",
    ),
    "device_synced_mul": (("cuda_graph",), {"cuda-graph"}, "torch.ops.aten.mul.Tensor"),
    "synced_mul": (("cuda_graph",), {"cuda-graph"}, "torch.ops.aten.mul.Tensor"),
    # the stream it leaves current, found by the results check
    "stream_leaking_mul": (("results",), {"results"}, "torch.ops.aten.mul.Tensor"),
}


def _reproducers_show_each_bug(tmp_path, reproduced: dict) -> None:
    """Runs the ops' checks under pytest with --conformance-reproducers, then
    each script it wrote: it must fail on the buggy op and pass with the op's
    correct twin in its place."""
    module = tmp_path / "test_reproduced.py"
    module.write_text(
        "import dataclasses\n"
        "from extension_cpp_testing import conformance_tests\n"
        "from harness_zoo import zoo\n\n"
        "specs = zoo.load()\n"
        + "".join(
            f"test_{name} = conformance_tests(dataclasses.replace(specs[{name!r}], "
            f"checks={checks!r}, imports=('harness_zoo.registered',)))\n"
            for name, (checks, _, _) in reproduced.items()
        )
    )
    folder = tmp_path / "reproducers"
    proc = run_python(
        ["-m", "pytest", "-p", "extension_cpp_testing.pytest_plugin", "-p", "no:cacheprovider"]
        + ["-p", "no:randomly", f"--conformance-reproducers={folder}", str(module)],
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    count = sum(len(causes) for _, causes, _ in reproduced.values())
    assert f"reproducers: {count} in {folder}" in proc.stdout, proc.stdout[-3000:]
    runs = {}
    for name, (_, causes, twin) in reproduced.items():
        prefix = slug(name) + "--"
        # <op>--<cause>, and the fix's checksum where the cause is a check's
        scripts = {
            re.sub(r"-[0-9a-f]{6}$", "", p.stem[len(prefix) :]): p
            for p in folder.glob(prefix + "*.py")
        }
        assert set(scripts) == causes, (name, sorted(scripts))
        for cause, script in scripts.items():
            text = script.read_text()
            assert "extension_cpp_testing" not in text.split('"""')[-1]
            fixed = script.with_name(f"twin-{script.name}")
            fixed.write_text(text.replace(ZOO_OP.format(name), twin))
            shutil.copy(script.with_suffix(".pt"), fixed.with_suffix(".pt"))
            runs[name, cause] = (script, fixed)
    # Each script in a process of its own, as `python SCRIPT` runs it.
    keys = [(key, kind) for key in runs for kind in ("buggy", "twin")]
    procs = run_scripts([path for paths in runs.values() for path in paths])
    for (key, kind), proc in zip(keys, procs):
        want = 1 if kind == "buggy" else 0
        assert proc.returncode == want, (key, kind, proc.stdout[-2000:], proc.stderr[-2000:])


@pytest.mark.slow
def test_each_finding_writes_a_reproducer_that_runs_with_plain_python(tmp_path):
    """--conformance-reproducers: one script per op and cause, which fails on
    the buggy op and passes with its correct twin in its place."""
    _reproducers_show_each_bug(tmp_path, REPRODUCED)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.slow
def test_each_cuda_finding_writes_a_reproducer_that_runs_with_plain_python(tmp_path):
    """The CUDA checks' reproducers: a capture that fails or replays wrong, a
    kernel that does not wait for the side stream, a stream left current."""
    _reproducers_show_each_bug(tmp_path, CUDA_REPRODUCED)


# register_autograd_mul with its forward modes declared silent, and mul
# declared so too, whose forward modes raise.
SILENT = """
import dataclasses
from extension_cpp_testing import conformance_tests
from harness_zoo import zoo

specs = zoo.load()
test_silent = conformance_tests(
    dataclasses.replace(specs["register_autograd_mul_silent"], checks=("autodiff",))
)
test_stale = conformance_tests(
    dataclasses.replace(specs["mul_declared_silent"], checks=("autodiff",))
)
"""


@pytest.mark.slow
def test_generated_tests_expect_a_declared_silent_mode_to_fail(tmp_path):
    """Under pytest a declared silent mode is a strict expected failure,
    counted in the plugin's summary; one that raises instead passes, which
    fails its test (XPASS strict), saying to drop the declaration."""
    module = tmp_path / "test_silent.py"
    module.write_text(SILENT)
    proc = run_python(
        ["-m", "pytest", "-p", "extension_cpp_testing.pytest_plugin"]
        + ["-p", "no:cacheprovider", "-p", "no:randomly", "-rf", str(module)],
        cwd=tmp_path,
    )
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-3000:]
    assert "5 failed, 14 passed, 5 xfailed" in out, out[-3000:]
    failed = set(re.findall(r"FAILED \S+::test_stale\[(\S+)\]", out))
    prefix = "mul_declared_silent-autodiff-cpu-float64-"
    assert failed == {f"{prefix}{m}-silent" for m in FORWARD_MODES}
    assert "[XPASS(strict)]" in out
    assert SILENT_MODE_GONE_FIX in out
    assert "accepted: PyTorch's limitations the OpSpecs declare" in out
    assert "5 cases, e.g. register_autograd_mul_silent-autodiff-cpu-float64-" in out
    assert SILENT_MODE_FIX in out
