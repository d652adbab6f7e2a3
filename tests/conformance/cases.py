"""Parameters shared by the conformance tests: the build, devices, dtypes, layouts, ops.

Everything here is data plus small factories, so a test module reads as
"for every device x dtype x layout, this holds". CUDA cases are always
generated and skip only when no GPU is present.

The suite runs once per build: EXTENSION_CPP_BUILD=classic (the default)
tests the extension_cpp package, EXTENSION_CPP_BUILD=stable the stable-ABI
extension_cpp_stable (stable/). Tests call the ops through ``pkg`` and
``ops_ns`` below, never through a package name, so each run imports only the
build it tests (the stable track of `make matrix` installs that one alone).
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


def classic_only(reason: str):
    """Skips a test in the stable build's run, saying why it cannot apply there."""
    return pytest.mark.skipif(STABLE, reason=f"stable-ABI build: {reason}")


HAS_CUDA = torch.cuda.is_available()
# Why the CUDA cases cannot run here, or "" where they can. The stable build
# has CPU kernels only so far: its CUDA binding waits for the CUDA kernels to
# move into a header it can share (issue #11).
NO_CUDA_REASON = (
    "needs a CUDA GPU"
    if not HAS_CUDA
    else "stable-ABI build: no CUDA kernels yet (issue #11)"
    if STABLE
    else ""
)
requires_cuda = pytest.mark.skipif(bool(NO_CUDA_REASON), reason=NO_CUDA_REASON or "runs")
requires_two_gpus = pytest.mark.skipif(
    torch.cuda.device_count() < 2 or STABLE, reason=NO_CUDA_REASON or "needs two CUDA GPUs"
)


def devices() -> list:
    """'cpu', and 'cuda' marked to skip when no GPU is present."""
    return ["cpu", pytest.param("cuda", marks=[requires_cuda, pytest.mark.cuda])]


DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def dtype_id(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


# Tolerances against a float64 reference, for results rounded once from float
# (float16/bfloat16: half an ulp of the output; float32: a few ulps, as the
# CUDA compiler may fuse a*b+c into one FMA).
TOLERANCES = {
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=8e-3, atol=8e-3),
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
}


# ---------------------------------------------------------------------------
# Layouts: each factory returns (a, b) of one shape in one memory layout.
# ---------------------------------------------------------------------------


def _randn(*shape, dtype, device) -> torch.Tensor:
    return torch.randn(shape, dtype=dtype, device=device)


def _layouts(m: int, n: int, k: int):
    """Layout name -> factory of (a, b) with a logical shape built from m, n, k."""
    return {
        "contiguous": lambda **kw: (_randn(m, n, **kw), _randn(m, n, **kw)),
        "large-1d": lambda **kw: (_randn(k, **kw), _randn(k, **kw)),
        "transposed": lambda **kw: (_randn(n, m, **kw).t(), _randn(n, m, **kw).t()),
        # One input transposed: the output follows a, b is read across.
        "mixed": lambda **kw: (_randn(m, n, **kw), _randn(n, m, **kw).t()),
        "mixed-b-first": lambda **kw: (_randn(n, m, **kw).t(), _randn(m, n, **kw)),
        "sliced": lambda **kw: (
            _randn(2 * m, 3 * n, **kw)[::2, ::3],
            _randn(m, 2 * n, **kw)[:, 1::2],
        ),
        # Contiguous but starting one element in: not 16-byte aligned.
        "offset": lambda **kw: (
            _randn(m * n + 1, **kw)[1:].view(m, n),
            _randn(m * n + 1, **kw)[1:].view(m, n),
        ),
        "expanded": lambda **kw: (
            _randn(1, n, **kw).expand(m, n),
            _randn(m, 1, **kw).expand(m, n),
        ),
        "permuted-3d": lambda **kw: (
            _randn(m, n, 3, **kw).permute(2, 0, 1),
            _randn(3, m, n, **kw),
        ),
        # Both inputs in one dense non-contiguous layout: the output keeps it.
        "channels-last": lambda **kw: (
            _randn(2, 3, m, n // 4 + 1, **kw).to(memory_format=torch.channels_last),
            _randn(2, 3, m, n // 4 + 1, **kw).to(memory_format=torch.channels_last),
        ),
        "channels-last-3d": lambda **kw: (
            _randn(2, 3, 2, m, n // 8 + 1, **kw).to(memory_format=torch.channels_last_3d),
            _randn(2, 3, 2, m, n // 8 + 1, **kw).to(memory_format=torch.channels_last_3d),
        ),
        # One channels_last input, one contiguous: a decides the output.
        "channels-last-mixed": lambda **kw: (
            _randn(2, 3, m, n // 4 + 1, **kw).to(memory_format=torch.channels_last),
            _randn(2, 3, m, n // 4 + 1, **kw),
        ),
        "broadcast-row": lambda **kw: (_randn(1, n, **kw).expand(m, n), _randn(m, n, **kw)),
        "broadcast-col": lambda **kw: (_randn(m, n, **kw), _randn(m, 1, **kw).expand(m, n)),
        "row-sliced": lambda **kw: (_randn(m, n + 1, **kw)[:, 1:], _randn(m, n + 1, **kw)[:, 1:]),
        "empty": lambda **kw: (_randn(0, n, **kw), _randn(0, n, **kw)),
        "0-dim": lambda **kw: (_randn(**kw), _randn(**kw)),
    }


# Odd sizes on purpose: the CUDA fast path moves 16 bytes at a time and
# handles the remainder separately; 70001 elements span several CPU threads'
# chunks. SMALL_LAYOUTS keep gradcheck's numerical Jacobians small.
LAYOUTS: dict[str, Callable[..., tuple[torch.Tensor, torch.Tensor]]] = _layouts(37, 129, 70001)
SMALL_LAYOUTS = _layouts(3, 5, 11)


def make_inputs(layout: str, dtype=torch.float32, device="cpu", requires_grad=False, small=False):
    a, b = (SMALL_LAYOUTS if small else LAYOUTS)[layout](dtype=dtype, device=device)
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


def assert_matches_reference(op: Op, out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    """out equals op's reference on (a, b): bit for bit where op.exact, else
    within the dtype's tolerance."""
    tol = dict(rtol=0, atol=0) if op.exact else TOLERANCES[a.dtype]
    torch.testing.assert_close(out, op.reference(a, b), **tol)


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
