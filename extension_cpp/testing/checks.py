"""The checks: each takes an OpSpec and a Case and raises on a failure.

``run_check`` wraps every check so that whatever goes wrong (a wrong value,
a graph break, an exception from deep inside torch) reaches the user as a
ConformanceFailure that names the check, the case, and what to fix.
"""

from __future__ import annotations

import warnings

import torch
from torch._dynamo.testing import CompileCounterWithBackend
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.autograd import gradcheck, gradgradcheck

from .autodiff import MODES
from .layouts import write_special_values
from .spec import DYNAMIC_ROWS, HUGE_NUMEL, Case, ConformanceFailure, OpSpec

# What to do when a check fails, shown under the failure.
FIXES = {
    "results": "the kernel disagrees with the reference on this dtype and layout: check its "
    "index math for these strides (offset, broadcast, empty, 0-dim) and that half types "
    "are computed in float; in a -specials case (inputs with -0.0, infinities and NaN), "
    "keep IEEE arithmetic: no shortcut for zeros, no accumulator that starts at +0.0",
    "strides": "allocate the output as the reference does (for elementwise ops, "
    "torch.empty_like(torch.mul(a, b)): PyTorch's TensorIterator layout rule); an out= op "
    "must write out in place, never resize or replace it",
    "fake": "make the fake kernel (torch.library.register_fake) return what the real kernel "
    "returns: same sizes, strides, dtype and device, for every input layout",
    "opcheck": "torch.library.opcheck names the failing test: test_schema -> mark every "
    "argument the op writes as Tensor(a!) in the schema; test_autograd_registration -> "
    "register a backward (torch.library.register_autograd) or a C++ autograd kernel; "
    "test_faketensor -> fix the fake kernel; test_aot_dispatch_* -> the op must not "
    "alias or mutate what its schema does not say",
    "gradcheck": "the backward disagrees with finite differences: fix the derivative "
    "formula (sign, which input it multiplies) or register one if there is none",
    "gradgradcheck": "the backward must itself be differentiable: build it from "
    "differentiable ops (the op itself, or torch ops), not from raw kernels",
    "autodiff": "the op claims this autodiff mode but gives another answer than the "
    "reference's: give it the formula it needs (setup_context/backward for reverse "
    "modes, jvp for forward modes) or stop claiming the mode",
    "compile": "torch.compile(fullgraph=True) must trace the op in one graph and return "
    "eager's values and strides: register a fake kernel and keep the Python wrapper "
    "traceable",
    "dynamic": "with dynamic shapes the op must not specialise on sizes: the fake kernel "
    "should build its output from the inputs' symbolic sizes (no int(), no .item())",
    "export": "torch.export must keep the op as one node that runs again on new shapes: "
    "register a fake kernel that works with symbolic sizes",
    "cuda_graph": "launch on the current stream (at::cuda::getCurrentCUDAStream()), never "
    "the legacy default stream, and allocate nothing outside PyTorch's allocator",
    "side_stream": "launch every kernel on at::cuda::getCurrentCUDAStream(), never with "
    "<<<grid, block>>> alone (the legacy default stream), and guard the device",
    "bad_input": "check what the user controls with TORCH_CHECK (C++) and the same words "
    "with torch._check in the fake kernel, naming the argument and what was received",
    "internal_assert": "TORCH_INTERNAL_ASSERT is for bugs in the op; a user's bad input "
    "must raise TORCH_CHECK's error instead",
    "huge": "index with int64_t (sizes, strides, loop counters): an int element count "
    "overflows past 2^31 elements",
}


class Failed(Exception):
    """A check's own finding (as opposed to an error from inside the op)."""


def run_check(spec: OpSpec, case: Case) -> None:
    try:
        CHECKS[case.check](spec, case)
    except ConformanceFailure:
        raise
    except Failed as e:
        raise ConformanceFailure(case.check, case.id, str(e), FIXES[case.check]) from None
    except Exception as e:  # noqa: BLE001  (reported as this check's failure)
        what = f"{type(e).__name__}: {_first_lines(e)}"
        raise ConformanceFailure(case.check, case.id, what, FIXES[case.check]) from e


