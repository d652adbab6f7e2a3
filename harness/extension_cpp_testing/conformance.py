"""The conformance checks: one table, CHECKS, of what each check runs and its fix.

Each check takes an OpSpec and a Case and raises on a failure. ``run_check``
wraps every check so that whatever goes wrong (a wrong value, a graph break,
an exception from deep inside torch) reaches the user as a ConformanceFailure
that names the check, the case, and what to fix.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import warnings
import zlib
from typing import TYPE_CHECKING, Callable

import torch
from torch._dynamo.testing import CompileCounterWithBackend
from torch._subclasses.fake_tensor import DynamicOutputShapeException, FakeTensorMode
from torch.autograd import gradcheck, gradgradcheck
from torch.autograd.gradcheck import GradcheckError
from torch.fx.experimental import _config as fx_config
from torch.testing._internal.optests.aot_autograd import aot_autograd_check
from torch.utils import _pytree as pytree

from .autodiff import MODES
from .case import HUGE_NUMEL, AcceptedLimitation, Case, ConformanceFailure
from .layouts import copy_args, out_like, random_tensor, write_special_values

if TYPE_CHECKING:
    from .spec import OpSpec

# Sizes of the first dimension that the dynamic-shape check runs through.
DYNAMIC_ROWS = (3, 17, 64, 1000)
# The sizes the export check traces at, then runs at.
EXPORT_ROWS = (4, 9)


class Failed(Exception):
    """A check's own finding (as opposed to an error from inside the op).

    ``fix`` replaces the check's usual fix where the finding calls for another.
    """

    def __init__(self, what: str, fix: str | None = None):
        super().__init__(what)
        self.fix = fix


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
    """One check: the function that runs a case, and what to do when it fails."""

    run: Callable[[OpSpec, Case], None]
    fix: str


def run_check(spec: OpSpec, case: Case) -> None:
    check = CHECKS[case.check]
    # The case's own seed: a rerun, alone or in any order, draws the same inputs.
    torch.manual_seed(zlib.crc32(case.id.encode()))
    try:
        with _current_stream_kept(case), _trace_log_kept_to_torch():
            check.run(spec, case)
    except ConformanceFailure:
        raise
    except Accepted as e:
        raise AcceptedLimitation(case.check, case.id, str(e), e.fix) from None
    except SpecError as e:
        fix = f"fix OpSpec({e.field}=...)" + (f": {e.fix}" if e.fix else "")
        raise ConformanceFailure(case.check, case.id, f"the OpSpec: {e}", fix) from None
    except Failed as e:
        fix = e.fix or _fix_for(spec, case, e)
        raise ConformanceFailure(case.check, case.id, str(e), fix) from None
    except Exception as e:  # noqa: BLE001  (reported as this check's failure)
        what = f"{type(e).__name__}: {_first_lines(e)}"
        raise ConformanceFailure(case.check, case.id, what, _fix_for(spec, case, e)) from e


@contextlib.contextmanager
def _trace_log_kept_to_torch():
    """torch's structured trace log (``torch.__trace``, the TORCH_TRACE files)
    logs an empty DEBUG record for each step of a compile. It does not
    propagate, and pytest's log capture attaches itself to every logger that
    does not, so a failed case would show dozens of blank DEBUG lines. The
    handlers that are the root logger's (pytest's) are taken off it while a
    case runs; torch's own handler stays."""
    trace = logging.getLogger("torch.__trace")
    root = logging.getLogger().handlers
    copied = [h for h in trace.handlers if h in root]
    for handler in copied:
        trace.removeHandler(handler)
    try:
        yield
    finally:
        for handler in copied:
            trace.addHandler(handler)


@contextlib.contextmanager
def _current_stream_kept(case: Case):
    """Fails a CUDA case that leaves another stream current than it found.
    The stream is set back either way: every later case in the process would
    run on it, and an op that launches on the legacy default stream would
    then race with its own work there and fail checks that have nothing to do
    with the cause."""
    if case.device != "cuda":
        yield
        return
    stream = torch.cuda.current_stream()
    try:
        yield
    finally:
        left = torch.cuda.current_stream()
        torch.cuda.set_stream(stream)
    if left != stream:
        raise Failed(
            f"the call left another CUDA stream current: {left}, not {stream}",
            fix=STREAM_LEFT_CURRENT_FIX,
        )


