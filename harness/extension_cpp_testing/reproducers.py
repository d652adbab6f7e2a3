"""Reproducers: for each finding (an op and a cause), a script of plain
torch that shows it without the harness, the kind a maintainer runs.

With ``EXTENSION_CPP_TESTING_REPRODUCERS=DIR`` (the pytest plugin's
``--conformance-reproducers DIR`` sets it), the first failed case of each
finding writes ``DIR/<op>--<cause>.py`` and, beside it, ``.pt`` holding the
case's arguments (and the reference's result, where the script compares
with it). It runs in the process that ran the case, so a kernel called to
draw samples stays isolated. The script imports what registers the op
(``OpSpec(imports=)``, by default the packages whose Python code registered
its kernels, and the namespace's), calls it the way the check did, and
fails (an exception, or exit status 1) while the bug is there.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import sys
import textwrap
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .autodiff import HELPERS, MODES
from .case import Case, ConformanceFailure, slug
from .checks import CHECKS, compilers, cuda, fake, gradients
from .checks.bad_input import VALUE, case_args
from .checks.base import fresh_args, outputs
from .layouts import copy_args
from .registrations import CATCH_ALL_FIX, CAUSES, NO_AUTOGRAD_FIX, NO_FAKE_KERNEL_FIX

if TYPE_CHECKING:
    from .spec import OpSpec

ENV = "EXTENSION_CPP_TESTING_REPRODUCERS"

_LOAD = """\
import pathlib

import torch
{imports}
saved = torch.load(pathlib.Path(__file__).with_suffix(".pt"), weights_only=False)
args = saved["args"]
op = torch.ops.{namespace}.{name}.{overload}
{call}

def outputs(result):
    return result if isinstance(result, tuple) else (result,)


def copied(arguments):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in arguments]
"""

# How the script calls the op: positionally, or with keyword-only outs by name.
_CALL = """\


def call(arguments):
    return op(*arguments)
"""
_CALL_OUT_BY_NAME = """\


def call(arguments):  # the last arguments are keyword-only outs, passed by name
    split = len(arguments) - len(saved["out_names"])
    return op(*arguments[:split], **dict(zip(saved["out_names"], arguments[split:])))
"""

# The op as a function of the tensors the gradient checks differentiate.
_DIFFERENTIATED = """\
# The op as a function of the arguments it is differentiated in.
positions = saved["positions"]


def f(*xs):
    full = list(args)
    for i in saved["written"]:  # what the op writes: a copy for each call
        full[i] = args[i].clone()
    for i, x in zip(positions, xs):
        full[i] = x
    out = outputs(call(full))
    if saved["grad_outputs"] is not None:  # the outputs with a derivative
        out = [out[i] for i in saved["grad_outputs"]]
    return tuple(o for o in out if o is not None and o.is_floating_point())


xs = [args[i].detach().requires_grad_() for i in positions]
"""

# What a check's reproducer runs after _LOAD: each raises while the bug is there.
_BODIES = {
    "fake": """\
# torch.compile and torch.export run the op on fake tensors (no data).
{fake_mode_code}


real = call(args)
with fake_mode(saved["dynamic_output"]) as mode:
    fake_args = [mode.from_tensor(a, static_shapes=True) if torch.is_tensor(a) else a for a in args]
    fake = call(fake_args)
for f, r in zip(outputs(fake), outputs(real)):
    f, r = [(tuple(t.shape), t.stride(), t.dtype) for t in (f, r)]
    assert f == r, f"the fake kernel gives {{f}}; the kernel {{r}}"
""",
    "gradients": _DIFFERENTIATED
    + """\
# Against finite differences, with the tolerances of the dtype.
torch.autograd.{tool}(f, xs, **saved["tolerance"])
""",
    "autodiff": _DIFFERENTIATED
    + """
{mode_code}


def joined(*xs):  # the outputs as one tensor: a mode differentiates one
    out = f(*xs)
    return out[0] if len(out) == 1 else torch.cat([o.flatten() for o in out])


xs = [x.detach() for x in xs]
{verdict}""",
    "results": """\
expected = saved["expected"]
got = call(args)
if saved["out"]:
    got = tuple(args[i] for i in saved["out"])
    got = got[0] if len(got) == 1 else got
