"""The memory layouts every op is checked on, and the dtypes and tolerances.

Each layout builds the tensor inputs of an elementwise op of any arity: the
first input in one layout and every other input in another, so that two
inputs give the pairs the conformance suite has always used (one input
transposed and one not, one broadcast and one not, ...). Sizes are odd on
purpose: vectorised kernels move 16 bytes at a time and handle a remainder,
and 70001 elements span several CPU threads' chunks. ``SMALL`` sizes keep
gradcheck's numerical Jacobians small.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import torch

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

# Tolerances against a float64 reference, for results rounded once from float
# (float16/bfloat16: half an ulp of the output; float32: a few ulps, as the
# CUDA compiler may fuse a*b+c into one FMA).
TOLERANCES = {
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=8e-3, atol=8e-3),
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
}


def dtype_id(dtype: torch.dtype) -> str:
    """torch.float32 -> 'float32', for test ids."""
    return str(dtype).replace("torch.", "")


def _randn(*shape, dtype, device) -> torch.Tensor:
    return torch.randn(shape, dtype=dtype, device=device)


@dataclasses.dataclass(frozen=True)
class Layout:
    """How to build the inputs: ``first`` makes input 0, ``other`` each later one."""

    first: Callable[..., torch.Tensor]
    other: Callable[..., torch.Tensor]
    # Every input has its own memory per element and at least one element:
    # gradcheck can perturb it (not so for expanded or empty inputs).
    perturbable: bool = True

    def make(self, arity: int, dtype: torch.dtype, device) -> list[torch.Tensor]:
        kw = dict(dtype=dtype, device=device)
        return [self.first(**kw)] + [self.other(**kw) for _ in range(arity - 1)]


def _same(make) -> Layout:
    return Layout(make, make)


def layouts(m: int, n: int, k: int) -> dict[str, Layout]:
    """Layout name -> Layout, with logical shapes built from m, n and k."""
    cl = torch.channels_last
    return {
        "contiguous": _same(lambda **kw: _randn(m, n, **kw)),
        "large-1d": _same(lambda **kw: _randn(k, **kw)),
        "transposed": _same(lambda **kw: _randn(n, m, **kw).t()),
        # One input transposed: the output follows the first, the other is read across.
        "mixed": Layout(lambda **kw: _randn(m, n, **kw), lambda **kw: _randn(n, m, **kw).t()),
        "mixed-b-first": Layout(
            lambda **kw: _randn(n, m, **kw).t(), lambda **kw: _randn(m, n, **kw)
        ),
        "sliced": Layout(
            lambda **kw: _randn(2 * m, 3 * n, **kw)[::2, ::3],
            lambda **kw: _randn(m, 2 * n, **kw)[:, 1::2],
        ),
        # Contiguous but starting one element in: not 16-byte aligned.
        "offset": _same(lambda **kw: _randn(m * n + 1, **kw)[1:].view(m, n)),
        "expanded": Layout(
            lambda **kw: _randn(1, n, **kw).expand(m, n),
            lambda **kw: _randn(m, 1, **kw).expand(m, n),
            perturbable=False,
        ),
        "permuted-3d": Layout(
            lambda **kw: _randn(m, n, 3, **kw).permute(2, 0, 1),
            lambda **kw: _randn(3, m, n, **kw),
        ),
        # Every input in one dense non-contiguous layout: the output keeps it.
        "channels-last": _same(lambda **kw: _randn(2, 3, m, n // 4 + 1, **kw).to(memory_format=cl)),
        "channels-last-3d": _same(
            lambda **kw: _randn(2, 3, 2, m, n // 8 + 1, **kw).to(
                memory_format=torch.channels_last_3d
            )
        ),
        # One channels_last input, the others contiguous: the first decides the output.
        "channels-last-mixed": Layout(
            lambda **kw: _randn(2, 3, m, n // 4 + 1, **kw).to(memory_format=cl),
            lambda **kw: _randn(2, 3, m, n // 4 + 1, **kw),
        ),
        "broadcast-row": Layout(
            lambda **kw: _randn(1, n, **kw).expand(m, n),
            lambda **kw: _randn(m, n, **kw),
            perturbable=False,
        ),
        "broadcast-col": Layout(
            lambda **kw: _randn(m, n, **kw),
            lambda **kw: _randn(m, 1, **kw).expand(m, n),
            perturbable=False,
        ),
        "row-sliced": _same(lambda **kw: _randn(m, n + 1, **kw)[:, 1:]),
        "empty": Layout(
            lambda **kw: _randn(0, n, **kw), lambda **kw: _randn(0, n, **kw), perturbable=False
        ),
        "0-dim": _same(lambda **kw: _randn(**kw)),
    }


# Written into the inputs of the results check's "specials" cases (exact ops).
SPECIAL_VALUES = (-0.0, 0.0, float("inf"), float("-inf"), float("nan"), -1.0, 1.0)


def write_special_values(tensors: list[torch.Tensor], seed: int = 0) -> None:
    """Overwrites about a quarter of each tensor's memory with SPECIAL_VALUES.

    The values go into the whole storage behind each view (an expanded or
    sliced input included), at positions drawn from a seeded generator, so
    that each input gets its own and the pairs vary: -0.0 times a positive
    number, 0.0 times infinity, NaN plus anything.
    """
    gen = torch.Generator().manual_seed(seed)
    for t in tensors:
        if not t.is_floating_point() or t.untyped_storage().nbytes() == 0:
            continue
        n = t.untyped_storage().nbytes() // t.element_size()
        flat = t.new_empty(0).set_(t.untyped_storage(), 0, (n,), (1,))
        where = torch.rand(n, generator=gen) < 0.25
        which = torch.randint(len(SPECIAL_VALUES), (n,), generator=gen)
        values = torch.tensor(SPECIAL_VALUES, dtype=t.dtype)[which]
        with torch.no_grad():
            flat[where.to(t.device)] = values[where].to(t.device)


LAYOUTS: dict[str, Layout] = layouts(37, 129, 70001)
SMALL_LAYOUTS: dict[str, Layout] = layouts(3, 5, 11)