def _first_lines(e: BaseException, n: int = 6) -> str:
    return "\n    ".join(str(e).strip().splitlines()[:n])


def _message(e: BaseException) -> str:
    """The error's first line: what the eager and compiled errors must share."""
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _clone(args) -> list:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _describe(t: torch.Tensor) -> str:
    return f"sizes {list(t.shape)}, strides {list(t.stride())}, {t.dtype}, {t.device}"


def _fresh_args(spec: OpSpec, case: Case, **kw) -> list:
    return spec.sample(case.layout or "contiguous", case.dtype, case.device, **kw)


# -- values and layout --------------------------------------------------------


_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _same_bits(x: torch.Tensor, y: torch.Tensor) -> bool:
    """x and y hold the same bits (torch.equal says NaN != NaN)."""
    bits = _BITS[x.element_size()]
    return torch.equal(x.view(bits), y.view(bits))


def assert_same_values(got, want, *, exact: bool, rtol: float = 0, atol: float = 0) -> None:
    """got equals want within rtol and atol, NaN where want has NaN; where
    exact, bit for bit up to NaN payloads: zero tolerance and the sign of
    every zero, which assert_close does not compare (-0.0 == 0.0)."""
    tolerance = dict(rtol=0, atol=0) if exact else dict(rtol=rtol, atol=atol)
    torch.testing.assert_close(got, want, equal_nan=True, **tolerance)
    if exact and isinstance(got, torch.Tensor):
        zeros = (got == 0) & (want == 0)
        flipped = torch.signbit(got[zeros]) != torch.signbit(want[zeros])
        if flipped.any():
            first = torch.signbit(want[zeros][flipped][0]).item()
            raise AssertionError(
                f"{int(flipped.sum())} zero(s) of the wrong sign, e.g. "
                f"{'-0.0' if not first else '0.0'} where the reference has "
                f"{'-0.0' if first else '0.0'}"
            )


def assert_values(spec: OpSpec, got, want, dtype) -> None:
    """got equals want as spec promises: bit for bit if exact, else within the dtype's tolerance."""
    assert_same_values(got, want, exact=spec.exact, **spec.tolerance(dtype))


def check_results(spec: OpSpec, case: Case) -> None:
    args = _fresh_args(spec, case)
    positions = spec.tensor_positions(args)
    if case.variant == "specials":
        write_special_values([args[i] for i in positions])
    before = {i: args[i].clone() for i in positions}
    got = spec.call(args)
    want = spec.expected(args)
    try:
        assert_values(spec, got, want, case.dtype)
    except AssertionError as e:
        raise Failed(f"result differs from the reference: {_first_lines(e)}") from None
    for i in positions:
        if not _same_bits(args[i], before[i]):
            raise Failed(f"the op modified its input {i}, which its schema does not mutate")


def check_strides(spec: OpSpec, case: Case) -> None:
    args = _fresh_args(spec, case)
    if spec.out:
        out = args[-1]
        before = (out.shape, out.stride(), out.data_ptr())
        spec.call(args)
        if (out.shape, out.stride(), out.data_ptr()) != before:
            raise Failed(
                f"out was resized or replaced: sizes {list(before[0])}, strides "
                f"{list(before[1])} became {_describe(out)}"
            )
        return
    got, want = spec.call(args), spec.expected(args)
    if got.shape != want.shape or got.stride() != want.stride():
        raise Failed(f"output has {_describe(got)}; the reference's has {_describe(want)}")
    # A fresh output as dense as the reference's: no offset, no unused memory.
    got_storage = (got.storage_offset(), got.untyped_storage().nbytes())
    want_storage = (want.storage_offset(), want.untyped_storage().nbytes())
    if got_storage != want_storage:
        raise Failed(
            f"output has storage offset {got_storage[0]} in {got_storage[1]} bytes; the "
            f"reference's {want_storage[0]} in {want_storage[1]} bytes"
        )


