"""The public functions call their op through its public OpOverload.

``extension_cpp.mymul(a, b)`` is ``torch.ops.extension_cpp.mymul.default(a, b)``
(outside torch.func transforms), so everything the OpOverload does happens:
``__torch_function__`` for subclasses, modes and FX proxies sees it, tracers
record it, and compile and export (both strict and non-strict) put it in
their graphs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch.overrides import TorchFunctionMode

from .cases import PACKAGE, STABLE, pkg

CALLS = {
    "mymuladd": (lambda a, b: pkg.mymuladd(a, b, 0.5), f"{PACKAGE}.mymuladd.default"),
    "mymul": (lambda a, b: pkg.mymul(a, b), f"{PACKAGE}.mymul.default"),
    "myadd_out": (
        lambda a, b: pkg.myadd_out(a, b, torch.empty_like(a)),
        f"{PACKAGE}.myadd_out.default",
    ),
}
OP_NAMES = list(CALLS)


@pytest.mark.parametrize("op_name", OP_NAMES)
def test_eager_call_goes_through_the_public_overload(op_name, monkeypatch):
    """Exactly one OpOverload call, to the op's own overload."""
    calls = []
    original = torch._ops.OpOverload.__call__

    def counting(self, /, *args, **kwargs):
        calls.append(str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch._ops.OpOverload, "__call__", counting)
    call, _ = CALLS[op_name]
    call(torch.randn(3), torch.randn(3))
    assert calls == [CALLS[op_name][1]]


class _Recorder(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.funcs = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.funcs.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("op_name", OP_NAMES)
def test_torch_function_mode_sees_the_op(op_name):
    call, target = CALLS[op_name]
    a, b = torch.randn(3), torch.randn(3)
    with _Recorder() as recorder:
        call(a, b)
    assert target in recorder.funcs


class _Tagged(torch.Tensor):
    """A subclass that records the functions it is passed to."""

    seen: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(str(func))
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.mark.parametrize("op_name", OP_NAMES)
def test_subclass_torch_function_sees_the_op(op_name):
    call, target = CALLS[op_name]
    _Tagged.seen = []
    a = torch.randn(3).as_subclass(_Tagged)
    call(a, torch.randn(3))
    assert target in _Tagged.seen


@pytest.mark.parametrize("op_name", OP_NAMES)
def test_fx_symbolic_trace_records_the_op(op_name):
    call, target = CALLS[op_name]

    class M(torch.nn.Module):
        def forward(self, a, b):
            return call(a, b)

    graph = torch.fx.symbolic_trace(M()).graph
    targets = {str(n.target) for n in graph.nodes if n.op == "call_function"}
    assert target in targets


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "non-strict"])
def test_export_records_the_ops(strict):
    class M(torch.nn.Module):
        def forward(self, a, b):
            out = torch.empty_like(a)
            pkg.myadd_out(pkg.mymuladd(a, b, 0.5), b, out)
            return pkg.mymul(out, a)

    a, b = torch.randn(4, 3), torch.randn(4, 3)
    exported = torch.export.export(M(), (a, b), strict=strict)
    targets = {str(n.target) for n in exported.graph.nodes if n.op == "call_function"}
    assert {
        f"{PACKAGE}.mymuladd.default",
        f"{PACKAGE}.mymul.default",
        f"{PACKAGE}.myadd_out.default",
    } <= targets
    torch.testing.assert_close(exported.module()(a, b), M()(a, b))


# What a call runs in Python, from the public function to the kernel and
# back through its derivatives: (file, function) of each Python frame entered.
def _python_frames(run) -> list[tuple[str, str]]:
    frames = []

    def profile(frame, event, arg):
        if event == "call":
            frames.append((frame.f_code.co_filename, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return frames


def _differentiate(mode, op_name):
    a, b, t = (torch.randn(3, dtype=torch.float64) for _ in range(3))
    call, _ = CALLS[op_name]
    if mode == "backward":
        a.requires_grad_()
        return lambda: torch.autograd.grad(call(a, b), a, t, create_graph=True)
    if mode == "forward_ad":

        def run():
            with fwAD.dual_level():
                call(fwAD.make_dual(a, t), b)

        return run
    a.requires_grad_()
    return lambda: call(a, b)


@pytest.mark.skipif(STABLE, reason="the stable build's derivatives are Python (its _autograd.py)")
@pytest.mark.parametrize("mode", ["forward", "backward", "forward_ad"])
@pytest.mark.parametrize("op_name", ["mymuladd", "mymul"])
def test_a_differentiable_call_runs_no_python_of_ours(op_name, mode):
    """From the public function on, a call that records a gradient, its
    backward (of any order) and its tangent run in C++: no frame of this
    package's Python but the public function, and none of torch's Python
    autograd.Function or torch.library machinery."""
    run = _differentiate(mode, op_name)
    frames = _python_frames(run)
    package = str(Path(pkg.__file__).parent)
    ours = [name for file, name in frames if file.startswith(package)]
    assert ours == [op_name], frames
    machinery = [
        (file, name)
        for file, name in frames
        if file.endswith(("autograd/function.py", "_library/autograd.py", "_library/custom_ops.py"))
    ]
    assert not machinery, machinery
