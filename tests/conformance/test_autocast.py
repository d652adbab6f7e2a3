"""torch.autocast: the ops run in the dtype torch.mul(a, b) would, never fail
on the mixed dtypes autocast produces.

Policy (extension_cpp/_autocast.py): both inputs are cast to the widest of their
floating dtypes, the dtype of ``a * b`` under autocast; myadd_out casts them
to ``out``'s dtype. The result equals the same expression in torch ops under
the same autocast, in value and dtype, eager and compiled, with gradients
flowing back to each input in its own dtype.
"""

import pytest
import torch

from .cases import FUNCTIONAL, OPS, TOLERANCES, devices, pkg

# device -> the autocast dtypes PyTorch offers there.
AUTOCAST_DTYPES = {"cpu": [torch.bfloat16, torch.float16], "cuda": [torch.float16, torch.bfloat16]}


def _cases() -> list:
    """(device, autocast dtype) pairs; CUDA ones carry devices()'s skip marks."""
    cases = []
    for device in devices():
        name, marks = (device, ()) if isinstance(device, str) else (device.values[0], device.marks)
        for dtype in AUTOCAST_DTYPES[name]:
            cases.append(pytest.param(name, dtype, marks=marks, id=f"{name}-{str(dtype)[6:]}"))
    return cases


# (a's dtype, b's dtype): autocast's own output type against a float32 tensor,
# both of one type, and both float32.
INPUT_DTYPES = {
    "low-and-float32": lambda low: (low, torch.float32),
    "float32-and-low": lambda low: (torch.float32, low),
    "both-low": lambda low: (low, low),
    "both-float32": lambda low: (torch.float32, torch.float32),
}


def _inputs(device, dtypes, requires_grad=False):
    g = torch.Generator().manual_seed(0)
    return [
        torch.randn(4, 5, generator=g).to(device=device, dtype=d).requires_grad_(requires_grad)
        for d in dtypes
    ]


@pytest.mark.parametrize("inputs", list(INPUT_DTYPES))
@pytest.mark.parametrize(("device", "low"), _cases())
@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_autocast_matches_torch(op_name, device, low, inputs):
    a, b = _inputs(device, INPUT_DTYPES[inputs](low))
    with torch.autocast(device, dtype=low):
        got, want = OPS[op_name].call(a, b), OPS[op_name].as_torch(a, b)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, **TOLERANCES[want.dtype])


@pytest.mark.parametrize(("device", "low"), _cases())
@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_autocast_gradients_reach_each_input_in_its_dtype(op_name, device, low):
    a, b = _inputs(device, (low, torch.float32), requires_grad=True)
    with torch.autocast(device, dtype=low):
        OPS[op_name].call(a, b).sum().backward()
    a2, b2 = (t.detach().clone().requires_grad_() for t in (a, b))
    with torch.autocast(device, dtype=low):
        OPS[op_name].as_torch(a2, b2).sum().backward()
    for got, want in ((a.grad, a2.grad), (b.grad, b2.grad)):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, **TOLERANCES[want.dtype])


@pytest.mark.parametrize(("device", "low"), _cases())
@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_autocast_under_compile(op_name, device, low):
    a, b = _inputs(device, (low, torch.float32))

    def f(a, b):
        with torch.autocast(device, dtype=low):
            return OPS[op_name].call(a, b)

    torch._dynamo.reset()
    got = torch.compile(f, fullgraph=True)(a, b)
    want = f(a, b)
    assert got.dtype == want.dtype == torch.float32
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize(("device", "low"), _cases())
def test_myadd_out_under_autocast_writes_outs_dtype(device, low):
    a, b = _inputs(device, (low, torch.float32))
    out = torch.empty(4, 5, device=device, dtype=low)
    with torch.autocast(device, dtype=low):
        pkg.myadd_out(a, b, out)
    torch.testing.assert_close(out, (a.float() + b).to(low), **TOLERANCES[low])


def test_non_floating_input_under_autocast_is_the_usual_error():
    a, b = torch.ones(3, dtype=torch.int32), torch.ones(3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="mymul: expected a to have a floating-point dtype"):
            pkg.mymul(a, b)


@pytest.mark.parametrize(
    ("bad", "message"),
    [("a", "expected a to be a Tensor, got None"), ("b", "expected b to have a floating-point")],
    ids=["none-a", "int64-b"],
)
@pytest.mark.parametrize(("device", "low"), _cases())
@pytest.mark.parametrize("op_name", list(OPS))
def test_bad_input_under_autocast_is_named(op_name, device, low, bad, message):
    """The autocast kernel runs before the kernel's checks: it must leave a
    bad input, in its place, for them to name."""
    (a,) = _inputs(device, (torch.float32,))
    b = a.to(torch.int64)
    if bad == "a":
        a, b = None, a
    op = OPS[op_name]
    args = (a, b, torch.empty(4, 5, device=device)) if op.out else (a, b, *op.args)
    with torch.autocast(device, dtype=low), pytest.raises(RuntimeError, match=message):
        op.function(*args)
