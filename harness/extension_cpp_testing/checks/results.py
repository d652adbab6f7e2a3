"""results and strides: the op's values and the layout of what it returns
or writes, against the reference's."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..case import Case
from ..layouts import copy_args, write_special_values
from .base import (
    Check,
    Failed,
    assert_effects,
    case,
    describe,
    first_lines,
    fresh_args,
    outputs,
    same_bits,
)

if TYPE_CHECKING:
    from ..spec import OpSpec

INPUT_MODIFIED_FIX = (
    "write only the outputs (scratch space of the kernel's own), or mark the argument "
    "Tensor(a!) in the schema if changing it is the op's job"
)


def results_cases(spec: OpSpec, device: str):
    """Every dtype x layout (and with special values, where exact), then an
    out= op's outs in other layouts."""
    for dtype in spec.dtypes:
        for layout in spec.layouts:
            yield case(spec, "results", device, dtype, layout)
            if spec.exact and dtype.is_floating_point:
                # Bit for bit includes -0.0, infinities and NaN.
                yield case(spec, "results", device, dtype, layout, "specials")
    if spec.out:
        for layout, variant in spec.out_layout_cases():
            yield case(spec, "results", device, spec.first_dtype, layout, variant)


def check_results(spec: OpSpec, case: Case) -> None:
    args = fresh_args(spec, case)
    positions = spec.tensor_positions(args)
    if case.variant == "specials":
        write_special_values([args[i] for i in positions])
    mutated = spec.mutated_positions(args)
    kept = [i for i in positions if i not in mutated]
    before = {i: args[i].clone() for i in kept}
    # The reference gets copies, from the inputs as given, should the op
    # change them (the outs' places kept, so that positions match).
    reference_args = copy_args(args)
    want = spec.reference(*spec.inputs_of(reference_args))
    got = spec.call(args)
    try:
        assert_effects(spec, got, args, want, reference_args)
    except AssertionError as e:
        raise Failed(f"result differs from the reference: {first_lines(e)}") from None
    for i in kept:
        if not same_bits(args[i], before[i]):
            declared = (
                "its schema does not mutate"
                if spec.resolved_overload() is not None
                else "OpSpec(mutates=) does not list"
            )
            raise Failed(
                f"the op modified its input {spec.arg_name(i)} (argument {i}), which {declared}",
                fix=INPUT_MODIFIED_FIX,
            )


def strides_cases(spec: OpSpec, device: str):
    for layout in spec.layouts:
        yield case(spec, "strides", device, spec.first_dtype, layout)


def check_strides(spec: OpSpec, case: Case) -> None:
    args = fresh_args(spec, case)
    written = spec.written_positions(args)
    before = {i: (args[i].shape, args[i].stride(), args[i].data_ptr()) for i in written}
    got = spec.call(args)
    for i, (shape, stride, ptr) in before.items():
        if (args[i].shape, args[i].stride(), args[i].data_ptr()) != (shape, stride, ptr):
            raise Failed(
                f"{spec.arg_name(i)} was resized or replaced: sizes {list(shape)}, strides "
                f"{list(stride)} became {describe(args[i])}"
            )
    if spec.out:
        return
    want = spec.expected(args)
    for i, (g, w) in enumerate(zip(outputs(got), outputs(want))):
        if not isinstance(g, torch.Tensor) or not isinstance(w, torch.Tensor):
            continue
        which = f"output {i}" if isinstance(want, tuple) else "output"
        if g.shape != w.shape or g.stride() != w.stride():
            raise Failed(f"{which} has {describe(g)}; the reference's has {describe(w)}")
        if not spec.compare_storage:
            continue
        # A fresh output as dense as the reference's: no offset, no unused memory.
        got_storage = (g.storage_offset(), g.untyped_storage().nbytes())
        want_storage = (w.storage_offset(), w.untyped_storage().nbytes())
        if got_storage != want_storage:
            raise Failed(
                f"{which} has storage offset {got_storage[0]} in {got_storage[1]} bytes; the "
                f"reference's {want_storage[0]} in {want_storage[1]} bytes (declare "
                "compare_storage=False if only the view matters)"
            )


RESULTS = Check(
    results_cases,
    check_results,
    (
        "the kernel disagrees with the reference on this dtype and layout: check its index "
        "math for these strides (offset, broadcast, empty, 0-dim) and that half types are "
        "computed in float; in a -specials case (inputs with -0.0, infinities and NaN), keep "
        "IEEE arithmetic: no shortcut for zeros, no accumulator that starts at +0.0; in an "
        "-out-<layout> case, write out through its strides"
    ),
)
STRIDES = Check(
    strides_cases,
    check_strides,
    (
        "allocate the output as the reference does (for elementwise ops, "
        "torch.empty_like(torch.mul(a, b)): PyTorch's TensorIterator layout rule); an op must "
        "write out (and the arguments it mutates) in place, never resize or replace them"
    ),
)
