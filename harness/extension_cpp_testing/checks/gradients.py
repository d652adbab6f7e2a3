"""gradcheck, gradgradcheck and autodiff: the op's derivatives against
finite differences, and in every autodiff mode against the reference's
(a mode the op does not claim must raise)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import torch
from torch.autograd import gradcheck, gradgradcheck
from torch.autograd.gradcheck import GradcheckError
from torch.utils import _pytree as pytree

from ..autodiff import MODES
from ..case import Case
from ..layouts import SMALL_LAYOUTS, copy_arg
from ..registrations import NO_AUTOGRAD_FIX
from .base import (
    Accepted,
    Check,
    Failed,
    SpecError,
    case,
    differentiable_tensor,
    first_lines,
    floating_outputs,
    fresh_args,
    layout_of,
    message,
    outputs,
)

if TYPE_CHECKING:
    from ..spec import OpSpec

# The layouts gradgradcheck runs on (a few: it is slow).
GRADGRAD_LAYOUTS = ("contiguous", "transposed", "0-dim")

# Gradient checks by dtype: finite differences (gradcheck's eps, atol and
# rtol), and how far the op's derivative in an autodiff mode may be from the
# reference's. In float64 a wrong formula is off by many orders more than
# rounding. In float32 the central differences' rounding error is about
# eps_float32 / eps (1e-4) and the truncation error eps^2 (1e-6): a derivative
# wrong by a sign, a factor or a term is still off by far more than 1e-3,
# but one wrong by a relative 1e-4 is not seen.
GRAD_TOLERANCES = {
    torch.float64: dict(eps=1e-6, atol=1e-5, rtol=1e-3),
    torch.float32: dict(eps=1e-3, atol=1e-3, rtol=1e-3),
}


AUTODIFF_TOLERANCES = {
    torch.float64: dict(rtol=1e-10, atol=1e-12),
    torch.float32: dict(rtol=1e-4, atol=1e-5),
}


AUTODIFF_TOLERANCE = AUTODIFF_TOLERANCES[torch.float64]


# The errors that say the op's output has no autograd history: no derivative
# is registered.
NOT_DIFFERENTIATED = (
    "does not require grad and does not have a grad_fn",
    "at least one output tensor that requires grad",
    # autograd's fallback for an op with no Autograd kernel: a warning, and a
    # zero gradient (an error where warnings are)
    "an autograd kernel was not registered",
)


# gradgradcheck's Jacobian mismatch (gradcheck's is its check's own fix).
JACOBIAN_MISMATCH_FIX = (
    "the backward's own derivative disagrees with finite differences: the backward is "
    "differentiable, but its formula is wrong for some inputs (a factor, a term), or an op it "
    "calls has a wrong backward"
)


# A mode declared silent that raised, or gave the derivative: the declaration
# no longer describes the op.
SILENT_MODE_GONE_FIX = "drop the mode from silent_modes (and claim it in autodiff= if it is right)"
RAISED_UNDER_GRADCHECK_FIX = (
    "the op or its backward raised on the gradient checks' inputs ({dtype}, small layouts): "
    "where the op has no kernel for this dtype, name one it has in OpSpec(grad_dtype=); "
    "otherwise the error is the op's, on inputs it takes"
)
NOT_REENTRANT_FIX = (
    "the backward gives different results on two runs with the same inputs: make it "
    "deterministic, or declare OpSpec(nondeterministic=True) if it sums with atomic adds"
)


UNCLAIMED_MODE_FIX = (
    "an autodiff mode the op does not claim must raise, never return a missing or zero "
    "derivative: give the op the formula (a jvp for forward modes, an autograd.Function "
    "with setup_context for torch.func) and claim the mode in OpSpec(autodiff=), or make it "
    "raise. torch.library.register_autograd drops forward-mode tangents without an error: "
    "apply an autograd.Function with a jvp in the op's public function (docs: "
    "check_your_op), or declare the mode in OpSpec(silent_modes=) as PyTorch's limitation"
)


CLAIM_THE_MODE_FIX = (
    "the op gives the reference's derivative in this mode: claim it, "
    "OpSpec(autodiff=(..., {mode!r}))"
)


SILENT_MODE_FIX = (
    "declared in OpSpec(silent_modes=): torch.library.register_autograd gives no "
    "forward-mode derivative and no error. To make the mode right, apply an "
    "autograd.Function with a jvp in the op's public function (docs: check_your_op)"
)


# -- when they apply ---------------------------------------------------------------


def reverse_mode(spec: OpSpec) -> bool:
    """Whether the op claims reverse mode (gradcheck, gradgradcheck and
    opcheck's requires_grad cases run then)."""
    return bool(spec.differentiable) and "reverse" in spec.autodiff


def differentiated_layouts(spec: OpSpec) -> list[str]:
    """The layouts with an argument to differentiate (grad_args)."""
    return [layout for layout in spec.layouts if spec.differentiates_on(layout)]


def grad_variants(spec: OpSpec, dtype, layout: str) -> tuple[str, ...]:
    """opcheck's variants: requires_grad too where a gradient can flow, a
    floating-point dtype and an argument to differentiate on this layout."""
    if reverse_mode(spec) and dtype.is_floating_point and spec.differentiates_on(layout):
        return ("no_grad", "requires_grad")
    return ("no_grad",)


def gradcheck_cases(spec: OpSpec, device: str):
    if reverse_mode(spec):
        for layout in differentiated_layouts(spec):
            if spec.samples is not None or SMALL_LAYOUTS[layout].perturbable:
                yield case(spec, "gradcheck", device, spec.gradient_dtype, layout)


def gradgradcheck_cases(spec: OpSpec, device: str):
    if reverse_mode(spec):
        for layout in GRADGRAD_LAYOUTS:
            if layout in differentiated_layouts(spec):
                yield case(spec, "gradgradcheck", device, spec.gradient_dtype, layout)


def autodiff_cases(spec: OpSpec, device: str):
    """Every mode: a claimed one gives the reference's derivative, a silent
    one (PyTorch's limitation, declared) a zero or missing one, any other
    raises (on inputs the op takes)."""
    if not spec.differentiable or not differentiated_layouts(spec):
        return
    for mode in MODES:
        if mode in spec.autodiff:
            variant = mode
        elif mode in spec.silent_modes:
            variant = f"{mode}-silent"
        else:
            variant = f"{mode}-raises"
        yield case(spec, "autodiff", device, spec.gradient_dtype, variant=variant)


# -- how they run ------------------------------------------------------------------


def gradient_positions(spec: OpSpec, case: Case, args) -> list[int]:
    """The positions of the arguments the gradient checks differentiate in
    this sample: those grad_args names that are floating-point tensors."""
    chosen = spec.grad_positions(args, layout_of(spec, case))
    positions = [i for i in chosen if differentiable_tensor(args[i])]
    if not positions:
        raise SpecError(
            f"no argument to differentiate in this sample: grad_args gives {chosen}, and "
            "none is a floating-point tensor here (declare the layout's own, or () for none)",
            "grad_args",
        )
    return positions


def gradient_args(spec: OpSpec, case: Case) -> list:
    """The sample the gradient checks differentiate: small, as they are slow."""
    return fresh_args(spec, case, small=True)


def differentiable_call(spec: OpSpec, case: Case, args=None):
    """(f, ref, xs): f(*xs) calls the op with the tensors xs in the places of its
    differentiable arguments, the others as sampled (or as given in args)."""
    args = gradient_args(spec, case) if args is None else args
    positions = gradient_positions(spec, case, args)
    written = spec.copied_per_call(args, positions)

    def with_xs(fn):
        def call(*xs):
            full = list(args)
            for i in written:
                full[i] = copy_arg(args[i])
            for i, x in zip(positions, xs):
                full[i] = x
            return fn(*full)

        return call

    xs = [args[i].detach().requires_grad_() for i in positions]
    return with_xs(lambda *a: spec.invoke(a)), with_xs(spec.reference), xs


def differentiated_outputs(spec: OpSpec, result) -> tuple:
    """The outputs the gradient checks differentiate: the floating-point ones
    of those ``grad_outputs`` names (by default, all)."""
    found = outputs(result)
    if spec.grad_outputs is not None:
        if any(not 0 <= i < len(found) for i in spec.grad_outputs):
            raise SpecError(
                f"grad_outputs names outputs {list(spec.grad_outputs)}, and the op returns "
                f"{len(found)}",
                "grad_outputs",
            )
        found = tuple(found[i] for i in spec.grad_outputs)
    return floating_outputs(found)


def _floating_function(spec: OpSpec, f, xs):
    """f, returning the outputs to differentiate only (a tuple), after a call
    that shows it has one."""
    with torch.no_grad():
        if not differentiated_outputs(spec, f(*[x.detach() for x in xs])):
            raise SpecError(
                "the op returns no floating-point tensor here, so it has no derivative to check",
                "differentiable",
                "declare OpSpec(differentiable=False)",
            )
    return lambda *x: differentiated_outputs(spec, f(*x))


def gradcheck_tolerances(spec: OpSpec, case: Case) -> dict:
    """gradcheck's eps, atol and rtol for the case's dtype, and how far two
    runs of the backward may differ (nondet_tol, float64): none, or for an op
    that declares nondeterministic=True, atomic adds' reordering."""
    return dict(GRAD_TOLERANCES[case.dtype], nondet_tol=1e-10 if spec.nondeterministic else 0.0)


def check_gradcheck(spec: OpSpec, case: Case) -> None:
    _run_gradcheck(spec, case, gradcheck, fast_mode=False)


def check_gradgradcheck(spec: OpSpec, case: Case) -> None:
    _run_gradcheck(spec, case, gradgradcheck)


def _run_gradcheck(spec: OpSpec, case: Case, tool, **kw) -> None:
    """gradcheck or gradgradcheck on the op's floating-point outputs, with
    the tolerances of the case's dtype; each kind of error gets its fix."""
    f, _, xs = differentiable_call(spec, case)
    # Warnings are recorded, not printed: autograd's warning that the op
    # has no Autograd kernel says why a Jacobian is zero.
    with warnings.catch_warnings(record=True) as caught:
        # Its advice to check in float64: float32 is the OpSpec's choice
        # (grad_dtype), with tolerances to match (GRAD_TOLERANCES).
        warnings.filterwarnings("ignore", "Input #\\d+ requires gradient and is not a double")
        try:
            f = _floating_function(spec, f, xs)
            tool(f, tuple(xs), **gradcheck_tolerances(spec, case), **kw)
        except (SpecError, Failed):
            raise
        except GradcheckError as e:
            mismatch = "Jacobian mismatch" in str(e)
            fix = JACOBIAN_MISMATCH_FIX if mismatch and tool is gradgradcheck else None
            if "not reentrant" in str(e):
                fix = NOT_REENTRANT_FIX
            if any(w in str(c.message) for c in caught for w in NOT_DIFFERENTIATED):
                fix = NO_AUTOGRAD_FIX
            raise Failed(f"GradcheckError: {first_lines(e)}", fix=fix) from None
        except Exception as e:  # noqa: BLE001  (each kind of error gets its fix)
            what = f"{type(e).__name__}: {first_lines(e)}"
            if any(words in str(e) for words in NOT_DIFFERENTIATED):
                raise Failed(what, fix=NO_AUTOGRAD_FIX) from None
            raise Failed(what, fix=RAISED_UNDER_GRADCHECK_FIX.format(dtype=case.dtype)) from None


def joined_differentiated_outputs(spec: OpSpec, fn):
    """fn, returning the outputs to differentiate only (one tensor: the autodiff
    modes differentiate one), flattened and joined where there are several."""

    def call(*xs):
        found = differentiated_outputs(spec, fn(*xs))
        return found[0] if len(found) == 1 else torch.cat([o.flatten() for o in found])

    return call


def tangents(xs) -> list:
    """Tangents (or cotangents) shaped like xs, the same on every run."""
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(x.shape, generator=gen, dtype=x.dtype).to(x.device) for x in xs]


