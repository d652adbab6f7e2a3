"""What the checks share: the exceptions a check raises, the Check record
every check module fills in, and the helpers that make a case's arguments
and compare what the op gives with what the reference gives."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Callable

import torch

from ..case import Case
from ..layouts import out_like

if TYPE_CHECKING:
    from ..spec import OpSpec


class Failed(Exception):
    """A check's own finding (as opposed to an error from inside the op).

    ``fix`` replaces the check's usual fix where the finding calls for another.
    ``schema``: found in the op's schema without running it, so it stands
    whatever the op lacks in registrations (registrations.py).
    """

    def __init__(self, what: str, fix: str | None = None, schema: bool = False):
        super().__init__(what)
        self.fix, self.schema = fix, schema


class Accepted(Failed):
    """A finding the OpSpec declares as PyTorch's limitation, not the op's
    bug (``silent_modes``): reported as accepted, never as a failure."""


class SpecError(Exception):
    """The OpSpec, not the op, is wrong for this case: the failure names the
    field to fix."""

    def __init__(self, what: str, field: str, fix: str | None = None):
        super().__init__(what)
        self.field, self.fix = field, fix


@dataclasses.dataclass(frozen=True)
class Check:
    """One check: when it applies (``cases``: the spec's cases on one device),
    how a case runs (``run``, raising on a failure), and the fix shown under
    a failure. ``traces``: it runs the op on fake tensors, so an undeclared
    data-dependent size gets that fix; ``explain``, where given, names a more
    specific fix for an error (or returns None). A registration the op lacks
    (registrations.py) comes before both."""

    cases: Callable[[OpSpec, str], Iterator[Case]]
    run: Callable[[OpSpec, Case], None]
    fix: str
    traces: bool = False
    explain: Callable[[OpSpec, Case, BaseException], str | None] | None = None


def case(spec: OpSpec, check: str, device: str, dtype=None, layout=None, variant=None) -> Case:
    """A case of this spec, with the reason the spec gives for skipping the check."""
    skipped = spec.skip_reason(check, layout, variant)
    return Case(spec.name, check, device, dtype, layout, variant, skipped)


# -- errors and arguments ------------------------------------------------------


def first_lines(e: BaseException, n: int = 6) -> str:
    return "\n    ".join(str(e).strip().splitlines()[:n])


def message(e: BaseException) -> str:
    """The error's first line: what the eager and compiled errors must share."""
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def describe(t) -> str:
    if not isinstance(t, torch.Tensor):
        return repr(t)
    return f"sizes {list(t.shape)}, strides {list(t.stride())}, {t.dtype}, {t.device}"


def layout_of(spec: OpSpec, case: Case) -> str:
    """The layout a case runs on: its own, or the check's usual one."""
    if case.layout is not None:
        return case.layout
    return spec.autodiff_layout if case.check == "autodiff" else spec.base_layout


def fresh_args(spec: OpSpec, case: Case, **kw) -> list:
    args = spec.sample(layout_of(spec, case), case.dtype, case.device, **kw)
    if case.variant and case.variant.startswith("out-"):
        layout = case.variant[len("out-") :]
        for i in spec.out_positions(args):
            args[i] = out_like(args[i], layout)
    return args


def outputs(result) -> list:
    """The op's outputs as a list: one tensor, or each of a tuple's (None included)."""
    return list(result) if isinstance(result, (tuple, list)) else [result]


def differentiable_tensor(a) -> bool:
    """A tensor that can carry a gradient: floating-point or complex."""
    return isinstance(a, torch.Tensor) and (a.is_floating_point() or a.is_complex())


def floating_outputs(result) -> tuple:
    """The op's outputs that can carry a gradient, in order: integer outputs
    (lengths, codes, indices) have no derivative, and PyTorch's gradient
    tools fail on them."""
    return tuple(o for o in outputs(result) if differentiable_tensor(o))


# -- values ------------------------------------------------------------------------


_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def same_bits(x: torch.Tensor, y: torch.Tensor) -> bool:
    """x and y hold the same bits (torch.equal says NaN != NaN)."""
    if x.dtype == torch.bool:
        return torch.equal(x, y)
    bits = _BITS[x.element_size()]
    return torch.equal(x.view(bits), y.view(bits))


def assert_same_values(got, want, *, exact: bool, rtol: float = 0, atol: float = 0) -> None:
    """got equals want within rtol and atol, NaN where want has NaN; where
    exact, bit for bit up to NaN payloads: zero tolerance and the sign of
    every zero, which assert_close does not compare (-0.0 == 0.0)."""
    tolerance = dict(rtol=0, atol=0) if exact else dict(rtol=rtol, atol=atol)
    try:
        torch.testing.assert_close(got, want, equal_nan=True, **tolerance)
    except AssertionError as e:
        example = _first_mismatch(got, want, **tolerance)
        raise AssertionError(f"{example}\n{e}" if example else str(e)) from None
    if exact and isinstance(got, torch.Tensor) and got.is_floating_point():
        zeros = (got == 0) & (want == 0)
        flipped = torch.signbit(got[zeros]) != torch.signbit(want[zeros])
        if flipped.any():
            first = torch.signbit(want[zeros][flipped][0]).item()
            raise AssertionError(
                f"{int(flipped.sum())} zero(s) of the wrong sign, e.g. "
                f"{'-0.0' if not first else '0.0'} where the reference has "
                f"{'-0.0' if first else '0.0'}"
            )


def _first_mismatch(got, want, *, rtol: float, atol: float) -> str | None:
    """The first element where got and want differ, both values shown (NaN
    and infinities included, which assert_close's differences hide), or None
    where the two differ in more than values."""
    if not (isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor)):
        return None
    if (got.shape, got.dtype, got.device) != (want.shape, want.dtype, want.device):
        return None
    if got.is_floating_point() or got.is_complex():
        differ = ~torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        differ = got != want
    where = differ.nonzero()
    if not len(where):
        return None
    index = tuple(where[0].tolist())
    return (
        f"{len(where)} element(s) differ; first at index {list(index)}: "
        f"{got[index].item()}, the reference's {want[index].item()}"
    )


