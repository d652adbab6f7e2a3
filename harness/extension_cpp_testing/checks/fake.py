"""fake: the fake kernel (what torch.compile, torch.export and FakeTensor
run) returns what the real kernel returns, or does to out what it does."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from ..case import Case
from ..layouts import copy_args
from .base import Check, Failed, case, describe, fresh_args, outputs

if TYPE_CHECKING:
    from ..spec import OpSpec

DYNAMIC_OUTPUT_FIX = (
    "the fake kernel made a data-dependent size (torch.library.get_ctx().new_dynamic_size()): "
    "declare OpSpec(dynamic_output=True) so the checks trace it with unbacked sizes"
)


# A finding's reproducer prints this function's source.
def fake_mode(dynamic_output: bool) -> FakeTensorMode:
    """FakeTensor's mode for an op: with a shape environment that takes the
    data-dependent sizes of an op that makes them (OpSpec.dynamic_output)."""
    if not dynamic_output:
        return FakeTensorMode()
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    return FakeTensorMode(shape_env=ShapeEnv(allow_dynamic_output_shape_ops=True))


def fake_call(spec: OpSpec, args):
    """(the fake result, the fake args): the op run on fake copies of args."""
    mode = fake_mode(spec.dynamic_output)
    fake_args = [
        mode.from_tensor(a, static_shapes=True) if isinstance(a, torch.Tensor) else a for a in args
    ]
    with mode:
        return spec.invoke(fake_args), fake_args


def _meta(t: torch.Tensor) -> tuple:
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype, t.device)


def _same_size(fake_size, real_size: int, dynamic: bool) -> bool:
    """A fake size equals the real one, or is unbacked where the op declares
    data-dependent sizes (only the real run knows it)."""
    if isinstance(fake_size, int):
        return fake_size == real_size
    known = fake_size.node.maybe_as_int()
    return known == real_size if known is not None else dynamic


def fake_cases(spec: OpSpec, device: str):
    """Every layout, then every other dtype on the base layout."""
    for layout in spec.layouts:
        yield case(spec, "fake", device, spec.first_dtype, layout)
    for dtype in spec.dtypes:
        if dtype != spec.first_dtype:
            yield case(spec, "fake", device, dtype, spec.base_layout)


def check_fake(spec: OpSpec, case: Case) -> None:
    args = fresh_args(spec, case)
    fake_result, fake_args = fake_call(spec, copy_args(args))
    real_result = spec.invoke(args)
    for i in spec.mutated_positions(args):
        if _meta(fake_args[i]) != _meta(args[i]):
            raise Failed(
                f"the fake kernel left {spec.arg_name(i)} (mutated in place) as "
                f"{describe(fake_args[i])}; the real kernel as {describe(args[i])}"
            )
    if spec.out:
        _check_fake_out(spec, args, real_result, fake_args, fake_result)
        return
    fakes, reals = outputs(fake_result), outputs(real_result)
    if len(fakes) != len(reals):
        raise Failed(f"fake kernel returns {len(fakes)} outputs; the real kernel {len(reals)}")
    for i, (fake, real) in enumerate(zip(fakes, reals)):
        which = f"output {i}: " if len(reals) > 1 else ""
        if (fake is None) != (real is None):
            raise Failed(f"{which}fake kernel gives {describe(fake)}; the real {describe(real)}")
        if real is None:
            continue
        same = (
            fake.dim() == real.dim()
            and (fake.dtype, fake.device) == (real.dtype, real.device)
            and all(_same_size(f, r, spec.dynamic_output) for f, r in zip(fake.shape, real.shape))
            and all(
                _same_size(f, r, spec.dynamic_output) for f, r in zip(fake.stride(), real.stride())
            )
            and _same_size(fake.storage_offset(), real.storage_offset(), spec.dynamic_output)
        )
        if not same:
            raise Failed(f"{which}fake kernel gives {describe(fake)}; the real {describe(real)}")


def _check_fake_out(spec: OpSpec, args, real_result, fake_args, fake_result) -> None:
    """An out= op's fake kernel does to out what the real kernel does: leaves
    its sizes and strides as they are, and returns None or out as it does."""
    for i in spec.out_positions(args):
        if _meta(fake_args[i]) != _meta(args[i]):
            raise Failed(
                f"the fake kernel left out as {describe(fake_args[i])}; the real kernel "
                f"as {describe(args[i])}"
            )
    real_kind = "None" if real_result is None else "out"
    if real_result is None:
        fake_kind = "None" if fake_result is None else f"a tensor ({describe(fake_result)})"
    else:
        fake_outs = {id(fake_args[i]) for i in spec.out_positions(args)}
        fake_kind = (
            "out"
            if all(id(r) in fake_outs for r in outputs(fake_result))
            else "a tensor other than out"
        )
    if fake_kind != real_kind:
        raise Failed(
            f"the fake kernel returns {fake_kind}; the real kernel returns {real_kind}",
            fix="an out= op's fake kernel checks its inputs and returns what the schema "
            "says (None for `-> ()`, out itself for `-> Tensor(a!)`), never a new tensor",
        )


FAKE = Check(
    fake_cases,
    check_fake,
    (
        "make the fake kernel (torch.library.register_fake) return what the real kernel "
        "returns: same sizes, strides, dtype and device, for every input layout and dtype"
    ),
    traces=True,
)
