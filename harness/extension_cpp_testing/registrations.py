"""What the dispatcher holds for an op, asked before a kernel is blamed.

``registrations(overload)`` reads the op's own dispatch table: the keys with
a kernel of their own, each in C++ or Python, the fake, autograd and vmap
kernels ``torch.library`` keeps, and whether the op's one composite kernel
is a legacy catch-all. ``missing(regs)`` turns that into what the checks
need and the op lacks: one ``Missing`` per cause, naming the checks it
breaks and the fix for the op's registration style. The suite gives a failed
case that fix wherever the case's check is one the cause breaks, so an op
with nothing registered for FakeTensor is told so once, in every check that
traces it, and not told to repair a fake kernel it does not have.
"""

from __future__ import annotations

import dataclasses
import re

import torch

from .case import CRASH_FIX

# The keys a custom op's kernels go under, in the order the census prints them.
KEYS = (
    "CPU",
    "CUDA",
    "Meta",
    "CompositeExplicitAutograd",
    "CompositeImplicitAutograd",
    "Autograd",
    "AutogradCPU",
    "AutogradCUDA",
    "FuncTorchBatched",
)

# The checks that run the op on fake tensors (torch.compile, export, opcheck's
# FakeTensor tests). bad_input's fake half asks as "fake" does: the op's eager
# answer to bad input is its kernel's, whatever is registered.
TRACING_CHECKS = ("fake", "opcheck", "compile", "dynamic", "export")
GRADIENT_CHECKS = ("gradcheck", "gradgradcheck", "autodiff")


CATCH_ALL_FIX = (
    "the op's kernel is registered without a dispatch key (m.def(schema, fn) or "
    "torch::RegisterOperators), which the dispatcher files under "
    "CompositeImplicitAutograd as if it were made of other ops; it is not, so FakeTensor, "
    "torch.compile, export, vmap and autograd run the kernel itself on tensors without data, "
    "and PyTorch refuses register_fake for it. Define the schema alone (m.def(schema)), "
    "register the kernel per backend (TORCH_LIBRARY_IMPL(ns, CPU, m) / CUDA: m.impl(name, fn)), "
    "then a fake kernel (torch.library.register_fake) and a backward "
    "(torch.library.register_autograd)"
)

NO_FAKE_KERNEL_FIX = (
    "the op has no fake kernel, and torch.compile, torch.export and FakeTensor need one: "
    "register it (torch.library.register_fake in Python, or a Meta kernel in C++) "
    "returning an empty output of the right sizes, strides and dtype. Without it FakeTensor "
    "may run the real kernel on zero-filled inputs, so a kernel that reads memory by their "
    "values can crash in one run and pass in the next"
)

NO_AUTOGRAD_FIX = (
    "the op's outputs carry no gradient: register a backward "
    "(torch.library.register_autograd, or a C++ autograd kernel), or declare "
    "OpSpec(differentiable=False) if the op has no derivative"
)

NO_BATCHING_RULE_FIX = (
    "register one (torch.library.register_vmap, or a FuncTorchBatched kernel in C++); "
    "without it torch.vmap and torch.func run the op once per sample with only a warning"
)

PYTHON_KERNEL_NOTE = (
    "AOTInductor's C++ runtime calls the op through the dispatcher without Python: "
    "a kernel registered from Python is not there; register the kernel in C++"
)


# A registration fix -> the cause it names, for the findings' table.
CAUSES = {
    CRASH_FIX: "crash",
    CATCH_ALL_FIX: "catch-all kernel",
    NO_FAKE_KERNEL_FIX: "no fake kernel",
    NO_AUTOGRAD_FIX: "no autograd kernel",
    NO_BATCHING_RULE_FIX: "no batching rule",
}


@dataclasses.dataclass(frozen=True)
class Registrations:
    """An op's registrations: ``kernels`` maps each dispatch key with a kernel
    of its own to ``"C++"`` or ``"Python"``; ``fake``, ``autograd`` and
    ``batching`` say whether FakeTensor, autograd and vmap find a kernel of
    the op's (a composite op's decomposition counts); ``catch_all``: the one
    kernel was registered without a dispatch key."""

    name: str
    schema: str
    kernels: dict[str, str]
    fake: bool
    autograd: bool
    batching: bool
    catch_all: bool
    # a return that is a new tensor (not an alias of an argument, as an out=
    # or in-place op's): the only kind autograd differentiates
    returns_new: bool

    def describe(self) -> str:
        """The kernels, one ``key (language)`` each, in KEYS order."""
        parts = [f"{key} ({lang})" for key, lang in self.kernels.items()]
        if self.catch_all:
            parts = ["catch-all, filed as CompositeImplicitAutograd (C++)"]
        return ", ".join(parts) or "none"