def autodiff_mode(case: Case) -> str:
    """The mode an autodiff case runs (its variant, less -raises or -silent)."""
    return case.variant.removesuffix("-raises").removesuffix("-silent")


def check_autodiff(spec: OpSpec, case: Case) -> None:
    """A claimed mode gives the reference's derivative; a mode the op does not
    claim (variant ``<mode>-raises``) raises; a mode declared silent
    (``<mode>-silent``, OpSpec.silent_modes) gives what PyTorch's limitation
    makes it give, a zero or missing derivative, and nothing else."""
    mode = autodiff_mode(case)
    f, ref, xs = differentiable_call(spec, case)
    _floating_function(spec, f, xs)
    f, ref = joined_differentiated_outputs(spec, f), joined_differentiated_outputs(spec, ref)
    xs = [x.detach() for x in xs]
    ts = tangents(xs)
    run = MODES[mode]
    if case.variant.endswith("-silent"):
        _check_silent(spec, mode, lambda: run(f, xs, ts), lambda: run(ref, xs, ts))
        return
    if mode not in spec.autodiff:
        _check_raises(spec, mode, lambda: run(f, xs, ts), lambda: run(ref, xs, ts))
        return
    got = run(f, xs, ts)
    want = run(ref, xs, ts)
    if any(leaf is None for leaf in _leaves(got)):
        raise Failed(f"{mode} gave None (a missing tangent), not the derivative")
    try:
        torch.testing.assert_close(got, want, **AUTODIFF_TOLERANCES[case.dtype])
    except AssertionError as e:
        raise Failed(f"{mode} differs from the reference's: {first_lines(e)}") from None


