"""torch.compile and torch.export of the three ops together: one graph, no
break, same answer as eager, and CUDA graphs around them.

Each op on its own (compiled strides equal eager's on every layout, dynamic
shapes, export, a side stream, a CUDA graph) is checked by
extension_cpp.testing (test_harness.py)."""

import warnings

import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend

from .cases import LAYOUTS, PACKAGE, devices, make_inputs, pkg, requires_cuda


def pipeline(a, b):
    """Uses all three ops between regular PyTorch ops."""
    x = pkg.mymuladd(a, b, 0.5)
    y = pkg.mymul(x.sin(), b)
    out = torch.empty_like(y)
    pkg.myadd_out(y, x, out)
    return out * 2


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("device", devices())
def test_compile_fullgraph_matches_eager(device, layout):
    a, b = make_inputs(layout, device=device)
    counter = CompileCounterWithBackend("inductor")
    compiled = torch.compile(pipeline, backend=counter, fullgraph=True)
    torch.testing.assert_close(compiled(a, b), pipeline(a, b))
    assert counter.frame_count == 1  # one graph: no break


@pytest.mark.parametrize("device", devices())
def test_compile_graph_contains_the_ops(device):
    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    a, b = make_inputs("contiguous", device=device)
    torch.compile(pipeline, backend=capture, fullgraph=True)(a, b)
    targets = {str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"}
    assert {
        f"{PACKAGE}.mymuladd.default",
        f"{PACKAGE}.mymul.default",
        f"{PACKAGE}.myadd_out.default",
    } <= targets


@pytest.mark.parametrize("device", devices())
def test_compile_dynamic_does_not_recompile(device):
    compiled = torch.compile(pipeline, dynamic=True, fullgraph=True)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for n in (3, 17, 64, 1000):
            a, b = torch.randn(n, 5, device=device), torch.randn(n, 5, device=device)
            torch.testing.assert_close(compiled(a, b), pipeline(a, b))


@pytest.mark.parametrize("device", devices())
def test_compile_backward_matches_eager(device):
    def loss(a, b):
        return pkg.mymul(pkg.mymuladd(a, b, 1.0), a).sum()

    a, b = make_inputs("transposed", torch.float64, device, requires_grad=True)
    expected = torch.autograd.grad(loss(a, b), (a, b))
    got = torch.autograd.grad(torch.compile(loss, fullgraph=True)(a, b), (a, b))
    torch.testing.assert_close(got, expected)


class Module(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.randn(7, 11))

    def forward(self, a, b):
        return pipeline(pkg.mymul(a, self.scale), b)


@pytest.mark.parametrize("device", devices())
def test_export_matches_eager(device):
    model = Module().to(device)
    a, b = torch.randn(7, 11, device=device), torch.randn(7, 11, device=device)
    exported = torch.export.export(model, (a, b))
    targets = {str(n.target) for n in exported.graph.nodes if n.op == "call_function"}
    assert f"{PACKAGE}.mymuladd.default" in targets
    assert f"{PACKAGE}.mymul.default" in targets
    a2, b2 = torch.randn(7, 11, device=device), torch.randn(7, 11, device=device)
    torch.testing.assert_close(exported.module()(a2, b2), model(a2, b2))


@pytest.mark.parametrize("device", devices())
def test_export_dynamic_shapes(device):
    def f(a, b):
        return pkg.mymuladd(a, b, 3.0)

    class M(torch.nn.Module):
        def forward(self, a, b):
            return f(a, b)

    batch = torch.export.Dim("batch")
    a, b = torch.randn(4, 3, device=device), torch.randn(4, 3, device=device)
    exported = torch.export.export(M(), (a, b), dynamic_shapes=({0: batch}, {0: batch}))
    a2, b2 = torch.randn(9, 3, device=device), torch.randn(9, 3, device=device)
    torch.testing.assert_close(exported.module()(a2, b2), f(a2, b2))


# ---------------------------------------------------------------------------
# CUDA: graphs and streams (pytorch/pytorch#157363: a kernel launched on the
# legacy default stream gives wrong results or fails under CUDA graphs).
# ---------------------------------------------------------------------------


def _start_cudagraph_trees():
    """Starts inductor's CUDA graph tree manager outside the checked region.

    The manager captures an empty graph when it starts, which warns "The CUDA
    Graph is empty". Started here first, that warning can only come again from
    a capture of ours: what a kernel launched on the wrong stream would cause.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The CUDA Graph is empty", UserWarning)
        warm_up = torch.compile(lambda x: x + 1, mode="reduce-overhead")
        for _ in range(3):
            warm_up(torch.ones(4, device="cuda"))


@requires_cuda
@pytest.mark.cuda
def test_reduce_overhead_cuda_graphs_beside_linear():
    _start_cudagraph_trees()
    linear = torch.nn.Linear(64, 64, device="cuda")

    def model(x, b):
        return pkg.mymuladd(linear(x), b, 1.0).relu()

    compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    b = torch.randn(32, 64, device="cuda")
    with torch.no_grad():
        for _ in range(4):  # warm-up, record, replay
            x = torch.randn(32, 64, device="cuda")
            torch.testing.assert_close(compiled(x, b).clone(), model(x, b))


@requires_cuda
@pytest.mark.cuda
def test_cuda_graph_capture_and_replay():
    a, b = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    out = torch.empty_like(a)
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up off the default stream
        pkg.myadd_out(a, b, out)
    torch.cuda.current_stream().wait_stream(stream)
    with torch.cuda.graph(graph):
        result = pkg.mymuladd(a, b, 2.0)
        pkg.myadd_out(result, b, out)
    a.copy_(torch.randn(1000, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(result, a * b + 2.0)
    torch.testing.assert_close(out, result + b)
