"""The harness catches real bugs: each zoo op fails the check meant for its
bug, and the correct zoo ops (mul, add_out) pass every check.

BUGS is the table bug x check: the check meant to catch each bug, and every
check that fails on it (some bugs show in more than one place; the set is
asserted exactly, so a check that stops failing, or starts to, is noticed).
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
import torch
from child_process import run_python

from extension_cpp.testing import FIXES, ConformanceFailure, run_all

from . import zoo as zoo_module

REPO = Path(__file__).resolve().parents[2]
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
        # autodiff (reverse: no gradient at all), and opcheck's AOT test, which
        # meets PyTorch's "autograd kernel was not registered" warning.
        {"gradcheck", "gradgradcheck", "autodiff", "opcheck"},
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
    "overlap_add_out": ("an out= op that accepts overlapping memory", "bad_input", {"bad_input"}),
    "unmarked_add_out": (
        "a mutable op whose schema lacks (a!)",
        "opcheck",
        # Functionalization does not know out is written: compiled code returns
        # out untouched.
        {"opcheck", "compile", "dynamic"},
    ),
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
    )
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
    assert first.fix == FIXES[meant]
    assert str(first).startswith(f"[{meant}] {first.case}: ")
    assert f"fix: {FIXES[meant]}" in str(first)


@pytest.mark.parametrize("op_name", list(BUGS))
def test_harness_catches_the_bug(zoo, op_name):
    _assert_caught(run_all(zoo[op_name]), op_name, *BUGS[op_name])


@pytest.mark.parametrize("op_name", ["mul", "add_out", "int_count_mul"])
def test_correct_ops_pass_every_check(zoo, op_name):
    spec = zoo[op_name]
    # int_count_mul is correct below 2^31 elements: its bug shows only in the
    # huge check (test_harness_catches_an_int_element_count).
    checks = [c for c in spec.checks if not (op_name == "int_count_mul" and c == "huge")]
    failures = run_all(spec, checks)
    assert not failures, {check: str(fs[0]) for check, fs in failures.items()}


@pytest.mark.huge
@pytest.mark.skipif(not HUGE, reason="set EXTENSION_CPP_HUGE=1: a 4 GiB output")
def test_harness_catches_an_int_element_count(zoo):
    failures = run_all(zoo["int_count_mul"], checks={"huge"})
    _assert_caught(failures, "int_count_mul", *HUGE_BUGS["int_count_mul"])
    assert run_all(zoo["mul_huge"]) == {}  # the same loop with int64_t passes


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_harness_catches_the_legacy_default_stream():
    """In a process of its own: a launch that breaks a CUDA graph capture must
    not leave the GPU in a state that later tests would inherit."""
    op_name = "default_stream_mul"
    child = textwrap.dedent(
        f"""
        import json
        from extension_cpp.testing import run_all
        from tests.harness_zoo import zoo

        failures = run_all(zoo.load()[{op_name!r}])
        found = {{c: [[f.case, f.what, f.fix] for f in fs] for c, fs in failures.items()}}
        print(json.dumps(found))
        """
    )
    proc = run_python(["-c", child], env={"PYTHONPATH": str(REPO)}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    failures = {c: [ConformanceFailure(c, *f) for f in fs] for c, fs in found.items()}
    _assert_caught(failures, op_name, *CUDA_BUGS[op_name])


def test_generated_pytest_tests_name_check_case_and_fix(tmp_path):
    """End to end: conformance_tests() in a test module, run by pytest with the plugin."""
    module = tmp_path / "test_wrong_sign.py"
    module.write_text(
        textwrap.dedent(
            """
            import dataclasses
            from extension_cpp.testing import conformance_tests
            from tests.harness_zoo import zoo

            specs = zoo.load()
            test_mul = conformance_tests(
                dataclasses.replace(specs["mul"], checks=("gradcheck",), layouts=("contiguous",))
            )
            test_wrong_sign = conformance_tests(
                dataclasses.replace(
                    specs["wrong_sign_mul"], checks=("gradcheck",), layouts=("contiguous",)
                )
            )
            """
        )
    )
    proc = run_python(
        ["-m", "pytest", "-p", "extension_cpp.testing.pytest_plugin"]
        + ["-p", "no:cacheprovider", "-rf", "--rootdir", str(tmp_path), str(module)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO)},
        timeout=600,
    )
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-3000:]
    assert "1 failed, 1 passed" in out, out[-3000:]
    case = "wrong_sign_mul-gradcheck-cpu-float64-contiguous"
    assert f"test_wrong_sign[{case}]" in out
    assert f"[gradcheck] {case}: GradcheckError: Jacobian mismatch" in out
    assert "conformance failures by check" in out
    assert f"gradcheck: 1 failed, e.g. {case}" in out
    assert f"fix: {FIXES['gradcheck']}" in out
