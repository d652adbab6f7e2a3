"""The public functions call their op through its public OpOverload.

``extension_cpp.mymul(a, b)`` is ``torch.ops.extension_cpp.mymul.default(a, b)``
(outside torch.func transforms), so everything the OpOverload does happens:
``__torch_function__`` for subclasses, modes and FX proxies sees it, tracers
record it, and compile and export (both strict and non-strict) put it in
their graphs. (An earlier version called the private C++ entry behind the
OpOverload to save about 0.2 us a call; docs/performance.md says why it went.)
"""

from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode

from .cases import PACKAGE, pkg

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