# What to do when the op has no fake kernel at all, whichever check meets it.
NO_FAKE_KERNEL_FIX = (
    "the op has no fake kernel, and torch.compile, torch.export and FakeTensor need one: "
    "register it (torch.library.register_fake in Python, or a Meta kernel in C++) "
    "returning an empty output of the right sizes, strides and dtype"
)
DYNAMIC_OUTPUT_FIX = (
    "the fake kernel made a data-dependent size (torch.library.get_ctx().new_dynamic_size()): "
    "declare OpSpec(dynamic_output=True) so the checks trace it with unbacked sizes"
)
INPUT_MODIFIED_FIX = (
    "write only the outputs (scratch space of the kernel's own), or mark the argument "
    "Tensor(a!) in the schema if changing it is the op's job"
)
STREAM_LEFT_CURRENT_FIX = (
    "set a stream only for a scope (c10::cuda::CUDAStreamGuard in C++, a "
    "`with torch.cuda.stream(...)` block in Python), so that the caller's stream is current "
    "again when the op returns"
)
NO_BATCHING_RULE_FIX = (
    "register one (torch.library.register_vmap, or a FuncTorchBatched kernel in C++); "
    "without it torch.vmap and torch.func run the op once per sample with only a warning"
)
NONE_OUTPUT_UNDER_VMAP_FIX = (
    "the op returns None for an optional output: its batching rule must return None as "
    "that output's out_dims (and None as the output)"
)
UNCLAIMED_MODE_FIX = (
    "an autodiff mode the op does not claim must raise, never return a missing or zero "
    "derivative: give the op the formula (a jvp for forward modes, an autograd.Function "
    "with setup_context for torch.func) and claim the mode in OpSpec(autodiff=), or make it "
    "raise. torch.library.register_autograd drops forward-mode tangents without an error; "
    "an autograd.Function without jvp, registered as the op's Autograd kernel, raises"
)
CLAIM_THE_MODE_FIX = (
    "the op gives the reference's derivative in this mode: claim it, "
    "OpSpec(autodiff=(..., {mode!r}))"
)
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
UNMARKED_WRITE_FIX = (
    "the schema must say what the op writes: mark the argument Tensor(a!) (in Python, "
    "custom_op's mutates_args), or torch.compile and functionalization assume it unchanged"
)
# The errors that say the op's output has no autograd history: no derivative
# is registered.
NOT_DIFFERENTIATED = (
    "does not require grad and does not have a grad_fn",
    "at least one output tensor that requires grad",
)
NO_DERIVATIVE_FIX = (
    "the op's outputs carry no gradient: register a backward "
    "(torch.library.register_autograd, or a C++ autograd kernel), or declare "
    "OpSpec(differentiable=False) if the op has no derivative"
)
# gradgradcheck's Jacobian mismatch (gradcheck's is its check's own fix).
JACOBIAN_MISMATCH_FIX = (
    "the backward's own derivative disagrees with finite differences: the backward is "
    "differentiable, but its formula is wrong for some inputs (a factor, a term), or an op it "
    "calls has a wrong backward"
)
NOT_REENTRANT_FIX = (
    "the backward gives different results on two runs with the same inputs: make it "
    "deterministic, or declare OpSpec(nondeterministic=True) if it sums with atomic adds"
)
SILENT_MODE_FIX = (
    "declared in OpSpec(silent_modes=): torch.library.register_autograd gives no "
    "forward-mode derivative and no error. To make the mode right, apply an "
    "autograd.Function with a jvp in the op's public function (docs: check_your_op)"
)
CRASH_FIX = (
    "the kernel crashed the process instead of raising: run the case alone in this process "
    "(EXTENSION_CPP_TESTING_ISOLATE=0 pytest -k '<case>') under gdb or a sanitizer build, "
    "and check what the user controls with TORCH_CHECK, which raises"
)
# The checks that run the op on fake tensors.
_NEEDS_FAKE = {"fake", "opcheck", "compile", "dynamic", "export", "bad_input"}


def _fix_for(spec: OpSpec, case: Case, e: BaseException) -> str:
    """The fix for an error from inside torch: the check's, unless the error
    comes from a missing fake kernel, an undeclared data-dependent size, or an
    int argument that follows the input's sizes."""
    if case.check in ("dynamic", "export"):
        specialised = _specialised_ints(spec, case)
        if specialised:
            return specialised
    if case.check == "export":
        suggested = re.search(r"^.*Dim\([^)]*\b(?:min|max)=.*$", str(e), re.M)
        if suggested:
            return DIM_RANGE_FIX.format(suggested=suggested[0].strip())
    if case.check in _NEEDS_FAKE:
        if isinstance(e, DynamicOutputShapeException) and not spec.dynamic_output:
            return DYNAMIC_OUTPUT_FIX
        overload = spec.resolved_overload()
        if overload is not None and not has_fake_kernel(overload):
            return NO_FAKE_KERNEL_FIX
    return CHECKS[case.check].fix


def has_fake_kernel(overload: torch._ops.OpOverload) -> bool:
    """Whether the op has a fake kernel: a Meta kernel (C++, or Python through
    torch.library.register_fake) or a composite one that decomposes it."""
    name = overload.name()
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    if any(has(name, key) for key in ("Meta", "CompositeImplicitAutograd")):
        return True
    entry = torch._library.simple_registry.singleton.find(name.split(".")[0])
    return entry.fake_impl.kernel is not None


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
        samples = [_fresh_args(spec, case, rows=rows) for rows in EXPORT_ROWS]
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


def _first_lines(e: BaseException, n: int = 6) -> str:
    return "\n    ".join(str(e).strip().splitlines()[:n])


def _message(e: BaseException) -> str:
    """The error's first line: what the eager and compiled errors must share."""
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _describe(t) -> str:
    if not isinstance(t, torch.Tensor):
        return repr(t)
    return f"sizes {list(t.shape)}, strides {list(t.stride())}, {t.dtype}, {t.device}"


def _layout(spec: OpSpec, case: Case) -> str:
    """The layout a case runs on: its own, or the check's usual one."""
    if case.layout is not None:
        return case.layout
    return spec.autodiff_layout if case.check == "autodiff" else spec.base_layout


def _fresh_args(spec: OpSpec, case: Case, **kw) -> list:
    args = spec.sample(_layout(spec, case), case.dtype, case.device, **kw)
    if case.variant and case.variant.startswith("out-"):
        layout = case.variant[len("out-") :]
        for i in spec.out_positions(args):
            args[i] = out_like(args[i], layout)
    return args


def outputs(result) -> list:
    """The op's outputs as a list: one tensor, or each of a tuple's (None included)."""
    return list(result) if isinstance(result, (tuple, list)) else [result]


# -- values and layout --------------------------------------------------------


_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _same_bits(x: torch.Tensor, y: torch.Tensor) -> bool:
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
    torch.testing.assert_close(got, want, equal_nan=True, **tolerance)
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


def assert_same_codes(got: torch.Tensor, want: torch.Tensor, *, codes: int, fraction: float):
    """Integer tensors equal but for at most ``fraction`` of their elements,
    each within ``codes`` of the reference's."""
    if (got.shape, got.dtype, got.device) != (want.shape, want.dtype, want.device):
        raise AssertionError(f"{_describe(got)}; the reference's is {_describe(want)}")
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
            raise AssertionError(f"{_describe(got)}; the reference's is {_describe(want)}")
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
    for i, (g, w) in enumerate(zip(got, want)):
        prefix = f"output {i}: " if len(got) > 1 else ""
        try:
            assert_value(spec, g, w)
        except AssertionError as e:
            raise AssertionError(f"{prefix}{e}") from None


