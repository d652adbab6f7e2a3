"""compile, dynamic and export: torch.compile traces the op in one graph
and gives eager's values and strides, with static and dynamic shapes, and
torch.export keeps it as a node that runs again on a new size."""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING

import torch
from torch.fx.experimental import _config as fx_config

from ..case import Case
from ..layouts import copy_args
from .base import Check, Failed, assert_effects, case, describe, first_lines, fresh_args, outputs

if TYPE_CHECKING:
    from ..spec import OpSpec

# Sizes of the first dimension that the dynamic-shape check runs through.
DYNAMIC_ROWS = (3, 17, 64, 1000)


# The sizes the export check traces at, then runs at.
EXPORT_ROWS = (4, 9)


SPECIALISED_INT_FIX = (
    "the schema's {args}: its value follows the input's sizes, and torch.compile and "
    "torch.export specialise an int or int[] argument on its value (a recompile, or a failed "
    "guard, for each new size). Declare {symint} in the schema, so that a size can stay symbolic"
)


DIM_RANGE_FIX = (
    "torch.export found that the op needs a dynamic dimension in a range ({suggested}): "
    "where that range is the op's contract, declare it in the OpSpec, "
    "dynamic_dims={{argument: {{dimension: torch.export.Dim(name, min=..., max=...)}}}}; "
    "if the op should take any size, its fake kernel specialises it (a branch on the size)"
)


