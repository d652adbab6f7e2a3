"""The kernels' input checks and the fake kernels' checks agree, case by case.

Both C++ bindings run one set of checks (csrc/input_checks.h), each reading
its own tensor type through a small view; the fake kernels repeat the checks
in Python (extension_cpp/_checks.py), as they run on FakeTensors. Each test
below calls an op on a systematic list of arguments, good and bad, eagerly
(the C++ checks) and under FakeTensorMode (the Python ones), and asserts the
same outcome for each: the same RuntimeError text, or no error. The suite
runs once per build (EXTENSION_CPP_BUILD), so each binding is held to the
Python checks, and through them to the other. The dtype cases cover every
dtype a tensor can have, which holds the kernels' dtype names to Python's.
Only the merge limit (test_errors.py) is the kernels' alone: a fake kernel
has no layout to merge.
"""

from __future__ import annotations

import functools
import warnings

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from .cases import OPS, devices, requires_cuda


@functools.cache
def dtypes(device: str) -> list[torch.dtype]:
    """Every dtype of torch's that a tensor on `device` can have, but the
    quantized ones, whose tensors have no kernel of ours to reach."""
    found = []
    for dtype in sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str):
        with warnings.catch_warnings():  # complex32 and the like: "experimental"
            warnings.simplefilter("ignore")
            try:
                if torch.empty(1, dtype=dtype, device=device).is_quantized:
                    continue
            except RuntimeError:  # a dtype this device cannot hold
                continue
        found.append(dtype)
    return found


POSITIONS = {name: ["a", "b", "out"] if op.out else ["a", "b"] for name, op in OPS.items()}


def outcome(call) -> str:
    """The RuntimeError's text, or "ok"."""
    try:
        call()
    except RuntimeError as error:
        return str(error)
    return "ok"


def outcomes(op: str, args: list) -> tuple[str, str]:
    """(eager, fake): the op on args, then on FakeTensor copies of them."""
    fn = OPS[op].function
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # experimental dtypes, as above
        eager = outcome(lambda: fn(*args))
        mode = FakeTensorMode()
        fakes = [mode.from_tensor(t) if isinstance(t, torch.Tensor) else t for t in args]
        with mode:
            fake = outcome(lambda: fn(*fakes))
    return eager, fake


def assert_agree(op: str, cases: dict) -> None:
    """cases: id -> the op's arguments. Lists every case where they differ."""
    differ = {}
    for case, args in cases.items():
        eager, fake = outcomes(op, args)
        if eager != fake:
            differ[case] = f"eager: {eager!r}\n    fake:  {fake!r}"
    assert not differ, "\n".join(f"{case}:\n    {text}" for case, text in differ.items())


def call_args(op: str, a, b, out=None) -> list:
    """The arguments of `op` (mymuladd's c, myadd_out's out)."""
    if OPS[op].out:
        return [a, b, out]
    return [a, b, *OPS[op].args]