def _fake_call(spec: OpSpec, args):
    mode = FakeTensorMode()
    fake_args = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
    with mode:
        return spec.call(fake_args)


def check_fake(spec: OpSpec, case: Case) -> None:
    args = _fresh_args(spec, case)
    fake = _fake_call(spec, _clone(args))
    real = spec.call(args)
    for what in ("shape", "dtype", "device"):
        if getattr(fake, what) != getattr(real, what):
            raise Failed(f"fake kernel gives {_describe(fake)}; the real kernel {_describe(real)}")
    if fake.stride() != real.stride() or fake.storage_offset() != real.storage_offset():
        raise Failed(f"fake kernel gives {_describe(fake)}; the real kernel {_describe(real)}")


# -- registration and gradients -----------------------------------------------

OPCHECK_UTILS = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_aot_dispatch_static",
    "test_aot_dispatch_dynamic",
)


def check_opcheck(spec: OpSpec, case: Case) -> None:
    args = _fresh_args(spec, case)
    if case.variant == "requires_grad":
        args = [
            a.detach().requires_grad_() if i in spec.tensor_positions(args) else a
            for i, a in enumerate(args)
        ]
    overload = spec.overload(args)
    with warnings.catch_warnings():
        # opcheck's test_aot_dispatch_static reads .grad of non-leaf tensors it
        # makes itself (torch/testing/_internal/optests/aot_autograd.py).
        warnings.filterwarnings("ignore", "The .grad attribute of a Tensor that is not a leaf")
        result = torch.library.opcheck(overload, tuple(args), test_utils=OPCHECK_UTILS)
    failed = {k: v for k, v in result.items() if v != "SUCCESS"}
    if failed:
        raise Failed(f"opcheck: {failed}")


def _differentiable_call(spec: OpSpec, case: Case, small=True):
    """(f, xs): f(*xs) calls the op with the tensors xs in their places."""
    args = _fresh_args(spec, case, small=small)
    positions = spec.tensor_positions(args)

    def f(*xs):
        full = list(args)
        for i, x in zip(positions, xs):
            full[i] = x
        return spec.op(*full)

    def ref(*xs):
        full = list(args)
        for i, x in zip(positions, xs):
            full[i] = x
        return spec.reference(*full)

    xs = [args[i].detach().requires_grad_() for i in positions]
    return f, ref, xs


def check_gradcheck(spec: OpSpec, case: Case) -> None:
    f, _, xs = _differentiable_call(spec, case)
    gradcheck(f, tuple(xs), fast_mode=False)


def check_gradgradcheck(spec: OpSpec, case: Case) -> None:
    f, _, xs = _differentiable_call(spec, case)
    gradgradcheck(f, tuple(xs))


def check_autodiff(spec: OpSpec, case: Case) -> None:
    f, ref, xs = _differentiable_call(spec, case)
    xs = [x.detach() for x in xs]
    gen = torch.Generator().manual_seed(0)
    ts = [torch.randn(x.shape, generator=gen, dtype=x.dtype).to(x.device) for x in xs]
    run = MODES[case.variant]
    got = run(f, xs, ts)
    want = run(ref, xs, ts)
    if got is None:
        raise Failed(f"{case.variant} gave None (a missing tangent), not the derivative")
    try:
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    except AssertionError as e:
        raise Failed(f"{case.variant} differs from the reference's: {_first_lines(e)}") from None


# -- compilers ----------------------------------------------------------------


def _returning(spec: OpSpec):
    """The op as a function that returns its result (out for an out= op)."""

    def f(*args):
        result = spec.op(*args)
        return args[-1] if spec.out else result

    return f


def check_compile(spec: OpSpec, case: Case) -> None:
    args = _fresh_args(spec, case)
    eager = spec.call(_clone(args))
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")
    compiled = torch.compile(_returning(spec), backend=counter, fullgraph=True)
    got = compiled(*args)
    if counter.frame_count != 1:
        raise Failed(f"compiled into {counter.frame_count} graphs, expected 1")
    try:
        assert_values(spec, got, eager, case.dtype)
    except AssertionError as e:
        raise Failed(f"compiled result differs from eager: {_first_lines(e)}") from None
    if got.stride() != eager.stride():
        raise Failed(f"compiled output has {_describe(got)}; eager's has {_describe(eager)}")


