"""OpSpec: what the harness needs to know about an op.

An OpSpec names the op, a reference written with torch ops, and (optionally)
how to build its inputs and what the op does not promise; and it answers
what follows from that (where the outs and the differentiated arguments
are, each layout's arguments, how to call the op). The checks (checks/)
read it to make their cases; suite.py lists and runs them.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .autodiff import MODES
from .case import ConformanceFailure
from .layouts import (
    DTYPES,
    LAYOUTS,
    OUT_LAYOUTS,
    ROUNDED_ONCE,
    SMALL_LAYOUTS,
    TOLERANCES,
    copy_args,
    layouts,
)


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
    """An op and what it promises, for :func:`extension_cpp_testing.conformance_tests`.

    Every declaration defaults to the strictest reading, which suits an
    elementwise op; relax one only where the op's contract says so, with the
    reason next to it.

    Args:
        op: an ``OpOverload`` (``torch.ops.ns.name.default``), its packet
            (``torch.ops.ns.name``), or a Python function that calls one with the
            same arguments (like ``extension_cpp.mymul``).
        reference: the same math in torch ops, called with the op's arguments
            (less out arguments), returning what the op returns or writes into
            out: a tensor or a tuple (None for an absent optional output), with
            the op's sizes and strides, differentiable for the autodiff checks.
            It gets copies of mutated arguments and updates them as the op does.
        name: the name in test ids; by default the op's.
        arity: how many tensor inputs the default samples make.
        extra_args: arguments after the tensors, e.g. ``(1.25,)`` for a scale.
        out: an out= op: its last argument (or last ``out`` arguments, for an
            int) is written in place, and it returns None or those arguments.
            Elsewhere in the signature, name them: ``out=("output",)``, with
            ``samples=`` giving every argument in the op's order. Results are
            also checked with each out in the layouts of ``OUT_LAYOUTS``.
        mutates: the positions of the arguments the op writes in place besides
            out arguments (an optimizer's state). An ``OpOverload``'s come from
            its schema (``Tensor(a!)``); declare them for a Python function, or
            for an op whose schema misses an ``(a!)``: opcheck then fails with
            the schema's bug named. Every other argument must be unchanged.
        samples: replaces the default inputs: ``samples(layout, dtype, device, rows)``
            returns the op's arguments, ``rows`` sizing the first dimension (the
            dynamic-shape and export checks vary it). Each call draws new values
            in the same shapes; the harness never refills an input, so valid
            indices stay valid. ``layout`` and ``dtype`` are labels that samples
            interprets.
        layouts, dtypes, devices: what to run on. CUDA cases skip without a GPU.
        accepted_dtypes: every dtype the op takes, where that is more than the
            ``dtypes`` the checks run on (default: ``dtypes``): the bad-input
            check gives the op a dtype outside it.
        exact: the result must equal the reference bit for bit (NaN payloads
            aside), also on inputs holding -0.0, infinities and NaN.
        rounded_once: the op rounds its result once from the exact value, so in
            float16 and bfloat16 it must equal the reference rounded to the dtype
            (``ROUNDED_ONCE``), where ``TOLERANCES`` allow the one ulp of a double
            rounding.
        tolerances: dtype -> ``dict(rtol=, atol=)`` where not exact.
        integer_tolerance: ``dict(codes=k, fraction=f)``: integer outputs (a
            quantizer's codes) may differ by at most k on a fraction f of their
            elements. Default: exact.
        differentiable: run the gradient checks (default: unless the op writes
            out, mutates, returns nothing or takes no floating dtype). They
            differentiate the floating-point outputs only.
        grad_args: the positions of the arguments those checks differentiate (and
            opcheck's requires_grad cases mark); default every floating-point
            tensor input. Leave out boxes, coordinates and other inputs the op
            does not differentiate. A dict gives them per layout label, ``()``
            for a layout with none (an optional input that is None there):
            that layout gets no gradient cases.
        grad_outputs: the outputs those checks differentiate (default: every
            floating-point one); leave out one with no derivative by design.
        grad_dtype: the dtype of the gradient and autodiff checks: float64 (by
            default, where the op takes it), or float32 for an op without a
            float64 kernel, with tolerances that still catch a wrong sign,
            factor or term (``GRAD_TOLERANCES``), not an error of 1e-4.
        autodiff: the autodiff modes the op claims (keys of ``autodiff.MODES``;
            default: every one): each must give the reference's derivative, and
            every mode left out must raise, never return a missing or wrong
            derivative. gradcheck and gradgradcheck run where ``"reverse"`` is
            claimed.
        silent_modes: autodiff modes that give a zero or missing derivative
            because of a PyTorch limitation, not the op's code:
            ``torch.library.register_autograd`` has no forward mode, so such an
            op declares ``autodiff=("reverse",), silent_modes=FORWARD_MODES``.
            Their cases still run: a zero or missing derivative is accepted (a
            strict xfail, counted in the summary); any other answer fails, as
            does the day the mode raises or gets right.
        dynamic_output: an output's size depends on the input's values (``nms``;
            the fake kernel uses ``get_ctx().new_dynamic_size()``): the checks
            accept an unbacked size; vmap does not apply.
        dynamic_dims: the dimensions the ``export`` check marks dynamic, as
            ``{argument position: {dimension: name}}``; dimensions with one name
            vary together, and ``samples`` must size them alike for any ``rows``.
            A ``torch.export.Dim(name, min=..., max=...)`` in a name's place
            gives the dimension the range the op's contract allows.
            Default: dimension 0 of every tensor with one, all named "rows". The
            ``dynamic`` check lets torch.compile find which dimensions vary.
        compare_storage: the strides check also compares storage offset and
            size (default: with the default samples); False for an op that
            returns a view of a larger buffer.
        nondeterministic: the gradient may differ between runs in its last bits
            (atomic adds): gradcheck allows it (``nondet_tol``).
        capturable: the op can be captured in a CUDA graph. With False (an op
            that syncs with the host), capture must fail with an error.
        same_error_words: the fake kernel and compiled code raise the real
            kernel's exact first line for bad input (default); with False, an
            error in their own words.
        bad_inputs: the kinds of bad input to check: ``dtype`` (the first tensor
            in a dtype the op does not take), ``shape`` (the last tensor a column
            wider; default samples only), ``device`` (the last tensor on the
            CPU), ``out-overlap`` and ``out-internal-overlap``. Default: every
            kind that applies. ``"dtype-absmax"`` makes that argument wrong.
        bad_values: ``{what: make}``: arguments the kernel must refuse (an
            index out of range, a negative length, a rank or shape its contract
            excludes): ``make(args)`` puts one into samples' arguments; the
            kernel must raise, never crash or return.
        huge: run once on inputs past 2^31 elements, expanded from one element
            each (with EXTENSION_CPP_HUGE=1; elementwise ops, default samples).
        imports: what a finding's reproducer imports to register the op
            (default: the packages that registered its Python kernels, and
            the namespace's).
        checks: run only these checks (default: all).
        skip: ``{check: reason}``: checks that do not apply, the reason shown on
            their skipped cases (prefer it to leaving a check out of ``checks``,
            which hides it). ``"check@label"`` skips one layout's or variant's
            cases (``"results@out-non-contiguous"``), ``"opcheck@<test>"`` one
            of opcheck's tests. A derivative unlike the function's by design
            (clipped): skip gradcheck and gradgradcheck, and give the reference
            that derivative, which the autodiff check compares with.
    """

    op: Callable
    reference: Callable
    name: str | None = None
    arity: int = 2
    extra_args: tuple = ()
    out: bool | int | Sequence[str | int] = False
    mutates: Sequence[int] | None = None
    samples: Callable[..., Sequence] | None = None
    layouts: Sequence[str] = tuple(LAYOUTS)
    dtypes: Sequence[torch.dtype] = DTYPES
    accepted_dtypes: Sequence[torch.dtype] | None = None
    devices: Sequence[str] = ("cpu", "cuda")
    exact: bool = False
    rounded_once: bool = False
    tolerances: dict | None = None
    integer_tolerance: dict | None = None
    differentiable: bool | None = None
    grad_args: Sequence[int] | dict[str, Sequence[int]] | None = None
    grad_outputs: Sequence[int] | None = None
    grad_dtype: torch.dtype | None = None
    autodiff: Sequence[str] = tuple(MODES)
    silent_modes: Sequence[str] = ()
    dynamic_output: bool = False
    dynamic_dims: dict[int, dict[int, str | torch.export.Dim]] | None = None
    compare_storage: bool | None = None
    capturable: bool = True
    nondeterministic: bool = False
    same_error_words: bool = True
    bad_inputs: Sequence[str] | None = None
    bad_values: dict[str, Callable[[list], list]] | None = None
    huge: bool = False
    imports: Sequence[str] = ()
    checks: Sequence[str] | None = None
    skip: dict[str, str] = dataclasses.field(default_factory=dict)
    # The names of keyword-only out arguments, read from the schema once:
    # invoke() runs inside torch.compile, which can't read a schema.
    _out_names: tuple | None = dataclasses.field(default=None, init=False, repr=False)
    # Each argument's name (the schema's, or the function's parameters').
    _arg_names: tuple = dataclasses.field(default=(), init=False, repr=False)
    # Where the out arguments are, where out= names them.
    _out_at: tuple | None = dataclasses.field(default=None, init=False, repr=False)
    # The arguments the op writes but its schema does not mark (a!).
    _unmarked: tuple = dataclasses.field(default=(), init=False, repr=False)

    def __post_init__(self):
        for field in ("autodiff", "silent_modes"):
            unknown = sorted(set(getattr(self, field)) - set(MODES))
            if unknown:
                raise ValueError(
                    f"OpSpec: {field} names unknown autodiff modes {unknown}; they are "
                    f"{list(MODES)}"
                )
        both = sorted(set(self.autodiff) & set(self.silent_modes))
        if both:
            raise ValueError(
                f"OpSpec: {both} are in autodiff= (claimed: the derivative must be right) and "
                "in silent_modes= (declared to give none): name each in one of them"
            )
        if self.samples is None:
            missing = sorted(set(self.layouts) - set(LAYOUTS))
            if missing:
                raise ValueError(
                    f"OpSpec: unknown layouts {missing}; the default samples know {list(LAYOUTS)}"
                )
        if self.integer_tolerance is not None:
            self.integer_tolerance = dict(self.integer_tolerance)
            if set(self.integer_tolerance) != {"codes", "fraction"}:
                raise ValueError(
                    "OpSpec: integer_tolerance is dict(codes=k, fraction=f), got "
                    f"{self.integer_tolerance}"
                )
        if self.tolerances is None:
            self.tolerances = dict(ROUNDED_ONCE if self.rounded_once else TOLERANCES)
        overload = _resolve_overload(self.op)
        if overload is not None:
            self._arg_names = tuple(a.name for a in overload._schema.arguments)
        else:
            try:
                self._arg_names = tuple(inspect.signature(self.op).parameters)
            except (TypeError, ValueError):
                self._arg_names = ()
        self._resolve_outs()
        if overload is not None:
            written = self._schema_mutates(overload)
            declared = sorted(self.mutates) if self.mutates is not None else written
            missing = sorted(set(written) - set(declared))
            if missing:
                raise ValueError(
                    f"OpSpec: mutates={declared}, but the schema of {overload} also writes "
                    f"{missing} ({', '.join(self.arg_name(i) for i in missing)}): list every "
                    "argument the schema marks Tensor(a!), or leave mutates out"
                )
            # An argument the op writes (mutates=, or out=) that its schema
            # does not mark (a!) is the schema's bug: the opcheck check names it.
            arguments = overload._schema.arguments
            outs = self.out_positions(arguments) if self.out else []
            marked = [
                i
                for i in outs
                if arguments[i].alias_info is not None and arguments[i].alias_info.is_write
            ]
            writes = set(declared) | set(outs)
            self._unmarked = tuple(sorted(writes - set(written) - set(marked)))
            self.mutates = declared
        else:
            self.mutates = sorted(self.mutates or ())
        if self.differentiable is None:
            returns = overload._schema.returns if overload is not None else None
            self.differentiable = (
                not self.out
                and not self.mutates
                and returns != []
                and any(d.is_floating_point for d in self.dtypes)
            )
        self._check_grad_dtype()
        if self.compare_storage is None:
            self.compare_storage = self.samples is None
        if self.name is None:
            self.name = (
                overload._opname if overload is not None else getattr(self.op, "__name__", "op")
            )
        if self.out and self._out_at is None and overload is not None:
            outs = overload._schema.arguments[-self.n_out :]
            if all(a.kwarg_only for a in outs):
                self._out_names = tuple(a.name for a in outs)

    def _resolve_outs(self) -> None:
        """out= as names or positions: where those arguments are."""
        if not isinstance(self.out, (list, tuple)):
            return
        at = []
        for name in self.out:
            if isinstance(name, int):
                at.append(name)
            elif name in self._arg_names:
                at.append(self._arg_names.index(name))
            else:
                raise ValueError(
                    f"OpSpec: out names {name!r}, which is no argument of the op "
                    f"(its arguments: {list(self._arg_names)})"
                )
        if self.samples is None:
            raise ValueError(
                "OpSpec: out= names the out arguments, so the op's arguments come from "
                "samples=, which must give them in the op's order, outs included"
            )
        self._out_at = tuple(sorted(at))

    def _check_grad_dtype(self) -> None:
        if self.grad_dtype is not None and self.grad_dtype not in (torch.float32, torch.float64):
            raise ValueError(
                f"OpSpec: grad_dtype={self.grad_dtype}: finite differences in a 16-bit type "
                "can't tell a right derivative from a wrong one; the gradient checks run in "
                "float32 or float64 (name one the op takes), or declare differentiable=False"
            )
        if isinstance(self.grad_args, dict) and self.samples is None:
            unknown = sorted(set(self.grad_args) - set(self.layouts))
            if unknown:
                raise ValueError(f"OpSpec: grad_args names unknown layouts {unknown}")

    def _schema_mutates(self, overload) -> list[int]:
        """The positions of the arguments the schema writes, out arguments aside."""
        arguments = overload._schema.arguments
        outs = set(self.out_positions(arguments))
        return [
            i
            for i, a in enumerate(arguments)
            if i not in outs and a.alias_info is not None and a.alias_info.is_write
        ]

    def unmarked_writes(self, overload) -> tuple:
        """The arguments the op writes (``mutates`` and ``out``) that its schema
        does not mark ``Tensor(a!)``: the schema's bug."""
        return self._unmarked if overload is _resolve_overload(self.op) else ()

    # -- inputs -------------------------------------------------------------

    @property
    def n_out(self) -> int:
        """How many out arguments the op writes (0 for a functional op)."""
        return len(self._out_at) if self._out_at is not None else int(self.out)

    @property
    def n_tensors(self) -> int:
        """Tensor arguments of the default samples, out included."""
        return self.arity + self.n_out

    @property
    def base_layout(self) -> str:
        """The layout of single-layout checks (bad input, side stream)."""
        return "contiguous" if "contiguous" in self.layouts else self.layouts[0]

    @property
    def autodiff_layout(self) -> str:
        """The layout of the autodiff cases: the base layout, or the first
        that has an argument to differentiate."""
        if self.differentiates_on(self.base_layout):
            return self.base_layout
        return next(layout for layout in self.layouts if self.differentiates_on(layout))

    @property
    def first_dtype(self) -> torch.dtype:
        """The dtype of the layout sweeps: float32 if the op takes it."""
        return torch.float32 if torch.float32 in self.dtypes else self.dtypes[-1]

    @property
    def gradient_dtype(self) -> torch.dtype:
        """The dtype of the gradient and autodiff checks (``grad_dtype``): by
        default float64, unless the op's samples take floating-point dtypes
        without it (then the widest), so that a failure comes from the
        derivative, not from a dtype the op does not take."""
        if self.grad_dtype is not None:
            return self.grad_dtype
        floating = [d for d in self.accepted if d.is_floating_point]
        if self.samples is None or torch.float64 in floating or not floating:
            return torch.float64
        return max(floating, key=lambda d: torch.finfo(d).bits)

    @property
    def accepted(self) -> tuple:
        """The dtypes the op takes (``accepted_dtypes``, by default ``dtypes``)."""
        return tuple(self.accepted_dtypes if self.accepted_dtypes is not None else self.dtypes)

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
                shapes = [t.shape for t in _as_tuple(self.reference(*args))]
            args += [torch.empty(shape, dtype=dtype, device=device) for shape in shapes]
        return args

    def arg_name(self, i: int) -> str:
        """Argument i by its name in the schema (or the function's signature)."""
        return self._arg_names[i] if i < len(self._arg_names) else f"argument {i}"

    def out_positions(self, args) -> list[int]:
        """Where the out arguments are: those out= names, or the last ``n_out``."""
        if self._out_at is not None:
            return list(self._out_at)
        return list(range(len(args) - self.n_out, len(args)))

    def inputs_of(self, args) -> list:
        """The arguments less the outs: what the reference is called with."""
        outs = set(self.out_positions(args))
        return [a for i, a in enumerate(args) if i not in outs]

    def tensor_positions(self, args) -> list[int]:
        """Where the op's tensor inputs are (outs excluded, mutated ones included)."""
        outs = set(self.out_positions(args))
        return [i for i, a in enumerate(args) if i not in outs and isinstance(a, torch.Tensor)]

    def mutated_positions(self, args) -> list[int]:
        """Where the tensors the op reads and writes in place are (``mutates``)."""
        return [i for i in self.mutates if i < len(args) and isinstance(args[i], torch.Tensor)]

    def written_positions(self, args) -> list[int]:
        """Every argument the op writes: the mutated ones, then the outs."""
        return self.mutated_positions(args) + self.out_positions(args)

    def copied_per_call(self, args, differentiated) -> list[int]:
        """What a gradient check gives each call a fresh copy of: the arguments
        the op writes and the check does not differentiate. A shared out or
        accumulator would carry one call's writes into the next, and finite
        differences would measure those writes, not the derivative."""
        return [i for i in self.written_positions(args) if i not in differentiated]

    def grad_positions(self, args, layout: str | None = None) -> list[int]:
        """The inputs the gradient checks differentiate on this layout
        (``grad_args``: one list, or one per layout)."""
        chosen = self.grad_args
        if isinstance(chosen, dict):
            chosen = chosen.get(layout)
        if chosen is not None:
            return list(chosen)
        return [i for i in self.tensor_positions(args) if args[i].is_floating_point()]

    def differentiates_on(self, layout: str) -> bool:
        """Whether the gradient checks have an argument on this layout:
        ``grad_args`` may give a layout none (an optional input left out)."""
        return not (isinstance(self.grad_args, dict) and self.grad_args.get(layout) == ())

    def dynamic_dims_of(self, args) -> list[dict[int, str]]:
        """{dimension: name} per argument, for the export check."""
        if self.dynamic_dims is not None:
            return [dict(self.dynamic_dims.get(i, {})) for i in range(len(args))]
        return [{0: "rows"} if isinstance(a, torch.Tensor) and a.dim() > 0 else {} for a in args]

    # -- calling ------------------------------------------------------------

    def invoke(self, args) -> Any:
        """Calls the op on args, passing keyword-only out arguments by name."""
        if self._out_names:
            split = len(args) - self.n_out
            return self.op(*args[:split], **dict(zip(self._out_names, args[split:])))
        return self.op(*args)

    def call(self, args) -> Any:
        """Runs the op: its result, or for an out= op the out (or outs) it wrote."""
        result = self.invoke(args)
        if not self.out:
            return result
        outs = [args[i] for i in self.out_positions(args)]
        if result is not None and not all(r is o for r, o in zip(_as_tuple(result), outs)):
            raise ConformanceFailure(
                "results",
                self.name,
                f"the out= op returned {type(result).__name__}, not None or out itself",
                "return None (schema `-> ()`) or out itself (`-> Tensor(a!)`)",
            )
        return outs[0] if len(outs) == 1 else tuple(outs)

    def expected(self, args) -> Any:
        """The reference's result on copies of args (less the outs)."""
        return self.reference(*copy_args(self.inputs_of(args)))

    def resolved_overload(self) -> torch._ops.OpOverload | None:
        """The OpOverload when op is one (or a packet of one); None for a function."""
        return _resolve_overload(self.op)

    def overload(self, args) -> torch._ops.OpOverload:
        """The OpOverload behind ``op``, recorded from a call when op is a function."""
        found = _resolve_overload(self.op)
        if found is not None:
            return found
        with torch.no_grad(), _RecordCustomOps() as recorder:
            self.op(*copy_args(args))
        if len(recorder.ops) != 1:
            raise ValueError(
                f"OpSpec: {self.name} should call exactly one custom op, but it called "
                f"{[str(o) for o in recorder.ops] or 'none'}; pass the OpOverload as op"
            )
        return recorder.ops[0]

    def skip_reason(self, check: str, layout=None, variant=None) -> str | None:
        """Why ``skip`` leaves out this case of check: its ``check@<layout>``
        or ``check@<variant>`` entry, else the check's own."""
        for label in (layout, variant):
            if label is not None and f"{check}@{label}" in self.skip:
                return self.skip[f"{check}@{label}"]
        return self.skip.get(check)

    def tolerance(self, dtype) -> dict:
        """rtol and atol for an output of this dtype: zero where exact or not floating."""
        if self.exact or not (dtype.is_floating_point or dtype.is_complex):
            return dict(rtol=0, atol=0)
        return self.tolerances[dtype]

    # -- cases --------------------------------------------------------------

    def out_layout_cases(self) -> list[tuple[str, str]]:
        """(input layout, "out-<out layout>") for the results check of an out= op:
        each of OUT_LAYOUTS on inputs with as many dimensions as it needs."""
        if self.samples is not None:
            # Custom samples: only the layout that fits any shape.
            return [(self.base_layout, "out-non-contiguous")]
        # The default samples' 2-D inputs, or their 4-D channels_last ones for a
        # channels_last out (as such an out is usually given), whichever of the
        # spec's layouts are chosen.
        inputs = {None: "contiguous", 2: "contiguous", 4: "channels-last"}
        return [(inputs[needs], f"out-{name}") for name, (_, needs) in OUT_LAYOUTS.items()]


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)
