"""Parameters shared by the conformance tests: the build, devices, dtypes, layouts, ops.

Everything here is data plus small factories, so a test module reads as
"for every device x dtype x layout, this holds". CUDA cases are always
generated and skip only when no GPU is present. SPECS describes our ops to
extension_cpp.testing, which generates the checks every op needs
(test_harness.py); the other modules test what is specific to ours.

The suite runs once per build: EXTENSION_CPP_BUILD=classic (the default)
tests the extension_cpp package, EXTENSION_CPP_BUILD=stable the stable-ABI
extension_cpp_stable (stable/). Tests call the ops through ``pkg`` and
``ops_ns`` below, never through a package name. The harness
(extension_cpp.testing) is pure Python; the stable package ships the same
files as extension_cpp_stable.testing, and ``testing`` below is the one of the
build under test.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from typing import Callable

import pytest
import torch

BUILDS = {"classic": "extension_cpp", "stable": "extension_cpp_stable"}
BUILD = os.environ.get("EXTENSION_CPP_BUILD", "classic")
if BUILD not in BUILDS:
    raise ValueError(f"EXTENSION_CPP_BUILD must be one of {sorted(BUILDS)}, got {BUILD!r}")
PACKAGE = BUILDS[BUILD]  # also the op namespace: torch.ops.<PACKAGE>
STABLE = BUILD == "stable"
pkg = importlib.import_module(PACKAGE)
ops_ns = getattr(torch.ops, PACKAGE)
# The harness, from the package under test (both ship it: see tests/conftest.py).
testing = importlib.import_module(f"{PACKAGE}.testing")
DTYPES, TOLERANCES, dtype_id = testing.DTYPES, testing.TOLERANCES, testing.dtype_id


def classic_only(reason: str):
    """Skips a test in the stable build's run, saying why it cannot apply there."""
    return pytest.mark.skipif(STABLE, reason=f"stable-ABI build: {reason}")


HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
requires_two_gpus = pytest.mark.skipif(
    torch.cuda.device_count() < 2 or STABLE,
    reason="stable-ABI build: its DTensor run on two GPUs is still to do"
    if STABLE
    else "needs two CUDA GPUs",
)


def devices() -> list:
    """'cpu', and 'cuda' marked to skip when no GPU is present."""
    return ["cpu", pytest.param("cuda", marks=[requires_cuda, pytest.mark.cuda])]


# The layouts, dtypes and tolerances live in extension_cpp.testing (the
# harness anyone can run on their own op); the suite uses the same lists.
LAYOUTS = testing.LAYOUTS
SMALL_LAYOUTS = testing.SMALL_LAYOUTS


def make_inputs(layout: str, dtype=torch.float32, device="cpu", requires_grad=False, small=False):
    a, b = (SMALL_LAYOUTS if small else LAYOUTS)[layout].make(2, dtype, device)
    if requires_grad:
        # Keep the layout: requires_grad_ on the view would make it a non-leaf.
        a = a.detach().requires_grad_()
        b = b.detach().requires_grad_()
    return a, b


# ---------------------------------------------------------------------------
# Ops under test, with their reference and how to call them.
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Op:
    name: str
    call: Callable  # (a, b) -> Tensor, through the package's public functions
    reference: Callable  # (a, b) -> Tensor, in PyTorch
    args: Callable  # (a, b) -> tuple of arguments for the raw op
    exact: bool  # result must equal PyTorch's bit for bit

    @property
    def overload(self):
        return getattr(ops_ns, self.name).default


C = 1.25


def _myadd_out_call(a, b):
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    pkg.myadd_out(a, b, out)
    return out


OPS = {
    "mymuladd": Op(
        "mymuladd",
        call=lambda a, b: pkg.mymuladd(a, b, C),
        # Rounded once from float64: ours rounds once from float, eager rounds twice.
        reference=lambda a, b: (a.double() * b.double() + C).to(a.dtype),
        args=lambda a, b: (a, b, C),
        exact=False,
    ),
    "mymul": Op(
        "mymul",
        call=pkg.mymul,
        reference=torch.mul,
        args=lambda a, b: (a, b),
        exact=True,
    ),
    "myadd_out": Op(
        "myadd_out",
        call=_myadd_out_call,
        reference=torch.add,
        args=lambda a, b: (a, b, torch.empty(a.shape, dtype=a.dtype, device=a.device)),
        exact=True,
    ),
}

FUNCTIONAL_OPS = ["mymuladd", "mymul"]


def assert_values(out: torch.Tensor, expected: torch.Tensor, exact: bool) -> None:
    """out equals expected: where exact, bit for bit up to NaN payloads (the
    harness's comparison: zero tolerance, NaN where expected has NaN, and the
    sign of every zero), else within the dtype's tolerance."""
    testing.checks.assert_same_values(out, expected, exact=exact, **TOLERANCES[out.dtype])


def assert_matches_reference(op: Op, out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    """out equals op's reference on (a, b): bit for bit where op.exact, else
    within the dtype's tolerance."""
    assert_values(out, op.reference(a, b), op.exact)


# The functional ops as functions of (a, b), beside the same expression in
# plain torch ops (differentiable and autocast-aware, unlike Op.reference,
# which rounds once from float64): what the autodiff-mode, vmap and autocast
# tests compare against.
OURS = {
    "mymuladd": lambda a, b: pkg.mymuladd(a, b, C),
    "mymul": pkg.mymul,
}
AS_TORCH = {
    "mymuladd": lambda a, b: a * b + C,
    "mymul": lambda a, b: a * b,
}


# Our ops as extension_cpp.testing sees them: what test_harness.py runs.
SPECS = {
    "mymuladd": testing.OpSpec(
        pkg.mymuladd,
        # Rounded once from float64, laid out as torch.mul(a, b).
        reference=lambda a, b, c: torch.mul(a, b).copy_(a.double() * b.double() + c),
        extra_args=(C,),
        autodiff=tuple(testing.MODES),
    ),
    "mymul": testing.OpSpec(
        pkg.mymul,
        reference=torch.mul,
        exact=True,
        autodiff=tuple(testing.MODES),
    ),
    "myadd_out": testing.OpSpec(pkg.myadd_out, reference=torch.add, out=True, exact=True),
}
