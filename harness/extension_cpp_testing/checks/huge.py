"""huge: past 2^31 elements, every element of the output is written (with
OpSpec(huge=True), when EXTENSION_CPP_HUGE=1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..case import HUGE_NUMEL, Case
from .base import Check, Failed, assert_values, case

if TYPE_CHECKING:
    from ..spec import OpSpec


def huge_cases(spec: OpSpec, device: str):
    """One case, in the op's narrowest dtype."""
    if spec.huge:
        small = min(spec.dtypes, key=lambda d: torch.empty((), dtype=d).element_size())
        yield case(spec, "huge", device, small)


def check_huge(spec: OpSpec, case: Case) -> None:
    """Inputs of HUGE_NUMEL elements, expanded from one element each (no memory
    but the output's): every element, the last ones included, must be written."""
    dtype, device = case.dtype, case.device
    scalars = [torch.randn(1, dtype=dtype, device=device) for _ in range(spec.arity)]
    args = [s.expand(HUGE_NUMEL) for s in scalars] + list(spec.extra_args)
    if spec.out:
        args.append(torch.full((HUGE_NUMEL,), float("nan"), dtype=dtype, device=device))
    want = spec.reference(*scalars, *spec.extra_args)[0]
    got = spec.call(args)
    for index in (0, 2**31 - 1, 2**31, HUGE_NUMEL - 1):
        try:
            assert_values(spec, got[index], want)
        except AssertionError:
            raise Failed(
                f"element {index} is {got[index].item()}, expected {want.item()}"
            ) from None


HUGE = Check(
    huge_cases,
    check_huge,
    (
        "index with int64_t (sizes, strides, loop counters): an int element count overflows "
        "past 2^31 elements"
    ),
)
