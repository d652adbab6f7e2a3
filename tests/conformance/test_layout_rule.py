"""The output layout rule, against PyTorch's own, on thousands of layouts.

csrc/elementwise.h restates TensorIterator's rule for an elementwise op's
output strides (elementwise_output_strides); the fake kernels ask torch.mul's
meta function instead. Both must give torch.mul(a, b)'s strides for every
pair of inputs, including the corner cases where the rule breaks ties: size-1
dimensions with odd strides, equal strides, broadcast (stride-0) dimensions,
empty tensors, and layouts that are channels_last and contiguous at once.
"""

import random

import pytest
import torch

from .cases import FUNCTIONAL, OPS, ops_ns

N_CASES = 1500


def _random_view(rng: random.Random, shape: list) -> torch.Tensor:
    """A tensor of `shape` in a random layout: permuted storage, step slices,
    an offset, expanded size-1 dimensions, or as_strided strides for size-1
    dimensions."""
    ndim = len(shape)
    kind = rng.choice(["permute", "slice", "expand", "odd-size1", "channels_last", "plain"])
    if kind == "channels_last" and ndim == 4:
        return torch.randn(shape).to(memory_format=torch.channels_last)
    if kind == "expand":
        dims = [d for d in range(ndim) if rng.random() < 0.4]
        base = torch.randn([1 if d in dims else s for d, s in enumerate(shape)])
        return base.expand(shape)
    if kind == "slice":
        steps = [rng.choice([1, 1, 2, 3]) for _ in shape]
        start = [rng.choice([0, 1]) for _ in shape]
        base = torch.randn([s * st + o for s, st, o in zip(shape, steps, start)])
        index = tuple(slice(o, o + s * st, st) for s, st, o in zip(shape, steps, start))
        return base[index]
    if kind == "odd-size1":
        t = torch.randn(shape)
        strides = [rng.choice([1, 7, 1000]) if s == 1 else st for s, st in zip(shape, t.stride())]
        return t.as_strided(shape, strides)
    if kind == "permute":
        perm = list(range(ndim))
        rng.shuffle(perm)
        base = torch.randn([shape[p] for p in perm])
        inverse = [perm.index(d) for d in range(ndim)]
        return base.permute(inverse)
    return torch.randn(shape)


def _random_case(seed: int):
    rng = random.Random(seed)
    ndim = rng.choice([0, 1, 2, 3, 4, 4, 5])
    shape = [rng.choice([1, 1, 2, 3, 4]) for _ in range(ndim)]
    if ndim and rng.random() < 0.05:
        shape[rng.randrange(ndim)] = 0
    a, b = _random_view(rng, shape), _random_view(rng, shape)
    if rng.random() < 0.3:
        b = a  # the same tensor twice: equal strides, whatever they are
    return a, b


@pytest.mark.parametrize("op_name", ["mymul", "mymuladd"])
def test_strides_equal_torch_mul_on_random_layouts(op_name):
    op = getattr(ops_ns, op_name).default
    extra = (0.5,) if op_name == "mymuladd" else ()
    mismatches = []
    for seed in range(N_CASES):
        a, b = _random_case(seed)
        got, want = op(a, b, *extra).stride(), torch.mul(a, b).stride()
        if got != want:
            mismatches.append((seed, list(a.shape), a.stride(), b.stride(), got, want))
    assert not mismatches, "seed, shape, a strides, b strides, ours, torch.mul:\n" + "\n".join(
        map(str, mismatches[:20])
    )


@pytest.mark.parametrize("op_name", FUNCTIONAL)
@pytest.mark.parametrize("seed", range(0, N_CASES, 50))
def test_fake_strides_equal_real(seed, op_name):
    """What torch.compile plans with (the fake kernel's strides) is what the
    real kernel returns, for every functional op."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    call = OPS[op_name].call
    a, b = _random_case(seed)
    real = call(a, b)
    with FakeTensorMode() as mode:
        fake = call(mode.from_tensor(a), mode.from_tensor(b))
    assert fake.shape == real.shape
    assert fake.stride() == real.stride()
