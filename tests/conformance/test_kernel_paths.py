"""Every kernel path of both backends, at sizes that reach it.

The conformance layouts in cases.py are small. The fast kernels pick a loop
by layout and size: on CUDA (csrc/fast/cuda/elementwise.cuh) the vectorised
contiguous kernel, the row kernels (dense_rows_kernel, a kernel per pair of
row kinds and one that tells them apart at run time, one or two rows per
block; rows_kernel's coalesced scalar loop; the 2-byte types' broadcast
kernel, one or two rows a thread), the narrow kernel (an input
transposed against an output 4 to 16 bytes deep), the 2-byte types' 32 x
64 tiles in 32-bit offsets (tiles32_kernel), the general tiled kernel (one
input staged or both), the 32-bit strided kernel, unaligned_kernel (a misaligned run of
a 4-byte type) and, past 2^31, the plain kernel; on the CPU
(csrc/fast/cpu/elementwise.h) the dense run loop, the strided loop, the
buffered tiles and the register transposes. The simple build runs the plain
loops on every case.
Each case below is built to land on one of them, with odd sizes so that
partial vectors, row tails and partial tiles occur. Outputs are poisoned
with NaN before the call (myadd_out's directly; the functional ops' by
freeing a NaN-filled block of the same size just before, which the caching
allocator hands back), so an element a kernel skips fails the comparison.
"""

import os
import re

import pytest
import torch
from child_process import run_python

from .cases import (
    DTYPES,
    OPS,
    STABLE,
    assert_matches_reference,
    assert_values,
    devices,
    dtype_id,
    pkg,
    requires_cuda,
    testing,
)

# What these cases prove is the kernels' loops, the same bytes of the abi3
# module on every CPython: make matrix runs them on one CPython per torch release.
pytestmark = pytest.mark.cpython_independent


def _randn(*shape, **kw):
    return torch.randn(*shape, **kw)


