"""cuda_graph and side_stream: the op can be captured in a CUDA graph and
replayed, and waits for the work queued on a side stream before it; and
no CUDA case may leave another stream current (stream_kept)."""

from __future__ import annotations

import contextlib
import warnings
from typing import TYPE_CHECKING

import torch

from ..case import Case
from ..layouts import copy_args
from .base import Check, Failed, assert_effects, case, first_lines, fresh_args, message

if TYPE_CHECKING:
    from ..spec import OpSpec

STREAM_LEFT_CURRENT_FIX = (
    "set a stream only for a scope (c10::cuda::CUDAStreamGuard in C++, a "
    "`with torch.cuda.stream(...)` block in Python), so that the caller's stream is current "
    "again when the op returns"
)


@contextlib.contextmanager
def stream_kept(case: Case):
    """Fails a CUDA case that leaves another stream current than it found.
    The stream is set back either way: every later case in the process would
    run on it, and an op that launches on the legacy default stream would
    then race with its own work there and fail checks that have nothing to do
    with the cause. The stream left current is the finding even where the
    check failed too: its results, read on the caller's stream, race with the
    op's work on the other one, so they differ or not by chance."""
    if case.device != "cuda":
        yield
        return
    stream = torch.cuda.current_stream()
    failed = None
    try:
        yield
    except Failed as e:
        failed = e
    finally:
        left = torch.cuda.current_stream()
        torch.cuda.set_stream(stream)
    if left != stream:
        raise Failed(
            f"the call left another CUDA stream current: {left}, not {stream}",
            fix=STREAM_LEFT_CURRENT_FIX,
        )
    if failed is not None:
        raise failed


def cuda_graph_cases(spec: OpSpec, device: str):
    if device.startswith("cuda"):
        yield case(spec, "cuda_graph", device, spec.first_dtype)


def side_stream_cases(spec: OpSpec, device: str):
    if device.startswith("cuda"):
        yield case(spec, "side_stream", device, spec.first_dtype)


def _host_sync(spec: OpSpec, args) -> BaseException | None:
    """The error torch raises where the op synchronizes with the host (a copy
    to the CPU, .item(), nonzero), found without capturing anything."""
    previous = torch.cuda.get_sync_debug_mode()
    try:
        _set_sync_debug_mode("error")
        spec.call(args)
    except RuntimeError as e:
        if "synchronizing" not in str(e):
            raise
        return e
    finally:
        _set_sync_debug_mode(previous)
    return None


def _set_sync_debug_mode(mode) -> None:
    # torch warns, once per process, that the mode is a prototype: a fact
    # about torch, not the op, and under warnings-as-errors it would leave the
    # mode set for every later case.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Synchronization debug mode is a prototype")
        torch.cuda.set_sync_debug_mode(mode)


def _capture(spec: OpSpec, args):
    """(graph, result, error): the op captured into a CUDA graph, or the error
    the capture raised. A failed capture is cleaned up so that it leaves no
    state behind: the current stream is restored (torch.cuda.graph leaves its
    capture stream current when ending the capture fails), the graph dropped,
    and a capture of nothing takes the CUDA RNG through a whole capture, so
    it no longer counts as capturing."""
    stream = torch.cuda.current_stream()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            result = spec.call(args)
        return graph, result, None
    except Exception as e:  # noqa: BLE001  (the error is what is checked)
        error = e
    for cleanup in (torch.cuda.synchronize, graph.reset, _empty_capture):
        try:
            cleanup()
        except Exception:  # noqa: BLE001  (best effort: whatever is left is checked below)
            pass
    # Last: the empty capture can fail as the op's did, and leave its stream
    # current in turn.
    torch.cuda.set_stream(stream)
    torch.cuda.synchronize()
    return None, None, error


def _empty_capture() -> None:
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        pass
    graph.reset()


