// Tiles: an input transposed against the output, read a tile at a time.
//
// When an input is transposed against the output (transposed_input in
// layout.h), reading it in the output's order touches a new cache line for
// every element. The tiled loop copies a tile of it (at most kTileElems
// elements, kTile0 along the output's rows) into a buffer in the output's
// order, reading along the input's own rows, then runs the run loop on the
// buffer's rows. Eager PyTorch reads element by element here; Inductor
// tiles, and so must we to keep up with it (Note [Tiles]).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../../runtime.h"
#include "../layout.h"
#include "run_loop.h"

namespace extension_cpp::fast::cpu {

// A tile is kTile0 = 64 output elements by up to 64 input elements, its
// buffers 16 KiB of float32, well inside L1: each of the transposed input's
// rows is read 64 elements at a time, which the hardware prefetchers follow.
constexpr int64_t kTile0 = 64;
constexpr int64_t kTileElems = 4096;

// One tile of dimensions 0 and 1 of a layout: m0 x m1 elements from (j0, j1),
// at `base` in each operand (0: out, 1: a, 2: b) for its outer dimensions.
struct Tile {
  int64_t j0, j1, m0, m1;
  int64_t base[3];

  // The tile's first element in operand t, with that operand's layout l.
  int64_t origin(const BinaryLayout& l, int t) const {
    return base[t] + j0 * l.strides[t][0] + j1 * l.strides[t][1];
  }
};

// f(tile) for every t0 x t1 tile of dimensions 0 and 1, for every index of
// the dimensions outside them, in parallel: dimension 0 fastest, then 1.
template <typename F>
void for_each_tile(const BinaryLayout& l, int64_t t0, int64_t t1, const F& f) {
  const int64_t n0 = l.sizes[0], n1 = l.sizes[1];
  const int64_t tiles0 = (n0 + t0 - 1) / t0, tiles1 = (n1 + t1 - 1) / t1;
  const int64_t outer = l.numel / (n0 * n1);  // product of dimensions 2 and up
  const int64_t grain = std::max<int64_t>(1, kGrainSize / (t0 * t1));
  parallel_for(0, outer * tiles1 * tiles0, grain, [&](int64_t begin, int64_t end) {
    for (int64_t index = begin; index < end; ++index) {
      Tile tile{};
      tile.j0 = (index % tiles0) * t0;
      tile.j1 = (index / tiles0 % tiles1) * t1;
      tile.m0 = std::min(t0, n0 - tile.j0);
      tile.m1 = std::min(t1, n1 - tile.j1);
      int64_t rest = index / (tiles0 * tiles1);
      for (int d = 2; d < l.ndim; ++d) {
        const int64_t i = rest % l.sizes[d];
        rest /= l.sizes[d];
        for (int t = 0; t < 3; ++t) {
          tile.base[t] += i * l.strides[t][d];
        }
      }
      f(tile);
    }
  });
}

#if EXTENSION_CPP_X86_DISPATCH
// One 16-byte block of rows transposed in registers (SSE2, which every x86-64
// CPU has, so no run-time dispatch): 4 x 4 elements of 4 bytes, or 8 x 8 of 2
// bytes. Row k of the block starts at src + k * src_stride, and column j of
// it is stored at dst + j * dst_stride. Shuffles move bits, so any 4- or
// 2-byte type goes through unchanged, NaN payloads included.
C10_ALWAYS_INLINE void transpose_block(uint32_t* dst, int64_t dst_stride, const uint32_t* src,
                                       int64_t src_stride) {
  __m128 r0 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
  __m128 r1 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + src_stride)));
  __m128 r2 =
      _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * src_stride)));
  __m128 r3 =
      _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 3 * src_stride)));
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  const __m128 cols[4] = {r0, r1, r2, r3};
  for (int j = 0; j < 4; ++j) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j * dst_stride), _mm_castps_si128(cols[j]));
  }
}

C10_ALWAYS_INLINE void transpose_block(uint16_t* dst, int64_t dst_stride, const uint16_t* src,
                                       int64_t src_stride) {
  __m128i r[8];
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k * src_stride));
  }
  // Interleave 2-, then 4-, then 8-byte pieces of row pairs: after the
  // three steps, register j holds column j.
  __m128i t[8], u[8];
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm_unpacklo_epi16(r[2 * k], r[2 * k + 1]);      // columns 0-3 of rows 2k, 2k+1
    t[k + 4] = _mm_unpackhi_epi16(r[2 * k], r[2 * k + 1]);  // columns 4-7
  }
  for (int h = 0; h < 2; ++h) {    // h: columns 0-3 or 4-7
    for (int q = 0; q < 2; ++q) {  // q: rows 0-3 or 4-7
      const __m128i x = t[4 * h + 2 * q], y = t[4 * h + 2 * q + 1];
      u[4 * h + q] = _mm_unpacklo_epi32(x, y);      // columns 4h, 4h+1 of four rows
      u[4 * h + q + 2] = _mm_unpackhi_epi32(x, y);  // columns 4h+2, 4h+3
    }
  }
  for (int p = 0; p < 4; ++p) {                      // p: a pair of columns, 2p and 2p+1
    const __m128i lo = u[2 * p], hi = u[2 * p + 1];  // rows 0-3, rows 4-7
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * p * dst_stride),
                     _mm_unpacklo_epi64(lo, hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * p + 1) * dst_stride),
                     _mm_unpackhi_epi64(lo, hi));
  }
}
#endif