def check_dynamic(spec: OpSpec, case: Case) -> None:
    torch._dynamo.reset()
    compiled = torch.compile(_returning(spec), dynamic=True, fullgraph=True)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for rows in DYNAMIC_ROWS:
            args = _fresh_args(spec, case, rows=rows)
            eager = spec.call(_clone(args))
            assert_values(spec, compiled(*args), eager, case.dtype)


def check_export(spec: OpSpec, case: Case) -> None:
    f = _returning(spec)

    class Wrapper(torch.nn.Module):
        def forward(self, *args):
            return f(*args)

    args = _fresh_args(spec, case, rows=4)
    rows = torch.export.Dim("rows")
    dynamic = tuple(
        {0: rows} if isinstance(a, torch.Tensor) and a.dim() > 0 else None for a in args
    )
    exported = torch.export.export(Wrapper(), tuple(args), dynamic_shapes=(dynamic,))
    overload = spec.overload(args)
    targets = {n.target for n in exported.graph.nodes if n.op == "call_function"}
    if overload not in targets:
        raise Failed(f"{overload} is not a node of the exported graph: {sorted(map(str, targets))}")
    new = _fresh_args(spec, case, rows=9)
    got = exported.module()(*_clone(new))
    assert_values(spec, got, spec.call(new), case.dtype)


# -- CUDA ---------------------------------------------------------------------


def check_cuda_graph(spec: OpSpec, case: Case) -> None:
    args = _fresh_args(spec, case)
    positions = spec.tensor_positions(args)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up off the default stream, as capture requires
        spec.call(args)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = spec.call(args)
    for i in positions:  # new inputs, same memory: the replay must read them
        args[i].copy_(torch.randn_like(args[i]))
    graph.replay()
    torch.cuda.synchronize()
    try:
        assert_values(spec, result, spec.expected(args), case.dtype)
    except AssertionError as e:
        raise Failed(f"the replayed graph's result is wrong: {_first_lines(e)}") from None


def check_side_stream(spec: OpSpec, case: Case) -> None:
    """On a side stream the kernel must wait for the work queued there before it.

    The side stream sleeps, then fills the first input; a kernel launched on
    any other stream runs during the sleep and reads the input unfilled.
    """
    args = spec.sample("large-1d" if spec.samples is None else "contiguous", case.dtype, "cuda")
    first = spec.tensor_positions(args)[0]
    filled = args[first].clone()
    args[first] = torch.zeros_like(filled)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # tens of ms of GPU time
        args[first].copy_(filled)
        got = spec.call(args)
    side.synchronize()
    try:
        assert_values(spec, got, spec.expected(args), case.dtype)
    except AssertionError as e:
        raise Failed(f"the op did not wait for the side stream's work: {_first_lines(e)}") from None


# -- bad input ----------------------------------------------------------------


def bad_args(spec: OpSpec, kind: str, device: str) -> list:
    """The op's arguments made wrong in one way: kind is dtype, shape, device,
    out-overlap or out-internal-overlap."""
    dtype = torch.float32 if torch.float32 in spec.dtypes else spec.dtypes[-1]
    args = spec.sample("contiguous", dtype, device)
    positions = spec.tensor_positions(args)
    tensors = positions + ([len(args) - 1] if spec.out else [])
    if kind == "dtype":
        args[positions[0]] = args[positions[0]].to(torch.int64)
    elif kind == "shape":
        t = args[tensors[-1]]
        args[tensors[-1]] = torch.randn(*t.shape[:-1], t.shape[-1] + 1, dtype=dtype, device=device)
    elif kind == "device":
        args[tensors[-1]] = args[tensors[-1]].cpu()
    elif kind == "out-overlap":
        a = args[positions[0]]
        base = torch.randn(a.numel() + 1, dtype=dtype, device=device)
        args[positions[0]] = base[:-1].view(a.shape)
        args[-1] = base[1:].view(a.shape)
    elif kind == "out-internal-overlap":
        out = args[-1]
        args[-1] = torch.empty(1, *out.shape[1:], dtype=dtype, device=device).expand(out.shape)
    else:
        raise ValueError(f"unknown kind of bad input {kind!r}")
    return args


