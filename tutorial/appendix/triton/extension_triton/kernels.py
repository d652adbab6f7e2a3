"""The Triton kernels of the three ops, and the launch that picks one.

The math of all three ops is one function, ``_apply``, specialised at compile
time by the constexpr ``OP``; two kernels run it over memory:

* ``_dense_kernel``: a, b and out share one dense layout (contiguous, or any
  permutation all three share: both transposed, channels_last). Element i of
  one's memory is element i of the others', so a program runs over BLOCK
  consecutive elements of all three.
* ``_tiled_kernel``: every other layout (one input transposed against the
  other, slices, broadcasts). The dimensions that can be merged are merged
  first (``_merge``); at most four remain, padded to four. The inner two, in
  out's memory order, are cut into BLOCK_R x BLOCK_C tiles, a tile a program;
  the outer two come from the program id. Triton chooses how the threads of a
  program share each load and store from the pointers' strides (a stride of
  1 is compiled in as a constant), so each tensor is read along its own
  fastest dimension, and the data meets in registers through shared memory:
  the transposed input of a tile is read as coalesced as the other.

float16 and bfloat16 are computed in float32 and rounded once, as the C++
kernels do (``at::opmath_type``); float32 and float64 are computed as they are.
"""

import torch
import triton
import triton.language as tl
from torch.fx.experimental.symbolic_shapes import statically_known_true
from torch.library import wrap_triton

from ._checks import message

# Elements per program: a run of the dense kernel, a tile of the tiled one.
BLOCK = 1024
TILE = 2048
# A tile is at most 64 elements wide along out's rows where there are rows
# enough to fill it: 32 x 64, so that an input transposed against out is read
# in runs of 32 elements (64 bytes of float16 or more).
TILE_WIDTH = 64
# Dimensions the tiled kernel takes after merging.
MAX_DIMS = 4
# Past this many elements (or offsets) indices are computed in int64.
INT32_LIMIT = 2**31


@triton.jit
def _apply(OP: tl.constexpr, a, b, c):
    """mymuladd (a * b + c), mymul (a * b) or myadd_out (a + b), in the compute dtype."""
    if a.dtype.primitive_bitwidth < 32:  # float16, bfloat16
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    if OP == "mymuladd":
        # c arrives as a float64 (the annotation below); cast once to the compute dtype.
        result = a * b + tl.full((), c, a.dtype)
    elif OP == "mymul":
        result = a * b
    else:
        result = a + b
    return result


