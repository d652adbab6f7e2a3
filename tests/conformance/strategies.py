"""Hypothesis strategies: any tensor a user can hand the ops.

A drawn input is a plain description (``TensorSpec``: shape, memory order,
slice steps, expanded dimensions, storage offset, dtype, a seed for the
values), and ``TensorSpec.make`` builds the tensor from it. Hypothesis prints
the description of a failing example, which says at a glance what layout it
was, and shrinks it towards the simplest one that still fails.

Layouts come from one recipe: allocate the elements in some dimension order
(transposed, permuted, channels_last), start ``offset`` elements into the
storage, slice every dimension with a step, and expand the dimensions marked
so. The recipe reaches every layout PyTorch's view ops make, short of
``as_strided``.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from hypothesis import event
from hypothesis import strategies as st

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
UNSUPPORTED_DTYPES = (
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.complex64,
    torch.complex128,
)
ALL_DTYPES = SUPPORTED_DTYPES + UNSUPPORTED_DTYPES

# Largest size per dimension, by rank: enough for every kind of dimension
# (0, 1, odd, even) while a rank-6 tensor stays a few hundred elements.
_MAX_SIZE = {0: 1, 1: 40, 2: 12, 3: 6, 4: 4, 5: 3, 6: 3}

# c: the values that break naive code, then anything a Python float can be.
SPECIAL_C = (
    0.0,
    -0.0,
    1.25,
    math.inf,
    -math.inf,
    math.nan,
    1e-45,  # below float32's smallest subnormal
    5e-324,  # double's smallest subnormal
    65504.0,  # float16's largest
    7e4,  # beyond float16
    3.5e38,  # beyond float32 and bfloat16
    1e39,
    -1e300,
    1e300,
    2.0**63,
)
c_values = st.one_of(
    st.sampled_from(SPECIAL_C),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**53), 2**53),
)


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: torch.dtype
    order: tuple[int, ...]  # dimensions from outermost to innermost in memory
    steps: tuple[int, ...]  # slice step of each dimension
    expanded: tuple[bool, ...]  # dimension made by expand (stride 0)
    offset: int  # elements skipped at the start of the storage
    specials: bool  # sprinkle inf, -inf, nan, -0.0, 0 and the dtype's extremes
    seed: int

    def kinds(self) -> list[str]:
        """What this layout exercises, for --hypothesis-show-statistics."""
        rank = len(self.shape)
        identity = tuple(range(rank))
        kinds = [f"rank {rank}", str(self.dtype)]
        if self.order == identity:
            kinds.append("dense order")
        elif rank in (4, 5) and self.order == (0, *range(2, rank), 1):
            kinds.append("channels_last")
        elif self.order == identity[:-2] + (rank - 1, rank - 2):
            kinds.append("transposed")
        else:
            kinds.append("permuted")
        kinds += ["sliced with steps"] if any(s > 1 for s in self.steps) else []
        kinds += ["expanded"] if any(self.expanded) else []
        kinds += ["storage offset"] if self.offset else []
        kinds += ["zero-size"] if 0 in self.shape else []
        kinds += ["inf/nan/-0.0 values"] if self.specials else []
        return kinds

    def make(self, device, requires_grad: bool = False) -> torch.Tensor:
        for kind in self.kinds():
            event(kind)
        gen = torch.Generator().manual_seed(self.seed)
        base = [1 if e else n * s for n, s, e in zip(self.shape, self.steps, self.expanded)]
        physical = [base[d] for d in self.order]
        storage = _values(math.prod(physical) + self.offset, self.dtype, self.specials, gen)
        t = storage.to(device)[self.offset :].view(physical)
        t = t.permute([self.order.index(d) for d in range(len(self.shape))])
        t = t[tuple(slice(None, None, 1 if e else s) for s, e in zip(self.steps, self.expanded))]
        t = t.expand(self.shape)
        assert t.shape == self.shape
        if requires_grad:
            # A leaf with this very layout (requires_grad_ on a view would not be one).
            t = t.detach().requires_grad_()
        return t


def _values(n: int, dtype: torch.dtype, specials: bool, gen: torch.Generator) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=gen).bool()
    if not (dtype.is_floating_point or dtype.is_complex):
        lo = 0 if dtype == torch.uint8 else -100
        return torch.randint(lo, 100, (n,), generator=gen).to(dtype)
    t = torch.randn(n, generator=gen, dtype=torch.float64)
    if dtype.is_complex:
        return torch.complex(t, torch.randn(n, generator=gen, dtype=torch.float64)).to(dtype)
    t = t.to(dtype)
    if specials and n:
        info = torch.finfo(dtype)
        pool = torch.tensor(
            [math.inf, -math.inf, math.nan, -0.0, 0.0, info.max, -info.max, info.tiny, 1.0],
            dtype=dtype,
        )
        where = torch.rand(n, generator=gen) < 0.3
        pick = torch.randint(0, len(pool), (n,), generator=gen)
        t = torch.where(where, pool[pick], t)
    return t


def _orders(rank: int):
    identity = tuple(range(rank))
    choices = [st.just(identity), st.permutations(identity).map(tuple)]
    if rank >= 2:
        choices.append(st.just(identity[:-2] + (rank - 1, rank - 2)))  # transposed
    if rank in (4, 5):
        choices.append(st.just((0, *range(2, rank), 1)))  # channels_last(_3d)
    return st.one_of(*choices)


@st.composite
def shapes(draw, min_rank: int = 0, max_rank: int = 6) -> tuple[int, ...]:
    rank = draw(st.integers(min_rank, max_rank))
    dims = draw(st.lists(st.integers(1, _MAX_SIZE[rank]), min_size=rank, max_size=rank))
    if rank and draw(st.integers(0, 7)) == 0:  # one example in eight is empty
        dims[draw(st.integers(0, rank - 1))] = 0
    return tuple(dims)


@st.composite
def tensors(draw, shape, dtype, allow_expanded: bool = True) -> TensorSpec:
    """A spec of `shape` and `dtype` in any layout."""
    rank = len(shape)
    max_step = 3 if rank <= 4 else 2
    return TensorSpec(
        shape=tuple(shape),
        dtype=dtype,
        order=draw(_orders(rank)),
        steps=tuple(draw(st.lists(st.integers(1, max_step), min_size=rank, max_size=rank))),
        expanded=tuple(
            draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
            if allow_expanded
            else [False] * rank
        ),
        offset=draw(st.sampled_from([0, 0, 1, 3])),
        specials=draw(st.booleans()),
        seed=draw(st.integers(0, 2**32 - 1)),
    )


def has_internal_overlap(t: torch.Tensor) -> bool:
    """For tensors from TensorSpec.make: only an expanded dimension overlaps."""
    return t.numel() > 0 and any(s == 0 and n > 1 for s, n in zip(t.stride(), t.shape))
