"""opcheck: torch.library.opcheck's tests of the op's registration (schema,
autograd registration, fake tensor, AOT dispatch), with and without
requires_grad."""

from __future__ import annotations

import functools
import inspect
import re
import warnings
from typing import TYPE_CHECKING

import torch

from ..case import Case
from ..layouts import copy_args
from .base import (
    Check,
    Failed,
    case,
    differentiable_tensor,
    first_lines,
    floating_outputs,
    fresh_args,
    layout_of,
    outputs,
)
from .gradients import grad_variants

if TYPE_CHECKING:
    from ..spec import OpSpec

UNMARKED_WRITE_FIX = (
    "the schema must say what the op writes: mark the argument Tensor(a!) (in Python, "
    "custom_op's mutates_args), or torch.compile and functionalization assume it unchanged"
)


OPCHECK_UTILS = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_aot_dispatch_static",
    "test_aot_dispatch_dynamic",
)


def _aot_autograd_check():
    """opcheck's AOT test, with fresh copies of the inputs for each of its
    runs where this torch offers them (as opcheck's own call does; older
    releases reuse the inputs, which a functional op leaves as they are).
    Imported when first used: it imports torch._dynamo, which takes seconds,
    and a process that runs no opcheck case (a restarted worker) skips that."""
    from torch.testing._internal.optests.aot_autograd import aot_autograd_check

    if "copy_inputs" in inspect.signature(aot_autograd_check).parameters:
        return functools.partial(aot_autograd_check, copy_inputs=True)
    return aot_autograd_check


# The AOT tests of opcheck, which sum every output to differentiate it.
AOT_DISPATCH = {"test_aot_dispatch_static": False, "test_aot_dispatch_dynamic": True}


def opcheck_cases(spec: OpSpec, device: str):
    """Every layout, with and without requires_grad (autograd and inference
    graphs differ), then every other dtype on the contiguous layout."""
    for layout in spec.layouts:
        for variant in grad_variants(spec, spec.first_dtype, layout):
            yield case(spec, "opcheck", device, spec.first_dtype, layout, variant)
    for dtype in spec.dtypes:
        if dtype != spec.first_dtype and "contiguous" in spec.layouts:
            variant = grad_variants(spec, dtype, "contiguous")[-1]
            yield case(spec, "opcheck", device, dtype, "contiguous", variant)


def _with_grad(spec: OpSpec, case: Case, args) -> list:
    grad = set(spec.grad_positions(args, layout_of(spec, case)))
    return [
        a.detach().requires_grad_() if i in grad and differentiable_tensor(a) else a
        for i, a in enumerate(args)
    ]


def check_opcheck(spec: OpSpec, case: Case) -> None:
    args = fresh_args(spec, case)
    overload = spec.overload(args)
    unmarked = spec.unmarked_writes(overload)
    if unmarked:
        names = ", ".join(spec.arg_name(i) for i in unmarked)
        raise Failed(
            f"the op writes {names} (OpSpec(out=) or mutates=), but its schema "
            f"{overload._schema} does not mark it Tensor(a!)",
            fix=UNMARKED_WRITE_FIX,
            schema=True,
        )
    if case.variant == "requires_grad":
        args = _with_grad(spec, case, args)
    utils = tuple(u for u in OPCHECK_UTILS if f"opcheck@{u}" not in spec.skip)
    if spec.dynamic_output:
        # A data-dependent size can't be traced with static shapes: torch.library's
        # own opcheck leaves test_aot_dispatch_static out by default.
        utils = tuple(u for u in utils if u != "test_aot_dispatch_static")
    aot_own = ()
    if case.variant == "requires_grad":
        with torch.no_grad():
            result = spec.invoke(copy_args(args))
        if len(floating_outputs(result)) != len([o for o in outputs(result) if o is not None]):
            # opcheck's AOT tests add every output into one sum, which fails
            # on an integer output before a floating-point one ("result type
            # Float can't be cast to ... Long"): the same tests on the
            # floating-point outputs alone.
            aot_own = tuple(u for u in utils if u in AOT_DISPATCH)
            utils = tuple(u for u in utils if u not in AOT_DISPATCH)
    with warnings.catch_warnings():
        # opcheck's test_aot_dispatch_static reads .grad of non-leaf tensors it
        # makes itself (torch/testing/_internal/optests/aot_autograd.py).
        warnings.filterwarnings("ignore", "The .grad attribute of a Tensor that is not a leaf")
        try:
            torch.library.opcheck(overload, tuple(args), test_utils=utils)
        except Exception as e:
            raise Failed(_opcheck_said(e)) from None
        for util in aot_own:
            try:
                _aot_autograd_check()(
                    lambda *a: floating_outputs(overload(*a)),
                    tuple(args),
                    {},
                    AOT_DISPATCH[util],
                    check_gradients="auto",
                )
            except Exception as e:  # noqa: BLE001  (reported as opcheck's, by test name)
                raise Failed(
                    f"opcheck's {util}, on the floating-point outputs: "
                    f"{type(e).__name__}: {first_lines(e)}"
                ) from None


def _opcheck_said(e: BaseException) -> str:
    """What opcheck's error says, less its wrapper: the failed test's name
    and the error it met. (Its own message ends "scroll up for stack trace",
    and the report shows no trace to scroll to.)"""
    test = re.match(r"opcheck\(op, \.\.\.\): (\w+) failed", str(e))
    cause = e.__cause__ if test is not None and e.__cause__ is not None else e
    where = f"opcheck's {test.group(1)}: " if test is not None else ""
    return f"{where}{type(cause).__name__}: {first_lines(cause)}"


OPCHECK = Check(
    opcheck_cases,
    check_opcheck,
    (
        "torch.library.opcheck names the failing test: test_schema -> mark every argument the "
        "op writes as Tensor(a!) in the schema; test_autograd_registration -> register a "
        "backward (torch.library.register_autograd) or a C++ autograd kernel; test_faketensor "
        "-> fix the fake kernel; test_aot_dispatch_* -> the op must not alias or mutate what "
        "its schema does not say"
    ),
    traces=True,
)
