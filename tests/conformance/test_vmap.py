"""torch.vmap over the ops matches a Python loop over the batch.

The ops have batching rules (register_vmap in extension_cpp/ops.py): one call
of the op covers the whole batch. Without a rule, vmap would fall back to a
slow per-sample loop and warn; warnings are errors in this suite, so these
tests also prove the rules are the ones used.
"""

import pytest
import torch
from torch import func

from .cases import FUNCTIONAL, OPS, devices, pkg


def _loop(f, a, b, in_dims, out_dim=0):
    """The reference: f on each sample, stacked along out_dim."""
    size = next(x.size(d) for x, d in zip((a, b), in_dims) if d is not None)
    pick = lambda x, d, i: x if d is None else x.select(d, i)  # noqa: E731
    return torch.stack(
        [f(pick(a, in_dims[0], i), pick(b, in_dims[1], i)) for i in range(size)], out_dim
    )


def _randn(*shape, device):
    return torch.randn(*shape, dtype=torch.float64, device=device)


# (a's shape, b's shape, in_dims): batch of 4 over samples of shape (3, 5).
IN_DIMS = {
    "both-0": ((4, 3, 5), (4, 3, 5), (0, 0)),
    "a-0-b-2": ((4, 3, 5), (3, 5, 4), (0, 2)),
    "a-1-b-None": ((3, 4, 5), (3, 5), (1, None)),
    "a-None-b-0": ((3, 5), (4, 3, 5), (None, 0)),
    "a-neg1-b-0": ((3, 5, 4), (4, 3, 5), (-1, 0)),
}


@pytest.mark.parametrize("case", list(IN_DIMS))
@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_vmap_matches_loop(op_name, device, case):
    a_shape, b_shape, in_dims = IN_DIMS[case]
    a, b = _randn(*a_shape, device=device), _randn(*b_shape, device=device)
    f = OPS[op_name].call
    torch.testing.assert_close(func.vmap(f, in_dims=in_dims)(a, b), _loop(f, a, b, in_dims))


@pytest.mark.parametrize("out_dims", [0, 1, 2])
@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_vmap_out_dims(op_name, out_dims):
    a, b = _randn(4, 3, 5, device="cpu"), _randn(4, 3, 5, device="cpu")
    f = OPS[op_name].call
    got = func.vmap(f, out_dims=out_dims)(a, b)
    torch.testing.assert_close(got, _loop(f, a, b, (0, 0), out_dims))


@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_nested_vmap(op_name):
    a, b = _randn(2, 4, 3, device="cpu"), _randn(4, 3, device="cpu")
    f = OPS[op_name].call
    got = func.vmap(func.vmap(f, in_dims=(0, 0)), in_dims=(0, None))(a, b)
    want = torch.stack([_loop(f, a[i], b, (0, 0)) for i in range(2)])
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_vmap_of_grad_is_per_sample_gradient(op_name, device):
    a, b = _randn(4, 3, device=device), _randn(4, 3, device=device)
    f = OPS[op_name].call
    per_sample = func.vmap(func.grad(lambda x, y: f(x, y).sin().sum()))(a, b)
    want = torch.stack(
        [torch.autograd.grad(f(x.requires_grad_(), y).sin().sum(), x)[0] for x, y in zip(a, b)]
    )
    torch.testing.assert_close(per_sample, want)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", FUNCTIONAL)
def test_vmap_under_compile(op_name, device):
    a, b = _randn(4, 3, 5, device=device), _randn(3, 5, device=device)
    f = OPS[op_name].call
    torch._dynamo.reset()
    compiled = torch.compile(func.vmap(f, in_dims=(0, None)), fullgraph=True)
    torch.testing.assert_close(compiled(a, b), _loop(f, a, b, (0, None)))


def _add_out(a, b, out):
    pkg.myadd_out(a, b, out)
    return out


@pytest.mark.parametrize("device", devices())
def test_myadd_out_vmap_writes_each_sample(device):
    a, b = _randn(4, 3, device=device), _randn(3, 4, device=device)
    out = torch.empty(4, 3, dtype=torch.float64, device=device)
    func.vmap(_add_out, in_dims=(0, 1, 0))(a, b, out)
    torch.testing.assert_close(out, a + b.t(), rtol=0, atol=0)


def test_myadd_out_vmap_with_unbatched_out_is_an_error():
    a, b = _randn(4, 3, device="cpu"), _randn(4, 3, device="cpu")
    out = torch.empty(3, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="myadd_out: under torch.vmap, out must be batched"):
        func.vmap(_add_out, in_dims=(0, 0, None))(a, b, out)
