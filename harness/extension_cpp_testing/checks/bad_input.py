"""bad_input and internal_assert: a wrong dtype, shape or device, or an
out that overlaps an input or itself, raises a clear error, the same in
eager, fake and compiled code, and never an internal assert; and a bad
value the OpSpec declares (bad_values=), the kernel refuses."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..case import Case, slug
from ..layouts import random_tensor
from ..registrations import missing_for_check
from .base import Check, Failed, SpecError, case, message
from .compilers import dynamo_config, returning
from .fake import fake_call

if TYPE_CHECKING:
    from ..spec import OpSpec

# The kinds of bad input, each a way to make one argument wrong.
BAD_INPUT_KINDS = ("dtype", "shape", "device", "out-overlap", "out-internal-overlap")


BAD_VALUE_FIX = (
    "the kernel must check the values the user controls (indices in range, offsets "
    "non-decreasing, lengths non-negative) with TORCH_CHECK, naming the argument and the "
    "value received, before it reads or writes memory by them"
)


ACCEPTED_DTYPE_FIX = (
    "the op took a dtype outside the OpSpec's dtypes: if it takes that dtype by design, "
    "list every dtype it takes in OpSpec(accepted_dtypes=), and the check gives it another; "
    "if not, refuse it with TORCH_CHECK (C++) and torch._check in the fake kernel"
)


def default_kinds(spec: OpSpec) -> list[str]:
    """The kinds of bad input an OpSpec gets where it names none: a wrong
    dtype; inputs on two devices (with two tensors or more); a wrong shape
    with the default samples (with samples=, a wider input may be valid);
    the out kinds for out= ops."""
    if spec.samples is None:
        kinds = ["dtype", "shape", "device"] if spec.n_tensors >= 2 else ["dtype"]
    else:
        kinds = ["dtype"]
        try:
            args = spec.sample(spec.base_layout, spec.first_dtype, "cpu", small=True)
        except Exception:  # noqa: BLE001  (a CUDA-only samples(): decided on the GPU)
            args = None
        if args is None or len(spec.tensor_positions(args) + spec.out_positions(args)) >= 2:
            kinds.append("device")
    if spec.out:
        kinds += ["out-overlap", "out-internal-overlap"]
    return kinds


def kinds_of(spec: OpSpec) -> list[str]:
    """The spec's kinds of bad input, each known and applicable to the op."""
    if spec.bad_inputs is None:
        return default_kinds(spec)
    for kind in spec.bad_inputs:
        known, target = _kind_and_target(spec, kind)
        if known.startswith("out-") and target is None and not spec.out:
            raise ValueError(
                f"OpSpec(bad_inputs=): {kind!r} needs an out argument, and {spec.name} has none "
                f"(declare out=, or name the argument it writes: '{known}-<name>')"
            )
    return list(spec.bad_inputs)


def bad_input_cases(spec: OpSpec, device: str):
    yield from _cases(spec, "bad_input", device)


def internal_assert_cases(spec: OpSpec, device: str):
    yield from _cases(spec, "internal_assert", device)


def _cases(spec: OpSpec, check: str, device: str):
    for kind in kinds_of(spec):
        if kind.startswith("device") and not device.startswith("cuda"):
            continue  # generated under "cuda": one input there, one on the CPU
        yield case(spec, check, device, variant=kind)
    for what in spec.bad_values or {}:
        yield case(spec, check, device, variant=VALUE + slug(what))


# A bad value's variant: "value-" and the slug of the spec's description.
VALUE = "value-"


def case_args(spec: OpSpec, case: Case) -> tuple[list, str]:
    """(fresh arguments with the case's bad input or bad value, what is bad
    in them). A device case has its tensors on the GPU but one."""
    if case.variant.startswith(VALUE):
        what = next(w for w in spec.bad_values if VALUE + slug(w) == case.variant)
        args = spec.sample(spec.base_layout, spec.first_dtype, case.device)
        return list(spec.bad_values[what](args)), what
    device = "cuda" if case.variant.startswith("device") else case.device
    return bad_args(spec, case.variant, device)


