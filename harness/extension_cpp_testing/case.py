"""A Case (one generated test) and ConformanceFailure (what a failed one raises).

Both the checks (conformance.py) and OpSpec (spec.py) use these, so they live
below both: spec.py imports conformance.py, never the other way round.
"""

from __future__ import annotations

import dataclasses
import os
import re

import torch

from .layouts import dtype_id

HAS_CUDA = torch.cuda.is_available()
# Tensors past 2^31 elements: 4 GiB (float16) per check, run only when asked.
HUGE = os.environ.get("EXTENSION_CPP_HUGE") == "1"
HUGE_NUMEL = 2**31 + 2**16


def slug(text: str) -> str:
    """text in lower-case letters, digits and dashes: a case id's variant, a file name."""
    return re.sub(r"[^0-9a-zA-Z]+", "-", text).strip("-").lower()


# The fix of a case whose process died (worker.py isolates each case).
CRASH_FIX = (
    "the kernel crashed the process instead of raising: rerun the case alone in one process "
    "(EXTENSION_CPP_TESTING_ISOLATE=0 pytest -k with the case's id) under gdb or a sanitizer "
    "build, and check what the user controls with TORCH_CHECK, which raises"
)


class ConformanceFailure(AssertionError):
    """A check failed: ``check``, ``case`` (the test id) and ``fix`` say which and what to do."""

    def __init__(self, check: str, case: str, what: str, fix: str):
        self.check, self.case, self.what, self.fix = check, case, what, fix
        super().__init__(f"[{check}] {case}: {what}\n  fix: {fix}")

    @property
    def op(self) -> str:
        """The op's name in the test ids: the case's id up to its check."""
        return self.case.split(f"-{self.check}-", 1)[0]

    def __reduce__(self):
        # Pickled by its four fields (the worker process sends it back).
        return type(self), (self.check, self.case, self.what, self.fix)


class AcceptedLimitation(ConformanceFailure):
    """A case that shows a limitation of PyTorch the OpSpec declares
    (``silent_modes``): conformance_tests reports it as an expected failure,
    run_all as accepted, and it fails the run the day it stops showing."""


@dataclasses.dataclass(frozen=True)
class Case:
    """One generated test: a check on one device, dtype and layout (or variant)."""

    op: str
    check: str
    device: str
    dtype: torch.dtype | None = None
    layout: str | None = None
    # an autodiff mode, a kind of bad input, requires_grad, specials, out-<layout>
    variant: str | None = None
    # why the OpSpec declares this check as not applying (OpSpec.skip)
    declared_skip: str | None = None

    @property
    def id(self) -> str:
        parts = [self.op, self.check, self.device]
        if self.dtype is not None:
            parts.append(dtype_id(self.dtype))
        parts += [p for p in (self.layout, self.variant) if p is not None]
        return "-".join(parts)

    @property
    def uses_cuda(self) -> bool:
        """On a CUDA device, or (the bad-input device kind) given a CUDA tensor."""
        return self.device.startswith("cuda") or self.variant == "device"

    @property
    def skip_reason(self) -> str | None:
        if self.declared_skip:
            return f"declared by the OpSpec: {self.declared_skip}"
        if self.device.startswith("cuda") and not HAS_CUDA:
            return "needs a CUDA GPU"
        if self.check == "huge" and not HUGE:
            return "set EXTENSION_CPP_HUGE=1 to run: a tensor past 2^31 elements (4 GiB)"
        return None