torch.testing.assert_close(got, expected, equal_nan=True, **saved["tolerance"])
for i, want in saved["mutated"].items():  # what it writes in place, against the reference's
    torch.testing.assert_close(args[i], want, equal_nan=True)
""",
    "strides": """\
expected = saved["expected"]
got = call(args)
for g, e in zip(outputs(got), outputs(expected)):
    assert g.stride() == e.stride(), f"strides {{g.stride()}}; the reference's {{e.stride()}}"
""",
    "bad_input": """\
# {what}: the op must raise, and raise the same on fake tensors (what
# torch.compile and torch.export trace with) and in compiled code.
{fake_mode_code}
{dynamo}

def error(run):
    try:
        run()
    except Exception as e:  # the error is what is checked
        return e
    return None


eager = error(lambda: call(args))
assert eager is not None, "the op returned: {what}"
said = str(eager).strip().splitlines()[0]
print("raised, as it must:", said)
words = said if saved["same_words"] else ""  # the words every error must share
mode = fake_mode(saved["dynamic_output"])
fake_args = [mode.from_tensor(a, static_shapes=True) if torch.is_tensor(a) else a for a in args]
with mode:
    fake = error(lambda: call(fake_args))
assert fake is not None, f"the fake kernel accepted it, where the kernel raises {{said!r}}"
assert words in str(fake), f"the fake kernel raises {{fake!r}}, the kernel {{said!r}}"
compiled = torch.compile(lambda *a: call(list(a)), backend="aot_eager", fullgraph=True)
compiled = error(lambda: compiled(*args))
assert compiled is not None and words in str(compiled), f"compiled: {{compiled!r}}"
""",
    "bad_value": """\
# {what}: the op must raise.
try:
    call(args)
except (RuntimeError, ValueError, TypeError, IndexError) as e:
    print("raised, as it must:", str(e).splitlines()[0])
else:
    raise AssertionError("the op returned: {what}")
""",
    "internal_assert": """\
# {what}: the op must raise TORCH_CHECK's error, not an internal assert.
try:
    call(args)
except RuntimeError as e:
    assert "INTERNAL ASSERT" not in str(e), str(e).splitlines()[0]
""",
    "compile": """\
eager = call(args)
compiled = torch.compile(lambda *a: call(a), fullgraph=True, dynamic={dynamic})(*args)
torch.testing.assert_close(compiled, eager, equal_nan=True)
""",
    "dynamic": """\
# torch.compile(dynamic=True) must trace the op once for every size (a
# recompile is an error here) and give eager's result at each.
import torch.fx.experimental._config
{dynamo}
torch._dynamo.config.error_on_recompile = True
# Duck sizing would give two dimensions one symbol where their sizes agree.
torch.fx.experimental._config.use_duck_shape = False


def returning(full):  # the op's result, or the outs it wrote
    result = call(full)
    return tuple(full[i] for i in saved["out"]) if saved["out"] else result


compiled = torch.compile(lambda *a: returning(list(a)), dynamic=True, fullgraph=True)
for sample in saved["sizes"]:  # the same arguments at several sizes
    want = returning(copied(sample))
    torch.testing.assert_close(compiled(*sample), want, equal_nan=True)
""",
    "export": """\
# torch.export traces the op with its sizes dynamic, then the program runs
# on arguments of other sizes (new) and must give what the op gives there.
{dynamo}

{export_code}


def returning(full):  # the op's result, or the outs it wrote
    result = call(full)
    return tuple(full[i] for i in saved["out"]) if saved["out"] else result


class Program(torch.nn.Module):
    def forward(self, *given):  # the inputs; the other arguments are constants
        full = list(args)
        for i, x in zip(saved["inputs"], given):
            full[i] = x
        return returning(full)


new = saved["new"]
want = returning(copied(new))
program = torch.export.export(
    Program(),
    tuple(args[i] for i in saved["inputs"]),
    dynamic_shapes=export_shapes(saved["shapes"]),
)
got = program.module()(*(new[i] for i in saved["inputs"]))
torch.testing.assert_close(got, want, equal_nan=True)
""",
    "opcheck": """\
torch.library.opcheck(op, tuple(args))
""",
    "vmap": """\