// dst[i1 * m0 + i0] = src[i0 * s0 + i1] for i0 < m0, i1 < m1: an m0 x m1
// block of rows of src, transposed into m1 rows of m0. On x86-64, 4- and
// 2-byte types go 16 bytes at a time (transpose_block); elsewhere, and for
// what the blocks leave over, eight source rows at a time, so each step
// writes eight neighbouring elements of dst while reading eight rows in order
// (Note [Tiles]).
template <typename scalar_t>
C10_ALWAYS_INLINE void transpose_into(scalar_t* dst, const scalar_t* src, int64_t m0, int64_t m1,
                                      int64_t s0) {
  int64_t i0 = 0;
#if EXTENSION_CPP_X86_DISPATCH
  if constexpr (sizeof(scalar_t) == 4 || sizeof(scalar_t) == 2) {
    using Bits = std::conditional_t<sizeof(scalar_t) == 4, uint32_t, uint16_t>;
    constexpr int64_t kB = 16 / sizeof(scalar_t);
    auto* d = reinterpret_cast<Bits*>(dst);
    const auto* x = reinterpret_cast<const Bits*>(src);
    for (; i0 + kB <= m0; i0 += kB) {
      int64_t i1 = 0;
      for (; i1 + kB <= m1; i1 += kB) {
        transpose_block(d + i1 * m0 + i0, m0, x + i0 * s0 + i1, s0);
      }
      for (; i1 < m1; ++i1) {
        for (int64_t k = 0; k < kB; ++k) {
          dst[i1 * m0 + i0 + k] = src[(i0 + k) * s0 + i1];
        }
      }
    }
  }
#endif
  constexpr int64_t kRows = 8;
  for (; i0 + kRows <= m0; i0 += kRows) {
    const scalar_t* rows = src + i0 * s0;
    for (int64_t i1 = 0; i1 < m1; ++i1) {
      scalar_t* d = dst + i1 * m0 + i0;
      for (int64_t k = 0; k < kRows; ++k) {
        d[k] = rows[k * s0 + i1];
      }
    }
  }
  for (; i0 < m0; ++i0) {
    for (int64_t i1 = 0; i1 < m1; ++i1) {
      dst[i1 * m0 + i0] = src[i0 * s0 + i1];
    }
  }
}

// One transposed input or two, each other input dense or repeated along the
// output's rows (use_tiles in layout.h): buffered tiles.
template <typename scalar_t, typename Op>
void tiled_loop(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                RunFn<scalar_t, Op> run_fn, Op op) {
  const int64_t n0 = l.sizes[0];
  const int64_t t0 = std::min(n0, kTile0);
  const int64_t t1 = std::min(l.sizes[1], kTileElems / t0);
  // Per operand (0: out, 1: a, 2: b): whether it is read through a buffer,
  // and its step along dimension 0 in what the run loop reads.
  const bool buffered[3] = {false, transposed_input(l, 1), transposed_input(l, 2)};
  const scalar_t* inputs[3] = {nullptr, a, b};
  const int64_t step[3] = {1, buffered[1] ? 1 : l.strides[1][0], buffered[2] ? 1 : l.strides[2][0]};
  // When a tile spans all of dimension 0 and out and every unbuffered input
  // continue from one row to the next (a channels_last input read into the
  // layout of a contiguous one, say), its rows form one run.
  auto continues = [&](int t) {
    return buffered[t] || (l.strides[t][0] == 1 && l.strides[t][1] == n0) ||
           (l.strides[t][0] == 0 && l.strides[t][1] == 0);
  };
  const bool whole_rows = t0 == n0 && continues(0) && continues(1) && continues(2);
  for_each_tile(l, t0, t1, [&](const Tile& tile) {
    scalar_t buf[2][kTileElems];  // buf[t - 1] holds input t's tile
    const int64_t m0 = tile.m0, m1 = tile.m1;
    for (int t = 1; t < 3; ++t) {
      if (buffered[t]) {
        // Rows of the input (stride 1 along dimension 1) into columns of the
        // buffer, which is laid out as the tile of the output: m1 rows of m0.
        transpose_into(buf[t - 1], inputs[t] + tile.origin(l, t), m0, m1, l.strides[t][0]);
      }
    }
    // The tile's first row in input t or its buffer, and the step from one
    // row to the next.
    auto first_row = [&](int t) {
      return buffered[t] ? buf[t - 1] : inputs[t] + tile.origin(l, t);
    };
    auto row_step = [&](int t) { return buffered[t] ? m0 : l.strides[t][1]; };
    scalar_t* out_tile = out + tile.origin(l, 0);
    if (whole_rows) {  // the tile is one dense run in out, the buffers and the other input
      run_fn(out_tile, first_row(1), first_row(2), m0 * m1, step[1], step[2], Rows{}, op);
    } else {
      run_fn(out_tile, first_row(1), first_row(2), m0, step[1], step[2],
             Rows{m1, l.strides[0][1], row_step(1), row_step(2)}, op);
    }
  });
}

}  // namespace extension_cpp::fast::cpu
