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
import os
import re
import sys
import textwrap
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .case import Case, ConformanceFailure, slug
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


def outputs(result):
    return result if isinstance(result, tuple) else (result,)
"""

# What a check's reproducer runs after _LOAD: each raises while the bug is there.
_BODIES = {
    "fake": """\
# torch.compile and torch.export run the op on fake tensors (no data).
from torch._subclasses.fake_tensor import FakeTensorMode

real = op(*args)
with FakeTensorMode() as mode:
    fake = op(*[mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args])
for f, r in zip(outputs(fake), outputs(real)):
    f, r = [(tuple(t.shape), t.stride(), t.dtype) for t in (f, r)]
    assert f == r, f"the fake kernel gives {{f}}; the kernel {{r}}"
""",
    "gradients": """\
# The derivative against finite differences, in the positions it differentiates.
positions = saved["grad_positions"]


def f(*xs):
    full = list(args)
    for i in saved["written"]:  # what the op writes: a copy for each call
        full[i] = args[i].clone()
    for i, x in zip(positions, xs):
        full[i] = x
    out = outputs(op(*full))
    if saved["grad_outputs"] is not None:  # the outputs with a derivative
        out = [out[i] for i in saved["grad_outputs"]]
    return tuple(o for o in out if o is not None and o.is_floating_point())


xs = [args[i].detach().requires_grad_() for i in positions]
torch.autograd.{tool}(f, xs)
""",
    "results": """\
expected = saved["expected"]
got = op(*args)
if saved["out"]:
    got = tuple(args[i] for i in saved["out"])
    got = got[0] if len(got) == 1 else got
torch.testing.assert_close(got, expected, equal_nan=True, **saved["tolerance"])
""",
    "strides": """\
expected = saved["expected"]
got = op(*args)
for g, e in zip(outputs(got), outputs(expected)):
    assert g.stride() == e.stride(), f"strides {{g.stride()}}; the reference's {{e.stride()}}"
""",
    "bad_input": """\
# {what}: the op must raise.
try:
    op(*args)
except (RuntimeError, ValueError, TypeError, IndexError) as e:
    print("raised, as it must:", str(e).splitlines()[0])
else:
    raise AssertionError("the op returned: {what}")
""",
    "internal_assert": """\
# {what}: the op must raise TORCH_CHECK's error, not an internal assert.
try:
    op(*args)
except RuntimeError as e:
    assert "INTERNAL ASSERT" not in str(e), str(e).splitlines()[0]
""",
    "compile": """\
eager = op(*args)
compiled = torch.compile(lambda *a: op(*a), fullgraph=True, dynamic={dynamic})(*args)
torch.testing.assert_close(compiled, eager, equal_nan=True)
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
}


def _imports(spec: OpSpec, namespace: str) -> list[str]:
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
    return found


def _kind(case: Case, fix: str) -> str | None:
    """Which script shows the finding, or None where none does yet."""
    if fix in (CATCH_ALL_FIX, NO_FAKE_KERNEL_FIX) or case.check == "fake":
        return "fake"
    if fix == NO_AUTOGRAD_FIX or case.check in ("gradcheck", "gradgradcheck"):
        return "gradients"
    if case.check == "dynamic":
        return "compile"
    return case.check if case.check in _BODIES else None


def write(spec: OpSpec, case: Case, failure: ConformanceFailure, folder: str) -> Path | None:
    """Writes the finding's reproducer into folder unless one is there:
    its path, or None where the op is no OpOverload or no script shows the check."""
    from .checks.bad_input import case_args
    from .checks.base import fresh_args, outputs

    overload = spec.resolved_overload()
    kind = _kind(case, failure.fix)
    if overload is None or kind is None:
        return None
    cause = CAUSES.get(failure.fix, case.check)
    path = Path(folder) / f"{slug(failure.op)}--{slug(cause)}.py"
    if path.exists():
        return None
    torch.manual_seed(zlib.crc32(case.id.encode()))  # the case's own draw
    saved: dict = {}
    what = ""
    if case.check in ("bad_input", "internal_assert"):
        args, what = case_args(spec, case)
    elif kind == "vmap":
        saved["samples"] = [fresh_args(spec, case, small=True) for _ in range(3)]
        args = saved["samples"][0]
    else:
        args = fresh_args(spec, case)
    saved["args"] = copy_args(args)
    if kind in ("results", "strides"):
        saved["expected"] = spec.reference(*spec.inputs_of(copy_args(args)))
        saved["out"] = spec.out_positions(args) if spec.out else []
        first = outputs(saved["expected"])[0]
        saved["tolerance"] = spec.tolerance(first.dtype) if first is not None else {}
    if kind == "gradients":
        saved["grad_positions"] = spec.grad_positions(args, case.layout)
        saved["grad_outputs"] = spec.grad_outputs
        saved["written"] = spec.copied_per_call(args, saved["grad_positions"])
    namespace, name = overload.name().split("::")
    imports = "".join(f"import {m}  # registers the op\n" for m in _imports(spec, namespace))
    body = _BODIES[kind].format(
        what=what.replace('"', "'"),
        tool="gradgradcheck" if case.check == "gradgradcheck" else "gradcheck",
        dynamic=case.check == "dynamic",
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
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(saved, path.with_suffix(".pt"))
    path.write_text(head + "\n" + load + "\n" + body)
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
