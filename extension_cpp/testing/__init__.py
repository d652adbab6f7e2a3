"""The conformance suite as a tool: check any custom op the way this
repository checks its own.

Describe the op in an :class:`OpSpec` (the op, a reference in torch ops, and
optionally how to build its inputs), and :func:`conformance_tests` returns a
pytest test parametrized over every check x device x dtype x layout::

    from extension_cpp.testing import OpSpec, conformance_tests

    test_my_op = conformance_tests(OpSpec(torch.ops.mylib.my_op.default, reference=torch.mul))

Each failure names the check, the case and what to fix. The checks are
listed in :data:`CHECKS`; docs/check_your_op.md walks through them. Load the
pytest plugin (``pytest_plugins = ["extension_cpp.testing.pytest_plugin"]``
in your top-level conftest.py, or ``-p extension_cpp.testing.pytest_plugin``)
for the ``cuda`` and ``huge`` markers and a summary of failures by check.
"""

from __future__ import annotations

from .autodiff import FORWARD_MODES, MODES, REVERSE_MODES
from .checks import FIXES
from .layouts import DTYPES, LAYOUTS, SMALL_LAYOUTS, TOLERANCES, Layout, dtype_id
from .spec import CHECKS, Case, ConformanceFailure, OpSpec

__all__ = [
    "CHECKS",
    "DTYPES",
    "FIXES",
    "FORWARD_MODES",
    "LAYOUTS",
    "MODES",
    "REVERSE_MODES",
    "SMALL_LAYOUTS",
    "TOLERANCES",
    "Case",
    "ConformanceFailure",
    "Layout",
    "OpSpec",
    "conformance_tests",
    "dtype_id",
    "run_all",
]


def conformance_tests(spec: OpSpec):
    """A pytest test function, parametrized over ``spec.cases()``.

    Assign it to a name starting with ``test_`` in a test module. Test ids read
    ``<op>-<check>-<device>-<dtype>-<layout or variant>``; CUDA cases carry the
    ``cuda`` marker and skip without a GPU, the ``huge`` case the ``huge`` marker.
    Select checks with ``-k``, e.g. ``-k "fake or opcheck"``.
    """
    import pytest

    params = []
    for case in spec.cases():
        marks = []
        if case.device.startswith("cuda") or case.variant == "device":
            marks.append(pytest.mark.cuda)
        if case.check == "huge":
            marks.append(pytest.mark.huge)
        if case.skip_reason:
            marks.append(pytest.mark.skip(reason=case.skip_reason))
        params.append(pytest.param(case, id=case.id, marks=marks))

    @pytest.mark.parametrize("case", params)
    def test_conformance(case: Case) -> None:
        spec.run(case)

    test_conformance.__doc__ = f"{spec.name}: every conformance check (extension_cpp.testing)."
    return test_conformance


def run_all(spec: OpSpec, checks=None) -> dict[str, list[ConformanceFailure]]:
    """Runs every case that can run here (no pytest needed); returns check -> failures.

    Cases that need a GPU or EXTENSION_CPP_HUGE=1 are left out where they can't run.
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