# name -> factory(dtype, device) of (a, b), and for myadd_out an optional
# output layout (None: contiguous).
PATHS = {
    # CUDA contiguous kernel: 16-byte vectors plus a remainder.
    "contiguous-odd": lambda **kw: (_randn(70001, **kw), _randn(70001, **kw)),
    # Row kernel, the kinds told apart at run time: dense rows, a stride-0
    # input, rows of 3001 (3 chunks of 1024 float32 elements, the last
    # partial; a row tail), so most rows of b and of the output start off a
    # 16-byte boundary.
    "rows-broadcast-row": lambda **kw: (
        _randn(1, 3001, **kw).expand(67, 3001),
        _randn(67, 3001, **kw),
    ),
    "rows-broadcast-col": lambda **kw: (
        _randn(67, 3000, **kw),
        _randn(67, 1, **kw).expand(67, 3000),
    ),
    # Row kernel, the kinds told apart at run time: rows of 3001 in a storage
    # of 3002, so some rows start aligned and most do not.
    "rows-row-sliced": lambda **kw: (_randn(67, 3002, **kw)[:, 1:], _randn(67, 3002, **kw)[:, 1:]),
    # Row kernels with the kinds fixed at launch, every output row aligned:
    # both inputs' rows aligned (a broadcast row); both misaligned (rows of
    # 3008 in a storage of 3009: row starts step through every element
    # offset from a 16-byte boundary, each read as two aligned vectors
    # shifted into place, 0 included); and one of each, which reads both as
    # misaligned.
    "rows-aligned-broadcast-row": lambda **kw: (
        _randn(1, 3008, **kw).expand(67, 3008),
        _randn(67, 3008, **kw),
    ),
    # The same broadcasts with the inputs swapped: a broadcast row as b
    # (rows of 3008, so 2-byte types take the broadcast kernel, whose last
    # column tile is part full and last rows part of a block), a broadcast
    # column as a.
    "rows-aligned-broadcast-row-second": lambda **kw: (
        _randn(67, 3008, **kw),
        _randn(1, 3008, **kw).expand(67, 3008),
    ),
    "rows-broadcast-col-first": lambda **kw: (
        _randn(67, 1, **kw).expand(67, 3000),
        _randn(67, 3000, **kw),
    ),
    "rows-misaligned-rows-aligned-out": lambda **kw: (
        _randn(67, 3009, **kw)[:, 1:],
        _randn(67, 3009, **kw)[:, 1:],
    ),
    "rows-aligned-beside-misaligned": lambda **kw: (
        _randn(67, 3008, **kw),
        _randn(67, 3009, **kw)[:, 1:],
    ),
    # Row kernels: inner stride 2, rows off alignment (the scalar loop); and a
    # misaligned 1-D run (2- and 8-byte types: one row, shifted vectors, a
    # tail of one; 4-byte types: unaligned_kernel, a partial block).
    "rows-step-sliced": lambda **kw: (_randn(41, 6002, **kw)[:, ::2], _randn(41, 3001, **kw)),
    "rows-offset-1d": lambda **kw: (_randn(200002, **kw)[1:], _randn(200002, **kw)[1:]),
    # 2-byte row kernel (dense_rows_kernel), a kernel per pair of row kinds:
    # stride-2 rows read as pairs of 8-byte vectors, a [::2] slice (starting
    # on a 16-byte boundary) beside a [1::2] one (one element past it), rows
    # of 3002 (a tail of 2); and a [1::2] slice beside a broadcast row, which
    # the kernel telling kinds apart at run time takes. float32 and float64
    # take rows_kernel's scalar loop.
    "rows-step-pairs": lambda **kw: (
        _randn(41, 6016, **kw)[:, :6003:2],
        _randn(41, 6016, **kw)[:, 1:6004:2],
    ),
    "rows-step-pairs-and-broadcast-row": lambda **kw: (
        _randn(41, 6016, **kw)[:, 1:6004:2],
        _randn(1, 3002, **kw).expand(41, 3002),
    ),
    # 2-byte row kernel, two rows per block: rows of exactly half a chunk
    # (1024 elements; a's sliced from rows of 1040, so that no dimension
    # merges and no input is a broadcast, which the broadcast kernel would
    # take), over an even number of rows (66; 3 x 66 merged), and over an
    # odd one (67: one row per block, half the threads idle).
    "rows-two-per-block": lambda **kw: (
        _randn(66, 1040, **kw)[:, :1024],
        _randn(66, 1024, **kw),
    ),
    "rows-two-per-block-3d": lambda **kw: (
        _randn(3, 66, 1040, **kw)[:, :, :1024],
        _randn(3, 66, 1024, **kw),
    ),
    "rows-odd-count": lambda **kw: (
        _randn(67, 1040, **kw)[:, :1024],
        _randn(67, 1024, **kw),
    ),
    # Per-element strided kernel: rows too short for the row kernel.
    "strided-short-rows": lambda **kw: (_randn(3001, 14, **kw)[:, ::2], _randn(3001, 7, **kw)),
    # The same kernel for layouts of more than six dimensions after merging
    # (the row and tiled kernels take up to six): rows long enough for the
    # row kernel, and a transposed input, each under six batch dimensions
    # that a step slice keeps from merging.
    "strided-seven-dims-rows": lambda **kw: (
        _randn(3, 3, 3, 3, 3, 3, 1030, **kw)[::2, ::2, ::2, ::2, ::2, ::2],
        _randn(2, 2, 2, 2, 2, 2, 1030, **kw),
    ),
    "strided-seven-dims-transposed": lambda **kw: (
        _randn(2, 2, 2, 2, 2, 40, 67, **kw),
        _randn(3, 3, 3, 3, 3, 67, 40, **kw)[::2, ::2, ::2, ::2, ::2].transpose(-1, -2),
    ),
    # CPU strided loop, many short dense rows per call of the run loop
    # (Rows): rows of 14 over two outer dimensions, 97,706 elements, so that
    # parallel chunks begin mid-row and batches carry into dimension 2.
    "strided-row-batches-3d": lambda **kw: (
        _randn(7, 997, 15, **kw)[:, :, 1:],
        _randn(7, 1, 14, **kw).expand(7, 997, 14),
    ),
    # CPU run loop with a step of 2 (float16 and bfloat16 pack each block of
    # every other element): both inputs every other element (one 1-D run
    # after the dimensions merge), one against a broadcast row or column (a
    # batch of rows per call), and rows of 15 that do not merge (batches of
    # short rows, parallel chunks beginning mid-row).
    "steps-both-sliced": lambda **kw: (
        _randn(97, 2002, **kw)[:, ::2],
        _randn(97, 2002, **kw)[:, ::2],
    ),
    "steps-sliced-and-broadcast-row": lambda **kw: (
        _randn(97, 2002, **kw)[:, ::2],
        _randn(1, 1001, **kw).expand(97, 1001),
    ),
    "steps-broadcast-col-and-sliced": lambda **kw: (
        _randn(97, 1, **kw).expand(97, 1001),
        _randn(97, 2002, **kw)[:, 1::2],
    ),
    "steps-short-rows-3d": lambda **kw: (
        _randn(5, 4001, 31, **kw)[:, :, 1::2],
        _randn(5, 4001, 15, **kw),
    ),
    # A step the run loop does not take (3): the CPU element loop; float16
    # and bfloat16 gather blocks of it into dense buffers.
    "steps-of-three": lambda **kw: (
        _randn(97, 3003, **kw)[:, ::3],
        _randn(97, 1001, **kw),
    ),
    # An input that overlaps itself (a sliding window: strides 1 and 1) is
    # dense along the output's rows but not transposed: no tiles.
    "overlapping-window": lambda **kw: (
        _randn(67 + 1000, **kw).as_strided((67, 1001), (1, 1)),
        _randn(67, 1001, **kw),
    ),
    # Tiled kernel: one input transposed, partial tiles on both edges.
    "tiled-one-transposed": lambda **kw: (_randn(67, 1001, **kw), _randn(1001, 67, **kw).t()),
    # The same with a, not b, transposed; and rows longer than one tile
    # (float32 on an AVX-512 CPU takes 16 rows by up to 2048 columns through
    # registers: two tiles and 4 columns a row, two 16-row blocks and 5 rows).
    "tiled-first-transposed": lambda **kw: (_randn(1001, 67, **kw).t(), _randn(67, 1001, **kw)),
    "tiled-long-rows": lambda **kw: (_randn(37, 4100, **kw), _randn(4100, 37, **kw).t()),
    # Tiled kernel with a batch dimension, and with a transposed broadcast.
    "tiled-batched": lambda **kw: (
        _randn(5, 67, 45, **kw),
        _randn(5, 45, 67, **kw).transpose(1, 2),
    ),
    "tiled-with-broadcast": lambda **kw: (
        _randn(1, 45, **kw).expand(67, 45),
        _randn(45, 67, **kw).t(),
    ),
    # Tiled kernel with a narrow tile: the output's fastest dimension has 3
    # elements (a tile of 4 by 256).
    "tiled-narrow": lambda **kw: (
        _randn(1000, 251, 3, **kw).permute(2, 0, 1),
        _randn(3, 1000, 251, **kw),
    ),
    # Tiled kernel, two elements per access (even sizes and strides, aligned
    # storage; vector_tiles_ok), partial tiles on both edges, a narrow tile,
    # and a misaligned input that falls back to one element per access.
    "tiled-pairs-one-transposed": lambda **kw: (
        _randn(66, 1000, **kw),
        _randn(1000, 66, **kw).t(),
    ),
    "tiled-pairs-narrow": lambda **kw: (
        _randn(1000, 250, 4, **kw).permute(2, 0, 1),
        _randn(4, 1000, 250, **kw),
    ),
    "tiled-pairs-misaligned": lambda **kw: (
        _randn(66, 1000, **kw),
        _randn(1000 * 66 + 1, **kw)[1:].view(1000, 66).t(),
    ),
    # Four elements per access (sizes and strides divisible by 4): 2-byte
    # dtypes in 32 x 64 tiles, float32 16 bytes at a time in 64 x 32 tiles;
    # partial tiles on both edges, a narrow tile, and an input two elements
    # off alignment that falls back to pairs.
    "tiled-quads-one-transposed": lambda **kw: (
        _randn(68, 1004, **kw),
        _randn(1004, 68, **kw).t(),
    ),
    "tiled-quads-narrow": lambda **kw: (
        _randn(1000, 252, 4, **kw).permute(2, 0, 1),
        _randn(4, 1000, 252, **kw),
    ),
    "tiled-quads-misaligned-to-pairs": lambda **kw: (
        _randn(68, 1004, **kw),
        _randn(1004 * 68 + 2, **kw)[2:].view(1004, 68).t(),
    ),
    # Eight elements per access for 2-byte dtypes (sizes and strides divisible
    # by 8: 16 bytes), partial tiles on both edges, a narrow tile, and an
    # input four elements off alignment that falls back to four.
    "tiled-eights-one-transposed": lambda **kw: (
        _randn(72, 1000, **kw),
        _randn(1000, 72, **kw).t(),
    ),
    "tiled-eights-narrow": lambda **kw: (
        _randn(1000, 248, 8, **kw).permute(2, 0, 1),
        _randn(8, 1000, 248, **kw),
    ),
    "tiled-eights-misaligned-to-fours": lambda **kw: (
        _randn(72, 1000, **kw),
        _randn(1000 * 72 + 4, **kw)[4:].view(1000, 72).t(),
    ),
    # 2-byte types' 32 x 64 tiles in 32-bit offsets (tiles32_kernel; the
    # tiled-eights cases above take it too): a, not b, transposed; two batch
    # dimensions that do not merge (the grid's y index); and a dimension 1
    # of 32, which the general kernel's 64 x 32 tiles take.
    "tiles32-first-transposed": lambda **kw: (
        _randn(1000, 72, **kw).t(),
        _randn(72, 1000, **kw),
    ),
    "tiles32-batched": lambda **kw: (
        _randn(2, 3, 40, 104, **kw),
        _randn(2, 4, 104, 40, **kw)[:, :3].transpose(2, 3),
    ),
    "tiled-eights-short": lambda **kw: (
        _randn(32, 1000, **kw),
        _randn(1000, 32, **kw).t(),
    ),
    # CUDA narrow kernel: the output's dimension 0 of 2, 4 or 8 elements
    # (4 to 16 bytes), b transposed; 2-byte types take 4, 2 and 1 indices of
    # dimension 1 a thread, 4-byte ones 2 and 1 (8 elements: the tiles, as
    # for 8-byte types). The tiled-*-narrow cases above take it too, for
    # 2- and 4-byte types.
    "narrow-twos": lambda **kw: (
        _randn(1000, 251, 2, **kw).permute(2, 0, 1),
        _randn(2, 1000, 251, **kw),
    ),
    # Under a batch dimension that does not merge.
    "narrow-batched": lambda **kw: (
        _randn(3, 100, 250, 4, **kw).permute(0, 3, 1, 2),
        _randn(3, 4, 100, 250, **kw),
    ),
    # Dimension 1 odd (250,749): 2-byte types, two indices a thread, fall
    # back to the tiles; and b one element off alignment: 2-byte types fall
    # back, float32 (one index a thread) does not.
    "narrow-odd-to-tiles": lambda **kw: (
        _randn(999, 251, 4, **kw).permute(2, 0, 1),
        _randn(4, 999, 251, **kw),
    ),
    "narrow-misaligned-to-tiles": lambda **kw: (
        _randn(1000, 250, 4, **kw).permute(2, 0, 1),
        _randn(4 * 1000 * 250 + 1, **kw)[1:].view(4, 1000, 250),
    ),
}