def empty(*shape, dtype=torch.float32, device="cpu"):
    """A tensor of the shape and dtype: zeros in the dtypes the ops take, so
    that a case the checks let through computes on defined values."""
    if dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        return torch.zeros(shape, dtype=dtype, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.empty(shape, dtype=dtype, device=device)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize(("op", "position"), [(op, p) for op in OPS for p in POSITIONS[op]])
def test_every_dtype_in_every_position(device, op, position):
    """One argument of each dtype, the others float32: the dtype check, then
    the pair check (two floating dtypes that differ)."""
    cases = {}
    for dtype in dtypes(device):
        tensors = {name: empty(3, device=device) for name in POSITIONS[op]}
        tensors[position] = empty(3, dtype=dtype, device=device)
        cases[str(dtype)] = call_args(op, *tensors.values())
    assert_agree(op, cases)


SHAPES = [(), (0,), (3,), (1, 3), (3, 1), (2, 3), (3, 2), (2, 0, 3), (1,) * 64, (1,) * 65]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op", OPS)
def test_every_pair_of_shapes(device, op):
    """a and b (and out) of every pair of shapes, ranks 0 to 65."""
    cases = {}
    for sa in SHAPES:
        for sb in SHAPES:
            a, b = empty(*sa, device=device), empty(*sb, device=device)
            if OPS[op].out:  # (a, b, out) of shapes (sa, sa, sb): out against a
                cases[f"{sa} {sa} {sb}"] = call_args(op, a, empty(*sa, device=device), b)
            cases[f"{sa} {sb}"] = call_args(op, a, b, empty(*sa, device=device))
    assert_agree(op, cases)


@pytest.mark.parametrize("op", OPS)
def test_none_in_every_position(op):
    cases = {}
    for position in POSITIONS[op]:
        tensors = {name: empty(3) for name in POSITIONS[op]}
        tensors[position] = None
        cases[f"{position} None"] = call_args(op, *tensors.values())
        # Of three arguments, two None beside one tensor (with no tensor at
        # all, no kernel runs: test_errors.py).
        if len(tensors) > 2:
            others = {name: None for name in tensors}
            others[[n for n in tensors if n != position][0]] = empty(3)
            cases[f"{position} None, one tensor"] = call_args(op, *others.values())
    assert_agree(op, cases)


def _out_layouts(device) -> dict:
    """myadd_out's out against its inputs: every way it may or may not share
    memory with them, and its own overlap."""

    def base(n):
        return empty(n, device=device)

    x, y = base(12), base(24)
    square = base(9).view(3, 3)
    return {
        "fresh": (x.view(4, 3), base(12).view(4, 3), base(12).view(4, 3)),
        "out is a": (x.view(4, 3), base(12).view(4, 3), x.view(4, 3)),
        "out is b": (base(12).view(4, 3), x.view(4, 3), x.view(4, 3)),
        "a is b is out": (x.view(4, 3), x.view(4, 3), x.view(4, 3)),
        "inputs overlap": (y[:12].view(4, 3), y[1:13].view(4, 3), base(12).view(4, 3)),
        "out shifted in a": (y[:12].view(4, 3), base(12).view(4, 3), y[1:13].view(4, 3)),
        "out shifted in b": (base(12).view(4, 3), y[:12].view(4, 3), y[1:13].view(4, 3)),
        "out apart in a's storage": (y[:12].view(4, 3), base(12).view(4, 3), y[12:].view(4, 3)),
        "out is a transposed": (square, base(9).view(3, 3), square.t()),
        "out transposed, fresh": (x.view(4, 3), x.view(4, 3), base(12).view(3, 4).t()),
        "out expanded": (x.view(4, 3), x.view(4, 3), base(3).expand(4, 3)),
        "out rows overlap": (
            base(6).view(2, 3),
            base(6).view(2, 3),
            base(5).as_strided((2, 3), (2, 1)),
        ),
        "out empty, stride 0": (
            base(0).view(0, 3),
            base(0).view(0, 3),
            base(1).as_strided((0, 3), (0, 1)),
        ),
        "out one row, stride 0": (
            x[:3].view(1, 3),
            x[:3].view(1, 3),
            base(3).as_strided((1, 3), (0, 1)),
        ),
        "out empty in a's storage": (y[:0], base(0), y[1:1]),
    }


@pytest.mark.parametrize("device", devices())
def test_every_out_layout(device):
    cases = {name: list(args) for name, args in _out_layouts(device).items()}
    assert_agree("myadd_out", cases)


@requires_cuda
@pytest.mark.cuda
@pytest.mark.parametrize("op", OPS)
def test_every_mix_of_devices(op):
    """The device check, whose names ("cpu", "cuda:0") each binding prints."""
    cases = {}
    names = POSITIONS[op]
    for mask in range(1, 2 ** len(names) - 1):  # some on the GPU, not all
        devices_ = ["cuda" if mask >> i & 1 else "cpu" for i in range(len(names))]
        cases["-".join(devices_)] = call_args(op, *(empty(3, device=d) for d in devices_))
    assert_agree(op, cases)
