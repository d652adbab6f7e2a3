"""The checks: one module per family, each saying when its checks apply
(the cases they make of an OpSpec), how a case runs, and what its failure
tells the op's author to fix. CHECKS is the table, in the order the cases
are made; a new check is a new module and a line here."""

from __future__ import annotations

from . import bad_input, compilers, cuda, fake, gradients, huge, opcheck, results, vmap
from .base import Check

CHECKS: dict[str, Check] = {
    "results": results.RESULTS,
    "strides": results.STRIDES,
    "fake": fake.FAKE,
    "opcheck": opcheck.OPCHECK,
    "gradcheck": gradients.GRADCHECK,
    "gradgradcheck": gradients.GRADGRADCHECK,
    "autodiff": gradients.AUTODIFF,
    "vmap": vmap.VMAP,
    "compile": compilers.COMPILE,
    "dynamic": compilers.DYNAMIC,
    "export": compilers.EXPORT,
    "cuda_graph": cuda.CUDA_GRAPH,
    "side_stream": cuda.SIDE_STREAM,
    "bad_input": bad_input.BAD_INPUT,
    "internal_assert": bad_input.INTERNAL_ASSERT,
    "huge": huge.HUGE,
}

# check -> its fix, as shown under a failure.
FIXES: dict[str, str] = {name: check.fix for name, check in CHECKS.items()}