def _leaves(result) -> list:
    return pytree.tree_leaves(result, is_leaf=lambda x: x is None)


def _run_recording_warnings(run):
    """(run()'s result or None, its error or None, the op's own warnings).
    Warnings are recorded, not raised: a mode that only warns and returns an
    answer is as silent as one that does not warn."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got, error = run(), None
        except Exception as e:  # noqa: BLE001  (the error is what is judged)
            got, error = None, e
    # The op's own warnings, not torch's notices of deprecated APIs.
    notices = (DeprecationWarning, FutureWarning)
    return got, error, [w for w in caught if not issubclass(w.category, notices)]


def _what_it_gave(spec: OpSpec, got, reference) -> tuple[str, str]:
    """(what a mode returned, said against the reference's derivative: one
    of "missing", "reference", "zeros", "other"; and those words)."""
    try:
        want = reference()
    except Exception:  # noqa: BLE001  (a reference that has no such derivative: say what the op gave)
        want = None
    leaves, wanted = _leaves(got), _leaves(want) if want is not None else None
    if any(leaf is None for leaf in leaves):
        return "missing", "None where a derivative belongs (a missing tangent)"
    if wanted is not None and _close(leaves, wanted):
        return "reference", "the reference's derivative"
    if wanted is not None and all(
        not g.any() for g, w in zip(leaves, wanted) if not _close([g], [w])
    ):
        return "zeros", "zeros where the reference's derivative is not zero"
    return "other", "a derivative that differs from the reference's"


def _check_raises(spec: OpSpec, mode: str, run, reference) -> None:
    """run() must raise."""
    got, error, warned = _run_recording_warnings(run)
    if error is not None:
        return
    kind, what = _what_it_gave(spec, got, reference)
    fix = CLAIM_THE_MODE_FIX.format(mode=mode) if kind == "reference" else UNCLAIMED_MODE_FIX
    said = f" (warning: {message(warned[0].message)})" if warned else ""
    raise Failed(
        f"{mode}: a mode the OpSpec does not claim (autodiff=), so it must raise; it returned "
        f"{what}{said}",
        fix=fix,
    )


def _check_silent(spec: OpSpec, mode: str, run, reference) -> None:
    """A mode in OpSpec.silent_modes: it may return a zero or missing
    derivative (PyTorch's limitation, declared), which is reported as
    accepted. Raising, or the reference's derivative, passes: the case is a
    strict expected failure, so it then says the declaration can go. Any
    other answer is the op's failure."""
    got, error, _ = _run_recording_warnings(run)
    if error is not None:
        return
    kind, what = _what_it_gave(spec, got, reference)
    if kind == "reference":
        return
    if kind in ("missing", "zeros"):
        raise Accepted(
            f"{mode} returned {what}: PyTorch's limitation, accepted by OpSpec(silent_modes=)",
            fix=SILENT_MODE_FIX,
        )
    raise Failed(
        f"{mode} (declared silent: OpSpec(silent_modes=)) returned {what}: not a zero or "
        "missing derivative, so not the declared limitation",
        fix=AUTODIFF.fix,
    )


def _close(got: list, want: list) -> bool:
    """got equals want: to AUTODIFF_TOLERANCE in float64, to 1e-3 in a narrower dtype."""
    float64 = all(w.dtype == torch.float64 for w in want if isinstance(w, torch.Tensor))
    tolerance = AUTODIFF_TOLERANCE if float64 else dict(rtol=1e-3, atol=1e-5)
    try:
        torch.testing.assert_close(got, want, **tolerance)
    except (AssertionError, TypeError, ValueError):
        return False
    return True


GRADCHECK = Check(
    gradcheck_cases,
    check_gradcheck,
    (
        "the backward disagrees with finite differences: fix the derivative formula (sign, "
        "which input it multiplies, a missing term or factor)"
    ),
)
GRADGRADCHECK = Check(
    gradgradcheck_cases,
    check_gradgradcheck,
    (
        "the backward must itself be differentiable: build it from differentiable ops (the op "
        "itself, or torch ops), not from raw kernels"
    ),
)
AUTODIFF = Check(
    autodiff_cases,
    check_autodiff,
    (
        "the op claims this autodiff mode but gives another answer than the reference's: give "
        "it the formula it needs (setup_context/backward for reverse modes, jvp for forward "
        "modes) or stop claiming the mode"
    ),
)
