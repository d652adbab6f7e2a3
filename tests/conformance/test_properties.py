"""Property-based tests: for any input a user can make, the ops give PyTorch's
answer, or the documented error, never a crash or a wrong answer.

Hypothesis draws the inputs (tests/conformance/strategies.py): rank 0 to 6
with zero-size dimensions; transposed, permuted, sliced, expanded and
channels_last layouts with storage offsets; every dtype, supported or not;
inf, nan, -0.0 and out-of-range values of ``c``; any requires_grad pattern.

`make test` runs the ``default`` profile (derandomized: the same examples on
every run); `make fuzz` the ``fuzz`` profile, with ten times the examples
from a fresh seed that it prints (tests/conftest.py). A failure prints the
falsifying example and a ``@reproduce_failure`` blob.

The eager property tests prove the kernels' arithmetic and the C++ checks'
errors, the same bytes of the abi3 module on every CPython: they are marked
``cpython_independent``, and make matrix runs them on one CPython per torch
release. The compiled ones run on every CPython (TorchDynamo reads its bytecode).

``test_output_strides_match_torch`` holds the output-layout promise apart:
the functional ops' output has the strides of ``torch.mul(a, b)``.
"""

from __future__ import annotations

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from . import strategies as S
from .cases import TOLERANCES, assert_values, devices, pkg

FLOAT_DTYPES = "(torch.float16, torch.bfloat16, torch.float32 or torch.float64)"


def examples(n: int) -> int:
    """n under `make test`; the fuzz profile scales every test alike."""
    return n * settings.default.max_examples // 100


# ---------------------------------------------------------------------------
# References and expected errors, written from the documentation.
# ---------------------------------------------------------------------------


def muladd_references(a: torch.Tensor, b: torch.Tensor, c: float):
    """a * b + c as the kernel documents it: computed in float32 (float64 for
    float64), then rounded to the dtype; the multiply and the add either
    rounded each (unfused, the CPU) or once (fused: the CUDA compiler makes an
    FMA of it). They differ by an ulp, and where the product overflows: unfused
    gives inf (or nan, with an infinite c), fused may give a finite result.

    c is first rounded to the compute type: a c beyond float32's range is inf
    there, as in eager `a * b + c`.
    """
    opmath = torch.float64 if a.dtype == torch.float64 else torch.float32
    c_op = torch.tensor(float(c), dtype=torch.float64).to(opmath).item()
    x, y = a.detach().to(opmath), b.detach().to(opmath)
    unfused = x * y + c_op
    if opmath == torch.float32:
        fused = (x.double() * y.double() + c_op).to(opmath)  # the float product is exact in double
    else:
        # Where the product overflows, scale the larger operand by 2^-8 (exact
        # there), add, scale back: what an FMA keeps and the unfused form loses.
        big = x.abs() >= y.abs()
        x2, y2 = torch.where(big, x * 2**-8, x), torch.where(big, y, y * 2**-8)
        over = (x * y).isinf() & x.isfinite() & y.isfinite()
        fused = torch.where(over, (x2 * y2 + c_op * 2**-8) * 2**8, unfused)
    return unfused.to(a.dtype), fused.to(a.dtype)


def assert_muladd(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: float) -> None:
    """Each element matches the unfused or the fused reference."""
    unfused, fused = muladd_references(a, b, c)
    tol = TOLERANCES[out.dtype]
    out, unfused, fused = (t.double().cpu() for t in (out, unfused, fused))
    ok = torch.isclose(out, unfused, equal_nan=True, **tol)
    ok |= torch.isclose(out, fused, equal_nan=True, **tol)
    zeros = (out == 0) & (unfused == 0) & (fused == 0)
    ok &= ~zeros | (out.signbit() == unfused.signbit()) | (out.signbit() == fused.signbit())
    if not ok.all():
        i = tuple(int(k) for k in torch.nonzero(~ok)[0])
        raise AssertionError(
            f"{int((~ok).sum())} of {ok.numel()} elements wrong, first at {i}: "
            f"a={a[i].item()!r} b={b[i].item()!r} c={c!r} gave {out[i].item()!r}, "
            f"expected {unfused[i].item()!r} (unfused) or {fused[i].item()!r} (fused)"
        )


def assert_result(op: str, out, a, b, c) -> None:
    if op == "mymuladd":
        assert_muladd(out, a, b, c)
    else:
        reference = torch.mul if op == "mymul" else torch.add
        assert_values(out, reference(a.detach(), b.detach()), exact=True)


def same_message(op: str, x: str, xt: torch.Tensor, y: str, yt: torch.Tensor) -> str | None:
    if xt.device != yt.device:
        return (
            f"{op}: expected {x} and {y} to be on the same device, got {xt.device} and {yt.device}"
        )
    if xt.dtype != yt.dtype:
        return f"{op}: expected {x} and {y} to have the same dtype, got {xt.dtype} and {yt.dtype}"
    if xt.shape != yt.shape:
        return (
            f"{op}: expected {x} and {y} to have the same shape, "
            f"got {list(xt.shape)} and {list(yt.shape)}"
        )
    return None