# myadd_out writes into a contiguous output whatever the inputs: with both
# inputs transposed, both are staged through shared memory.
OUT_PATHS = {
    "tiled-both-staged": lambda **kw: (_randn(1001, 67, **kw).t(), _randn(1001, 67, **kw).t()),
    "tiled-pairs-both-staged": lambda **kw: (
        _randn(1000, 66, **kw).t(),
        _randn(1000, 66, **kw).t(),
    ),
    "tiled-eights-both-staged": lambda **kw: (
        _randn(1000, 72, **kw).t(),
        _randn(1000, 72, **kw).t(),
    ),
    "tiled-quads-both-staged": lambda **kw: (
        _randn(1004, 68, **kw).t(),
        _randn(1004, 68, **kw).t(),
    ),
    "rows-into-sliced-out": lambda **kw: (_randn(67, 3001, **kw), _randn(67, 3001, **kw)),
}


# myadd_out into a permuted output: (a, b, out), out NaN-filled. With out
# laid out as b, a is the input transposed against it (every case above
# transposes b); and an output whose rows of 8 sit 16 apart, which the narrow
# kernel does not take, takes 16-byte tiles 8 elements deep.
OUT_LAYOUT_PATHS = {
    "narrow-first-transposed": lambda **kw: (
        _randn(4, 1000, 250, **kw),
        _randn(1000, 250, 4, **kw).permute(2, 0, 1),
        torch.full((1000, 250, 4), float("nan"), **kw).permute(2, 0, 1),
    ),
    "tiled-eights-narrow-spaced-out": lambda **kw: (
        _randn(1000, 248, 8, **kw).permute(2, 0, 1),
        _randn(8, 1000, 248, **kw),
        torch.full((1000, 248, 16), float("nan"), **kw)[:, :, :8].permute(2, 0, 1),
    ),
}


