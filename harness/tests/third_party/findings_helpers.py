"""What the findings' reproducers and their tests share (torchvision_findings.py,
bitsandbytes_findings.py, fbgemm_findings.py): whether an op accepts its
arguments, as they are and on fake tensors; what this torch's opcheck
compares; and running a reproducer where its crash can't end the test run.

Nothing here calls an op when imported: the harness's worker imports this
module to run these functions (extension_cpp_testing.call_isolated).
"""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from extension_cpp_testing import call_isolated


# [accepts]
def kernel_accepts(op, *args) -> bool:
    try:
        op(*args)
    except (RuntimeError, ValueError):
        return False
    return True


def fake_accepts(op, *args) -> bool:
    """As torch.compile and torch.export trace op: on fake tensors, its meta kernel."""
    mode = FakeTensorMode(shape_env=ShapeEnv())
    with mode:
        return kernel_accepts(op, *[mode.from_tensor(a) if torch.is_tensor(a) else a for a in args])


# [accepts]


def opcheck_compares_strides(device: str) -> bool:
    """Whether this torch's opcheck (test_faketensor) compares a fake kernel's
    strides with the kernel's on `device` (2.14 does on both; 2.11 on CUDA
    alone; 2.8 on neither): a probe op whose fake kernel gives a transposed
    input a contiguous output."""
    if device == "cuda" and not torch.cuda.is_available():
        return False
    lib = torch.library.Library(f"opcheck_probe_{device}", "DEF")
    lib.define("copy(Tensor x) -> Tensor")
    lib.impl("copy", torch.clone, "CompositeExplicitAutograd")
    fake = lambda x: torch.empty(x.shape, device=x.device)  # noqa: E731
    torch.library.register_fake(f"opcheck_probe_{device}::copy", fake, lib=lib)
    x = torch.randn(4, 3, device=device).t()
    report = torch.library.opcheck(
        getattr(torch.ops, f"opcheck_probe_{device}").copy.default, (x,),
        test_utils="test_faketensor", raise_exception=False,
    )  # fmt: skip
    return report["test_faketensor"] != "SUCCESS"


def reproduces_in_isolation(reproducer, shows: bool) -> None:
    """Runs a reproducer in the harness's worker process (a library's kernel
    may abort it): where the bug shows, its assert must fail; elsewhere it
    must pass."""
    made = call_isolated(reproducer)
    if not shows:
        made.result()
    elif not isinstance(made.error, AssertionError):
        got = repr(made.error) if made.error is not None else "no failure"
        raise AssertionError(f"{reproducer.__name__}: expected its assert to fail, got {got}")


def reproducers(findings) -> list:
    """A findings module's reproducers as test parameters, those that need
    a GPU (its NEEDS_CUDA) marked cuda, so that make gpu runs them."""
    needs_cuda = getattr(findings, "NEEDS_CUDA", ())
    return [
        pytest.param(f, marks=pytest.mark.cuda) if f in needs_cuda else f for f in findings.FINDINGS
    ]