def _refuses_bad_value(spec: OpSpec, case: Case) -> None:
    """The kernel refuses the bad value with an error (a crash fails the
    case in its process)."""
    args, what = case_args(spec, case)
    if _error(lambda *a: spec.invoke(a), args) is None:
        raise Failed(f"{what}: the op returned without an error", fix=BAD_VALUE_FIX)


def _bad_value_is_no_internal_assert(spec: OpSpec, case: Case) -> None:
    """The kernel's error for the bad value is TORCH_CHECK's, not an internal
    assert's (no error at all is bad_input's finding)."""
    args, what = case_args(spec, case)
    error = _error(lambda *a: spec.invoke(a), args)
    if error is not None and "INTERNAL ASSERT" in str(error):
        raise Failed(
            f"{what}: a user's bad value is reported as an internal error: {message(error)!r}"
        )


def _wrong_dtype(spec: OpSpec, t: torch.Tensor) -> torch.dtype:
    """A dtype the op does not take (``accepted_dtypes``) for t: an integer
    one for a floating-point input, a floating-point one for an integer
    input, else any other."""
    floating = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
    integer = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
    first = integer + floating if t.is_floating_point() else floating + integer
    candidates = first + (torch.bool, torch.complex64)
    found = [d for d in candidates if d not in spec.accepted and d != t.dtype]
    if not found:
        raise SpecError(
            f"the op takes every dtype the harness knows ({spec.accepted}), so there is no "
            "wrong one to give it",
            "bad_inputs",
            "leave the dtype kind out of bad_inputs, or list the dtypes the op takes in "
            "accepted_dtypes",
        )
    return found[0]


def _kind_and_target(spec: OpSpec, kind: str) -> tuple[str, str | None]:
    """'dtype' -> ('dtype', None); 'dtype-absmax' -> ('dtype', 'absmax'): a kind
    of bad input, and the argument it applies to where the spec names one."""
    for known in sorted(BAD_INPUT_KINDS, key=len, reverse=True):
        if kind == known:
            return known, None
        if kind.startswith(known + "-"):
            return known, kind[len(known) + 1 :]
    raise ValueError(
        f"OpSpec(bad_inputs=): unknown kind of bad input {kind!r}; the kinds are "
        f"{list(BAD_INPUT_KINDS)}"
    )


def bad_args(spec: OpSpec, kind: str, device: str) -> tuple[list, str]:
    """(the op's arguments made wrong in one way, what was changed): kind is
    dtype, shape, device, out-overlap or out-internal-overlap, optionally
    followed by the argument's name ('dtype-absmax')."""
    kind, target = _kind_and_target(spec, kind)
    args = spec.sample(spec.base_layout, spec.first_dtype, device)
    inputs = spec.tensor_positions(args)
    outs = spec.out_positions(args)
    if target is not None:
        chosen = [i for i in inputs + outs if spec.arg_name(i) == target]
        if not chosen:
            raise ValueError(f"bad input {kind}-{target}: the op has no tensor argument {target}")
        i = chosen[0]
    elif kind == "dtype":
        i = inputs[0]
    elif kind in ("shape", "device"):
        i = (inputs + outs)[-1]
    else:
        i = outs[0]
    name, old = spec.arg_name(i), args[i]
    if kind == "dtype":
        args[i] = old.to(_wrong_dtype(spec, old))
        what = f"{name} became {args[i].dtype} (from {old.dtype})"
    elif kind == "shape":
        args[i] = random_tensor((*old.shape[:-1], old.shape[-1] + 1), old.dtype, device)
        what = f"{name} became sizes {list(args[i].shape)} (from {list(old.shape)})"
    elif kind == "device":
        args[i] = old.cpu()
        what = f"{name} moved to the CPU (the other tensors on {device})"
    elif kind == "out-overlap":
        j = next((k for k in inputs if args[k].dtype == old.dtype), inputs[0])
        args[j], args[i] = _overlapping(args[j], old)
        what = f"{name} became a view into {spec.arg_name(j)}'s memory, one element in"
    else:
        args[i] = torch.empty(1, *old.shape[1:], dtype=old.dtype, device=device).expand(old.shape)
        what = f"{name} became an expanded view (strides {list(args[i].stride())})"
    return args, what