def expected_error(op: str, a, b, out=None) -> str | None:
    """The documented message for these inputs, in the documented order of checks."""
    names = [("a", a), ("b", b)] + ([("out", out)] if out is not None else [])
    for name, t in names[:2]:
        if t.dtype not in S.SUPPORTED_DTYPES:
            return (
                f"{op}: expected {name} to have a floating-point dtype {FLOAT_DTYPES}, "
                f"got {t.dtype}"
            )
    msg = same_message(op, "a", a, "b", b)
    if msg or out is None:
        return msg
    if out.dtype not in S.SUPPORTED_DTYPES:
        return f"{op}: expected out to have a floating-point dtype {FLOAT_DTYPES}, got {out.dtype}"
    msg = same_message(op, "out", out, "a", a)
    if msg:
        return msg
    if S.has_internal_overlap(out):
        return f"{op}: expected out to have no internal overlap"
    return None


FUNCTIONAL = {
    "mymuladd": lambda a, b, c: pkg.mymuladd(a, b, c),
    "mymul": lambda a, b, c: pkg.mymul(a, b),
}


@st.composite
def same_shape_pair(draw, dtypes=S.SUPPORTED_DTYPES):
    shape = draw(S.shapes())
    dtype = draw(st.sampled_from(dtypes))
    return draw(S.tensors(shape, dtype)), draw(S.tensors(shape, dtype))


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@pytest.mark.cpython_independent
@pytest.mark.parametrize("device", devices())
@settings(max_examples=examples(800))
@given(op=st.sampled_from(sorted(FUNCTIONAL)), pair=same_shape_pair(), c=S.c_values)
def test_functional_ops_match_pytorch(device, op, pair, c):
    a, b = (spec.make(device) for spec in pair)
    a0, b0 = a.clone(), b.clone()
    out = FUNCTIONAL[op](a, b, c)
    assert (out.shape, out.dtype, out.device) == (a.shape, a.dtype, a.device)
    assert_result(op, out, a, b, c)
    torch.testing.assert_close(a, a0, rtol=0, atol=0, equal_nan=True)  # inputs untouched
    torch.testing.assert_close(b, b0, rtol=0, atol=0, equal_nan=True)
    assert not out.requires_grad


@st.composite
def out_case(draw):
    a, b = draw(same_shape_pair())
    target = draw(st.sampled_from(["new", "new", "new", "a", "b"]))
    out = draw(S.tensors(a.shape, a.dtype, allow_expanded=False))
    return a, b, out, target


@pytest.mark.cpython_independent
@pytest.mark.parametrize("device", devices())
@settings(max_examples=examples(500))
@given(case=out_case())
def test_myadd_out_matches_pytorch(device, case):
    """out in its own layout keeps it; out may also be a or b itself."""
    a_spec, b_spec, out_spec, target = case
    a, b = a_spec.make(device), b_spec.make(device)
    if target == "new":
        out = out_spec.make(device)
    else:
        # In place is allowed only when every element has its own memory.
        out = a if target == "a" else b
        if S.has_internal_overlap(out):
            out = out.contiguous()
    expected = torch.add(a, b)
    strides = out.stride()
    assert pkg.myadd_out(a, b, out) is None
    assert out.stride() == strides
    assert_values(out, expected, exact=True)


# ---------------------------------------------------------------------------
# Gradients
# ---------------------------------------------------------------------------


@st.composite
def grad_case(draw):
    a, b = draw(same_shape_pair())
    needs = draw(st.sampled_from([(True, False), (False, True), (True, True), (False, False)]))
    return a, b, needs, draw(st.integers(0, 2**32 - 1))


def _grads(fn, a_spec, b_spec, needs, seed, device):
    a, b = a_spec.make(device, needs[0]), b_spec.make(device, needs[1])
    out = fn(a, b)
    if not out.requires_grad:
        return out, None, None
    gen = torch.Generator().manual_seed(seed)
    grad = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(out.dtype).to(device)
    out.backward(grad)
    return out, a.grad, b.grad


@pytest.mark.cpython_independent
@pytest.mark.parametrize("device", devices())
@settings(max_examples=examples(400))
@given(op=st.sampled_from(sorted(FUNCTIONAL)), case=grad_case())
def test_gradients_match_pytorch(device, op, case):
    """d/da = grad * b and d/db = grad * a, as torch's own mul gives them."""
    a_spec, b_spec, needs, seed = case
    call = FUNCTIONAL[op]
    ours = _grads(lambda a, b: call(a, b, 0.5), a_spec, b_spec, needs, seed, device)
    theirs = _grads(torch.mul, a_spec, b_spec, needs, seed, device)
    assert ours[0].requires_grad == theirs[0].requires_grad == any(needs)
    for got, want in zip(ours[1:], theirs[1:]):
        assert (got is None) == (want is None)
        if got is not None:
            assert_values(got, want, exact=True)