@dataclasses.dataclass(frozen=True)
class Missing:
    """A registration the op lacks: the cause, the checks it breaks, the fix."""

    cause: str
    checks: tuple[str, ...]
    fix: str


# "KEY[alias]: registered at FILE:LINE :: SIGNATURE [ boxed unboxed ]", one per
# kernel, above the first blank line of torch._C._dispatch_dump.
_KERNEL_LINE = re.compile(r"^(\w+)(?:\[alias\])?: (registered (?:at \S+|by \w+))")


def _dumped_kernels(name: str) -> tuple[str, dict[str, tuple[str, bool]]]:
    """(where the schema was defined, key -> (where its kernel was, whether in C++))."""
    defined, kernels = "", {}
    for line in torch._C._dispatch_dump(name).split("\n\n")[0].splitlines():
        if line.startswith("debug: "):
            defined = line[len("debug: ") :]
        found = _KERNEL_LINE.match(line)
        if found:
            key, where = found.groups()
            kernels[key] = (where, not _from_python(where))
    return defined, kernels


def _from_python(where: str) -> bool:
    """Whether a dump's "registered at FILE:LINE" is a Python registration: it
    names its .py file, or code from no file ("<string>", exec), or, on torch
    releases before the dispatcher recorded Python files, "/dev/null". C++
    ones (boxed only, on the stable ABI) name their source or
    "RegisterOperators"."""
    source = where.removeprefix("registered at ").rsplit(":", 1)[0]
    return source.endswith(".py") or source.startswith("<") or source == "/dev/null"


def registrations(overload: torch._ops.OpOverload) -> Registrations:
    """What the dispatcher holds for ``overload``. A C++ composite kernel
    registered where the schema was defined (``m.def(schema, fn)``) or by
    ``torch::RegisterOperators`` is a catch-all: the dispatcher can't tell it
    from a kernel made of other ops, but it is the op's real kernel."""
    name = overload.name()
    defined, dumped = _dumped_kernels(name)
    kernels = {key: ("C++" if dumped[key][1] else "Python") for key in KEYS if key in dumped}
    composite = dumped.get("CompositeImplicitAutograd")
    catch_all = (
        composite is not None
        and composite[1]
        and composite[0]
        in (
            defined,
            "registered by RegisterOperators",
        )
    )
    decomposes = composite is not None and not catch_all
    has = set(kernels)
    # torch.library.custom_op registers a Meta and an Autograd kernel that
    # raise until register_fake and register_autograd give them a body.
    opdef = torch._library.custom_ops.OPDEFS.get(name.split(".")[0])
    if opdef is not None:
        fake = getattr(opdef, "_abstract_fn", None) is not None
        autograd = getattr(opdef, "_backward_fn", None) is not None
    else:
        entry = torch._library.simple_registry.singleton.find(name.split(".")[0])
        fake = bool(has & {"Meta", "CompositeExplicitAutograd"}) or (
            entry.fake_impl.kernel is not None
        )
        autograd = bool(has & {"Autograd", "AutogradCPU", "AutogradCUDA"})
    return Registrations(
        name=name,
        schema=str(overload._schema),
        kernels=kernels,
        fake=fake or decomposes,
        autograd=autograd or decomposes,
        batching="FuncTorchBatched" in has or decomposes,
        catch_all=catch_all,
        returns_new=any(r.alias_info is None for r in overload._schema.returns),
    )


def missing(regs: Registrations) -> list[Missing]:
    """What the checks need that the op lacks, one Missing per cause. A
    catch-all lacks everything a decomposition would have given, for one
    reason and with one fix."""
    if regs.catch_all:
        every = (*TRACING_CHECKS, *GRADIENT_CHECKS, "vmap")
        return [Missing(CAUSES[CATCH_ALL_FIX], every, CATCH_ALL_FIX)]
    found = []
    if not regs.fake:
        found.append(Missing(CAUSES[NO_FAKE_KERNEL_FIX], TRACING_CHECKS, NO_FAKE_KERNEL_FIX))
    if not regs.autograd and regs.returns_new:
        found.append(Missing(CAUSES[NO_AUTOGRAD_FIX], GRADIENT_CHECKS, NO_AUTOGRAD_FIX))
    if not regs.batching:
        found.append(Missing(CAUSES[NO_BATCHING_RULE_FIX], ("vmap",), NO_BATCHING_RULE_FIX))
    return found


def missing_for_check(overload: torch._ops.OpOverload, check: str) -> Missing | None:
    """The first registration the op lacks that ``check`` needs, or None."""
    return next((m for m in missing(registrations(overload)) if check in m.checks), None)