def _marked(paths) -> list:
    """The path names as parameters. Those with an input transposed against
    the output (named tiled-*, tiles32-*, narrow-*) are marked shared_memory:
    the tiled kernels take them (for some dtype), and those are the only
    kernels with shared memory, which is all compute-sanitizer's racecheck
    checks (tools/ci/compute_sanitizer.sh runs it on these alone)."""
    shared = ("tiled", "tiles32", "narrow")
    marked = pytest.mark.shared_memory
    return [pytest.param(p, marks=marked) if p.startswith(shared) else p for p in paths]


def _poisoned_allocation(like: torch.Tensor) -> None:
    """Fills, then frees, a block of the output's size, so that the next
    allocation of that size starts as NaN rather than as zeros."""
    block = torch.full((like.numel(),), float("nan"), dtype=like.dtype, device=like.device)
    del block


@pytest.mark.parametrize("path", _marked(PATHS))
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", ["mymuladd", "mymul"])
def test_functional_op_on_each_path(op_name, device, dtype, path):
    a, b = PATHS[path](dtype=dtype, device=device)
    _poisoned_allocation(a)
    out = OPS[op_name].call(a, b)
    assert out.stride() == torch.mul(a, b).stride()
    assert_matches_reference(OPS[op_name], out, a, b)