def returning(spec: OpSpec):
    """The op as a function that returns its result (out for an out= op)."""

    def f(*args):
        result = spec.invoke(args)
        if not spec.out:
            return result
        outs = [args[i] for i in spec.out_positions(args)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    return f


@contextlib.contextmanager
def dynamo_config(spec: OpSpec):
    """The compilers' settings for the op: a data-dependent output size is
    captured in the graph (as an unbacked size) instead of breaking it; and
    no compiled graph from an earlier run: Inductor's and AOTAutograd's caches
    on disk key a graph on its ops, not on the op's fake kernel, so a graph
    compiled against last run's fake kernel would come back after a fix."""
    dynamo = torch._dynamo.config.patch(
        capture_dynamic_output_shape_ops=spec.dynamic_output,
        capture_scalar_outputs=spec.dynamic_output,
    )
    inductor = torch._inductor.config.patch(fx_graph_cache=False)
    with dynamo, inductor, torch._functorch.config.patch(enable_autograd_cache=False):
        yield


def compile_cases(spec: OpSpec, device: str):
    for layout in spec.layouts:
        yield case(spec, "compile", device, spec.first_dtype, layout)


def dynamic_cases(spec: OpSpec, device: str):
    yield case(spec, "dynamic", device, spec.first_dtype)


def export_cases(spec: OpSpec, device: str):
    yield case(spec, "export", device, spec.first_dtype)


def check_compile(spec: OpSpec, case: Case) -> None:
    args = fresh_args(spec, case)
    eager_args = copy_args(args)
    eager = spec.call(eager_args)
    # Imported here: torch._dynamo.testing takes seconds to import, which a
    # process that runs no compile case (a restarted worker, a reproducer) skips.
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")
    compiled = torch.compile(returning(spec), backend=counter, fullgraph=True)
    with dynamo_config(spec):
        got = compiled(*args)
    if counter.frame_count != 1:
        raise Failed(f"compiled into {counter.frame_count} graphs, expected 1")
    try:
        assert_effects(spec, got, args, eager, eager_args)
    except AssertionError as e:
        raise Failed(f"compiled result differs from eager: {first_lines(e)}") from None
    for g, e in zip(outputs(got), outputs(eager)):
        if isinstance(e, torch.Tensor) and g.stride() != e.stride():
            raise Failed(f"compiled output has {describe(g)}; eager's has {describe(e)}")


def check_dynamic(spec: OpSpec, case: Case) -> None:
    torch._dynamo.reset()
    compiled = torch.compile(returning(spec), dynamic=True, fullgraph=True)
    # Duck sizing would give two dimensions one symbol wherever the first
    # sizes happen to agree (3 rois, 3 channels), and recompile when they part.
    no_duck = fx_config.patch(use_duck_shape=False)
    with dynamo_config(spec), no_duck, torch._dynamo.config.patch(error_on_recompile=True):
        for rows in DYNAMIC_ROWS:
            args = fresh_args(spec, case, rows=rows)
            eager_args = copy_args(args)
            eager = spec.call(eager_args)
            assert_effects(spec, compiled(*args), args, eager, eager_args)


def _export_input(a) -> bool:
    """Whether torch.export takes the argument as an input of the program:
    tensors, and ints and lists of them (whose values it then guards); other
    values (a dtype, a string, None) are constants of the program."""
    if isinstance(a, torch.Tensor) or (isinstance(a, int) and not isinstance(a, bool)):
        return True
    return isinstance(a, (list, tuple)) and all(
        isinstance(x, (int, torch.Tensor)) and not isinstance(x, bool) for x in a
    )


def export_plan(spec: OpSpec, case: Case) -> tuple[list, list, list[int], list]:
    """(args, new, inputs, shapes): the arguments torch.export traces at and
    the program then runs at, the positions it takes as inputs (the others are
    constants of the program), and each input's dynamic shapes as plain data,
    which ``export_shapes`` makes torch.export's."""
    args = fresh_args(spec, case, rows=EXPORT_ROWS[0])
    new = fresh_args(spec, case, rows=EXPORT_ROWS[1])
    inputs = [i for i, a in enumerate(args) if _export_input(a)]
    names = spec.dynamic_dims_of(args)

    def dim(v):
        # A name makes a Dim of any size; a Dim given in the OpSpec keeps its range.
        # (An unbounded max is torch's infinity, not an int.)
        if isinstance(v, str):
            return (v, None, None)
        return (v.__name__, int(v.min), v.max if isinstance(v.max, int) else None)

    def shapes(i):
        a, b = args[i], new[i]
        if isinstance(a, torch.Tensor):
            return {d: dim(v) for d, v in names[i].items()} or None
        # An int that follows rows is dynamic where the schema lets it be
        # (SymInt); torch.export takes no named Dim for an int, only AUTO.
        if isinstance(a, (list, tuple)):
            same = isinstance(b, (list, tuple)) and len(a) == len(b)
            return ["auto" if same and x != y else None for x, y in zip(a, b if same else a)]
        return "auto" if a != b else None

    return args, new, inputs, [shapes(i) for i in inputs]


# A finding's reproducer prints this function's source.
def export_shapes(shapes):
    """torch.export's dynamic_shapes from plain data: a tensor's {dimension:
    (name, min, max)} (min and max None where the name alone is given), "auto"
    for an int that varies, a list of those for a list of ints."""
    dims = {}

    def one(s):
        if isinstance(s, dict):
            return {d: dim(*v) for d, v in s.items()}
        if isinstance(s, list):
            return [one(x) for x in s]
        return torch.export.Dim.AUTO if s == "auto" else None

    def dim(name, lo, hi):
        bounds = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
        return dims.setdefault(name, torch.export.Dim(name, **bounds))

    return (tuple(one(s) for s in shapes),)


def check_export(spec: OpSpec, case: Case) -> None:
    f = returning(spec)
    args, new, inputs, shapes = export_plan(spec, case)
    constants = {i: a for i, a in enumerate(args) if i not in inputs}

    class Wrapper(torch.nn.Module):
        def forward(self, *given):
            full = dict(constants)
            full.update(zip(inputs, given))
            return f(*(full[i] for i in range(len(full))))

    with dynamo_config(spec):
        exported = torch.export.export(
            Wrapper(), tuple(args[i] for i in inputs), dynamic_shapes=export_shapes(shapes)
        )
    overload = spec.overload(args)
    targets = {n.target for n in exported.graph.nodes if n.op == "call_function"}
    if overload not in targets:
        raise Failed(f"{overload} is not a node of the exported graph: {sorted(map(str, targets))}")
    for i, value in constants.items():
        if not _same_constant(new[i], value):
            raise Failed(
                f"samples() gives {spec.arg_name(i)} {value!r} for rows={EXPORT_ROWS[0]} and "
                f"{new[i]!r} for rows={EXPORT_ROWS[1]}: torch.export keeps it as a constant",
                fix="give it one value whatever rows is, or leave export out with "
                "OpSpec(skip={'export': why})",
            )
    eager_args = copy_args(new)
    eager = spec.call(eager_args)
    got = exported.module()(*(new[i] for i in inputs))
    assert_effects(spec, got, new, eager, eager_args)


def _same_constant(x, y) -> bool:
    if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
        return False
    return type(x) is type(y) and x == y


def declared_types(schema) -> list[str]:
    """Each argument's type as the schema declares it ('SymInt[]', 'int[]',
    'Tensor(a!)', ...): the Python binding's Argument.type says int for SymInt."""
    text = str(schema)
    inside = text[text.index("(") + 1 : text.rindex(") ->")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inside):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inside[start:i].strip())
            start = i + 1
    parts.append(inside[start:].strip())
    return [part.split(" ")[0] for part in parts if part and part != "*"]


