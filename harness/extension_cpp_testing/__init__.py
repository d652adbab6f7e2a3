"""extension_cpp_testing: the conformance suite as a tool: check any custom op
the way the extension_cpp repository checks its own.

Describe the op in an :class:`OpSpec` (the op, a reference in torch ops, and
optionally how to build its inputs), and :func:`conformance_tests` returns a
pytest test parametrized over every check x device x dtype x layout::

    from extension_cpp_testing import OpSpec, conformance_tests

    test_my_op = conformance_tests(OpSpec(torch.ops.mylib.my_op.default, reference=torch.mul))

Each failure names the check, the case and what to fix. The checks and their
fixes are the table :data:`CHECKS` (checks/, one module per family);
``cases(spec)`` lists a spec's cases and ``run_case(spec, case)`` runs one;
docs/check_your_op.md walks through them. The cases run in a worker process
(worker.py), so a kernel that crashes fails its case and the run goes on;
:func:`call_isolated` runs any other call of a kernel there (what a test
module computes at import, a reproducer).
The pytest plugin (pytest_plugin.py, which pytest loads wherever this
distribution is installed) adds the ``cuda`` and ``huge`` markers and a
summary of findings by op and cause.

Pure Python: it needs torch (any release from the oldest this distribution
is tested on, see its pyproject.toml) and, for conformance_tests, pytest.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from . import checks, findings
from .autodiff import FORWARD_MODES, MODES, REVERSE_MODES
from .case import AcceptedLimitation, Case, ConformanceFailure
from .checks import CHECKS, FIXES
from .checks.base import Check, assert_same_values
from .checks.gradients import GRAD_TOLERANCES, SILENT_MODE_GONE_FIX
from .layouts import (
    DTYPES,
    LAYOUTS,
    OUT_LAYOUTS,
    ROUNDED_ONCE,
    SMALL_LAYOUTS,
    SPECIAL_VALUES,
    TOLERANCES,
    Layout,
    dtype_id,
)
from .spec import OpSpec
from .suite import cases, run_case
from .worker import IsolatedCall, WorkerDied, call_isolated, register, run_cases, run_isolated

__all__ = [
    "CHECKS",
    "DTYPES",
    "FIXES",
    "FORWARD_MODES",
    "LAYOUTS",
    "MODES",
    "OUT_LAYOUTS",
    "REVERSE_MODES",
    "ROUNDED_ONCE",
    "SMALL_LAYOUTS",
    "SPECIAL_VALUES",
    "TOLERANCES",
    "GRAD_TOLERANCES",
    "AcceptedLimitation",
    "Case",
    "Check",
    "ConformanceFailure",
    "IsolatedCall",
    "Layout",
    "OpSpec",
    "WorkerDied",
    "assert_same_values",
    "call_isolated",
    "cases",
    "checks",
    "conformance_tests",
    "dtype_id",
    "run_all",
    "run_case",
    "scalar_type_name",
]


def conformance_tests(
    spec: OpSpec,
    known_failures: dict[str, str] | None = None,
    nondeterministic_failures: dict[str, str] | None = None,
    memory_unsafe: Iterable[str] = (),
):
    """A pytest test function, parametrized over ``cases(spec)``.

    Assign it, at a test module's top level, to a name starting with
    ``test_``. CUDA cases carry the ``cuda`` marker and skip without a GPU.
    Each case runs in a worker process that imports the module, so a kernel
    that crashes fails its case with the signal named and the run goes on
    (EXTENSION_CPP_TESTING_ISOLATE=0 runs them in pytest's process).

    ``known_failures`` maps test ids to why they fail (the op's bug, reported
    upstream): strict expected failures, which pass the day the op is fixed.
    ``nondeterministic_failures`` does the same, not strict, for a bug whose
    symptom depends on memory the op should not read. ``memory_unsafe`` names
    cases whose kernel may write memory it does not own: each runs in a
    process of its own (a child the worker forks), so the damage can't be
    blamed on a later case. An id in any of the three that names no case is
    an error.
    """
    import pytest

    known = dict(known_failures or {})
    chance = dict(nondeterministic_failures or {})
    key = register(spec)
    made = cases(spec)
    unsafe = set(memory_unsafe)
    unknown = sorted((set(known) | set(chance) | unsafe) - {case.id for case in made})
    if unknown:
        raise ValueError(
            "known_failures, nondeterministic_failures or memory_unsafe name no case "
            f"of {spec.name}: {unknown}"
        )
    params = []
    for case in made:
        marks = []
        if case.uses_cuda:
            marks.append(pytest.mark.cuda)
        if case.check == "huge":
            marks.append(pytest.mark.huge)
        if case.skip_reason:
            marks.append(pytest.mark.skip(reason=case.skip_reason))
        if case.id in known:
            marks.append(
                pytest.mark.xfail(reason=known[case.id], raises=ConformanceFailure, strict=True)
            )
        elif case.id in chance:
            marks.append(
                pytest.mark.xfail(reason=chance[case.id], raises=ConformanceFailure, strict=False)
            )
        elif case.variant and case.variant.endswith("-silent"):
            # PyTorch's limitation, declared (OpSpec.silent_modes): expected to
            # show, and to fail the run the day it no longer does.
            reason = (
                "PyTorch's limitation, declared in OpSpec(silent_modes=): this mode gives no "
                f"derivative and no error (if it passes: {SILENT_MODE_GONE_FIX})"
            )
            marks.append(pytest.mark.xfail(reason=reason, raises=AcceptedLimitation, strict=True))
        params.append(pytest.param(case, id=case.id, marks=marks))

    @pytest.mark.parametrize("case", params)
    def test_conformance(case: Case) -> None:
        __tracebackhide__ = True  # a failure shows its check, case and fix, not our frames
        run_isolated(spec, key, case, alone=case.id in unsafe)

    test_conformance.__doc__ = f"{spec.name}: every conformance check (extension_cpp_testing)."
    return test_conformance


class Results(dict):
    """run_all's answer: check -> the ConformanceFailures of its cases, and
    ``accepted``: the cases that showed a limitation the OpSpec declares
    (``silent_modes``), which are no failures. ``findings()`` groups the
    failures by op and cause, and ``report()`` is the text the pytest
    plugin prints for them."""

    accepted: list[AcceptedLimitation]

    def __init__(self):
        super().__init__()
        self.accepted = []

    def findings(self) -> dict[tuple[str, str], list[ConformanceFailure]]:
        """(op, fix) -> the failures it explains; a fix names one cause."""
        return findings.group(f for failures in self.values() for f in failures)

    def report(self) -> str:
        """The findings as a table of op x cause, then each fix once with a case or two."""
        return "\n".join(findings.report(self.findings())) if self else "no findings"


def run_all(spec: OpSpec, checks=None) -> Results:
    """Runs every case that can run here, without pytest; returns check ->
    failures (a ``Results``, with the accepted cases apart).

    Cases that can't run here, and checks in ``OpSpec.skip``, are left out.
    CPU cases run first, in a forked child on one thread, so a crashing
    kernel fails its case and the next child runs the rest; a case needing
    what PyTorch refuses a fork (CUDA once used here, as on a GPU machine
    torch.compile's cases do; autograd once its threads started) runs here,
    after a one-line warning. CUDA cases run here.
    EXTENSION_CPP_TESTING_ISOLATE=0 runs every case here.
    """
    results = Results()
    chosen = [
        case
        for case in cases(spec)
        if not case.skip_reason and (checks is None or case.check in checks)
    ]
    for case, failure in run_cases(spec, chosen):
        if failure is None and case.variant and case.variant.endswith("-silent"):
            failure = ConformanceFailure(
                case.check,
                case.id,
                "declared silent (OpSpec(silent_modes=)), but the mode raised or gave the "
                "reference's derivative",
                SILENT_MODE_GONE_FIX,
            )
        if isinstance(failure, AcceptedLimitation):
            results.accepted.append(failure)
        elif failure is not None:
            results.setdefault(case.check, []).append(failure)
    return results


def scalar_type_name(dtype: torch.dtype) -> str:
    """dtype as C++ error messages print it (c10's ScalarType names:
    ``torch.int64`` -> ``Long``, ``torch.float32`` -> ``Float``), so that a
    Python fake kernel can raise a ``TORCH_CHECK``'s exact words. Its one
    line can be copied into a fake kernel, which needs no harness."""
    return torch.empty(0, dtype=dtype, device="meta").type().removeprefix("torch.meta.")[:-6]