@pytest.mark.parametrize("path", _marked([*PATHS, *OUT_PATHS]))
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("device", devices())
def test_myadd_out_on_each_path(device, dtype, path):
    a, b = {**PATHS, **OUT_PATHS}[path](dtype=dtype, device=device)
    if path == "rows-into-sliced-out":
        # Every other column of a wider tensor: output stride 2 along rows.
        out = torch.full((a.shape[0], 2 * a.shape[1]), float("nan"), dtype=dtype, device=device)
        out = out[:, ::2]
    else:
        out = torch.full(a.shape, float("nan"), dtype=dtype, device=device)
    pkg.myadd_out(a, b, out)
    assert_matches_reference(OPS["myadd_out"], out, a, b)


@pytest.mark.parametrize("path", _marked(OUT_LAYOUT_PATHS))
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("device", devices())
def test_myadd_out_into_a_permuted_output(device, dtype, path):
    a, b, out = OUT_LAYOUT_PATHS[path](dtype=dtype, device=device)
    pkg.myadd_out(a, b, out)
    assert_matches_reference(OPS["myadd_out"], out, a, b)


# (case, dtype, the start of the CUDA kernel's name, template arguments
# included, that the fast build launches for mymul): where a dispatch rule
# sends a layout. A rule that stops firing still computes the right values
# on another path, which only this sees.
KERNEL_TAKEN = [
    ("narrow-twos", torch.bfloat16, "narrow_kernel<"),
    ("narrow-batched", torch.float16, "narrow_kernel<"),
    ("narrow-batched", torch.float32, "narrow_kernel<"),
    ("tiled-eights-narrow", torch.bfloat16, "narrow_kernel<"),
    ("tiled-eights-narrow", torch.float32, "tiled_kernel<"),
    ("narrow-odd-to-tiles", torch.bfloat16, "tiled_kernel<"),
    ("narrow-odd-to-tiles", torch.float32, "narrow_kernel<"),
    ("narrow-misaligned-to-tiles", torch.float16, "tiled_kernel<"),
    ("narrow-misaligned-to-tiles", torch.float32, "narrow_kernel<"),
    ("tiled-eights-one-transposed", torch.bfloat16, "tiles32_kernel<"),
    ("tiled-eights-one-transposed", torch.float32, "tiled_kernel<"),
    ("tiles32-first-transposed", torch.float16, "tiles32_kernel<"),
    ("tiles32-batched", torch.bfloat16, "tiles32_kernel<"),
    ("tiled-eights-short", torch.bfloat16, "tiled_kernel<"),
    ("rows-offset-1d", torch.float32, "unaligned_kernel<"),
    ("rows-offset-1d", torch.bfloat16, "dense_rows_kernel<"),
    ("rows-step-pairs", torch.bfloat16, "dense_rows_kernel<"),
    ("rows-step-pairs", torch.float32, "rows_kernel<float, 2,"),
    ("rows-step-sliced", torch.float32, "rows_kernel<float, 4,"),
    ("rows-aligned-broadcast-row", torch.bfloat16, "broadcast_kernel<"),
    ("rows-aligned-broadcast-row", torch.float32, "dense_rows_kernel<"),
    ("rows-broadcast-col", torch.float16, "broadcast_kernel<"),
    ("rows-broadcast-col-first", torch.bfloat16, "broadcast_kernel<"),
    ("rows-broadcast-row", torch.bfloat16, "dense_rows_kernel<"),  # rows not whole vectors
    ("rows-two-per-block", torch.float16, "dense_rows_kernel<"),
]