def _error(fn, args) -> BaseException | None:
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001  (the error is what is checked)
        return e
    return None


def _compiled_error(spec: OpSpec, args):
    torch._dynamo.reset()
    compiled = torch.compile(_returning(spec), backend="aot_eager", fullgraph=True)
    return _error(compiled, args)


def check_bad_input(spec: OpSpec, case: Case) -> None:
    # Fresh arguments for each call: a copy would lose the aliasing of the
    # out-overlap cases.
    device = "cuda" if case.variant == "device" else case.device
    eager = _error(spec.op, bad_args(spec, case.variant, device))
    if eager is None:
        raise Failed(f"{case.variant}: the op accepted the bad input without an error")
    if not isinstance(eager, (RuntimeError, ValueError, TypeError)):
        raise Failed(f"{case.variant}: raised {type(eager).__name__}, not a RuntimeError")
    message = _message(eager)
    fake = _error(lambda *a: _fake_call(spec, a), bad_args(spec, case.variant, device))
    if fake is None:
        raise Failed(
            f"{case.variant}: the fake kernel accepted input that the real kernel rejects "
            f"with {message!r}"
        )
    if message not in str(fake):
        raise Failed(
            f"{case.variant}: the fake kernel's error {_message(fake)!r} is not the real "
            f"kernel's {message!r}"
        )
    compiled = _compiled_error(spec, bad_args(spec, case.variant, device))
    if compiled is None or message not in str(compiled):
        got = "no error" if compiled is None else repr(_message(compiled))
        raise Failed(f"{case.variant}: compiled code raised {got}; eager raised {message!r}")


def check_internal_assert(spec: OpSpec, case: Case) -> None:
    device = "cuda" if case.variant == "device" else case.device
    for where, error in (
        ("eager", _error(spec.op, bad_args(spec, case.variant, device))),
        ("compiled", _compiled_error(spec, bad_args(spec, case.variant, device))),
    ):
        if error is not None and "INTERNAL ASSERT" in str(error):
            raise Failed(
                f"{case.variant} ({where}): a user's bad input is reported as an internal "
                f"error: {_message(error)!r}"
            )


# -- past 2^31 elements -------------------------------------------------------


def check_huge(spec: OpSpec, case: Case) -> None:
    """Inputs of HUGE_NUMEL elements, expanded from one element each (no memory
    but the output's): every element, the last ones included, must be written."""
    dtype, device = case.dtype, case.device
    scalars = [torch.randn(1, dtype=dtype, device=device) for _ in range(spec.arity)]
    args = [s.expand(HUGE_NUMEL) for s in scalars] + list(spec.extra_args)
    if spec.out:
        args.append(torch.full((HUGE_NUMEL,), float("nan"), dtype=dtype, device=device))
    want = spec.reference(*scalars, *spec.extra_args)[0]
    got = spec.call(args)
    for index in (0, 2**31 - 1, 2**31, HUGE_NUMEL - 1):
        try:
            assert_values(spec, got[index], want, dtype)
        except AssertionError:
            raise Failed(
                f"element {index} is {got[index].item()}, expected {want.item()}"
            ) from None


CHECKS = {
    "results": check_results,
    "strides": check_strides,
    "fake": check_fake,
    "opcheck": check_opcheck,
    "gradcheck": check_gradcheck,
    "gradgradcheck": check_gradgradcheck,
    "autodiff": check_autodiff,
    "compile": check_compile,
    "dynamic": check_dynamic,
    "export": check_export,
    "cuda_graph": check_cuda_graph,
    "side_stream": check_side_stream,
    "bad_input": check_bad_input,
    "internal_assert": check_internal_assert,
    "huge": check_huge,
}
