"""What the benchmarks time: our ops, their PyTorch baselines, and a copy.

The one list of the ops every benchmark times (OPS), with the calls that
stand for each: ours (of either build, or the Triton package), the eager
expression, the single native op and its torch.ops.aten overload.

For each op there are five implementations, all producing the same result
(except ``copy``, the device's memory roofline):

    ours     extension_cpp.mymuladd / mymul / myadd_out (the public functions)
    eager    the natural PyTorch expression: a * b + c, a * b, a + b
    native   the single fused PyTorch op: torch.addcmul (with a 0-dim c, so
             it moves the same bytes as ours), torch.mul, torch.add(out=)
    compile  torch.compile of the eager expression
    copy     out.copy_(a): one read and one write, the bandwidth to beat

Every op counts as reading a and b and writing out (3 * N elements), so
"effective bandwidth" compares like with like; copy counts its own 2 * N.

Timing (``measure``) runs K calls per round and keeps the fastest round,
with CUDA synchronised inside the timed region. Two metrics:

    call     K calls from Python, then synchronise: what a user pays.
    kernel   (CUDA) the same K calls captured once in a CUDA graph and
             replayed: device time only, no Python or launch overhead.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Callable

import torch

import extension_cpp

OPS = ("mymuladd", "mymul", "myadd_out")
IMPLS = ("ours", "eager", "native", "compile", "copy")
C = 0.5  # mymuladd's scalar
# The native ops' overloads, called as torch.ops calls a custom op.
ATEN = {
    "mymuladd": torch.ops.aten.addcmul.default,
    "mymul": torch.ops.aten.mul.Tensor,
    "myadd_out": torch.ops.aten.add.out,
}


def ours(pkg, op: str, a, b, out) -> Callable[[], object]:
    """One call of op from pkg (extension_cpp, extension_cpp_stable, extension_triton)."""
    if op == "mymuladd":
        return lambda: pkg.mymuladd(a, b, C)
    if op == "mymul":
        return lambda: pkg.mymul(a, b)
    return lambda: (pkg.myadd_out(a, b, out), out)[1]


def eager(op: str, a, b) -> Callable[[], object]:
    """The natural PyTorch expression of op."""
    return {"mymuladd": lambda: a * b + C, "mymul": lambda: a * b, "myadd_out": lambda: a + b}[op]


def native(op: str, a, b, out, through_aten: bool = False) -> Callable[[], object]:
    """The single native op: addcmul (with a 0-dim c, so it moves the same
    bytes as ours), mul, add(out=); through_aten: its torch.ops.aten overload."""
    c0 = torch.tensor(C, dtype=a.dtype, device=a.device)
    if through_aten:
        return {
            "mymuladd": lambda: ATEN["mymuladd"](c0, a, b),
            "mymul": lambda: ATEN["mymul"](a, b),
            "myadd_out": lambda: ATEN["myadd_out"](a, b, out=out),
        }[op]
    return {
        "mymuladd": lambda: torch.addcmul(c0, a, b),
        "mymul": lambda: torch.mul(a, b),
        "myadd_out": lambda: torch.add(a, b, out=out),
    }[op]


def dtype_id(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def bytes_moved(impl: str, n: int, dtype: torch.dtype) -> int:
    """Bytes an ideal implementation moves: 2 reads + 1 write (copy: 1 + 1)."""
    size = torch.empty((), dtype=dtype).element_size()
    return (2 if impl == "copy" else 3) * n * size


_compiled: dict = {}  # made for the thread count in torch._inductor.config.cpp.threads


def _compiled_fn(op: str) -> Callable:
    """One torch.compile per op and thread count, dynamic in N (each dtype compiles once)."""
    threads = torch.get_num_threads()
    if threads != torch._inductor.config.cpp.threads:
        # Inductor writes the thread count into the CPU kernels it generates,
        # and torch 2.11's compile cache does not key on it (a kernel
        # compiled at 1 thread ran at 16 as at 1: Note [Compile per thread
        # count], docs/performance.md). Compile afresh, with the count in the config.
        torch._dynamo.reset()
        _compiled.clear()
        torch._inductor.config.cpp.threads = threads
    if op not in _compiled:
        fns = {
            "mymuladd": lambda a, b: a * b + C,
            "mymul": lambda a, b: a * b,
            "myadd_out": lambda a, b: a + b,
        }
        _compiled[op] = torch.compile(fns[op], dynamic=True, fullgraph=True)
    return _compiled[op]


@dataclasses.dataclass
class Case:
    op: str
    impl: str
    a: torch.Tensor
    b: torch.Tensor
    out: torch.Tensor
    fn: Callable[[], object]  # one call, returns its result (or out)

    def reference(self) -> torch.Tensor:
        a, b = self.a.double(), self.b.double()
        if self.impl == "copy":
            return a
        return {"mymuladd": a * b + C, "mymul": a * b, "myadd_out": a + b}[self.op]


def make_case(op: str, impl: str, n: int, dtype: torch.dtype, device: str) -> Case:
    a = torch.randn(n, dtype=dtype, device=device)
    b = torch.randn(n, dtype=dtype, device=device)
    out = torch.empty_like(a)
    if impl == "copy":
        return Case(op, impl, a, b, out, lambda: out.copy_(a))
    if impl == "ours":
        fn = ours(extension_cpp, op, a, b, out)
    elif impl == "eager":
        fn = eager(op, a, b)
    elif impl == "native":
        fn = native(op, a, b, out)
    elif impl == "compile":
        compiled = _compiled_fn(op)
        fn = lambda: compiled(a, b)  # noqa: E731
    else:
        raise ValueError(f"unknown impl {impl!r}, expected one of {IMPLS}")
    return Case(op, impl, a, b, out, fn)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def make_round(case: Case, device: str, metric: str, calls: int) -> Callable[[], None]:
    """The callable one benchmark round times: `calls` calls of the case."""
    fn = case.fn
    if metric == "call":

        def run() -> None:
            for _ in range(calls):
                fn()
            _sync(device)

        return run
    if metric != "kernel" or not device.startswith("cuda"):
        raise ValueError(f"metric {metric!r} is not available on {device}")
    graph = captured(fn, calls)  # each round replays it

    def replay() -> None:
        graph.replay()
        torch.cuda.synchronize()

    replay.graph = graph  # keep the graph (and its memory pool) alive
    return replay


def captured(fn: Callable[[], object], calls: int, pool=None) -> torch.cuda.CUDAGraph:
    """`calls` calls of fn captured in one CUDA graph, after a warm-up on a
    side stream (as capture requires). `pool`: a memory pool to share with
    other graphs (torch.cuda.graph_pool_handle()), else the graph's own."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool):
        for _ in range(calls):
            fn()
    return graph


def calls_per_round(case: Case, device: str, round_seconds: float) -> int:
    """How many calls fill about `round_seconds`, from a quick estimate."""
    for _ in range(2):
        case.fn()
    _sync(device)
    t0 = time.perf_counter()
    case.fn()
    _sync(device)
    one = max(time.perf_counter() - t0, 1e-7)
    return int(min(max(round_seconds / one, 1), 2000))


def cpu_name() -> str:
    """The CPU's model name, as /proc/cpuinfo gives it (or the platform's guess)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "cpu"


def env_list(name: str, default: str) -> list[str]:
    return [x.strip() for x in os.environ.get(name, default).split(",") if x.strip()]
