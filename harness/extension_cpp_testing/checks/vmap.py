"""vmap: torch.vmap runs the op through its own batching rule and gives
what one call per sample gives."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..case import Case
from ..layouts import copy_args
from ..registrations import NO_BATCHING_RULE_FIX
from .base import Check, Failed, assert_values, case, first_lines, fresh_args, message, outputs

if TYPE_CHECKING:
    from ..spec import OpSpec

NONE_OUTPUT_UNDER_VMAP_FIX = (
    "the op returns None for an optional output: its batching rule must return None as "
    "that output's out_dims (and None as the output)"
)


def vmap_cases(spec: OpSpec, device: str):
    """One case, on the base layout: not for ops that write arguments or
    return data-dependent sizes."""
    if not spec.out and not spec.mutates and not spec.dynamic_output:
        yield case(spec, "vmap", device, spec.first_dtype, spec.base_layout)


def check_vmap(spec: OpSpec, case: Case) -> None:
    """torch.vmap over three samples: the op's batching rule gives what three
    calls give. PyTorch's fallback (a loop with a performance warning) is
    switched off, so an op without a batching rule fails here."""
    samples = [fresh_args(spec, case, small=True) for _ in range(3)]
    results = [spec.call(copy_args(s)) for s in samples]
    singles = [outputs(r) for r in results]
    positions = spec.tensor_positions(samples[0])
    batched = list(samples[0])
    for i in positions:
        batched[i] = torch.stack([s[i] for s in samples])
    in_dims = tuple(0 if i in positions else None for i in range(len(batched)))
    # An optional output the op leaves out (None) has no batch dimension.
    out_dims = tuple(0 if isinstance(o, torch.Tensor) else None for o in singles[0])
    if not isinstance(results[0], (tuple, list)):
        out_dims = out_dims[0]
    was_enabled = torch._C._functorch._is_vmap_fallback_enabled()
    torch._C._functorch._set_vmap_fallback_enabled(False)
    try:
        got = torch.vmap(lambda *a: spec.invoke(a), in_dims=in_dims, out_dims=out_dims)(*batched)
    except RuntimeError as e:
        if "vmap fallback" not in str(e):
            raise
        raise Failed(f"no batching rule: {message(e)}", fix=NO_BATCHING_RULE_FIX) from None
    except ValueError as e:
        if "NoneType" not in str(e):
            raise
        raise Failed(f"vmap: {message(e)}", fix=NONE_OUTPUT_UNDER_VMAP_FIX) from None
    finally:
        torch._C._functorch._set_vmap_fallback_enabled(was_enabled)
    want = [
        torch.stack([s[k] for s in singles]) if isinstance(singles[0][k], torch.Tensor) else None
        for k in range(len(singles[0]))
    ]
    try:
        assert_values(spec, outputs(got), want)
    except AssertionError as e:
        raise Failed(f"vmap's result differs from one call per sample: {first_lines(e)}") from None


VMAP = Check(
    vmap_cases,
    check_vmap,
    (
        "the op's batching rule (torch.library.register_vmap) must give what one call per "
        "sample gives: move each input's batch dimension where the kernel expects it, and say "
        "where the output's is"
    ),
)