def assert_effects(spec: OpSpec, got, got_args, want, want_args) -> None:
    """The op's outputs and the arguments it mutates equal the reference's."""
    assert_values(spec, got, want)
    for i in spec.mutated_positions(got_args):
        try:
            assert_value(spec, got_args[i], want_args[i])
        except AssertionError as e:
            raise AssertionError(f"{spec.arg_name(i)} (mutated in place): {e}") from None


def check_results(spec: OpSpec, case: Case) -> None:
    args = _fresh_args(spec, case)
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
        raise Failed(f"result differs from the reference: {_first_lines(e)}") from None
    for i in kept:
        if not _same_bits(args[i], before[i]):
            declared = (
                "its schema does not mutate"
                if spec.resolved_overload() is not None
                else "OpSpec(mutates=) does not list"
            )
            raise Failed(
                f"the op modified its input {spec.arg_name(i)} (argument {i}), which {declared}",
                fix=INPUT_MODIFIED_FIX,
            )


def check_strides(spec: OpSpec, case: Case) -> None:
    args = _fresh_args(spec, case)
    written = spec.written_positions(args)
    before = {i: (args[i].shape, args[i].stride(), args[i].data_ptr()) for i in written}
    got = spec.call(args)
    for i, (shape, stride, ptr) in before.items():
        if (args[i].shape, args[i].stride(), args[i].data_ptr()) != (shape, stride, ptr):
            raise Failed(
                f"{spec.arg_name(i)} was resized or replaced: sizes {list(shape)}, strides "
                f"{list(stride)} became {_describe(args[i])}"
            )
    if spec.out:
        return
    want = spec.expected(args)
    for i, (g, w) in enumerate(zip(outputs(got), outputs(want))):
        if not isinstance(g, torch.Tensor) or not isinstance(w, torch.Tensor):
            continue
        which = f"output {i}" if isinstance(want, tuple) else "output"
        if g.shape != w.shape or g.stride() != w.stride():
            raise Failed(f"{which} has {_describe(g)}; the reference's has {_describe(w)}")
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


def _fake_mode(spec: OpSpec) -> FakeTensorMode:
    if not spec.dynamic_output:
        return FakeTensorMode()
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    return FakeTensorMode(shape_env=ShapeEnv(allow_dynamic_output_shape_ops=True))


def _fake_call(spec: OpSpec, args):
    """(the fake result, the fake args): the op run on fake copies of args."""
    mode = _fake_mode(spec)
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


def check_fake(spec: OpSpec, case: Case) -> None:
    args = _fresh_args(spec, case)
    fake_result, fake_args = _fake_call(spec, copy_args(args))
    real_result = spec.invoke(args)
    for i in spec.mutated_positions(args):
        if _meta(fake_args[i]) != _meta(args[i]):
            raise Failed(
                f"the fake kernel left {spec.arg_name(i)} (mutated in place) as "
                f"{_describe(fake_args[i])}; the real kernel as {_describe(args[i])}"
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
            raise Failed(f"{which}fake kernel gives {_describe(fake)}; the real {_describe(real)}")
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
            raise Failed(f"{which}fake kernel gives {_describe(fake)}; the real {_describe(real)}")


def _check_fake_out(spec: OpSpec, args, real_result, fake_args, fake_result) -> None:
    """An out= op's fake kernel does to out what the real kernel does: leaves
    its sizes and strides as they are, and returns None or out as it does."""
    for i in spec.out_positions(args):
        if _meta(fake_args[i]) != _meta(args[i]):
            raise Failed(
                f"the fake kernel left out as {_describe(fake_args[i])}; the real kernel "
                f"as {_describe(args[i])}"
            )
    real_kind = "None" if real_result is None else "out"
    if real_result is None:
        fake_kind = "None" if fake_result is None else f"a tensor ({_describe(fake_result)})"
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


# -- registration and gradients -----------------------------------------------

OPCHECK_UTILS = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_aot_dispatch_static",
    "test_aot_dispatch_dynamic",
)


def differentiable_tensor(a) -> bool:
    """A tensor that can carry a gradient: floating-point or complex."""
    return isinstance(a, torch.Tensor) and (a.is_floating_point() or a.is_complex())


def floating_outputs(result) -> tuple:
    """The op's outputs that can carry a gradient, in order: integer outputs
    (lengths, codes, indices) have no derivative, and PyTorch's gradient
    tools fail on them."""
    return tuple(o for o in outputs(result) if differentiable_tensor(o))


def _with_grad(spec: OpSpec, case: Case, args) -> list:
    grad = set(spec.grad_positions(args, _layout(spec, case)))
    return [
        a.detach().requires_grad_() if i in grad and differentiable_tensor(a) else a
        for i, a in enumerate(args)
    ]


# The AOT tests of opcheck, which sum every output to differentiate it.
AOT_DISPATCH = {"test_aot_dispatch_static": False, "test_aot_dispatch_dynamic": True}


def check_opcheck(spec: OpSpec, case: Case) -> None:
    args = _fresh_args(spec, case)
    overload = spec.overload(args)
    unmarked = spec.unmarked_writes(overload)
    if unmarked:
        names = ", ".join(spec.arg_name(i) for i in unmarked)
        raise Failed(
            f"the op writes {names} (OpSpec(mutates=)), but its schema {overload._schema} "
            "does not mark it Tensor(a!)",
            fix=UNMARKED_WRITE_FIX,
        )
    if case.variant == "requires_grad":
        args = _with_grad(spec, case, args)
    utils = OPCHECK_UTILS
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
        torch.library.opcheck(overload, tuple(args), test_utils=utils)
        for util in aot_own:
            try:
                aot_autograd_check(
                    lambda *a: floating_outputs(overload(*a)),
                    tuple(args),
                    {},
                    AOT_DISPATCH[util],
                    check_gradients="auto",
                    copy_inputs=True,
                )
            except Exception as e:  # noqa: BLE001  (reported as opcheck's, by test name)
                raise Failed(
                    f"opcheck's {util}, on the floating-point outputs: "
                    f"{type(e).__name__}: {_first_lines(e)}"
                ) from None