def _our_kernel(a, b) -> str:
    """The name of the one CUDA kernel of ours that mymul(a, b) launches."""
    torch.cuda.synchronize()
    # acc_events: the profiler's events of its one cycle, without its
    # warning (torch >= 2.11) that a cycle clears them.
    cuda_only = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=cuda_only, acc_events=True) as prof:
        out = pkg.mymul(a, b)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    ours = [n for n in names if "extension_cpp" in n]
    assert len(ours) == 1, names
    assert_matches_reference(OPS["mymul"], out, a, b)
    return ours[0]


@requires_cuda
@pytest.mark.cuda
@pytest.mark.parametrize(("path", "dtype", "kernel"), KERNEL_TAKEN)
def test_cuda_layout_takes_its_kernel(path, dtype, kernel):
    if pkg._C.KERNELS != "fast":
        pytest.skip("the simple build launches its one kernel everywhere")
    a, b = PATHS[path](dtype=dtype, device="cuda")
    assert f"::{kernel}" in _our_kernel(a, b)


@requires_cuda
@pytest.mark.cuda
def test_cuda_tiles_past_a_grids_y_extent():
    """65,536 matrices: tiles32_kernel puts them on a grid's y index, which
    stops at 65,535, so the general kernel's 32 x 64 tiles (read back with
    ldmatrix, which no smaller case reaches) take them."""
    if pkg._C.KERNELS != "fast":
        pytest.skip("the simple build launches its one kernel everywhere")
    a = _randn(65536, 40, 24, dtype=torch.bfloat16, device="cuda")
    b = _randn(65536, 24, 40, dtype=torch.bfloat16, device="cuda").transpose(1, 2)
    assert "::tiled_kernel<" in _our_kernel(a, b)


# 2-byte broadcasts large enough that broadcast_kernel gives each thread two
# rows (one row a thread would take 9 x 457 blocks): 2,056 columns, so the
# last column tile holds one vector a row, by 3,651 rows, so the last block
# holds 3 of its 16.
BIG_BROADCASTS = {
    "row-first": lambda **kw: (_randn(1, 2056, **kw).expand(3651, 2056), _randn(3651, 2056, **kw)),
    "row-second": lambda **kw: (_randn(3651, 2056, **kw), _randn(1, 2056, **kw).expand(3651, 2056)),
    "col-first": lambda **kw: (_randn(3651, 1, **kw).expand(3651, 2056), _randn(3651, 2056, **kw)),
    "col-second": lambda **kw: (_randn(3651, 2056, **kw), _randn(3651, 1, **kw).expand(3651, 2056)),
}


