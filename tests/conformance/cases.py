"""Parameters shared by the conformance tests: the build, devices, dtypes, layouts, ops.

Everything here is data plus small factories, so a test module reads as
"for every device x dtype x layout, this holds". CUDA cases are always
generated and skip only when no GPU is present. SPECS describes our ops to
extension_cpp.testing, which generates the checks every op needs
(test_harness.py); the other modules test what is specific to ours.

The suite runs once per build: EXTENSION_CPP_BUILD=classic (the default)
tests the extension_cpp package, EXTENSION_CPP_BUILD=stable the stable-ABI
extension_cpp_stable (stable/). Tests call the ops through ``pkg`` and
``ops_ns`` below, never through a package name. The harness is its own
pure-Python distribution (extension_cpp_testing, harness/); both packages
re-export it as ``<package>.testing``, and ``testing`` below is the one of the
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
# The ops under test, each described once: every test module, and the
# harness's OpSpecs below, take what they need from OPS.
# ---------------------------------------------------------------------------

C = 1.25  # mymuladd's c in every test


@dataclasses.dataclass(frozen=True)
class Op:
    name: str
    # (a, b) -> the same value in torch ops: differentiable and autocast-aware,
    # what the autodiff-mode, vmap and autocast tests compare against.
    as_torch: Callable
    args: tuple = ()  # the arguments after a and b (mymuladd's c)
    out: bool = False  # an out= op: it writes its last argument
    # The dtypes whose results equal reference() bit for bit; in the others
    # the kernel rounds more than once (as eager PyTorch does) and a result is
    # within the dtype's tolerance.
    exact_dtypes: tuple = tuple(DTYPES)

    @property
    def function(self) -> Callable:
        return getattr(pkg, self.name)

    @property
    def overload(self):
        return getattr(ops_ns, self.name).default

    def raw_args(self, a, b) -> tuple:
        """The arguments of the raw op (out= ops: a fresh contiguous out)."""
        if self.out:
            return (a, b, torch.empty(a.shape, dtype=a.dtype, device=a.device))
        return (a, b, *self.args)

    def call(self, a, b) -> torch.Tensor:
        """The public function on (a, b); an out= op returns its out."""
        args = self.raw_args(a, b)
        result = self.function(*args)
        return args[-1] if self.out else result

    def raw(self, a, b) -> torch.Tensor:
        """The raw op, torch.ops.<package>.<name>, on (a, b)."""
        args = self.raw_args(a, b)
        result = self.overload(*args)
        return args[-1] if self.out else result

    def reference(self, a, b) -> torch.Tensor:
        """as_torch computed in float64 and rounded once to a's dtype, laid out
        as torch.mul(a, b): the correctly rounded result."""
        return torch.mul(a, b).copy_(self.as_torch(a.double(), b.double()))

    def exact(self, dtype) -> bool:
        return dtype in self.exact_dtypes


OPS = {
    # float16 and bfloat16 are computed in float32 and rounded once, which
    # is the correctly rounded result. float32 and float64 round a * b and
    # then + c on the CPU, as eager a * b + c does; a GPU may fuse them into
    # one rounding (nvcc's default): within the tolerance either way.
    "mymuladd": Op(
        "mymuladd",
        as_torch=lambda a, b: a * b + C,
        args=(C,),
        exact_dtypes=(torch.float16, torch.bfloat16),
    ),
    "mymul": Op("mymul", as_torch=torch.mul),
    "myadd_out": Op("myadd_out", as_torch=torch.add, out=True),
}
FUNCTIONAL = [name for name, op in OPS.items() if not op.out]


def assert_values(out: torch.Tensor, expected: torch.Tensor, exact: bool) -> None:
    """out equals expected: where exact, bit for bit up to NaN payloads (the
    harness's comparison: zero tolerance, NaN where expected has NaN, and the
    sign of every zero), else within the dtype's tolerance."""
    testing.assert_same_values(out, expected, exact=exact, **TOLERANCES[out.dtype])


def assert_matches_reference(op: Op, out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    """out equals op's reference on (a, b): bit for bit where op is exact in
    this dtype, else within the dtype's tolerance."""
    assert_values(out, op.reference(a, b), op.exact(a.dtype))


def _spec(op: Op):
    """op as extension_cpp.testing sees it: what test_harness.py runs."""
    return testing.OpSpec(
        op.function,
        reference=lambda a, b, *args: op.reference(a, b),
        extra_args=op.args,
        out=op.out,
        exact=set(op.exact_dtypes) == set(DTYPES),
        # Rounded once in the half types: held to half an ulp there.
        rounded_once=bool(op.exact_dtypes) and set(op.exact_dtypes) != set(DTYPES),
        autodiff=() if op.out else tuple(testing.MODES),
    )


SPECS = {name: _spec(op) for name, op in OPS.items()}