# Gradient checks by dtype: finite differences (gradcheck's eps, atol and
# rtol), and how far the op's derivative in an autodiff mode may be from the
# reference's. In float64 a wrong formula is off by many orders more than
# rounding. In float32 the central differences' rounding error is about
# eps_float32 / eps (1e-4) and the truncation error eps^2 (1e-6): a derivative
# wrong by a sign, a factor or a term is still off by far more than 1e-3,
# but one wrong by a relative 1e-4 is not seen.
GRAD_TOLERANCES = {
    torch.float64: dict(eps=1e-6, atol=1e-5, rtol=1e-3),
    torch.float32: dict(eps=1e-3, atol=1e-3, rtol=1e-3),
}
AUTODIFF_TOLERANCES = {
    torch.float64: dict(rtol=1e-10, atol=1e-12),
    torch.float32: dict(rtol=1e-4, atol=1e-5),
}
AUTODIFF_TOLERANCE = AUTODIFF_TOLERANCES[torch.float64]


def _differentiable_call(spec: OpSpec, case: Case, small=True):
    """(f, ref, xs): f(*xs) calls the op with the tensors xs in the places of its
    differentiable arguments, the others as sampled."""
    args = _fresh_args(spec, case, small=small)
    chosen = spec.grad_positions(args, _layout(spec, case))
    positions = [i for i in chosen if differentiable_tensor(args[i])]
    if not positions:
        raise SpecError(
            f"no argument to differentiate in this sample: grad_args gives {chosen}, and "
            "none is a floating-point tensor here (declare the layout's own, or () for none)",
            "grad_args",
        )

    def with_xs(fn):
        def call(*xs):
            full = list(args)
            for i, x in zip(positions, xs):
                full[i] = x
            return fn(*full)

        return call

    xs = [args[i].detach().requires_grad_() for i in positions]
    return with_xs(lambda *a: spec.invoke(a)), with_xs(spec.reference), xs


def _floating_function(spec: OpSpec, f, xs):
    """f, returning its floating-point outputs only (a tuple), after a call
    that shows it has one."""
    with torch.no_grad():
        if not floating_outputs(f(*[x.detach() for x in xs])):
            raise SpecError(
                "the op returns no floating-point tensor here, so it has no derivative to check",
                "differentiable",
                "declare OpSpec(differentiable=False)",
            )
    return lambda *x: floating_outputs(f(*x))


def _nondet_tol(spec: OpSpec) -> float:
    """How far two runs of the backward may differ (float64): none, or for an
    op that declares nondeterministic=True, atomic adds' reordering."""
    return 1e-10 if spec.nondeterministic else 0.0


def check_gradcheck(spec: OpSpec, case: Case) -> None:
    _run_gradcheck(spec, case, gradcheck, fast_mode=False)


def check_gradgradcheck(spec: OpSpec, case: Case) -> None:
    _run_gradcheck(spec, case, gradgradcheck)


def _run_gradcheck(spec: OpSpec, case: Case, tool, **kw) -> None:
    """gradcheck or gradgradcheck on the op's floating-point outputs, with
    the tolerances of the case's dtype; each kind of error gets its fix."""
    f, _, xs = _differentiable_call(spec, case)
    f = _floating_function(spec, f, xs)
    with warnings.catch_warnings():
        # Its advice to check in float64: float32 is the OpSpec's choice
        # (grad_dtype), with tolerances to match (GRAD_TOLERANCES).
        warnings.filterwarnings("ignore", "Input #\\d+ requires gradient and is not a double")
        try:
            tool(f, tuple(xs), nondet_tol=_nondet_tol(spec), **GRAD_TOLERANCES[case.dtype], **kw)
        except GradcheckError as e:
            mismatch = "Jacobian mismatch" in str(e)
            fix = JACOBIAN_MISMATCH_FIX if mismatch and tool is gradgradcheck else None
            if "not reentrant" in str(e):
                fix = NOT_REENTRANT_FIX
            raise Failed(f"GradcheckError: {_first_lines(e)}", fix=fix) from None
        except RuntimeError as e:
            if any(words in str(e) for words in NOT_DIFFERENTIATED):
                raise Failed(f"RuntimeError: {_message(e)}", fix=NO_DERIVATIVE_FIX) from None
            raise


def _floating_outputs(fn):
    """fn, returning its floating-point outputs only (one tensor: the autodiff
    modes differentiate one), flattened and joined where there are several."""

    def call(*xs):
        found = floating_outputs(fn(*xs))
        return found[0] if len(found) == 1 else torch.cat([o.flatten() for o in found])

    return call


def check_autodiff(spec: OpSpec, case: Case) -> None:
    """A claimed mode gives the reference's derivative; a mode the op does not
    claim (variant ``<mode>-raises``) raises; a mode declared silent
    (``<mode>-silent``, OpSpec.silent_modes) gives what PyTorch's limitation
    makes it give, a zero or missing derivative, and nothing else."""
    mode = case.variant.removesuffix("-raises").removesuffix("-silent")
    f, ref, xs = _differentiable_call(spec, case)
    _floating_function(spec, f, xs)
    f, ref = _floating_outputs(f), _floating_outputs(ref)
    xs = [x.detach() for x in xs]
    gen = torch.Generator().manual_seed(0)
    ts = [torch.randn(x.shape, generator=gen, dtype=x.dtype).to(x.device) for x in xs]
    run = MODES[mode]
    if case.variant.endswith("-silent"):
        _check_silent(spec, mode, lambda: run(f, xs, ts), lambda: run(ref, xs, ts))
        return
    if mode not in spec.autodiff:
        _check_raises(spec, mode, lambda: run(f, xs, ts), lambda: run(ref, xs, ts))
        return
    got = run(f, xs, ts)
    want = run(ref, xs, ts)
    if any(leaf is None for leaf in _leaves(got)):
        raise Failed(f"{mode} gave None (a missing tangent), not the derivative")
    try:
        torch.testing.assert_close(got, want, **AUTODIFF_TOLERANCES[case.dtype])
    except AssertionError as e:
        raise Failed(f"{mode} differs from the reference's: {_first_lines(e)}") from None


def _leaves(result) -> list:
    return pytree.tree_leaves(result, is_leaf=lambda x: x is None)