@triton.jit
def _dense_kernel(a_ptr, b_ptr, out_ptr, c: tl.float64, n, OP: tl.constexpr,
                  BLOCK: tl.constexpr, WIDE: tl.constexpr):  # fmt: skip
    # a, b, out: n elements each, the same dense layout.
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    result = _apply(OP, a, b, c)
    tl.store(out_ptr + offsets, result.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _tiled_kernel(a_ptr, b_ptr, out_ptr, c: tl.float64,
                  size0, size1, size2, size3,
                  a_stride0, a_stride1, a_stride2, a_stride3,
                  b_stride0, b_stride1, b_stride2, b_stride3,
                  out_stride0, out_stride1, out_stride2, out_stride3,
                  OP: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
                  WIDE: tl.constexpr):  # fmt: skip
    # a, b, out: [size0, size1, size2, size3] each, with their own strides;
    # out's stride3 is its smallest. Program: one BLOCK_R x BLOCK_C tile of
    # dimensions 2 and 3, at one index of dimensions 0 and 1.
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    tiles_c = tl.cdiv(size3, BLOCK_C)
    tiles_r = tl.cdiv(size2, BLOCK_R)
    col = (pid % tiles_c) * BLOCK_C + tl.arange(0, BLOCK_C)[None, :]
    row = (pid // tiles_c % tiles_r) * BLOCK_R + tl.arange(0, BLOCK_R)[:, None]
    outer = pid // (tiles_c * tiles_r)
    i1 = outer % size1
    i0 = outer // size1
    mask = (row < size2) & (col < size3)
    a_at = i0 * a_stride0 + i1 * a_stride1 + row * a_stride2 + col * a_stride3
    b_at = i0 * b_stride0 + i1 * b_stride1 + row * b_stride2 + col * b_stride3
    out_at = i0 * out_stride0 + i1 * out_stride1 + row * out_stride2 + col * out_stride3
    a = tl.load(a_ptr + a_at, mask=mask)
    b = tl.load(b_ptr + b_at, mask=mask)
    result = _apply(OP, a, b, c)
    tl.store(out_ptr + out_at, result.to(out_ptr.dtype.element_ty), mask=mask)


def _merge(shape, strides) -> list:
    """[size, (stride of each tensor)] per dimension, in the memory order of
    the first tensor (out), outermost first, with dimensions of size 1
    dropped and neighbours merged where every tensor steps over the inner
    one's whole extent (as TensorIterator coalesces dimensions)."""
    dims = sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: -strides[0][d])
    merged = []
    for d in dims:
        here = tuple(s[d] for s in strides)
        if merged and all(o == s * shape[d] for o, s in zip(merged[-1][1], here)):
            merged[-1] = [merged[-1][0] * shape[d], here]
        else:
            merged.append([shape[d], here])
    return merged


def _at_most(size, cap: int) -> int:
    """size rounded up to a power of two, at most cap (cap where size is symbolic)."""
    return min(triton.next_power_of_2(size), cap) if isinstance(size, int) else cap


def _fits_int32(*extents) -> bool:
    """Whether indices up to every extent fit in int32 (under dynamic shapes:
    provably, without adding a guard on the sizes)."""
    return all(statically_known_true(e < INT32_LIMIT) for e in extents)


def launch(op: str, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: float = 0.0) -> None:
    """Writes op(a, b, c) into out: a, b and out of one shape, dtype and
    device, in any layouts; out without internal overlap (the op has checked
    that). Raises if more than MAX_DIMS dimensions remain after merging. With
    no elements, the grid has no programs and Triton launches nothing."""
    n = out.numel()
    if a.is_contiguous() and b.is_contiguous() and out.is_contiguous():
        dims = [[n, (1, 1, 1)]]
    else:
        dims = _merge(out.shape, (out.stride(), a.stride(), b.stride()))
    if len(dims) == 0 or (len(dims) == 1 and dims[0][1] == (1, 1, 1)):
        wide = not _fits_int32(n + BLOCK)
        grid = (triton.cdiv(n, BLOCK),)
        wrap_triton(_dense_kernel)[grid](a, b, out, c, n, OP=op, BLOCK=BLOCK, WIDE=wide)
        return
    torch._check(
        len(dims) <= MAX_DIMS,
        lambda: message(
            "unmergeable", op=op, max=MAX_DIMS, shape=list(a.shape), strides=list(a.stride())
        ),
    )
    dims = [[1, (0, 0, 0)]] * (MAX_DIMS - len(dims)) + dims
    sizes = [size for size, _ in dims]
    out_strides, a_strides, b_strides = ([s[i] for _, s in dims] for i in range(3))
    block_c = _at_most(sizes[3], TILE_WIDTH)
    block_r = _at_most(sizes[2], TILE // block_c)
    block_c = _at_most(sizes[3], TILE // block_r)
    reach = [sum((size - 1) * s for size, s in zip(sizes, t)) for t in (a_strides, b_strides)]
    wide = not _fits_int32(n + TILE, *reach)
    grid = (triton.cdiv(sizes[3], block_c) * triton.cdiv(sizes[2], block_r) * sizes[0] * sizes[1],)
    wrap_triton(_tiled_kernel)[grid](
        a, b, out, c, *sizes, *a_strides, *b_strides, *out_strides,
        OP=op, BLOCK_R=block_r, BLOCK_C=block_c, WIDE=wide,
    )  # fmt: skip