# torch.vmap over a batch of three samples, through the op's batching rule:
# PyTorch's fallback (one call per sample) is switched off, as it would hide
# a missing rule.
torch._C._functorch._set_vmap_fallback_enabled(False)
samples = saved["samples"]
batched = [torch.stack(s) if isinstance(s[0], torch.Tensor) else s[0] for s in zip(*samples)]
in_dims = tuple(0 if isinstance(s, torch.Tensor) else None for s in samples[0])
got = torch.vmap(op, in_dims=in_dims)(*batched)
torch.testing.assert_close(got, torch.stack([op(*s) for s in samples]), equal_nan=True)
""",
    "cuda_graph": """\
# Captured in a CUDA graph, then replayed on new inputs copied into the
# captured memory: the replay must give what the op gives outside a graph.
side = torch.cuda.Stream()  # a first call off the default stream, as capture needs
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    call(args)
torch.cuda.current_stream().wait_stream(side)
torch.cuda.synchronize()
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    result = call(args)
for a, b in zip(args, saved["new"]):
    if isinstance(a, torch.Tensor):
        a.copy_(b)
want_args = copied(args)
want = call(want_args)
graph.replay()
torch.cuda.synchronize()
torch.testing.assert_close(result, want, equal_nan=True)
for i in saved["written"]:  # the arguments the op writes
    torch.testing.assert_close(args[i], want_args[i], equal_nan=True)
""",
    "side_stream": """\
# On a side stream the op must wait for the work queued there before it.
{side_stream_code}


want_args = copied(args)
want = call(want_args)
got, args = side_stream_call(call, args, saved["first"], copied)
torch.testing.assert_close(got, want, equal_nan=True)
for i in saved["written"]:  # the arguments the op writes
    torch.testing.assert_close(args[i], want_args[i], equal_nan=True)
""",
    "stream_kept": """\
# The op must leave the caller's stream current.
before = torch.cuda.current_stream()
call(args)
after = torch.cuda.current_stream()
assert after == before, f"the op left {{after}} current, not {{before}}"
""",
}

# An autodiff case's verdict: a mode the op claims (or declares silent, where
# it gave neither nothing nor zeros) gives the reference's derivative; any
# other mode raises.
_GIVES_THE_REFERENCES = """\
got = {function}(joined, xs, saved["tangents"])
# The reference's derivative in the same mode, on the same inputs.
torch.testing.assert_close(got, saved["expected"], **saved["tolerance"])
"""
_RAISES = """\
# The op does not claim {mode}: it must raise, not return a derivative.
try:
    got = {function}(joined, xs, saved["tangents"])
except Exception as e:
    print("raised, as it must:", str(e).splitlines()[0])
else:
    raise AssertionError(f"{mode} returned {{got}}; the op does not claim it, so it must raise")
"""


def imports_for(spec: OpSpec, namespace: str) -> list[str]:
    """What to import so the op is registered: the spec's ``imports``, or the
    top-level packages whose Python files registered the op's kernels, and the
    namespace where it is a package."""
    if spec.imports:
        return list(spec.imports)
    found = []
    dump = torch._C._dispatch_dump(spec.resolved_overload().name())
    files = re.findall(r"registered at (\S+?\.py):\d+", dump)
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path in files:
            top = module.__name__.split(".")[0]
            if top not in ("torch", "extension_cpp_testing", "__main__") and top not in found:
                found.append(top)
    if namespace not in found and importlib.util.find_spec(namespace) is not None:
        found.append(namespace)
    if not found:
        found = _loaders(namespace)
    return found


def _loaders(namespace: str) -> list[str]:
    """The packages that loaded a C++ library into torch.ops (a kernel
    registered in C++ names no Python file): those named after the namespace
    (fbgemm_gpu for fbgemm) where there are any, else every one."""
    found = []
    for library in sorted(torch.ops.loaded_libraries):
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if "." in name or name == "torch" or path is None:
                continue
            if library.startswith(os.path.dirname(path) + os.sep) and name not in found:
                found.append(name)
    named = [m for m in found if m.startswith(namespace)]
    return named or found


def _kind(spec: OpSpec, case: Case, fix: str) -> str | None:
    """Which script shows the finding, or None where none does."""
    if fix in (CATCH_ALL_FIX, NO_FAKE_KERNEL_FIX) or case.check == "fake":
        return "fake"
    if fix == cuda.STREAM_LEFT_CURRENT_FIX:
        return "stream_kept"
    if case.check == "autodiff":
        return "autodiff"
    if fix == NO_AUTOGRAD_FIX or case.check in ("gradcheck", "gradgradcheck"):
        return "gradients"
    if case.check == "bad_input" and case.variant.startswith(VALUE):
        return "bad_value"
    if case.check == "cuda_graph" and not spec.capturable:
        return None  # its finding is a capture that worked
    return case.check if case.check in _BODIES else None


def _source(functions) -> str:
    """The functions' source, as the harness runs them."""
    return "\n\n\n".join(textwrap.dedent(inspect.getsource(f)).strip() for f in functions)


