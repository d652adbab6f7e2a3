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

# Tolerances against a float64 reference rounded to the dtype, for
# torch.testing.assert_close (|got - want| <= atol + rtol * |want|). An ulp of
# a value in [2^e, 2^(e+1)) is eps * 2^e (eps = torch.finfo(dtype).eps), so
# rtol = k * eps allows k ulps at the bottom of a binade (1.0, 2.0, 4.0, ...)
# and fewer than 2k just below its top.
#
# TOLERANCES, for an op that computes in a wider type and rounds its result:
# - float16, bfloat16: one ulp. A result computed in float32 and then
#   rounded to the dtype is rounded twice, and may sit one ulp from the
#   reference. Plus an atol of one ulp of 1.0 (eps): a result near zero
#   keeps the rounding error of an intermediate near 1 (eager torch rounds
#   a*b to the dtype before it adds c). At |x| = 1 the two make two ulps;
#   from 2^3 up, never two.
# - float32, float64: four ulps (fewer than eight), plus an atol of one ulp
#   of 2^5: a result near zero keeps the rounding error of a larger
#   intermediate, up to half an ulp of the product in a*b + c for inputs
#   drawn from randn, or an FMA's lack of it. At |x| = 1 the atol adds 32
#   ulps; from 2^5 up, less than one.
#
# ROUNDED_ONCE, for an op that promises to round once from the exact result
# (OpSpec(rounded_once=True)): half an ulp in float16 and bfloat16, which
# between two values of the dtype means none (the atol: half an ulp among
# the subnormals). A result rounded twice is caught: in float16, with
# a = b = 1 + 3 * 2^-10 and c = -1, the exact a*b + c = 6 * 2^-10 + 9 * 2^-20
# rounds once to 6 * 2^-10 + 2^-17, but the product alone rounds to
# 1 + 6 * 2^-10, and the sum then gives 6 * 2^-10: two ulps apart, which
# TOLERANCES' atol accepts.


def _ulps(dtype: torch.dtype, k: float, atol_scale: float) -> dict:
    info = torch.finfo(dtype)
    return dict(rtol=k * info.eps, atol=k * info.eps * atol_scale)


TOLERANCES = {
    torch.float16: _ulps(torch.float16, 1, 1.0),
    torch.bfloat16: _ulps(torch.bfloat16, 1, 1.0),
    torch.float32: _ulps(torch.float32, 4, 2**5 / 4),
    torch.float64: _ulps(torch.float64, 4, 2**5 / 4),
}
ROUNDED_ONCE = {
    **TOLERANCES,
    torch.float16: _ulps(torch.float16, 0.5, torch.finfo(torch.float16).tiny),
    torch.bfloat16: _ulps(torch.bfloat16, 0.5, torch.finfo(torch.bfloat16).tiny),
}


def dtype_id(dtype: torch.dtype) -> str:
    """torch.float32 -> 'float32', for test ids."""
    return str(dtype).replace("torch.", "")


def random_tensor(shape, dtype: torch.dtype, device, generator=None) -> torch.Tensor:
    """Random values of any dtype: normal for floating-point and complex dtypes,
    0 or 1 for bool, and small integers (0-99, or -50-49 where signed) otherwise,
    so that integer (quantized) ops get inputs too (randn has no integer kernel)."""
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=generator).to(device)
    if dtype == torch.bool:
        return torch.randint(2, shape, generator=generator).to(device=device, dtype=dtype)
    low = -50 if torch.iinfo(dtype).min < 0 else 0
    values = torch.randint(low, low + 100, shape, generator=generator)
    return values.to(device=device, dtype=dtype)


def _randn(*shape, dtype, device) -> torch.Tensor:
    return random_tensor(shape, dtype, device)


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


def _non_contiguous(shape, **kw) -> torch.Tensor:
    """Every other element of the last dimension: a gap after each element."""
    *lead, last = shape or (1,)
    return torch.empty(*lead, 2 * last, **kw)[..., ::2].view(shape)


def _transposed(shape, **kw) -> torch.Tensor:
    """Dimensions in reverse order in memory (column-major for a matrix)."""
    return torch.empty(tuple(reversed(shape)), **kw).permute(*reversed(range(len(shape))))


def _channels_last(shape, **kw) -> torch.Tensor:
    return torch.empty(shape, **kw).to(memory_format=torch.channels_last)


# The layouts an out= op's ``out`` is given besides a contiguous one, each
# with the number of dimensions it needs (None: any). The results check fills
# out with NaN first, so an element the op does not write shows.
OUT_LAYOUTS: dict[str, tuple[Callable[..., torch.Tensor], int | None]] = {
    "non-contiguous": (_non_contiguous, None),
    "transposed": (_transposed, 2),
    "channels-last": (_channels_last, 4),
}


def copy_arg(a):
    """A copy of an argument: a tensor gets memory of its own, laid out as
    a's (sizes, strides, storage offset, the rest of its storage), so that a
    step-sliced, expanded or offset view stays one; ``a.clone()`` would make
    a view that is not dense contiguous, and the op could take another path
    on it. Whether it requires grad is kept; other values are returned as
    they are."""
    if not isinstance(a, torch.Tensor):
        return a
    with torch.no_grad():
        storage = torch.empty(0, dtype=a.dtype, device=a.device).set_(a.untyped_storage())
        storage = storage.clone()
    # The view is made with grad mode on: autograd forbids writing, with grad
    # on, into a view made under no_grad, which a reference that updates a
    # mutated argument as the op does would do.
    copy = storage.as_strided(a.shape, a.stride(), a.storage_offset())
    return copy.requires_grad_() if a.requires_grad and a.is_leaf else copy


def copy_args(args) -> list:
    """copy_arg of each argument."""
    return [copy_arg(a) for a in args]


def out_like(t: torch.Tensor, layout: str) -> torch.Tensor:
    """A tensor of t's shape, dtype and device in one of OUT_LAYOUTS, filled with NaN
    (or the dtype's largest value for an integer dtype)."""
    make, dims = OUT_LAYOUTS[layout]
    if dims is not None and t.dim() != dims:
        raise ValueError(f"out layout {layout!r} needs a {dims}-D out, got {list(t.shape)}")
    out = make(tuple(t.shape), dtype=t.dtype, device=t.device)
    if t.is_floating_point():
        fill = float("nan")
    else:
        fill = True if t.dtype == torch.bool else torch.iinfo(t.dtype).max
    return out.fill_(fill)