def assert_same_codes(got: torch.Tensor, want: torch.Tensor, *, codes: int, fraction: float):
    """Integer tensors equal but for at most ``fraction`` of their elements,
    each within ``codes`` of the reference's."""
    if (got.shape, got.dtype, got.device) != (want.shape, want.dtype, want.device):
        raise AssertionError(f"{describe(got)}; the reference's is {describe(want)}")
    diff = (got.to(torch.int64) - want.to(torch.int64)).abs()
    differ = int((diff > 0).sum())
    allowed = int(fraction * got.numel())
    worst = int(diff.max()) if got.numel() else 0
    if worst > codes or differ > allowed:
        where = int(diff.flatten().argmax())
        raise AssertionError(
            f"{differ} of {got.numel()} codes differ from the reference's, by up to {worst} "
            f"(the OpSpec allows {allowed}, by up to {codes}); e.g. at flat index {where}: "
            f"{got.flatten()[where].item()}, the reference's {want.flatten()[where].item()}"
        )


def assert_value(spec: OpSpec, got, want) -> None:
    """One output (or argument) equals the reference's as spec promises: bit
    for bit if exact, integer codes within integer_tolerance, else within its
    dtype's tolerance."""
    if got is None or want is None or not isinstance(want, torch.Tensor):
        if got is not want and got != want:
            raise AssertionError(f"{describe(got)}; the reference's is {describe(want)}")
        return
    integer = not (want.dtype.is_floating_point or want.dtype.is_complex)
    if integer and want.dtype != torch.bool and spec.integer_tolerance is not None:
        assert_same_codes(got, want, **spec.integer_tolerance)
        return
    assert_same_values(got, want, exact=spec.exact, **spec.tolerance(want.dtype))


def assert_values(spec: OpSpec, got, want) -> None:
    """Each output equals the reference's (``assert_value``)."""
    got, want = outputs(got), outputs(want)
    if len(got) != len(want):
        raise AssertionError(f"{len(got)} outputs; the reference returns {len(want)}")
    wrong = []
    for i, (g, w) in enumerate(zip(got, want)):
        try:
            assert_value(spec, g, w)
        except AssertionError as e:
            if len(got) == 1:
                wrong.append(str(e))
                continue
            lines = [line for line in str(e).splitlines() if line.strip()]
            wrong.append(f"output {i}: " + "; ".join(lines[:2]))
    if wrong:  # every output that differs, not the first alone
        raise AssertionError("\n".join(wrong))


def assert_effects(spec: OpSpec, got, got_args, want, want_args) -> None:
    """The op's outputs and the arguments it mutates equal the reference's."""
    assert_values(spec, got, want)
    for i in spec.mutated_positions(got_args):
        try:
            assert_value(spec, got_args[i], want_args[i])
        except AssertionError as e:
            raise AssertionError(f"{spec.arg_name(i)} (mutated in place): {e}") from None
