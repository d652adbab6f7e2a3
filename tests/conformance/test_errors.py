"""Bad input: a RuntimeError that names the op, the argument and what was
received, with the same words in eager mode (the C++ checks) and under
torch.compile (the fake kernels' checks)."""

import importlib
import re

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from .cases import HAS_CUDA, ops_ns, pkg, requires_cuda

FLOAT_DTYPES = "(torch.float16, torch.bfloat16, torch.float32 or torch.float64)"


def f32(*shape, device="cpu"):
    return torch.randn(shape, device=device)


def _cases():
    """(id, function of no arguments' inputs, inputs factory, expected message)."""
    muladd = lambda a, b: pkg.mymuladd(a, b, 1.0)  # noqa: E731
    mul = pkg.mymul

    def add_out(a, b, out):
        pkg.myadd_out(a, b, out)
        return out

    def overlapping_out(base, b):
        pkg.myadd_out(base[:-1], b, base[1:])
        return base

    def overlapping_out_b(a, base):
        pkg.myadd_out(a, base[:-1], base[1:])
        return base

    cases = [
        (
            "int64-a",
            muladd,
            lambda: (torch.ones(3, dtype=torch.int64), f32(3)),
            f"mymuladd: expected a to have a floating-point dtype {FLOAT_DTYPES}, got torch.int64",
        ),
        (
            "bool-b",
            mul,
            lambda: (f32(3), torch.ones(3, dtype=torch.bool)),
            f"mymul: expected b to have a floating-point dtype {FLOAT_DTYPES}, got torch.bool",
        ),
        (
            "complex-a",
            muladd,
            lambda: (torch.ones(3, dtype=torch.complex64), f32(3)),
            f"mymuladd: expected a to have a floating-point dtype {FLOAT_DTYPES}, "
            "got torch.complex64",
        ),
        (
            "int32-out",
            add_out,
            lambda: (f32(3), f32(3), torch.ones(3, dtype=torch.int32)),
            f"myadd_out: expected out to have a floating-point dtype {FLOAT_DTYPES}, "
            "got torch.int32",
        ),
        (
            "dtype-mismatch",
            muladd,
            lambda: (f32(3), torch.ones(3, dtype=torch.float64)),
            "mymuladd: expected a and b to have the same dtype, "
            "got torch.float32 and torch.float64",
        ),
        (
            "shape-mismatch",
            mul,
            lambda: (f32(3), f32(4)),
            "mymul: expected a and b to have the same shape, got [3] and [4]",
        ),
        (
            "no-broadcast",
            muladd,
            lambda: (f32(2, 3), f32(3)),
            "mymuladd: expected a and b to have the same shape, got [2, 3] and [3]",
        ),
        (
            "out-shape",
            add_out,
            lambda: (f32(2, 3), f32(2, 3), f32(3, 2)),
            "myadd_out: expected out and a to have the same shape, got [3, 2] and [2, 3]",
        ),
        (
            "out-dtype",
            add_out,
            lambda: (f32(3), f32(3), torch.ones(3, dtype=torch.float64)),
            "myadd_out: expected out and a to have the same dtype, got torch.float64 and "
            "torch.float32",
        ),
        (
            "out-expanded",
            add_out,
            lambda: (f32(4, 3), f32(4, 3), f32(1, 3).expand(4, 3)),
            "myadd_out: expected out to have no internal overlap (each element its own memory "
            "location, unlike an expanded tensor), got strides [0, 1] for shape [4, 3]",
        ),
        (
            # Rows of 3 elements 2 apart: each row's last element is the next one's first.
            "out-overlapping-rows",
            add_out,
            lambda: (f32(2, 3), f32(2, 3), f32(5).as_strided((2, 3), (2, 1))),
            "myadd_out: expected out to have no internal overlap (each element its own memory "
            "location, unlike an expanded tensor), got strides [2, 1] for shape [2, 3]",
        ),
        (
            "out-partial-overlap",
            overlapping_out,
            lambda: (f32(5), f32(4)),
            "myadd_out: out overlaps a in memory without being the same view of it",
        ),
        (
            "out-partial-overlap-b",
            overlapping_out_b,
            lambda: (f32(4), f32(5)),
            "myadd_out: out overlaps b in memory without being the same view of it",
        ),
        (
            # One element each: the smallest tensors the rule still applies to.
            "out-partial-overlap-one-element",
            overlapping_out,
            lambda: (f32(2), f32(1)),
            "myadd_out: out overlaps a in memory without being the same view of it",
        ),
        # None reaches a Tensor argument as an undefined tensor.
        (
            "none-a",
            mul,
            lambda: (None, f32(3)),
            "mymul: expected a to be a Tensor, got None",
        ),
        (
            "none-b",
            muladd,
            lambda: (f32(3), None),
            "mymuladd: expected b to be a Tensor, got None",
        ),
        (
            "none-out",
            add_out,
            lambda: (f32(3), f32(3), None),
            "myadd_out: expected out to be a Tensor, got None",
        ),
        # out at the same place as an input, with other strides: a partial
        # overlap, although offset and storage are the same.
        (
            "out-same-offset-other-strides",
            lambda a, b: add_out(a, b, a.t()),
            lambda: (f32(3, 3), f32(3, 3)),
            "myadd_out: out overlaps a in memory without being the same view of it",
        ),
        # A second device without a GPU: the meta device.
        (
            "device-mismatch-meta",
            mul,
            lambda: (f32(3), f32(3, device="meta")),
            "mymul: expected a and b to be on the same device, got cpu and meta",
        ),
        # Two rules broken at once: the one checked first names the error,
        # in eager and compiled code alike (dtype, then device, dtype and
        # shape of the pair, then out's layout).
        (
            "int64-a-and-shape",
            mul,
            lambda: (torch.ones(3, dtype=torch.int64), f32(4)),
            f"mymul: expected a to have a floating-point dtype {FLOAT_DTYPES}, got torch.int64",
        ),
        (
            "dtype-and-shape-mismatch",
            muladd,
            lambda: (f32(3), torch.ones(4, dtype=torch.float64)),
            "mymuladd: expected a and b to have the same dtype, "
            "got torch.float32 and torch.float64",
        ),
        (
            "device-and-dtype-mismatch",
            mul,
            lambda: (f32(3), torch.ones(3, dtype=torch.float64, device="meta")),
            "mymul: expected a and b to be on the same device, got cpu and meta",
        ),
        (
            "mymuladd-no-tensor",
            muladd,
            lambda: (None, None),
            "mymuladd: expected a to be a Tensor, got None",
        ),
        (
            "rank",
            mul,
            lambda: (f32(*[1] * 65), f32(*[1] * 65)),
            "mymul: tensors with more than 64 dimensions are not supported, got 65",
        ),
        (
            "out-dtype-and-expanded",
            add_out,
            lambda: (f32(4, 3), f32(4, 3), torch.ones(1, 3, dtype=torch.float64).expand(4, 3)),
            "myadd_out: expected out and a to have the same dtype, got torch.float64 and "
            "torch.float32",
        ),
    ]
    if HAS_CUDA:
        cases += [
            (
                "device-mismatch",
                muladd,
                lambda: (f32(3), f32(3, device="cuda")),
                "mymuladd: expected a and b to be on the same device, got cpu and cuda:0",
            ),
            (
                "out-device",
                add_out,
                lambda: (f32(3, device="cuda"), f32(3, device="cuda"), f32(3)),
                "myadd_out: expected out and a to be on the same device, got cpu and cuda:0",
            ),
        ]
    return cases