@requires_cuda
@pytest.mark.cuda
@pytest.mark.parametrize("case", BIG_BROADCASTS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
def test_cuda_broadcast_two_rows_a_thread(case, dtype):
    if pkg._C.KERNELS != "fast":
        pytest.skip("the simple build launches its one kernel everywhere")
    a, b = BIG_BROADCASTS[case](dtype=dtype, device="cuda")
    kernel = _our_kernel(a, b)  # mymul, its values checked
    assert re.search(r"::broadcast_kernel<[^>]*, 2, extension_cpp::MulOp", kernel), kernel
    _poisoned_allocation(a)
    assert_matches_reference(OPS["mymuladd"], OPS["mymuladd"].call(a, b), a, b)
    out = torch.full(a.shape, float("nan"), dtype=dtype, device="cuda")
    pkg.myadd_out(a, b, out)
    assert_matches_reference(OPS["myadd_out"], out, a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("device", devices())
def test_myadd_out_in_place_beside_a_step_sliced_input(device, dtype):
    """out is exactly b while a is read every other element: the CPU run
    loop's step-2 pattern must read each element of b before writing it."""
    a = _randn(97, 2002, dtype=dtype, device=device)[:, ::2]
    b = _randn(97, 1001, dtype=dtype, device=device)
    expected = a + b
    pkg.myadd_out(a, b, b)
    torch.testing.assert_close(b, expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("device", devices())
def test_myadd_out_in_place_beside_a_transposed_input(device, dtype):
    """out is exactly a while b is transposed: the tiled loop (and on an
    AVX-512 CPU the float32 register blocks) must read each row of a before
    writing it."""
    a = _randn(67, 1001, dtype=dtype, device=device)
    b = _randn(1001, 67, dtype=dtype, device=device).t()
    expected = a + b
    pkg.myadd_out(a, b, a)
    torch.testing.assert_close(a, expected, rtol=0, atol=0)


# Values that break naive code: signed zeros, infinities, NaN (the harness's).
SPECIALS = testing.SPECIAL_VALUES

# The run loop's input patterns (dense, repeated along the row, repeated
# across rows), rows long enough for its two-vector steps and odd enough for
# its one-vector step and single-element tail.
SPECIAL_PATHS = {
    "dense": lambda make: (make(67, 1001), make(67, 1001)),
    "broadcast-row": lambda make: (make(1, 1001).expand(67, 1001), make(67, 1001)),
    "broadcast-col": lambda make: (make(67, 1001), make(67, 1).expand(67, 1001)),
    # The tiled loop, and float32's 16 x 16 register transposes.
    "one-transposed": lambda make: (make(67, 1001), make(1001, 67).t()),
    # CUDA's 2-byte row kernel: a broadcast column, two rows per block; and
    # stride-2 rows read as vector pairs, [::2] beside [1::2].
    "broadcast-col-two-rows": lambda make: (make(66, 1024), make(66, 1).expand(66, 1024)),
    "step-pairs": lambda make: (make(66, 2048)[:, ::2], make(66, 2048)[:, 1::2]),
}


@pytest.mark.parametrize("path", SPECIAL_PATHS)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", ["mymul", "myadd_out"])
def test_special_values_bit_for_bit(op_name, device, dtype, path):
    """Products and sums of signed zeros, infinities and NaN equal PyTorch's
    bit for bit (NaN where PyTorch has NaN, whatever its payload): a vector
    loop that fills a repeated input with 0 + x, say, turns -0.0 into 0.0,
    which assert_close does not see."""
    gen = torch.Generator().manual_seed(0)
    pool = torch.tensor(SPECIALS, dtype=torch.float64)

    def make(*shape):
        pick = torch.randint(0, len(SPECIALS), shape, generator=gen)
        return pool[pick].to(dtype=dtype, device=device)

    a, b = SPECIAL_PATHS[path](make)
    if op_name == "mymul":
        out, expected = pkg.mymul(a, b), torch.mul(a, b)
    else:
        out = torch.empty(a.shape, dtype=dtype, device=device)
        pkg.myadd_out(a, b, out)
        expected = torch.add(a, b)
    assert_values(out, expected, exact=True)


def _every_half_value(dtype: torch.dtype, gen: torch.Generator):
    """(a, b): every bit pattern of a 2-byte dtype as a, three times, each
    beside a partner where rounding is hardest: one that puts the product
    among the subnormals, one that nearly cancels the sum, and a random bit
    pattern."""
    a = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    x = a.double()

    def spread(lo, hi):
        return torch.rand(x.shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo

    tiny = torch.finfo(dtype).tiny
    subnormal_product = tiny / x * torch.exp2(spread(-11.0, 2.0))
    cancelling = -x * (1 + spread(-(2.0**-6), 2.0**-6))
    random_bits = torch.randint(-(2**15), 2**15, x.shape, generator=gen, dtype=torch.int16)
    b = torch.cat([subnormal_product.to(dtype), cancelling.to(dtype), random_bits.view(dtype)])
    return a.repeat(3).reshape(384, 512), b.reshape(384, 512)


# The fast CUDA kernels' paths that compute 2-byte types in pairs: dense,
# one input transposed (tiles), rows off a 16-byte boundary.
HALF_PAIR_PATHS = {
    "contiguous": lambda a, b: (a, b),
    "one-transposed": lambda a, b: (a, b.t().contiguous().t()),
    "row-sliced": lambda a, b: (
        torch.nn.functional.pad(a, (1, 0))[:, 1:],
        torch.nn.functional.pad(b, (1, 0))[:, 1:],
    ),
}


@pytest.mark.parametrize("path", HALF_PAIR_PATHS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", ["mymul", "myadd_out"])
def test_half_types_round_as_pytorch(op_name, device, dtype, path):
    """Every float16 and bfloat16 value, multiplied and added: bit for bit
    PyTorch's result, which rounds the float result once (CUDA multiplies
    and adds these in pairs of their own type). The inputs must reach the
    subnormals and round most results, or a kernel that flushes subnormals
    or truncates would pass."""
    a, b = _every_half_value(dtype, torch.Generator().manual_seed(0))
    a, b = HALF_PAIR_PATHS[path](a.to(device), b.to(device))
    if op_name == "mymul":
        out, expected = pkg.mymul(a, b), torch.mul(a, b)
        exact = a.double() * b.double()
    else:
        out = torch.full(a.shape, float("nan"), dtype=dtype, device=device)
        pkg.myadd_out(a, b, out)
        expected, exact = torch.add(a, b), a.double() + b.double()
    tiny = torch.finfo(dtype).tiny
    assert int(((expected.abs() < tiny) & (expected != 0)).sum()) > 1000
    assert int(((expected.double() != exact) & ~exact.isnan()).sum()) > 30000
    assert_values(out, expected, exact=True)


@pytest.mark.parametrize(
    ("capability", "cases"),
    [
        ("default", "cpu and not capped"),
        ("avx2", "cpu and (tiled or transposed or capability) and not capped"),
    ],
    ids=["default", "avx2"],  # ids that no -k expression above can select
)
def test_cpu_paths_capped(capability, cases):
    """The CPU cases above at a lower instruction set, as
    ATEN_CPU_CAPABILITY asks (ours honours it as ATen does): `default` runs
    all of them through the run loop's baseline body, the one an x86-64 CPU
    without AVX2 runs; `avx2` runs the transposed ones through the buffered
    tiles, which an AVX-512 CPU skips for float32. The choice is made once
    per process, so the cases run in a process of their own. The stable
    build runs the same loops, and reads the capability its own way
    (csrc/fast/cpu/isa.h): its run keeps the float32 cases."""
    if STABLE:
        cases = f"test_cpu_capability_follows_the_setting or (float32 and ({cases}))"
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run = run_python(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", repo, __file__, "-k", cases],
        env={"ATEN_CPU_CAPABILITY": capability},
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout
    # The cap took effect in the child (test_cpu_capability_follows_the_setting ran there).
    assert f"capability {capability.upper()} in effect" in run.stdout, run.stdout[-4000:]


@pytest.mark.skipif(
    "ATEN_CPU_CAPABILITY" not in os.environ, reason="runs in test_cpu_paths_capped's child"
)
def test_cpu_capability_follows_the_setting(capsys):
    """In test_cpu_paths_capped's child: ATen (and so our kernels' choice of
    loop) runs at the capability the environment asks for."""
    asked = os.environ["ATEN_CPU_CAPABILITY"].upper()
    got = torch.backends.cpu.get_cpu_capability()
    # The baseline reads "DEFAULT", or "NO AVX" on older torch releases.
    assert got == asked or (asked == "DEFAULT" and got == "NO AVX"), got
    with capsys.disabled():
        print(f"capability {asked} in effect")