_FAKE_MODE_CODE = "from torch._subclasses.fake_tensor import FakeTensorMode\n\n\n" + _source(
    [fake.fake_mode]
)


def _autodiff_code(case: Case) -> tuple[str, str]:
    """(the mode's code: its function and the helpers it calls, with their
    imports; the verdict that runs it)."""
    mode = gradients.autodiff_mode(case)
    function = MODES[mode]
    code = inspect.getsource(function)
    helpers = [h for h in HELPERS if h is not function and f"{h.__name__}(" in code]
    code = _source([*helpers, function])
    imports = [
        line
        for line, used in (
            ("import torch.autograd.forward_ad as fwAD", "fwAD."),
            ("from torch import func", "func."),
        )
        if used in code
    ]
    verdict = _RAISES if case.variant.endswith("-raises") else _GIVES_THE_REFERENCES
    head = f"# {mode}: the harness's code for the mode.\n"
    return head + "\n".join(imports) + "\n\n\n" + code, verdict.format(
        function=function.__name__, mode=mode
    )


def _save(spec: OpSpec, case: Case, kind: str) -> tuple[dict, str]:
    """(what the script loads, what its bad input is): the case's arguments
    drawn as the check draws them, and what the check compares them with."""
    torch.manual_seed(zlib.crc32(case.id.encode()))  # the case's own draw
    saved: dict = {"out_names": list(spec._out_names or ())}
    what = ""
    if case.check in ("bad_input", "internal_assert"):
        args, what = case_args(spec, case)
    elif kind == "vmap":
        saved["samples"] = [fresh_args(spec, case, small=True) for _ in range(3)]
        args = saved["samples"][0]
    elif kind in ("gradients", "autodiff"):
        args = gradients.gradient_args(spec, case)
    elif kind == "export":
        args, saved["new"], saved["inputs"], saved["shapes"] = compilers.export_plan(spec, case)
        saved["out"] = spec.out_positions(args) if spec.out else []
    elif kind == "dynamic":
        saved["sizes"] = [fresh_args(spec, case, rows=r) for r in compilers.DYNAMIC_ROWS]
        args = saved["sizes"][0]
        saved["out"] = spec.out_positions(args) if spec.out else []
    elif kind == "side_stream":
        args = cuda.side_stream_args(spec, case)
        saved["first"] = spec.tensor_positions(args)[0]
    else:
        args = fresh_args(spec, case)
    # As drawn: torch.save keeps an out that overlaps an input a view into its memory.
    saved["args"] = args if case.check in ("bad_input", "internal_assert") else copy_args(args)
    saved["same_words"] = spec.same_error_words
    saved["dynamic_output"] = spec.dynamic_output
    if kind == "cuda_graph":
        saved["new"] = fresh_args(spec, case)  # as the check copies into the graph's inputs
    if kind in ("cuda_graph", "side_stream"):
        saved["written"] = spec.written_positions(args)
    if kind in ("results", "strides"):
        updated = copy_args(args)  # the reference updates its copies of what the op mutates
        saved["expected"] = spec.reference(*spec.inputs_of(updated))
        saved["mutated"] = {i: updated[i] for i in spec.mutated_positions(args)}
        saved["out"] = spec.out_positions(args) if spec.out else []
        first = outputs(saved["expected"])[0]
        saved["tolerance"] = spec.tolerance(first.dtype) if first is not None else {}
    if kind in ("gradients", "autodiff"):
        saved["positions"] = gradients.gradient_positions(spec, case, args)
        saved["grad_outputs"] = spec.grad_outputs
        saved["written"] = spec.copied_per_call(args, saved["positions"])
        saved["tolerance"] = gradients.gradcheck_tolerances(spec, case)
    if kind == "autodiff":
        _, ref, xs = gradients.differentiable_call(spec, case, args=copy_args(args))
        xs = [x.detach() for x in xs]
        saved["tangents"] = gradients.tangents(xs)
        mode = gradients.autodiff_mode(case)
        if not case.variant.endswith("-raises"):
            ref = gradients.joined_differentiated_outputs(spec, ref)
            saved["expected"] = MODES[mode](ref, xs, saved["tangents"])
            saved["tolerance"] = gradients.AUTODIFF_TOLERANCES[case.dtype]
    return saved, what


