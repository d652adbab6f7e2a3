"""The census: every op of a namespace, what it has registered and what
torch.compile, export, vmap, autograd and AOTInductor need that it lacks,
read from the dispatcher alone (no samples, no kernel runs); and a starter
spec file with one OpSpec per op, what its schema implies filled in.

    python -m extension_cpp_testing census NAMESPACE [--import MODULE ...] [--ops REGEX]
        [--spec FILE]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import sys
import textwrap

import torch

from .registrations import (
    CAUSES,
    NO_AUTOGRAD_FIX,
    PYTHON_KERNEL_NOTE,
    Registrations,
    missing,
    registrations,
)

# What each missing registration takes from the op's users.
_NEEDED_BY = {
    "catch-all kernel": "torch.compile, torch.export, opcheck, vmap, autograd",
    "no fake kernel": "torch.compile, torch.export, opcheck",
    # The dispatcher knows no dtypes: an op whose outputs are all integer
    # (codes, indices) needs none, and its OpSpec says differentiable=False.
    "no autograd kernel": "autograd, if an output is floating-point: backward, gradcheck",
    "no batching rule": "torch.vmap (a per-sample loop, with a warning)",
}


def overloads(namespace: str, ops: str | None = None) -> list[torch._ops.OpOverload]:
    """Every overload of every op the dispatcher holds in ``namespace``
    (whose name matches the regular expression ``ops``, where given), sorted."""
    found = []
    for qualified in sorted(torch._C._dispatch_get_all_op_names()):
        ns, _, rest = qualified.partition("::")
        if ns != namespace or (ops is not None and not re.fullmatch(ops, rest.partition(".")[0])):
            continue
        name, _, overload = rest.partition(".")
        found.append(getattr(getattr(getattr(torch.ops, ns), name), overload or "default"))
    return found


def lacks(regs: Registrations) -> list[str]:
    """What the op lacks, each as ``cause (who needs it)``."""
    found = [f"{m.cause} ({_NEEDED_BY[m.cause]})" for m in missing(regs)]
    python = [
        key
        for key, lang in regs.kernels.items()
        if lang == "Python" and key in ("CPU", "CUDA", "CompositeExplicitAutograd")
    ]
    if python:
        found.append(f"a C++ kernel (AOTInductor: {', '.join(python)} is Python)")
    return found


def report(namespace: str, ops: str | None = None) -> str:
    """The census of ``namespace`` (its ops matching ``ops``) as text: one block per op."""
    ops = overloads(namespace, ops)
    if not ops:
        return (
            f"no ops in the namespace {namespace!r}: import the library that registers them "
            "(--import MODULE)\n"
        )
    lines, counts = [], dict.fromkeys(_NEEDED_BY, 0)
    for overload in ops:
        regs = registrations(overload)
        for m in missing(regs):
            counts[m.cause] += 1
        lines.append(regs.schema)
        lines.append(f"    kernels: {regs.describe()}")
        lines.append(f"    lacks:   {'; '.join(lacks(regs)) or 'nothing the checks need'}")
    lacking = ", ".join(f"{cause} {n}" for cause, n in counts.items() if n)
    lines.append(f"{len(ops)} ops in {namespace}; lacking: {lacking or 'none'}")
    if any("AOTInductor" in line for line in lines):
        lines.append(f"AOTInductor: {PYTHON_KERNEL_NOTE}")
    return "\n".join(lines) + "\n"


def starter_spec(namespace: str, modules: list[str], ops: str | None = None) -> str:
    """A test module with one OpSpec per op of ``namespace``: the schema's
    out arguments filled in (its other ``(a!)`` arguments the harness reads
    itself), the reference and samples to write. Until they are written,
    each op's test is marked skip, saying so."""
    text = textwrap.dedent(
        f'''\
        """Starter OpSpecs for the {namespace} ops, written by
        `python -m extension_cpp_testing census {namespace} --spec FILE`.

        For each op, write its reference (the same math in torch ops) and its
        samples (samples(layout, dtype, device, rows) -> every argument in the
        schema's order) where the lines say WRITE, relax what its contract
        allows (docs: check_your_op), and drop its skip mark.
        """

        import pytest
        import torch

        from extension_cpp_testing import OpSpec, conformance_tests
        '''
    )
    text += "".join(f"import {m}  # noqa: F401  (registers the ops)\n" for m in modules)
    text += textwrap.dedent(
        """

        TO_WRITE = pytest.mark.skip(reason="its reference and samples are still to be written")


        def write_me(*args):
            raise NotImplementedError("write this op's reference and samples")
        """
    )
    for overload in overloads(namespace, ops):
        schema = overload._schema
        args = ", ".join(f"{a.name}: {a.type}" for a in schema.arguments)
        outs = [
            a.name
            for a in schema.arguments
            if a.alias_info is not None and a.alias_info.is_write and a.name.startswith("out")
        ]
        name = overload.name().split("::")[1].replace(".", "_")
        fields = [
            f"torch.ops.{namespace}.{overload._opname}.{overload._overloadname},",
            "reference=write_me,  # WRITE: the same math in torch ops",
            f"samples=write_me,  # WRITE: returns [{args}]",
        ]
        if outs:
            fields.append(f"out={tuple(outs)!r},")
        if any(m.cause == CAUSES[NO_AUTOGRAD_FIX] for m in missing(registrations(overload))):
            fields.append("# differentiable=False,  # no autograd kernel: if no output is float")
        body = "".join(f"            {f}\n" for f in fields)
        text += (
            f"\n\n# {schema}\ntest_{name} = TO_WRITE(\n    conformance_tests(\n        OpSpec(\n"
            f"{body}        )\n    )\n)\n"
        )
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m extension_cpp_testing census")
    parser.add_argument("namespace", help="the ops' namespace, as in torch.ops.NAMESPACE")
    parser.add_argument(
        "--import",
        dest="modules",
        action="append",
        default=None,
        help="a module that registers the ops (default: the namespace, where importable)",
    )
    parser.add_argument("--ops", metavar="REGEX", help="only the ops whose name matches")
    parser.add_argument("--spec", metavar="FILE", help="write a starter spec file here")
    args = parser.parse_args(argv)
    modules = args.modules
    if modules is None:
        modules = [args.namespace] if importlib.util.find_spec(args.namespace) else []
    for module in modules:
        importlib.import_module(module)
    sys.stdout.write(report(args.namespace, args.ops))
    if args.spec:
        with open(args.spec, "w") as f:
            f.write(starter_spec(args.namespace, modules, args.ops))
        print(f"starter spec: {args.spec}")
    return 0