def _warm_up(spec: OpSpec, args) -> None:
    """One call off the default stream, as capture requires."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        spec.call(args)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def check_cuda_graph(spec: OpSpec, case: Case) -> None:
    args = fresh_args(spec, case)
    _warm_up(spec, args)
    synced = _host_sync(spec, args)
    if not spec.capturable:
        # The op says it can't be captured: capturing must fail with an error
        # that says why (a sync found beforehand, or the capture's own error),
        # never produce a graph that replays something else.
        if synced is not None:
            return
        _, _, error = _capture(spec, fresh_args(spec, case))
        if error is None:
            raise Failed(
                "the op was captured although the OpSpec declares capturable=False",
                fix="drop capturable=False: the op can be captured in a CUDA graph",
            )
        if not isinstance(error, RuntimeError) or not str(error).strip():
            raise Failed(f"capture failed with an unclear error: {error!r}")
        return
    if synced is not None:
        raise Failed(
            f"the op synchronizes with the host, which a CUDA graph can't capture: "
            f"{message(synced)}",
            fix="keep the op on the device (no .item(), .cpu() or size that depends on the "
            "data), or declare OpSpec(capturable=False) if it must sync",
        )
    graph, result, error = _capture(spec, args)
    if error is not None:
        raise Failed(
            f"capture failed: {first_lines(error)}",
            fix="a call inside the op is not allowed while a stream is captured: a device or "
            "stream synchronize (cudaDeviceSynchronize), a copy to the host, or a launch on the "
            "legacy default stream instead of the current one; remove it, or declare "
            "OpSpec(capturable=False) if the op must sync",
        )
    fresh = fresh_args(spec, case)  # new inputs from samples(), in the captured memory
    for i in spec.tensor_positions(args):
        args[i].copy_(fresh[i])
    # What the op gives on these inputs outside a graph: the replay must give
    # the same (whether that is right is the results check's business).
    eager_args = copy_args(args)
    eager = spec.call(eager_args)
    graph.replay()
    torch.cuda.synchronize()
    try:
        assert_effects(spec, result, args, eager, eager_args)
    except AssertionError as e:
        raise Failed(f"the replayed graph's result is wrong: {first_lines(e)}") from None


def side_stream_args(spec: OpSpec, case: Case) -> list:
    """Inputs large enough that a kernel on another stream runs during the sleep."""
    layout = "large-1d" if spec.samples is None else spec.base_layout
    return spec.sample(layout, case.dtype, "cuda")


# A finding's reproducer prints these two functions' source.
def on_a_side_stream(call, args: list, first: int, cycles: int):
    """call(args) on a side stream that sleeps twice for `cycles` GPU clock
    cycles, then fills args[first] (zeros until then): a kernel launched on
    any other stream runs during the sleep and reads the zeros. Returns the
    result, and whether the first sleep was still running when the call
    returned: only then had every kernel it launched at least the second
    sleep's time to run before the fill."""
    filled = args[first].clone()
    args[first] = torch.zeros_like(filled)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(cycles)
        first_sleep_done = torch.cuda.Event()
        first_sleep_done.record()
        torch.cuda._sleep(cycles)
        args[first].copy_(filled)
        got = call(args)
    in_time = not first_sleep_done.query()
    side.synchronize()
    return got, in_time


def side_stream_call(call, args: list, first: int, copy):
    """on_a_side_stream on a copy of args (copy(args)), again with a sleep
    four times as long while a busy host was slower than the sleep, from tens
    of milliseconds of GPU time up to about a second. Returns the result and
    the arguments of the last try."""
    for cycles in (25_000_000, 100_000_000, 400_000_000, 1_600_000_000):
        tried = copy(args)
        got, in_time = on_a_side_stream(call, tried, first, cycles)
        if in_time:
            break
    return got, tried


def check_side_stream(spec: OpSpec, case: Case) -> None:
    """On a side stream the kernel must wait for the work queued there before it.

    The side stream sleeps, then fills the first input; a kernel launched on
    any other stream runs during the sleep and reads the input unfilled.
    """
    args = side_stream_args(spec, case)
    first = spec.tensor_positions(args)[0]
    # What the op gives on these inputs on the current stream: the side
    # stream's call must give the same.
    eager_args = copy_args(args)
    want = spec.call(eager_args)
    got, args = side_stream_call(spec.call, args, first, copy_args)
    try:
        assert_effects(spec, got, args, want, eager_args)
    except AssertionError as e:
        raise Failed(f"the op did not wait for the side stream's work: {first_lines(e)}") from None


CUDA_GRAPH = Check(
    cuda_graph_cases,
    check_cuda_graph,
    (
        "launch on the current stream (at::cuda::getCurrentCUDAStream()), never the legacy "
        "default stream, and allocate nothing outside PyTorch's allocator"
    ),
)
SIDE_STREAM = Check(
    side_stream_cases,
    check_side_stream,
    (
        "launch every kernel on at::cuda::getCurrentCUDAStream(), never with <<<grid, "
        "block>>> alone (the legacy default stream), and guard the device"
    ),
)