def _stem(failure: ConformanceFailure, check: str) -> str:
    """The script's name, one per finding (an op and a fix): <op>--<cause>,
    the cause a registration's (CAUSES) or the check's. A check's failure
    with a fix of its own (one check, two causes) adds the fix's checksum."""
    stem = f"{slug(failure.op)}--{slug(CAUSES.get(failure.fix, check))}"
    if failure.fix in CAUSES or failure.fix == CHECKS[check].fix:
        return stem
    return f"{stem}-{zlib.crc32(failure.fix.encode()) & 0xFFFFFF:06x}"


def write(spec: OpSpec, case: Case, failure: ConformanceFailure, folder: str) -> Path | None:
    """Writes the finding's reproducer into folder unless one is there:
    its path, or None where the op is no OpOverload or no script shows the check."""
    overload = spec.resolved_overload()
    kind = _kind(spec, case, failure.fix)
    if overload is None or kind is None:
        return None
    cause = CAUSES.get(failure.fix, case.check)
    path = Path(folder) / f"{_stem(failure, case.check)}.py"
    if path.exists():
        return None
    saved, what = _save(spec, case, kind)
    namespace, name = overload.name().split("::")
    imports = "".join(f"import {m}  # registers the op\n" for m in imports_for(spec, namespace))
    mode_code, verdict = _autodiff_code(case) if kind == "autodiff" else ("", "")
    dynamo = (
        "torch._dynamo.config.capture_dynamic_output_shape_ops = True  # a data-dependent size\n"
        "torch._dynamo.config.capture_scalar_outputs = True"
        if spec.dynamic_output
        else ""
    )
    body = _BODIES[kind].format(
        what=what.replace('"', "'"),
        tool="gradgradcheck" if case.check == "gradgradcheck" else "gradcheck",
        dynamic=case.check == "dynamic",
        mode_code=mode_code,
        verdict=verdict,
        export_code=_source([compilers.export_shapes]) if kind == "export" else "",
        side_stream_code=(
            _source([cuda.on_a_side_stream, cuda.side_stream_call]) if kind == "side_stream" else ""
        ),
        fake_mode_code=_FAKE_MODE_CODE,
        dynamo=dynamo,
    )
    head = "\n".join(
        [
            f'"""{overload.name()}: {cause}. Found by extension_cpp_testing, case {case.id}:',
            textwrap.fill(failure.what.splitlines()[0], 79, subsequent_indent="    "),
            "",
            textwrap.fill(f"Fix: {failure.fix}", 79, subsequent_indent="    "),
            "",
            f"Run: python {path.name}",
            f"(plain torch; {path.with_suffix('.pt').name} holds the arguments)",
            '"""\n',
        ]
    )
    load = _LOAD.format(
        imports=imports,
        namespace=namespace,
        name=name.split(".")[0],
        overload=overload._overloadname,
        call=_CALL_OUT_BY_NAME if spec._out_names else _CALL,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(saved, path.with_suffix(".pt"))
    path.write_text(head + "\n" + load + "\n\n" + body)
    return path


def wanted() -> bool:
    """Whether ``EXTENSION_CPP_TESTING_REPRODUCERS`` asks for reproducers."""
    return bool(os.environ.get(ENV))


def maybe_write(spec: OpSpec, case: Case, failure: ConformanceFailure) -> None:
    """Writes the reproducer where ``EXTENSION_CPP_TESTING_REPRODUCERS`` names
    a folder; a reproducer that can't be written never hides the failure."""
    if not wanted():
        return
    try:
        write(spec, case, failure, os.environ[ENV])
    except Exception as e:  # noqa: BLE001  (the case's failure is what matters)
        print(f"extension_cpp_testing: no reproducer for {case.id}: {e}", file=sys.stderr)