# ---------------------------------------------------------------------------
# Errors: eager and compiled code say the same documented words
# ---------------------------------------------------------------------------


@st.composite
def bad_case(draw):
    """Inputs most of which break at least one documented rule."""
    op = draw(st.sampled_from(["mymuladd", "mymul", "myadd_out"]))
    shape = draw(S.shapes(max_rank=3))
    b_shape = draw(st.one_of(st.just(shape), S.shapes(max_rank=3)))
    a_dtype = draw(st.sampled_from(S.ALL_DTYPES))
    b_dtype = draw(st.one_of(st.just(a_dtype), st.sampled_from(S.ALL_DTYPES)))
    out_dtype = draw(st.one_of(st.just(a_dtype), st.sampled_from(S.ALL_DTYPES)))
    out_shape = draw(st.one_of(st.just(shape), S.shapes(max_rank=3)))
    return (
        op,
        draw(S.tensors(shape, a_dtype)),
        draw(S.tensors(b_shape, b_dtype)),
        draw(S.tensors(out_shape, out_dtype)),
        draw(st.booleans()),  # a requires grad, where its dtype allows
        draw(S.c_values),
    )


def _call(op, a, b, out, c):
    if op == "mymuladd":
        return pkg.mymuladd(a, b, c)
    if op == "mymul":
        return pkg.mymul(a, b)
    pkg.myadd_out(a, b, out)
    return out


def _bad_inputs(case, device):
    op, a_spec, b_spec, out_spec, grad, c = case
    a, b, out = (spec.make(device) for spec in (a_spec, b_spec, out_spec))
    if grad and (a.dtype.is_floating_point or a.dtype.is_complex) and op != "myadd_out":
        a = a.detach().requires_grad_()
    message = expected_error(op, a, b, out if op == "myadd_out" else None)
    return op, a, b, out, c, message


@pytest.mark.cpython_independent
@pytest.mark.parametrize("device", devices())
@settings(max_examples=examples(600))
@given(case=bad_case())
def test_bad_inputs_raise_the_documented_error(device, case):
    op, a, b, out, c, message = _bad_inputs(case, device)
    if message is None:  # valid after all: then the answer must be right
        assert_result(op, _call(op, a, b, out, c).detach(), a, b, c)
        return
    with pytest.raises(RuntimeError, match=re.escape(message)):
        _call(op, a, b, out, c)


@pytest.mark.parametrize("device", devices())
@settings(max_examples=examples(25))
@given(case=bad_case())
def test_bad_inputs_raise_the_documented_error_when_compiled(device, case):
    op, a, b, out, c, message = _bad_inputs(case, device)
    torch._dynamo.reset()
    compiled = torch.compile(_call, backend="aot_eager", fullgraph=True)
    if message is None:
        result = compiled(op, a, b, out, c)
        assert_values(result.detach(), _call(op, a, b, out.clone(), c).detach(), exact=True)
        return
    with pytest.raises(RuntimeError, match=re.escape(message)):
        compiled(op, a, b, out, c)


@pytest.mark.parametrize("device", devices())
@settings(max_examples=examples(25))
@given(op=st.sampled_from(sorted(FUNCTIONAL)), pair=same_shape_pair(), c=S.c_values)
def test_compiled_matches_eager(device, op, pair, c):
    """The fake kernel's promise holds for any layout: same values, shape, dtype."""
    call = FUNCTIONAL[op]
    a, b = (spec.make(device) for spec in pair)
    torch._dynamo.reset()
    compiled = torch.compile(call, backend="aot_eager", fullgraph=True)
    got = compiled(a, b, c)
    want = call(a, b, c)
    assert (got.shape, got.dtype, got.device) == (want.shape, want.dtype, want.device)
    assert_values(got, want, exact=True)


# ---------------------------------------------------------------------------
# Output layout: TensorIterator's rule
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("device", devices())
@settings(max_examples=examples(300))
@given(
    op=st.sampled_from(sorted(FUNCTIONAL)),
    case=grad_case(),
    compiled=st.sampled_from([False] * 9 + [True]),  # a compile per example is slow
)
def test_output_strides_match_torch(device, op, case, compiled):
    """mymul and mymuladd allocate their output as torch.mul(a, b) does (dense
    inputs keep their memory format), eager and compiled alike, and the
    gradients have torch's strides too."""
    a_spec, b_spec, needs, seed = case
    call = FUNCTIONAL[op]
    ours = _grads(lambda a, b: call(a, b, 0.5), a_spec, b_spec, needs, seed, device)
    theirs = _grads(torch.mul, a_spec, b_spec, needs, seed, device)
    assert ours[0].stride() == theirs[0].stride()
    for got, want in zip(ours[1:], theirs[1:]):
        if got is not None:
            assert got.stride() == want.stride()
    if compiled:
        a, b = a_spec.make(device), b_spec.make(device)
        torch._dynamo.reset()
        fn = torch.compile(lambda a, b: call(a, b, 0.5), backend="aot_eager", fullgraph=True)
        assert fn(a, b).stride() == torch.mul(a, b).stride()