def _run_recording_warnings(run):
    """(run()'s result or None, its error or None, the op's own warnings).
    Warnings are recorded, not raised: a mode that only warns and returns an
    answer is as silent as one that does not warn."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got, error = run(), None
        except Exception as e:  # noqa: BLE001  (the error is what is judged)
            got, error = None, e
    # The op's own warnings, not torch's notices of deprecated APIs.
    notices = (DeprecationWarning, FutureWarning)
    return got, error, [w for w in caught if not issubclass(w.category, notices)]


def _what_it_gave(spec: OpSpec, got, reference) -> tuple[str, str]:
    """(what a mode returned, said against the reference's derivative: one
    of "missing", "reference", "zeros", "other"; and those words)."""
    try:
        want = reference()
    except Exception:  # noqa: BLE001  (a reference that has no such derivative: say what the op gave)
        want = None
    leaves, wanted = _leaves(got), _leaves(want) if want is not None else None
    if any(leaf is None for leaf in leaves):
        return "missing", "None where a derivative belongs (a missing tangent)"
    if wanted is not None and _close(leaves, wanted):
        return "reference", "the reference's derivative"
    if wanted is not None and all(
        not g.any() for g, w in zip(leaves, wanted) if not _close([g], [w])
    ):
        return "zeros", "zeros where the reference's derivative is not zero"
    return "other", "a derivative that differs from the reference's"


def _check_raises(spec: OpSpec, mode: str, run, reference) -> None:
    """run() must raise."""
    got, error, warned = _run_recording_warnings(run)
    if error is not None:
        return
    kind, what = _what_it_gave(spec, got, reference)
    fix = CLAIM_THE_MODE_FIX.format(mode=mode) if kind == "reference" else UNCLAIMED_MODE_FIX
    said = f" (warning: {_message(warned[0].message)})" if warned else ""
    raise Failed(
        f"{mode}: a mode the OpSpec does not claim (autodiff=), so it must raise; it returned "
        f"{what}{said}",
        fix=fix,
    )


def _check_silent(spec: OpSpec, mode: str, run, reference) -> None:
    """A mode in OpSpec.silent_modes: it may return a zero or missing
    derivative (PyTorch's limitation, declared), which is reported as
    accepted. Raising, or the reference's derivative, passes: the case is a
    strict expected failure, so it then says the declaration can go. Any
    other answer is the op's failure."""
    got, error, _ = _run_recording_warnings(run)
    if error is not None:
        return
    kind, what = _what_it_gave(spec, got, reference)
    if kind == "reference":
        return
    if kind in ("missing", "zeros"):
        raise Accepted(
            f"{mode} returned {what}: PyTorch's limitation, accepted by OpSpec(silent_modes=)",
            fix=SILENT_MODE_FIX,
        )
    raise Failed(
        f"{mode} (declared silent: OpSpec(silent_modes=)) returned {what}: not a zero or "
        "missing derivative, so not the declared limitation",
        fix=CHECKS["autodiff"].fix,
    )


def _close(got: list, want: list) -> bool:
    """got equals want: to AUTODIFF_TOLERANCE in float64, to 1e-3 in a narrower dtype."""
    float64 = all(w.dtype == torch.float64 for w in want if isinstance(w, torch.Tensor))
    tolerance = AUTODIFF_TOLERANCE if float64 else dict(rtol=1e-3, atol=1e-5)
    try:
        torch.testing.assert_close(got, want, **tolerance)
    except (AssertionError, TypeError, ValueError):
        return False
    return True


def check_vmap(spec: OpSpec, case: Case) -> None:
    """torch.vmap over three samples: the op's batching rule gives what three
    calls give. PyTorch's fallback (a loop with a performance warning) is
    switched off, so an op without a batching rule fails here."""
    samples = [_fresh_args(spec, case, small=True) for _ in range(3)]
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
        raise Failed(f"no batching rule: {_message(e)}", fix=NO_BATCHING_RULE_FIX) from None
    except ValueError as e:
        if "NoneType" not in str(e):
            raise
        raise Failed(f"vmap: {_message(e)}", fix=NONE_OUTPUT_UNDER_VMAP_FIX) from None
    finally:
        torch._C._functorch._set_vmap_fallback_enabled(was_enabled)
    want = [
        torch.stack([s[k] for s in singles]) if isinstance(singles[0][k], torch.Tensor) else None
        for k in range(len(singles[0]))
    ]
    try:
        assert_values(spec, outputs(got), want)
    except AssertionError as e:
        raise Failed(f"vmap's result differs from one call per sample: {_first_lines(e)}") from None


# -- compilers ----------------------------------------------------------------


def _returning(spec: OpSpec):
    """The op as a function that returns its result (out for an out= op)."""

    def f(*args):
        result = spec.invoke(args)
        if not spec.out:
            return result
        outs = [args[i] for i in spec.out_positions(args)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    return f


def _dynamo_config(spec: OpSpec):
    """Dynamo's settings for the op: a data-dependent output size is captured
    in the graph (as an unbacked size) instead of breaking it."""
    return torch._dynamo.config.patch(
        capture_dynamic_output_shape_ops=spec.dynamic_output,
        capture_scalar_outputs=spec.dynamic_output,
    )


def check_compile(spec: OpSpec, case: Case) -> None:
    args = _fresh_args(spec, case)
    eager_args = copy_args(args)
    eager = spec.call(eager_args)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")
    compiled = torch.compile(_returning(spec), backend=counter, fullgraph=True)
    with _dynamo_config(spec):
        got = compiled(*args)
    if counter.frame_count != 1:
        raise Failed(f"compiled into {counter.frame_count} graphs, expected 1")
    try:
        assert_effects(spec, got, args, eager, eager_args)
    except AssertionError as e:
        raise Failed(f"compiled result differs from eager: {_first_lines(e)}") from None
    for g, e in zip(outputs(got), outputs(eager)):
        if isinstance(e, torch.Tensor) and g.stride() != e.stride():
            raise Failed(f"compiled output has {_describe(g)}; eager's has {_describe(e)}")


def check_dynamic(spec: OpSpec, case: Case) -> None:
    torch._dynamo.reset()
    compiled = torch.compile(_returning(spec), dynamic=True, fullgraph=True)
    # Duck sizing would give two dimensions one symbol wherever the first
    # sizes happen to agree (3 rois, 3 channels), and recompile when they part.
    no_duck = fx_config.patch(use_duck_shape=False)
    with _dynamo_config(spec), no_duck, torch._dynamo.config.patch(error_on_recompile=True):
        for rows in DYNAMIC_ROWS:
            args = _fresh_args(spec, case, rows=rows)
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


def check_export(spec: OpSpec, case: Case) -> None:
    f = _returning(spec)
    args = _fresh_args(spec, case, rows=EXPORT_ROWS[0])
    new = _fresh_args(spec, case, rows=EXPORT_ROWS[1])  # what the program runs on
    inputs = [i for i, a in enumerate(args) if _export_input(a)]
    constants = {i: a for i, a in enumerate(args) if i not in inputs}

    class Wrapper(torch.nn.Module):
        def forward(self, *given):
            full = dict(constants)
            full.update(zip(inputs, given))
            return f(*(full[i] for i in range(len(full))))

    names = spec.dynamic_dims_of(args)
    # A name makes a Dim of any size; a Dim given in the OpSpec keeps its range.
    dims = {}
    for dim_names in names:
        for v in dim_names.values():
            dims.setdefault(_dim_name(v), torch.export.Dim(v) if isinstance(v, str) else v)
    # An int that follows rows is dynamic where the schema lets it be
    # (SymInt); torch.export takes no named Dim for an int, only AUTO.
    auto = getattr(torch.export.Dim, "AUTO", None)

    def dynamic(i):
        a, b = args[i], new[i]
        if isinstance(a, torch.Tensor):
            return {d: dims[_dim_name(v)] for d, v in names[i].items()} or None
        if isinstance(a, (list, tuple)):
            same = isinstance(b, (list, tuple)) and len(a) == len(b)
            return [auto if same and x != y else None for x, y in zip(a, b if same else a)]
        return auto if a != b else None

    with _dynamo_config(spec):
        exported = torch.export.export(
            Wrapper(),
            tuple(args[i] for i in inputs),
            dynamic_shapes=(tuple(dynamic(i) for i in inputs),),
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


def _dim_name(v) -> str:
    return v if isinstance(v, str) else v.__name__


def _same_constant(x, y) -> bool:
    if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
        return False
    return type(x) is type(y) and x == y


# -- CUDA ---------------------------------------------------------------------


def _host_sync(spec: OpSpec, args) -> BaseException | None:
    """The error torch raises where the op synchronizes with the host (a copy
    to the CPU, .item(), nonzero), found without capturing anything."""
    previous = torch.cuda.get_sync_debug_mode()
    try:
        _set_sync_debug_mode("error")
        spec.call(args)
    except RuntimeError as e:
        if "synchronizing" not in str(e):
            raise
        return e
    finally:
        _set_sync_debug_mode(previous)
    return None


def _set_sync_debug_mode(mode) -> None:
    # torch warns, once per process, that the mode is a prototype: a fact
    # about torch, not the op, and under warnings-as-errors it would leave the
    # mode set for every later case.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Synchronization debug mode is a prototype")
        torch.cuda.set_sync_debug_mode(mode)


def _capture(spec: OpSpec, args):
    """(graph, result, error): the op captured into a CUDA graph, or the error
    the capture raised. A failed capture is cleaned up so that it leaves no
    state behind: the current stream is restored (torch.cuda.graph leaves its
    capture stream current when ending the capture fails), the graph dropped,
    and a capture of nothing takes the CUDA RNG through a whole capture, so
    it no longer counts as capturing."""
    stream = torch.cuda.current_stream()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            result = spec.call(args)
        return graph, result, None
    except Exception as e:  # noqa: BLE001  (the error is what is checked)
        error = e
    for cleanup in (torch.cuda.synchronize, graph.reset, _empty_capture):
        try:
            cleanup()
        except Exception:  # noqa: BLE001  (best effort: whatever is left is checked below)
            pass
    # Last: the empty capture can fail as the op's did, and leave its stream
    # current in turn.
    torch.cuda.set_stream(stream)
    torch.cuda.synchronize()
    return None, None, error


def _empty_capture() -> None:
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        pass
    graph.reset()


def _warm_up(spec: OpSpec, args) -> None:
    """One call off the default stream, as capture requires."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        spec.call(args)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def check_cuda_graph(spec: OpSpec, case: Case) -> None:
    args = _fresh_args(spec, case)
    _warm_up(spec, args)
    synced = _host_sync(spec, args)
    if not spec.capturable:
        # The op says it can't be captured: capturing must fail with an error
        # that says why (a sync found beforehand, or the capture's own error),
        # never produce a graph that replays something else.
        if synced is not None:
            return
        _, _, error = _capture(spec, _fresh_args(spec, case))
        if error is None:
            raise Failed(
                "the op was captured although the OpSpec declares capturable=False",
                fix="drop capturable=False: the op can be captured in a CUDA graph",
            )
        if not isinstance(error, RuntimeError) or not str(error).strip():
            raise Failed(f"capture failed with an unclear error: {error!r}")
        return
    if synced is not None:
        raise Failed(
            f"the op synchronizes with the host, which a CUDA graph can't capture: "
            f"{_message(synced)}",
            fix="keep the op on the device (no .item(), .cpu() or size that depends on the "
            "data), or declare OpSpec(capturable=False) if it must sync",
        )
    graph, result, error = _capture(spec, args)
    if error is not None:
        raise Failed(
            f"capture failed: {_first_lines(error)}",
            fix="a call inside the op is not allowed while a stream is captured: a device or "
            "stream synchronize (cudaDeviceSynchronize), a copy to the host, or a launch on the "
            "legacy default stream instead of the current one; remove it, or declare "
            "OpSpec(capturable=False) if the op must sync",
        )
    fresh = _fresh_args(spec, case)  # new inputs from samples(), in the captured memory
    for i in spec.tensor_positions(args):
        args[i].copy_(fresh[i])
    # What the op gives on these inputs outside a graph: the replay must give
    # the same (whether that is right is the results check's business).
    eager_args = copy_args(args)
    eager = spec.call(eager_args)
    graph.replay()
    torch.cuda.synchronize()
    try:
        assert_effects(spec, result, args, eager, eager_args)
    except AssertionError as e:
        raise Failed(f"the replayed graph's result is wrong: {_first_lines(e)}") from None


def check_side_stream(spec: OpSpec, case: Case) -> None:
    """On a side stream the kernel must wait for the work queued there before it.

    The side stream sleeps, then fills the first input; a kernel launched on
    any other stream runs during the sleep and reads the input unfilled.
    """
    layout = "large-1d" if spec.samples is None else spec.base_layout
    args = spec.sample(layout, case.dtype, "cuda")
    first = spec.tensor_positions(args)[0]
    # What the op gives on these inputs on the current stream: the side
    # stream's call must give the same.
    eager_args = copy_args(args)
    want = spec.call(eager_args)
    filled = args[first].clone()
    args[first] = torch.zeros_like(filled)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # tens of ms of GPU time
        args[first].copy_(filled)
        got = spec.call(args)
    side.synchronize()
    try:
        assert_effects(spec, got, args, want, eager_args)
    except AssertionError as e:
        raise Failed(f"the op did not wait for the side stream's work: {_first_lines(e)}") from None


# -- bad input ----------------------------------------------------------------

# The kinds of bad input, each a way to make one argument wrong.
BAD_INPUT_KINDS = ("dtype", "shape", "device", "out-overlap", "out-internal-overlap")


def _wrong_dtype(spec: OpSpec, t: torch.Tensor) -> torch.dtype:
    """A dtype the op does not take (``accepted_dtypes``) for t: an integer
    one for a floating-point input, a floating-point one for an integer
    input, else any other."""
    floating = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
    integer = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
    first = integer + floating if t.is_floating_point() else floating + integer
    candidates = first + (torch.bool, torch.complex64)
    found = [d for d in candidates if d not in spec.accepted and d != t.dtype]
    if not found:
        raise SpecError(
            f"the op takes every dtype the harness knows ({spec.accepted}), so there is no "
            "wrong one to give it",
            "bad_inputs",
            "leave the dtype kind out of bad_inputs, or list the dtypes the op takes in "
            "accepted_dtypes",
        )
    return found[0]


def _kind_and_target(spec: OpSpec, kind: str) -> tuple[str, str | None]:
    """'dtype' -> ('dtype', None); 'dtype-absmax' -> ('dtype', 'absmax'): a kind
    of bad input, and the argument it applies to where the spec names one."""
    for known in sorted(BAD_INPUT_KINDS, key=len, reverse=True):
        if kind == known:
            return known, None
        if kind.startswith(known + "-"):
            return known, kind[len(known) + 1 :]
    raise ValueError(f"unknown kind of bad input {kind!r}; the kinds are {list(BAD_INPUT_KINDS)}")


def bad_args(spec: OpSpec, kind: str, device: str) -> tuple[list, str]:
    """(the op's arguments made wrong in one way, what was changed): kind is
    dtype, shape, device, out-overlap or out-internal-overlap, optionally
    followed by the argument's name ('dtype-absmax')."""
    kind, target = _kind_and_target(spec, kind)
    args = spec.sample(spec.base_layout, spec.first_dtype, device)
    inputs = spec.tensor_positions(args)
    outs = spec.out_positions(args)
    if target is not None:
        chosen = [i for i in inputs + outs if spec.arg_name(i) == target]
        if not chosen:
            raise ValueError(f"bad input {kind}-{target}: the op has no tensor argument {target}")
        i = chosen[0]
    elif kind == "dtype":
        i = inputs[0]
    elif kind in ("shape", "device"):
        i = (inputs + outs)[-1]
    else:
        i = outs[0]
    name, old = spec.arg_name(i), args[i]
    if kind == "dtype":
        args[i] = old.to(_wrong_dtype(spec, old))
        what = f"{name} became {args[i].dtype} (from {old.dtype})"
    elif kind == "shape":
        args[i] = random_tensor((*old.shape[:-1], old.shape[-1] + 1), old.dtype, device)
        what = f"{name} became sizes {list(args[i].shape)} (from {list(old.shape)})"
    elif kind == "device":
        args[i] = old.cpu()
        what = f"{name} moved to the CPU (the other tensors on {device})"
    elif kind == "out-overlap":
        j = next((k for k in inputs if args[k].dtype == old.dtype), inputs[0])
        args[j], args[i] = _overlapping(args[j], old)
        what = f"{name} became a view into {spec.arg_name(j)}'s memory, one element in"
    else:
        args[i] = torch.empty(1, *old.shape[1:], dtype=old.dtype, device=device).expand(old.shape)
        what = f"{name} became an expanded view (strides {list(args[i].stride())})"
    return args, what


def _overlapping(x: torch.Tensor, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, out) with x's values and out's dtype and shape, in one buffer: out
    starts one element of out into x's memory, so the two overlap in part."""
    x_bytes = x.numel() * x.element_size()
    out_bytes = out.numel() * out.element_size()
    step = out.element_size()
    buffer = torch.empty(max(x_bytes, step + out_bytes), dtype=torch.uint8, device=x.device)
    x_view = buffer[:x_bytes].view(x.dtype).view(x.shape)
    x_view.copy_(x)
    out_view = buffer[step : step + out_bytes].view(out.dtype).view(out.shape)
    return x_view, out_view


def _error(fn, args) -> BaseException | None:
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001  (the error is what is checked)
        return e
    return None


def _compiled_error(spec: OpSpec, args):
    torch._dynamo.reset()
    compiled = torch.compile(_returning(spec), backend="aot_eager", fullgraph=True)
    with _dynamo_config(spec):
        return _error(compiled, args)


def check_bad_input(spec: OpSpec, case: Case) -> None:
    # Fresh arguments for each call: a copy would lose the aliasing of the
    # out-overlap cases.
    device = "cuda" if case.variant.startswith("device") else case.device
    args, what = bad_args(spec, case.variant, device)
    eager = _error(lambda *a: spec.invoke(a), args)
    if eager is None:
        raise Failed(f"{what}: the op accepted it without an error")
    if not isinstance(eager, (RuntimeError, ValueError, TypeError)):
        raise Failed(f"{what}: the op raised {type(eager).__name__}, not a RuntimeError")
    message = _message(eager)
    fake = _error(lambda *a: _fake_call(spec, a), bad_args(spec, case.variant, device)[0])
    if fake is None:
        raise Failed(
            f"{what}: the fake kernel accepted it, where the real kernel raises {message!r}"
        )
    if spec.same_error_words and message not in str(fake):
        raise Failed(
            f"{what}: the fake kernel's error {_message(fake)!r} is not the real "
            f"kernel's {message!r}"
        )
    compiled = _compiled_error(spec, bad_args(spec, case.variant, device)[0])
    words = message if spec.same_error_words else ""
    if compiled is None or words not in str(compiled):
        got = "no error" if compiled is None else repr(_message(compiled))
        raise Failed(f"{what}: compiled code raised {got}; eager raised {message!r}")


def check_internal_assert(spec: OpSpec, case: Case) -> None:
    device = "cuda" if case.variant.startswith("device") else case.device
    args, what = bad_args(spec, case.variant, device)
    for where, error in (
        ("eager", _error(lambda *a: spec.invoke(a), args)),
        ("compiled", _compiled_error(spec, bad_args(spec, case.variant, device)[0])),
    ):
        if error is None:
            raise Failed(
                f"{what} ({where}): no error at all, so no error to judge",
                fix=CHECKS["bad_input"].fix,
            )
        if "INTERNAL ASSERT" in str(error):
            raise Failed(
                f"{what} ({where}): a user's bad input is reported as an internal "
                f"error: {_message(error)!r}"
            )


# -- past 2^31 elements -------------------------------------------------------


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


# Every check, in the order the cases are generated, with its fix.
CHECKS: dict[str, Check] = {
    "results": Check(
        check_results,
        "the kernel disagrees with the reference on this dtype and layout: check its "
        "index math for these strides (offset, broadcast, empty, 0-dim) and that half types "
        "are computed in float; in a -specials case (inputs with -0.0, infinities and NaN), "
        "keep IEEE arithmetic: no shortcut for zeros, no accumulator that starts at +0.0; "
        "in an -out-<layout> case, write out through its strides",
    ),
    "strides": Check(
        check_strides,
        "allocate the output as the reference does (for elementwise ops, "
        "torch.empty_like(torch.mul(a, b)): PyTorch's TensorIterator layout rule); an op "
        "must write out (and the arguments it mutates) in place, never resize or replace them",
    ),
    "fake": Check(
        check_fake,
        "make the fake kernel (torch.library.register_fake) return what the real kernel "
        "returns: same sizes, strides, dtype and device, for every input layout and dtype",
    ),
    "opcheck": Check(
        check_opcheck,
        "torch.library.opcheck names the failing test: test_schema -> mark every "
        "argument the op writes as Tensor(a!) in the schema; test_autograd_registration -> "
        "register a backward (torch.library.register_autograd) or a C++ autograd kernel; "
        "test_faketensor -> fix the fake kernel; test_aot_dispatch_* -> the op must not "
        "alias or mutate what its schema does not say",
    ),
    "gradcheck": Check(
        check_gradcheck,
        "the backward disagrees with finite differences: fix the derivative "
        "formula (sign, which input it multiplies, a missing term or factor)",
    ),
    "gradgradcheck": Check(
        check_gradgradcheck,
        "the backward must itself be differentiable: build it from "
        "differentiable ops (the op itself, or torch ops), not from raw kernels",
    ),
    "autodiff": Check(
        check_autodiff,
        "the op claims this autodiff mode but gives another answer than the "
        "reference's: give it the formula it needs (setup_context/backward for reverse "
        "modes, jvp for forward modes) or stop claiming the mode",
    ),
    "vmap": Check(
        check_vmap,
        "the op's batching rule (torch.library.register_vmap) must give what one call per "
        "sample gives: move each input's batch dimension where the kernel expects it, and "
        "say where the output's is",
    ),
    "compile": Check(
        check_compile,
        "torch.compile(fullgraph=True) must trace the op in one graph and return "
        "eager's values and strides: register a fake kernel and keep the Python wrapper "
        "traceable",
    ),
    "dynamic": Check(
        check_dynamic,
        "with dynamic shapes the op must not specialise on sizes: the fake kernel "
        "should build its output from the inputs' symbolic sizes (no int(), no .item())",
    ),
    "export": Check(
        check_export,
        "torch.export must keep the op as one node that runs again on new shapes: "
        "register a fake kernel that works with symbolic sizes",
    ),
    "cuda_graph": Check(
        check_cuda_graph,
        "launch on the current stream (at::cuda::getCurrentCUDAStream()), never "
        "the legacy default stream, and allocate nothing outside PyTorch's allocator",
    ),
    "side_stream": Check(
        check_side_stream,
        "launch every kernel on at::cuda::getCurrentCUDAStream(), never with "
        "<<<grid, block>>> alone (the legacy default stream), and guard the device",
    ),
    "bad_input": Check(
        check_bad_input,
        "check what the user controls with TORCH_CHECK (C++) and the same words "
        "with torch._check in the fake kernel, naming the argument and what was received",
    ),
    "internal_assert": Check(
        check_internal_assert,
        "TORCH_INTERNAL_ASSERT is for bugs in the op; a user's bad input "
        "must raise TORCH_CHECK's error instead",
    ),
    "huge": Check(
        check_huge,
        "index with int64_t (sizes, strides, loop counters): an int element count "
        "overflows past 2^31 elements",
    ),
}

# check -> its fix, as shown under a failure.
FIXES: dict[str, str] = {name: check.fix for name, check in CHECKS.items()}
