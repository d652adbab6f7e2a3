"""OpSpec: what the harness needs to know about an op, and the cases it makes.

An OpSpec names the op, a reference written with torch ops, and (optionally)
how to build its inputs. ``OpSpec.cases()`` lists one Case per check and
device x dtype x layout (or autodiff mode, or kind of bad input);
``OpSpec.run(case)`` runs one, raising ConformanceFailure on a failure.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .layouts import DTYPES, LAYOUTS, SMALL_LAYOUTS, TOLERANCES, dtype_id, layouts

# Every check, in the order the cases are generated (checks.py defines them).
CHECKS = (
    "results",
    "strides",
    "fake",
    "opcheck",
    "gradcheck",
    "gradgradcheck",
    "autodiff",
    "compile",
    "dynamic",
    "export",
    "cuda_graph",
    "side_stream",
    "bad_input",
    "internal_assert",
    "huge",
)

HAS_CUDA = torch.cuda.is_available()
# Tensors past 2^31 elements: 4 GiB (float16) per check, run only when asked.
HUGE = os.environ.get("EXTENSION_CPP_HUGE") == "1"
HUGE_NUMEL = 2**31 + 2**16

# The layouts gradgradcheck runs on (a few: it is slow).
GRADGRAD_LAYOUTS = ("contiguous", "transposed", "0-dim")
# Sizes of the first dimension that the dynamic-shape check runs through.
DYNAMIC_ROWS = (3, 17, 64, 1000)


class ConformanceFailure(AssertionError):
    """A check failed: ``check``, ``case`` (the test id) and ``fix`` say which and what to do."""

    def __init__(self, check: str, case: str, what: str, fix: str):
        self.check, self.case, self.what, self.fix = check, case, what, fix
        super().__init__(f"[{check}] {case}: {what}\n  fix: {fix}")


@dataclasses.dataclass(frozen=True)
class Case:
    """One generated test: a check on one device, dtype and layout (or variant)."""

    op: str
    check: str
    device: str
    dtype: torch.dtype | None = None
    layout: str | None = None
    # an autodiff mode, a kind of bad input, requires_grad, specials
    variant: str | None = None

    @property
    def id(self) -> str:
        parts = [self.op, self.check, self.device]
        if self.dtype is not None:
            parts.append(dtype_id(self.dtype))
        parts += [p for p in (self.layout, self.variant) if p is not None]
        return "-".join(parts)

    @property
    def skip_reason(self) -> str | None:
        if self.device.startswith("cuda") and not HAS_CUDA:
            return "needs a CUDA GPU"
        if self.check == "huge" and not HUGE:
            return "set EXTENSION_CPP_HUGE=1 to run: a tensor past 2^31 elements (4 GiB)"
        return None


def _resolve_overload(op) -> torch._ops.OpOverload | None:
    if isinstance(op, torch._ops.OpOverload):
        return op
    if isinstance(op, torch._ops.OpOverloadPacket):
        names = op.overloads()
        if names != ["default"]:
            raise ValueError(
                f"OpSpec: {op} has the overloads {names}; pass one of them, e.g. {op}.{names[0]}"
            )
        return op.default
    return None


class _RecordCustomOps(TorchDispatchMode):
    """Records the ops outside aten and prims that a Python function calls."""

    def __init__(self):
        super().__init__()
        self.ops: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace not in ("aten", "prim", "prims") and func not in self.ops:
            self.ops.append(func)
        return func(*args, **(kwargs or {}))


@dataclasses.dataclass
class OpSpec:
    """An op and what it promises, for :func:`extension_cpp.testing.conformance_tests`.

    Args:
        op: an ``OpOverload`` (``torch.ops.ns.name.default``), its packet
            (``torch.ops.ns.name``), or a Python function that calls one with the
            same arguments (like ``extension_cpp.mymul``).
        reference: the same math in torch ops, called with the op's arguments
            (without ``out`` for an out= op) and returning what the op returns (or
            writes into ``out``). The output's sizes and strides must equal the
            reference's; for the autodiff checks it must be differentiable.
        name: the name in test ids; by default the op's.
        arity: how many tensor inputs the default samples make (any number).
        extra_args: arguments after the tensors, e.g. ``(1.25,)`` for a scale.
        out: an out= op: its last argument is written in place and it returns None.
        samples: replaces the default inputs: ``samples(layout, dtype, device, rows)``
            returns the op's arguments; ``rows`` sizes the first dimension (the
            dynamic-shape check varies it), ``layout`` is one of ``layouts``.
        layouts, dtypes, devices: what to run on. CUDA cases are always generated
            and skip only without a GPU.
        exact: the result must equal the reference bit for bit (NaN payloads
            aside): zero tolerance, the sign of every zero, and NaN where the
            reference has NaN. The results check then also runs on inputs
            holding -0.0, 0.0, infinities and NaN (its ``specials`` cases).
        tolerances: dtype -> ``dict(rtol=, atol=)`` where not exact.
        differentiable: run gradcheck and gradgradcheck (default: unless ``out``).
        autodiff: the autodiff modes the op claims (keys of ``autodiff.MODES``).
        bad_inputs: the kinds of bad input to check (default: dtype, shape, device,
            and for out= ops out-overlap and out-internal-overlap).
        huge: run the op once on inputs past 2^31 elements, expanded from one element
            each (when EXTENSION_CPP_HUGE=1; elementwise ops with the default samples).
        checks: run only these checks (default: all).
    """

    op: Callable
    reference: Callable
    name: str | None = None
    arity: int = 2
    extra_args: tuple = ()
    out: bool = False
    samples: Callable[..., tuple] | None = None
    layouts: Sequence[str] = tuple(LAYOUTS)
    dtypes: Sequence[torch.dtype] = DTYPES
    devices: Sequence[str] = ("cpu", "cuda")
    exact: bool = False
    tolerances: dict = dataclasses.field(default_factory=lambda: dict(TOLERANCES))
    differentiable: bool | None = None
    autodiff: Sequence[str] = ("reverse",)
    bad_inputs: Sequence[str] | None = None
    huge: bool = False
    checks: Sequence[str] = CHECKS

    def __post_init__(self):
        unknown = sorted(set(self.checks) - set(CHECKS))
        if unknown:
            raise ValueError(f"OpSpec: unknown checks {unknown}; the checks are {list(CHECKS)}")
        if self.samples is None:
            missing = sorted(set(self.layouts) - set(LAYOUTS))
            if missing:
                raise ValueError(
                    f"OpSpec: unknown layouts {missing}; the default samples know {list(LAYOUTS)}"
                )
        if self.differentiable is None:
            self.differentiable = not self.out
        if self.bad_inputs is None:
            kinds = ["dtype", "shape", "device"] if self.n_tensors >= 2 else ["dtype"]
            if self.out:
                kinds += ["out-overlap", "out-internal-overlap"]
            self.bad_inputs = kinds
        if self.name is None:
            overload = _resolve_overload(self.op)
            self.name = (
                overload._opname if overload is not None else getattr(self.op, "__name__", "op")
            )

    # -- inputs -------------------------------------------------------------

    @property
    def n_tensors(self) -> int:
        """Tensor arguments, out included."""
        return self.arity + (1 if self.out else 0)

    def sample(self, layout: str, dtype, device, rows: int | None = None, small=False) -> list:
        """The op's arguments on one layout (``rows``: the first dimension's size)."""
        if self.samples is not None:
            return list(self.samples(layout, dtype, device, rows or (3 if small else 37)))
        if rows is not None:
            table = layouts(rows, 5, rows)
        else:
            table = SMALL_LAYOUTS if small else LAYOUTS
        tensors = table[layout].make(self.arity, dtype, device)
        args = [*tensors, *self.extra_args]
        if self.out:
            with torch.no_grad():
                shape = self.reference(*args).shape
            args.append(torch.empty(shape, dtype=dtype, device=device))
        return args

    def tensor_positions(self, args) -> list[int]:
        """Where the op's tensor inputs are (out excluded)."""
        last = len(args) - 1 if self.out else len(args)
        return [i for i, a in enumerate(args[:last]) if isinstance(a, torch.Tensor)]

    # -- calling ------------------------------------------------------------

    def call(self, args) -> Any:
        """Runs the op: its result, or for an out= op the out it wrote."""
        result = self.op(*args)
        if self.out:
            if result is not None and result is not args[-1]:
                raise ConformanceFailure(
                    "results",
                    self.name,
                    f"the out= op returned {type(result).__name__}, not None or out itself",
                    "return None (schema `-> ()`) or out itself",
                )
            return args[-1]
        return result

    def expected(self, args) -> torch.Tensor:
        return self.reference(*(args[:-1] if self.out else args))

    def overload(self, args) -> torch._ops.OpOverload:
        """The OpOverload behind ``op``, recorded from a call when op is a function."""
        found = _resolve_overload(self.op)
        if found is not None:
            return found
        with torch.no_grad(), _RecordCustomOps() as recorder:
            self.op(*[a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args])
        if len(recorder.ops) != 1:
            raise ValueError(
                f"OpSpec: {self.name} should call exactly one custom op, but it called "
                f"{[str(o) for o in recorder.ops] or 'none'}; pass the OpOverload as op"
            )
        return recorder.ops[0]

    def tolerance(self, dtype) -> dict:
        return dict(rtol=0, atol=0) if self.exact else self.tolerances[dtype]

    # -- cases --------------------------------------------------------------

    def cases(self) -> list[Case]:
        """Every case of every selected check, CUDA ones included."""
        out: list[Case] = []
        first_float = (
            torch.float32 if torch.float32 in self.dtypes else self.dtypes[-1]
        )  # the dtype of the layout sweeps
        grad_dtype = torch.float64

        def add(check, device, dtype=None, layout=None, variant=None):
            if check in self.checks:
                out.append(Case(self.name, check, device, dtype, layout, variant))

        for device in self.devices:
            cuda = device.startswith("cuda")
            for dtype in self.dtypes:
                for layout in self.layouts:
                    add("results", device, dtype, layout)
                    if self.exact and dtype.is_floating_point:
                        # Bit for bit includes -0.0, infinities and NaN.
                        add("results", device, dtype, layout, "specials")
            for layout in self.layouts:
                add("strides", device, first_float, layout)
                add("fake", device, first_float, layout)
            # opcheck: every layout, with and without requires_grad (autograd
            # and inference graphs differ), then every dtype.
            grad_variants = ("no_grad", "requires_grad") if self.differentiable else ("no_grad",)
            for layout in self.layouts:
                for variant in grad_variants:
                    add("opcheck", device, first_float, layout, variant)
            for dtype in self.dtypes:
                if dtype != first_float and "contiguous" in self.layouts:
                    add("opcheck", device, dtype, "contiguous", grad_variants[-1])
            if self.differentiable:
                for layout in self.layouts:
                    if self.samples is not None or SMALL_LAYOUTS[layout].perturbable:
                        add("gradcheck", device, grad_dtype, layout)
                for layout in GRADGRAD_LAYOUTS:
                    if layout in self.layouts:
                        add("gradgradcheck", device, grad_dtype, layout)
                for mode in self.autodiff:
                    add("autodiff", device, grad_dtype, variant=mode)
            for layout in self.layouts:
                add("compile", device, first_float, layout)
            add("dynamic", device, first_float)
            add("export", device, first_float)
            if cuda:
                add("cuda_graph", device, first_float)
                add("side_stream", device, first_float)
            for kind in self.bad_inputs:
                if kind == "device" and not cuda:
                    continue  # generated under "cuda": one input there, one on the CPU
                add("bad_input", device, variant=kind)
                add("internal_assert", device, variant=kind)
            if self.huge:
                small = min(self.dtypes, key=lambda d: torch.empty((), dtype=d).element_size())
                add("huge", device, small)
        return out

    def run(self, case: Case) -> None:
        """Runs one case; raises ConformanceFailure naming check, case and fix."""
        from .checks import run_check

        run_check(self, case)
