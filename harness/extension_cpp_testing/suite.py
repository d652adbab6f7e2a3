"""The table of checks put to work on one OpSpec: ``cases(spec)`` lists its
cases, ``run_case(spec, case)`` runs one in this process, raising a
ConformanceFailure that names the check, the case and what to fix.

Whatever goes wrong in a case (a wrong value, a graph break, an exception
from deep inside torch) reaches the user that way. Each case seeds the RNG
from its id, so a rerun, alone or in any order, draws the same inputs.
"""

from __future__ import annotations

import contextlib
import logging
import zlib
from typing import TYPE_CHECKING

import torch
from torch._subclasses.fake_tensor import DynamicOutputShapeException

from . import reproducers
from .case import AcceptedLimitation, Case, ConformanceFailure
from .checks import CHECKS
from .checks.base import Accepted, Failed, SpecError, first_lines
from .checks.cuda import stream_kept
from .checks.fake import DYNAMIC_OUTPUT_FIX
from .checks.opcheck import OPCHECK_UTILS
from .registrations import Missing, missing_for_check

if TYPE_CHECKING:
    from .spec import OpSpec


def cases(spec: OpSpec) -> list[Case]:
    """Every case of every check the spec selects (``checks``), on each of
    its devices, CUDA ones included (they skip without a GPU)."""
    chosen = list(CHECKS) if spec.checks is None else list(spec.checks)
    skipped = {key.split("@", 1)[0] for key in spec.skip}
    unknown = sorted((set(chosen) | skipped) - set(CHECKS))
    if unknown:
        raise ValueError(
            f"OpSpec: checks and skip name unknown checks {unknown}; the checks are {list(CHECKS)}"
        )
    found = [
        case
        for device in spec.devices
        for name, check in CHECKS.items()
        if name in chosen
        for case in check.cases(spec, device)
    ]
    _check_skip_labels(spec, chosen, found)
    return found


def _check_skip_labels(spec: OpSpec, chosen: list[str], found: list[Case]) -> None:
    """Each ``check@label`` of OpSpec.skip names a layout or variant of some
    case of that check (or, for opcheck, one of its tests)."""
    labels: dict[str, set[str]] = {"opcheck": set(OPCHECK_UTILS)}
    for case in found:
        labels.setdefault(case.check, set()).update(
            label for label in (case.layout, case.variant) if label is not None
        )
    for key in spec.skip:
        check, _, label = key.partition("@")
        if label and check in chosen and label not in labels.get(check, ()):
            raise ValueError(
                f"OpSpec(skip=): {key!r} matches no case of {check}; its layouts and "
                f"variants here are {sorted(labels.get(check, ()))}"
            )


def run_case(spec: OpSpec, case: Case) -> None:
    """Runs one case here; raises ConformanceFailure (or AcceptedLimitation,
    for a limitation the spec declares) naming check, case and fix, after
    writing the finding's reproducer where asked (reproducers.py)."""
    try:
        _run_case(spec, case)
    except AcceptedLimitation:
        raise
    except ConformanceFailure as failure:
        reproducers.maybe_write(spec, case, failure)
        raise


def _run_case(spec: OpSpec, case: Case) -> None:
    check = CHECKS[case.check]
    torch.manual_seed(zlib.crc32(case.id.encode()))
    try:
        with stream_kept(case), _trace_log_kept_to_torch():
            check.run(spec, case)
    except ConformanceFailure:
        raise
    except Accepted as e:
        raise AcceptedLimitation(case.check, case.id, str(e), e.fix) from None
    except SpecError as e:
        fix = f"fix OpSpec({e.field}=...)" + (f": {e.fix}" if e.fix else "")
        raise ConformanceFailure(case.check, case.id, f"the OpSpec: {e}", fix) from None
    except Failed as e:
        lacking = None if e.schema else _lacking(spec, case)
        fix = lacking.fix if lacking is not None else e.fix or check.fix
        raise ConformanceFailure(case.check, case.id, str(e), fix) from None
    except Exception as e:  # noqa: BLE001  (reported as this check's failure)
        what = f"{type(e).__name__}: {first_lines(e)}"
        raise ConformanceFailure(case.check, case.id, what, _fix_for(spec, case, e)) from e


def _lacking(spec: OpSpec, case: Case) -> Missing | None:
    """The registration the op lacks that the case's check needs, asked of
    the dispatcher (registrations.py): it explains any failure of the check.
    None where the op is a function (its wrapper may supply what the op
    lacks) or has what the check needs."""
    overload = spec.resolved_overload()
    return missing_for_check(overload, case.check) if overload is not None else None


def _fix_for(spec: OpSpec, case: Case, e: BaseException) -> str:
    """The fix for an error from inside torch: a missing registration's,
    where the dispatcher shows one; else the check's own explanation of the
    error where it has one, an undeclared data-dependent size's where the
    check traces the op, or the check's fix."""
    lacking = _lacking(spec, case)
    if lacking is not None:
        return lacking.fix
    check = CHECKS[case.check]
    specific = check.explain(spec, case, e) if check.explain is not None else None
    if specific:
        return specific
    if check.traces and isinstance(e, DynamicOutputShapeException) and not spec.dynamic_output:
        return DYNAMIC_OUTPUT_FIX
    return check.fix


@contextlib.contextmanager
def _trace_log_kept_to_torch():
    """torch's structured trace log (``torch.__trace``, the TORCH_TRACE files)
    logs an empty DEBUG record for each step of a compile. It does not
    propagate, and pytest's log capture attaches itself to every logger that
    does not, so a failed case would show dozens of blank DEBUG lines. The
    handlers that are the root logger's (pytest's) are taken off it while a
    case runs; torch's own handler stays."""
    trace = logging.getLogger("torch.__trace")
    root = logging.getLogger().handlers
    copied = [h for h in trace.handlers if h in root]
    for handler in copied:
        trace.removeHandler(handler)
    try:
        yield
    finally:
        for handler in copied:
            trace.addHandler(handler)