def _overlapping(x: torch.Tensor, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, out) with x's values and out's dtype and shape, in one buffer: out
    starts one element of out into x's memory, so the two overlap in part."""
    x_bytes = x.numel() * x.element_size()
    out_bytes = out.numel() * out.element_size()
    step = out.element_size()
    buffer = torch.empty(max(x_bytes, step + out_bytes), dtype=torch.uint8, device=x.device)
    x_view = buffer[:x_bytes].view(x.dtype).view(x.shape)
    x_view.copy_(x)
    out_view = buffer[step : step + out_bytes].view(out.dtype).view(out.shape)
    return x_view, out_view


def _error(fn, args) -> BaseException | None:
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001  (the error is what is checked)
        return e
    return None


def _compiled_error(spec: OpSpec, args):
    torch._dynamo.reset()
    compiled = torch.compile(returning(spec), backend="aot_eager", fullgraph=True)
    with dynamo_config(spec):
        return _error(compiled, args)


def check_bad_input(spec: OpSpec, case: Case) -> None:
    if case.variant.startswith(VALUE):
        _refuses_bad_value(spec, case)
        return
    # Fresh arguments for each call: a copy would lose the aliasing of the
    # out-overlap cases.
    args, what = case_args(spec, case)
    eager = _error(lambda *a: spec.invoke(a), args)
    if eager is None:
        fix = ACCEPTED_DTYPE_FIX if case.variant.startswith("dtype") else None
        raise Failed(f"{what}: the op accepted it without an error", fix=fix)
    if not isinstance(eager, (RuntimeError, ValueError, TypeError)):
        raise Failed(f"{what}: the op raised {type(eager).__name__}, not a RuntimeError")
    said = message(eager)
    # What the fake kernel and compiled code get wrong is the fake kernel's,
    # or, where the op has none the dispatcher can find, its missing.
    overload = spec.resolved_overload()
    lacking = missing_for_check(overload, "fake") if overload is not None else None
    fake_fix = lacking.fix if lacking is not None else None
    fake = _error(lambda *a: fake_call(spec, a), case_args(spec, case)[0])
    if fake is None:
        raise Failed(
            f"{what}: the fake kernel accepted it, where the real kernel raises {said!r}",
            fix=fake_fix,
        )
    if spec.same_error_words and said not in str(fake):
        raise Failed(
            f"{what}: the fake kernel's error {message(fake)!r} is not the real kernel's {said!r}",
            fix=fake_fix,
        )
    compiled = _compiled_error(spec, case_args(spec, case)[0])
    words = said if spec.same_error_words else ""
    if compiled is None or words not in str(compiled):
        got = "no error" if compiled is None else repr(message(compiled))
        raise Failed(f"{what}: compiled code raised {got}; eager raised {said!r}", fix=fake_fix)


def check_internal_assert(spec: OpSpec, case: Case) -> None:
    if case.variant.startswith(VALUE):
        _bad_value_is_no_internal_assert(spec, case)
        return
    args, what = case_args(spec, case)
    for where, error in (
        ("eager", _error(lambda *a: spec.invoke(a), args)),
        ("compiled", _compiled_error(spec, case_args(spec, case)[0])),
    ):
        # No error at all is bad_input's finding, not a second one here.
        if error is not None and "INTERNAL ASSERT" in str(error):
            raise Failed(
                f"{what} ({where}): a user's bad input is reported as an internal "
                f"error: {message(error)!r}"
            )


BAD_INPUT = Check(
    bad_input_cases,
    check_bad_input,
    (
        "check what the user controls with TORCH_CHECK (C++) and the same words with "
        "torch._check in the fake kernel, naming the argument and what was received"
    ),
    traces=True,
)
INTERNAL_ASSERT = Check(
    internal_assert_cases,
    check_internal_assert,
    (
        "TORCH_INTERNAL_ASSERT is for bugs in the op; a user's bad input must raise "
        "TORCH_CHECK's error instead"
    ),
)