CASES = {case[0]: case[1:] for case in _cases()}


@pytest.mark.parametrize("case", CASES)
def test_eager_error(case):
    fn, inputs, message = CASES[case]
    with pytest.raises(RuntimeError, match=re.escape(message)):
        fn(*inputs())


@pytest.mark.parametrize("case", CASES)
def test_compiled_error_has_the_same_words(case):
    fn, inputs, message = CASES[case]
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="aot_eager", fullgraph=True)
    with pytest.raises(RuntimeError, match=re.escape(message)):
        compiled(*inputs())


@pytest.mark.parametrize("case", CASES)
def test_fake_kernel_error_has_the_same_words(case):
    """The fake kernel alone, as torch.export runs it: compiled code runs the
    real kernel too, whose error would hide a fake kernel that lets the input
    through."""
    fn, inputs, message = CASES[case]
    mode = FakeTensorMode()
    args = [mode.from_tensor(t) if isinstance(t, torch.Tensor) else t for t in inputs()]
    with mode, pytest.raises(RuntimeError, match=re.escape(message)):
        fn(*args)


@pytest.mark.parametrize("case", ["out-partial-overlap"])
def test_partial_overlap_leaves_memory_untouched(case):
    fn, inputs, _ = CASES[case]
    base, b = inputs()
    before = base.clone()
    with pytest.raises(RuntimeError):
        fn(base, b)
    assert torch.equal(base, before)


def test_out_may_be_the_same_view_of_an_input_when_compiled():
    def in_place(a, b):
        pkg.myadd_out(a, b, a)
        return a

    a, b = f32(6), f32(6)
    expected = a + b
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(in_place, fullgraph=True)(a, b), expected)
    torch.testing.assert_close(a, expected)


def test_size_one_dimensions_do_not_count_against_the_merge_limit():
    """30 size-1 dimensions whose strides no neighbour continues: they step
    nowhere, so the layout drops them instead of refusing 31 dimensions."""
    n = 30
    a = torch.randn(3).as_strided([1] * n + [3], [5 + i for i in range(n)] + [1])
    assert torch.equal(pkg.mymul(a, a), a * a)


