"""OpSpec: what the harness needs to know about an op, and the cases it makes.

An OpSpec names the op, a reference written with torch ops, and (optionally)
how to build its inputs and what the op does not promise. ``OpSpec.cases()``
lists one Case per check and device x dtype x layout (or autodiff mode, or
kind of bad input); ``OpSpec.run(case)`` runs one, raising
ConformanceFailure on a failure.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .autodiff import MODES
from .case import Case, ConformanceFailure
from .conformance import CHECKS, run_check
from .layouts import DTYPES, LAYOUTS, OUT_LAYOUTS, ROUNDED_ONCE, SMALL_LAYOUTS, TOLERANCES, layouts

# The layouts gradgradcheck runs on (a few: it is slow).
GRADGRAD_LAYOUTS = ("contiguous", "transposed", "0-dim")


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
            (less the out arguments of an out= op), returning what the op returns
            (or writes into out): a tensor, or a tuple of them (None for an absent
            optional output). The op's outputs must have its sizes and strides;
            for the autodiff checks it must be differentiable. For an op that
            mutates arguments (``mutates``), the reference gets copies of them
            and updates them in place as the op does its own.
        name: the name in test ids; by default the op's.
        arity: how many tensor inputs the default samples make.
        extra_args: arguments after the tensors, e.g. ``(1.25,)`` for a scale.
        out: an out= op: its last argument (or last ``out`` arguments, for an
            int) is written in place, and it returns None or those arguments
            (``Tensor(a!) out -> Tensor(a!)``); keyword-only out arguments are
            passed by name. Its results are also checked with each out in the
            layouts of ``OUT_LAYOUTS`` where its shape allows.
        mutates: the positions of the arguments the op reads and writes in
            place (an optimizer's parameter and state), besides out arguments.
            For an ``OpOverload`` they are read from its schema (``Tensor(a!)``);
            declare them for a Python function. The results check compares each
            with the reference's copy after the call, and every other argument
            must be left unchanged.
        samples: replaces the default inputs: ``samples(layout, dtype, device, rows)``
            returns the op's arguments, ``rows`` sizing the first dimension (the
            dynamic-shape and export checks vary it). Each call draws new values
            in the same shapes (the CUDA graph check replays on a second draw);
            the harness never refills an input with random values, so valid
            indices stay valid. ``layout`` and ``dtype`` are labels that samples
            interprets (an op of int8 inputs and float outputs may take ``dtype``
            as its output dtype).
        layouts, dtypes, devices: what to run on. CUDA cases are always generated
            and skip without a GPU. Integer dtypes (quantized ops) are fine: the
            harness's own inputs never use randn on them.
        exact: the result must equal the reference bit for bit (NaN payloads
            aside), signs of zeros and NaNs included; the results check then also
            runs on inputs holding -0.0, 0.0, infinities and NaN (its ``specials``
            cases).
        rounded_once: the op rounds its result once from the exact value, so in
            float16 and bfloat16 it must equal the reference rounded to the dtype
            (``ROUNDED_ONCE``), where ``TOLERANCES`` allow the one ulp of a double
            rounding.
        tolerances: dtype -> ``dict(rtol=, atol=)`` where not exact.
        integer_tolerance: ``dict(codes=k, fraction=f)``: integer outputs (the
            codes of a quantizer) may differ from the reference's by at most k,
            on at most a fraction f of their elements, so that one reference
            serves devices that round a scale differently. Default: exact.
        differentiable: run the gradient checks (default: unless the op writes
            out or mutates arguments, or no dtype is floating-point).
        grad_args: the positions of the arguments those checks differentiate (and
            opcheck's requires_grad cases mark); default every floating-point
            tensor input. Leave out boxes, coordinates and other inputs the op
            does not differentiate.
        autodiff: the autodiff modes the op claims (keys of ``autodiff.MODES``;
            default: every one): each must give the reference's derivative,
            and every mode left out must raise an error, never return a
            missing or wrong derivative. An op with reverse mode only (a
            backward from ``torch.library.register_autograd``) declares
            ``autodiff=("reverse",)``. gradcheck and gradgradcheck run where
            ``"reverse"`` is claimed.
        dynamic_output: an output's size depends on the input's values (``nms``,
            ``nonzero``; the fake kernel uses
            ``torch.library.get_ctx().new_dynamic_size()``). The fake, opcheck,
            compile and export checks then accept an unbacked size; vmap does not
            apply.
        dynamic_dims: the dimensions the ``export`` check marks dynamic, as
            ``{argument position: {dimension: name}}``; dimensions with one name
            vary together, and ``samples`` must size them alike for any ``rows``.
            Default: dimension 0 of every tensor with one, all named "rows". The
            ``dynamic`` check lets torch.compile find which dimensions vary.
        compare_storage: the strides check also compares each output's storage
            offset and size (default: with the default samples); for an op that
            returns a view of a larger buffer, compare the view only.
        nondeterministic: the op's gradient may differ between runs in its last
            bits (a backward summing with atomic adds): gradcheck and gradgradcheck
            allow it (``nondet_tol``) instead of failing as "not reentrant".
        capturable: the op can be captured in a CUDA graph. With False (an op that
            syncs with the host), the ``cuda_graph`` check asserts that capture
            fails with an error, and cleans up after it.
        same_error_words: the fake kernel and compiled code raise the real
            kernel's exact first line for bad input (default); with False, an
            error in their own words.
        bad_inputs: the kinds of bad input to check: ``dtype`` (the first tensor
            input in a dtype the op does not take), ``shape`` (the last tensor
            one column wider), ``device`` (the last tensor on the CPU, under
            cuda), and for out= ops ``out-overlap`` (out sharing memory with an
            input) and ``out-internal-overlap`` (an expanded out). Default: dtype
            and, with two tensors or more, device; shape too with the default
            samples (with ``samples=`` a wider input may be valid); the out kinds
            for out= ops. A kind followed by an argument's name (``"dtype-absmax"``)
            makes that argument wrong instead.
        huge: run once on inputs past 2^31 elements, expanded from one element
            each (with EXTENSION_CPP_HUGE=1; elementwise ops, default samples).
        checks: run only these checks (default: all).
        skip: ``{check: reason}``: checks that do not apply, the reason shown on
            their skipped cases. Prefer this to leaving a check out of
            ``checks``, which hides it.
    """

    op: Callable
    reference: Callable
    name: str | None = None
    arity: int = 2
    extra_args: tuple = ()
    out: bool | int = False
    mutates: Sequence[int] | None = None
    samples: Callable[..., Sequence] | None = None
    layouts: Sequence[str] = tuple(LAYOUTS)
    dtypes: Sequence[torch.dtype] = DTYPES
    devices: Sequence[str] = ("cpu", "cuda")
    exact: bool = False
    rounded_once: bool = False
    tolerances: dict | None = None
    integer_tolerance: dict | None = None
    differentiable: bool | None = None
    grad_args: Sequence[int] | None = None
    autodiff: Sequence[str] = tuple(MODES)
    dynamic_output: bool = False
    dynamic_dims: dict[int, dict[int, str]] | None = None
    compare_storage: bool | None = None
    capturable: bool = True
    nondeterministic: bool = False
    same_error_words: bool = True
    bad_inputs: Sequence[str] | None = None
    huge: bool = False
    checks: Sequence[str] = tuple(CHECKS)
    skip: dict[str, str] = dataclasses.field(default_factory=dict)
    # The names of keyword-only out arguments, read from the schema once:
    # invoke() runs inside torch.compile, which can't read a schema.
    _out_names: tuple | None = dataclasses.field(default=None, init=False, repr=False)
    # Each argument's name (the schema's, or the function's parameters').
    _arg_names: tuple = dataclasses.field(default=(), init=False, repr=False)

    def __post_init__(self):
        unknown = sorted((set(self.checks) | set(self.skip)) - set(CHECKS))
        if unknown:
            raise ValueError(f"OpSpec: unknown checks {unknown}; the checks are {list(CHECKS)}")
        unknown = sorted(set(self.autodiff) - set(MODES))
        if unknown:
            raise ValueError(f"OpSpec: unknown autodiff modes {unknown}; they are {list(MODES)}")
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
            written = self._schema_mutates(overload)
            if self.mutates is not None and sorted(self.mutates) != written:
                raise ValueError(
                    f"OpSpec: mutates={list(self.mutates)}, but the schema of {overload} "
                    f"writes the arguments {written} (besides out): leave mutates out"
                )
            self.mutates = written
            self._arg_names = tuple(a.name for a in overload._schema.arguments)
        else:
            self.mutates = sorted(self.mutates or ())
            try:
                self._arg_names = tuple(inspect.signature(self.op).parameters)
            except (TypeError, ValueError):
                self._arg_names = ()
        if self.differentiable is None:
            self.differentiable = (
                not self.out and not self.mutates and any(d.is_floating_point for d in self.dtypes)
            )
        if self.compare_storage is None:
            self.compare_storage = self.samples is None
        if self.bad_inputs is None:
            self.bad_inputs = self._default_bad_inputs()
        if self.name is None:
            self.name = (
                overload._opname if overload is not None else getattr(self.op, "__name__", "op")
            )
        if self.out and overload is not None:
            outs = overload._schema.arguments[-self.n_out :]
            if all(a.kwarg_only for a in outs):
                self._out_names = tuple(a.name for a in outs)

    def _schema_mutates(self, overload) -> list[int]:
        """The positions of the arguments the schema writes, out arguments aside."""
        arguments = overload._schema.arguments
        last = len(arguments) - self.n_out
        return [
            i
            for i, a in enumerate(arguments[:last])
            if a.alias_info is not None and a.alias_info.is_write
        ]

    def _default_bad_inputs(self) -> list[str]:
        if self.samples is None:
            kinds = ["dtype", "shape", "device"] if self.n_tensors >= 2 else ["dtype"]
        else:
            # The op's real signature: a wider input may be valid, and inputs
            # on two devices need two tensors.
            kinds = ["dtype"]
            try:
                args = self.sample(self.base_layout, self.first_dtype, "cpu", small=True)
            except Exception:  # noqa: BLE001  (a CUDA-only samples(): decided on the GPU)
                args = None
            if args is None or len(self.tensor_positions(args) + self.out_positions(args)) >= 2:
                kinds.append("device")
        if self.out:
            kinds += ["out-overlap", "out-internal-overlap"]
        return kinds

    # -- inputs -------------------------------------------------------------

    @property
    def n_out(self) -> int:
        """How many out arguments the op writes (0 for a functional op)."""
        return int(self.out)

    @property
    def n_tensors(self) -> int:
        """Tensor arguments of the default samples, out included."""
        return self.arity + self.n_out

    @property
    def base_layout(self) -> str:
        """The layout of single-layout checks (bad input, side stream)."""
        return "contiguous" if "contiguous" in self.layouts else self.layouts[0]

    @property
    def first_dtype(self) -> torch.dtype:
        """The dtype of the layout sweeps: float32 if the op takes it."""
        return torch.float32 if torch.float32 in self.dtypes else self.dtypes[-1]

    @property
    def raises_dtype(self) -> torch.dtype:
        """The dtype an autodiff mode the op does not claim runs in: float64,
        unless the op's samples take floating-point dtypes without it (then
        the widest), so that an error comes from the mode, not the dtype."""
        floating = [d for d in self.dtypes if d.is_floating_point]
        if self.samples is None or torch.float64 in floating or not floating:
            return torch.float64
        return max(floating, key=lambda d: torch.finfo(d).bits)

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
        """Where the out arguments are (the last ``n_out``)."""
        return list(range(len(args) - self.n_out, len(args)))

    def tensor_positions(self, args) -> list[int]:
        """Where the op's tensor inputs are (outs excluded, mutated ones included)."""
        last = len(args) - self.n_out
        return [i for i, a in enumerate(args[:last]) if isinstance(a, torch.Tensor)]

    def mutated_positions(self, args) -> list[int]:
        """Where the tensors the op reads and writes in place are (``mutates``)."""
        return [i for i in self.mutates if i < len(args) and isinstance(args[i], torch.Tensor)]

    def written_positions(self, args) -> list[int]:
        """Every argument the op writes: the mutated ones, then the outs."""
        return self.mutated_positions(args) + self.out_positions(args)

    def grad_positions(self, args) -> list[int]:
        """The inputs the gradient checks differentiate (``grad_args``)."""
        if self.grad_args is not None:
            return list(self.grad_args)
        return [i for i in self.tensor_positions(args) if args[i].is_floating_point()]

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
        return self.reference(*_copies(args[: len(args) - self.n_out]))

    def resolved_overload(self) -> torch._ops.OpOverload | None:
        """The OpOverload when op is one (or a packet of one); None for a function."""
        return _resolve_overload(self.op)

    def overload(self, args) -> torch._ops.OpOverload:
        """The OpOverload behind ``op``, recorded from a call when op is a function."""
        found = _resolve_overload(self.op)
        if found is not None:
            return found
        with torch.no_grad(), _RecordCustomOps() as recorder:
            self.op(*_copies(args))
        if len(recorder.ops) != 1:
            raise ValueError(
                f"OpSpec: {self.name} should call exactly one custom op, but it called "
                f"{[str(o) for o in recorder.ops] or 'none'}; pass the OpOverload as op"
            )
        return recorder.ops[0]

    def tolerance(self, dtype) -> dict:
        """rtol and atol for an output of this dtype: zero where exact or not floating."""
        if self.exact or not (dtype.is_floating_point or dtype.is_complex):
            return dict(rtol=0, atol=0)
        return self.tolerances[dtype]

    # -- cases --------------------------------------------------------------

    def cases(self) -> list[Case]:
        """Every case of every selected check, CUDA ones included."""
        out: list[Case] = []
        first_float = self.first_dtype  # the dtype of the layout sweeps
        grad_dtype = torch.float64
        reverse = self.differentiable and "reverse" in self.autodiff

        def add(check, device, dtype=None, layout=None, variant=None):
            if check in self.checks:
                case = Case(self.name, check, device, dtype, layout, variant, self.skip.get(check))
                out.append(case)

        for device in self.devices:
            cuda = device.startswith("cuda")
            for dtype in self.dtypes:
                for layout in self.layouts:
                    add("results", device, dtype, layout)
                    if self.exact and dtype.is_floating_point:
                        # Bit for bit includes -0.0, infinities and NaN.
                        add("results", device, dtype, layout, "specials")
            if self.out:
                for layout, variant in self._out_layout_cases():
                    add("results", device, first_float, layout, variant)
            for layout in self.layouts:
                add("strides", device, first_float, layout)
                add("fake", device, first_float, layout)
            for dtype in self.dtypes:
                if dtype != first_float:
                    add("fake", device, dtype, self.base_layout)
            # opcheck: every layout, with and without requires_grad (autograd
            # and inference graphs differ), then every dtype.
            grad_variants = ("no_grad", "requires_grad") if reverse else ("no_grad",)
            for layout in self.layouts:
                for variant in grad_variants:
                    add("opcheck", device, first_float, layout, variant)
            for dtype in self.dtypes:
                if dtype != first_float and "contiguous" in self.layouts:
                    add("opcheck", device, dtype, "contiguous", grad_variants[-1])
            if reverse:
                for layout in self.layouts:
                    if self.samples is not None or SMALL_LAYOUTS[layout].perturbable:
                        add("gradcheck", device, grad_dtype, layout)
                for layout in GRADGRAD_LAYOUTS:
                    if layout in self.layouts:
                        add("gradgradcheck", device, grad_dtype, layout)
            if self.differentiable:
                # Every mode: a claimed one gives the reference's derivative
                # (in float64), any other raises (on inputs the op takes).
                for mode in MODES:
                    if mode in self.autodiff:
                        add("autodiff", device, grad_dtype, variant=mode)
                    else:
                        add("autodiff", device, self.raises_dtype, variant=f"{mode}-raises")
            if not self.out and not self.mutates and not self.dynamic_output:
                add("vmap", device, first_float, self.base_layout)
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

    def _out_layout_cases(self) -> list[tuple[str, str]]:
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

    def run(self, case: Case) -> None:
        """Runs one case; raises ConformanceFailure naming check, case and fix."""
        run_check(self, case)


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _copies(args) -> list:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