def _specialised_ints(spec: OpSpec, case: Case) -> str | None:
    """The fix naming the schema's int and int[] arguments (not SymInt) whose
    values follow ``rows``, if there are any: torch.compile and torch.export
    must specialise on them, so new sizes recompile or fail a guard."""
    try:
        samples = [fresh_args(spec, case, rows=rows) for rows in EXPORT_ROWS]
        schema = spec.overload(samples[0])._schema
    except Exception:  # noqa: BLE001  (the check's own error says what went wrong)
        return None
    names = [a.name for a in schema.arguments]
    found = [
        (declared, name)
        for i, (declared, name) in enumerate(zip(declared_types(schema), names))
        if declared.rstrip("?").startswith("int")
        and i < len(samples[0])
        and samples[0][i] != samples[1][i]
    ]
    if not found:
        return None
    args = " and ".join(f"`{declared} {name}`" for declared, name in found)
    symint = " and ".join(f"`SymInt{declared[3:]} {name}`" for declared, name in found)
    return SPECIALISED_INT_FIX.format(args=args, symint=symint)


def explain_dynamic(spec: OpSpec, case: Case, e: BaseException) -> str | None:
    """An int argument that follows the sizes: the schema's to fix."""
    return _specialised_ints(spec, case)


def explain_export(spec: OpSpec, case: Case, e: BaseException) -> str | None:
    """As dynamic's, or a range export needs: the OpSpec's to declare."""
    specialised = _specialised_ints(spec, case)
    if specialised:
        return specialised
    suggested = re.search(r"^.*Dim\([^)]*\b(?:min|max)=.*$", str(e), re.M)
    return DIM_RANGE_FIX.format(suggested=suggested[0].strip()) if suggested else None


COMPILE = Check(
    compile_cases,
    check_compile,
    (
        "torch.compile(fullgraph=True) must trace the op in one graph and return eager's "
        "values and strides: register a fake kernel and keep the Python wrapper traceable"
    ),
    traces=True,
)
DYNAMIC = Check(
    dynamic_cases,
    check_dynamic,
    (
        "with dynamic shapes the op must not specialise on sizes: the fake kernel should "
        "build its output from the inputs' symbolic sizes (no int(), no .item())"
    ),
    traces=True,
    explain=explain_dynamic,
)
EXPORT = Check(
    export_cases,
    check_export,
    (
        "torch.export must keep the op as one node that runs again on new shapes: register a "
        "fake kernel that works with symbolic sizes"
    ),
    traces=True,
    explain=explain_export,
)