def test_dimensions_that_merge_do_not_count_against_the_limit():
    """26 dimensions of size 2 (past the limit of 25), all of which merge: the
    output contiguous, the inputs expanded (stride 0 throughout)."""
    a = torch.full((1,), 1.5, dtype=torch.float16).expand([2] * 26)
    out = pkg.mymul(a, a)
    assert out.is_contiguous()
    assert bool((out == 2.25).all())


def test_too_many_dimensions_is_a_clear_error():
    """26 dimensions that no two neighbours can merge (all strides 1)."""
    a = torch.randn(27).as_strided([2] * 26, [1] * 26)
    with pytest.raises(RuntimeError, match="mymul: tensors with more than 25 non-mergeable"):
        pkg.mymul(a, a)


@requires_cuda
@pytest.mark.cuda
def test_inputs_on_different_gpus_are_rejected():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA GPUs")
    with pytest.raises(RuntimeError, match="got cuda:0 and cuda:1"):
        pkg.mymul(f32(3, device="cuda:0"), f32(3, device="cuda:1"))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # No tensor at all: the dispatcher has no device to pick a kernel by.
        (lambda: pkg.mymul(None, None), "mymul: expected a to be a Tensor, got None"),
        # Autograd runs before the backend kernel's checks.
        (
            lambda: pkg.mymuladd(f32(3).requires_grad_(), None, 2.0),
            "mymuladd: expected b to be a Tensor, got None",
        ),
        (
            lambda: pkg.myadd_out(None, None, None),
            "myadd_out: expected a to be a Tensor, got None",
        ),
    ],
    ids=["mymul-no-tensor", "mymuladd-grad", "myadd_out-no-tensor"],
)
def test_none_is_named_before_the_dispatcher_fails(call, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        call()


def test_none_through_torch_ops_is_named_by_the_kernel():
    """The C++ check, without the public function's help."""
    with pytest.raises(RuntimeError, match=re.escape("mymul: expected a to be a Tensor, got None")):
        ops_ns.mymul(None, f32(3))


def test_empty_out_with_a_zero_stride_is_accepted():
    """No element, so no overlap: PyTorch's out= ops accept it, and so do we
    (found by test_properties: it used to be refused as internal overlap)."""
    out = torch.empty(0, 1).expand(0, 3)
    pkg.myadd_out(f32(0, 3), f32(0, 3), out)
    torch._dynamo.reset()
    torch.compile(pkg.myadd_out, backend="aot_eager", fullgraph=True)(f32(0, 3), f32(0, 3), out)


def test_out_with_a_zero_stride_over_one_element_is_accepted():
    """A size-1 dimension steps nowhere, whatever its stride: no overlap."""
    a, b = f32(1, 3), f32(1, 3)
    out = torch.empty(3).as_strided((1, 3), (0, 1))
    pkg.myadd_out(a, b, out)
    torch.testing.assert_close(out, a + b)
    torch._dynamo.reset()
    torch.compile(pkg.myadd_out, backend="aot_eager", fullgraph=True)(a, b, out)


def test_64_dimensions_are_taken_and_65_refused():
    """The rank limit is inclusive: 64 size-1 dimensions (which merge away) run."""
    ok = f32(*[1] * 64)
    torch.testing.assert_close(pkg.mymul(ok, ok), ok * ok)
    bad = f32(*[1] * 65)
    message = "mymul: tensors with more than 64 dimensions are not supported, got 65"
    with pytest.raises(RuntimeError, match=re.escape(message)):
        pkg.mymul(bad, bad)
    # The fake kernel draws the line at the same place (65: test_fake_kernel_error_*).
    mode = FakeTensorMode()
    with mode:
        assert pkg.mymul(mode.from_tensor(ok), mode.from_tensor(ok)).dim() == 64


def test_one_input_checks_say_the_kernels_words():
    """The one-input form of the fake kernels' checks, which an op added as
    docs/copy_your_own_op.md shows calls (tests/test_copy_op.py runs one)."""
    checks = importlib.import_module(f"{pkg.__name__}._checks")
    a = torch.ones(3, dtype=torch.int64)
    with pytest.raises(RuntimeError, match=re.escape("myop: expected a to have a floating-point")):
        checks.check_input("myop", a)
    with pytest.raises(RuntimeError, match=re.escape("myop: tensors with more than 64 dim")):
        checks.check_input("myop", f32(*[1] * 65))
    checks.check_input("myop", f32(*[1] * 64))


def test_none_beside_a_tensor_that_requires_grad_when_compiled():
    """The C++ autograd kernel lets the fake kernel's check name it."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda b: pkg.mymul(None, b), backend="aot_eager", fullgraph=True)
    with pytest.raises(RuntimeError, match=re.escape("mymul: expected a to be a Tensor, got None")):
        compiled(f32(3).requires_grad_())
