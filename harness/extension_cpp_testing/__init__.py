"""extension_cpp_testing: the conformance suite as a tool: check any custom op
the way the extension_cpp repository checks its own.

Describe the op in an :class:`OpSpec` (the op, a reference in torch ops, and
optionally how to build its inputs), and :func:`conformance_tests` returns a
pytest test parametrized over every check x device x dtype x layout::

    from extension_cpp_testing import OpSpec, conformance_tests

    test_my_op = conformance_tests(OpSpec(torch.ops.mylib.my_op.default, reference=torch.mul))

Each failure names the check, the case and what to fix. The checks and their
fixes are the table :data:`CHECKS`; docs/check_your_op.md walks through them.
The cases run in a worker process (worker.py), so a kernel that crashes
fails its case and the run goes on.
Load the pytest plugin (``pytest_plugins = ["extension_cpp_testing.pytest_plugin"]``
in your top-level conftest.py, or ``-p extension_cpp_testing.pytest_plugin``)
for the ``cuda`` and ``huge`` markers and a summary of failures by check.

Pure Python: it needs torch (any release from the oldest this distribution
is tested on, see its pyproject.toml) and, for conformance_tests, pytest.
"""

from __future__ import annotations

from .autodiff import FORWARD_MODES, MODES, REVERSE_MODES
from .case import Case, ConformanceFailure
from .conformance import CHECKS, FIXES, Check, assert_same_values
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
from .worker import register, run_case

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
    "Case",
    "Check",
    "ConformanceFailure",
    "Layout",
    "OpSpec",
    "assert_same_values",
    "conformance_tests",
    "dtype_id",
    "run_all",
]


def conformance_tests(spec: OpSpec, known_failures: dict[str, str] | None = None):
    """A pytest test function, parametrized over ``spec.cases()``.

    Assign it to a name starting with ``test_`` in a test module. Test ids read
    ``<op>-<check>-<device>-<dtype>-<layout or variant>``; CUDA cases carry the
    ``cuda`` marker and skip without a GPU, the ``huge`` case the ``huge`` marker.
    Select checks with ``-k``, e.g. ``-k "fake or opcheck"``.

    ``known_failures`` maps test ids to why they fail (a bug of the op, reported
    upstream): those cases are expected to fail with a ConformanceFailure
    (``xfail(strict=True)``), so the day the op is fixed they pass and the run
    says so. An id that names no case is an error, not a silent no-op.

    Call it at a test module's top level: each case then runs in a worker
    process that imports that module, so a kernel that crashes (SIGABRT,
    SIGSEGV) fails its case with the signal named, and the run goes on
    (EXTENSION_CPP_TESTING_ISOLATE=0 runs them in pytest's process).
    """
    import pytest

    known = dict(known_failures or {})
    key = register(spec)
    cases = spec.cases()
    unknown = sorted(set(known) - {case.id for case in cases})
    if unknown:
        raise ValueError(f"known_failures names no case of {spec.name}: {unknown}")
    params = []
    for case in cases:
        marks = []
        if case.device.startswith("cuda") or case.variant == "device":
            marks.append(pytest.mark.cuda)
        if case.check == "huge":
            marks.append(pytest.mark.huge)
        if case.skip_reason:
            marks.append(pytest.mark.skip(reason=case.skip_reason))
        if case.id in known:
            marks.append(
                pytest.mark.xfail(reason=known[case.id], raises=ConformanceFailure, strict=True)
            )
        params.append(pytest.param(case, id=case.id, marks=marks))

    @pytest.mark.parametrize("case", params)
    def test_conformance(case: Case) -> None:
        run_case(spec, key, case)

    test_conformance.__doc__ = f"{spec.name}: every conformance check (extension_cpp_testing)."
    return test_conformance


def run_all(spec: OpSpec, checks=None) -> dict[str, list[ConformanceFailure]]:
    """Runs every case that can run here (no pytest needed), in this process;
    returns check -> failures.

    Cases that need a GPU or EXTENSION_CPP_HUGE=1 are left out where they can't run,
    and so are the checks the spec declares as not applying (``OpSpec.skip``).
    """
    failures: dict[str, list[ConformanceFailure]] = {}
    for case in spec.cases():
        if case.skip_reason or (checks is not None and case.check not in checks):
            continue
        try:
            spec.run(case)
        except ConformanceFailure as e:
            failures.setdefault(case.check, []).append(e)
    return failures
