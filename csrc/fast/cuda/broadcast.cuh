// 2-byte broadcasts on CUDA: a row or a column repeated over a matrix.
//
// The common case of rows.cuh's dense_rows_kernel, on its own: float16 or
// bfloat16, a 2-D layout, the output and one input dense rows that start on
// 16-byte boundaries, the other input a broadcast row (one row read for
// every row) or a broadcast column (one element a row). A warp takes 256
// elements of a row, 16 bytes a thread, and a block 8 rows of them; on large
// tensors each thread takes two rows, so that two loads of each input are in
// flight before its first store, and a broadcast row's vector is loaded once
// for both. Its index math is a division by a divisor fixed at launch and a
// few 32-bit products (Note [CUDA broadcasts]).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../../elementwise.h"
#include "../../runtime.cuh"
#include "rows.cuh"
#include "strided32.cuh"
#include "vectorized.cuh"

namespace extension_cpp::fast::cuda {

// How the broadcast kernel reads an input's element (row, column).
enum class Bcast {
  kRows,    // dense rows, each starting on a 16-byte boundary
  kOneRow,  // one dense row, on a 16-byte boundary, for every row: a broadcast row
  kOneEach  // one element a row, repeated along it: a broadcast column
};

template <Bcast kA, Bcast kB>
struct BcastKinds {
  static constexpr Bcast a = kA, b = kB;
};

// A block covers kBcastCols columns of kBcastRows rows per pass.
constexpr int kBcastCols = 256;
constexpr int kBcastRows = kThreads / (kBcastCols / 8);
static_assert(kBcastRows * (kBcastCols / 8) == kThreads, "whole rows of vectors a block");

// Each thread two rows where the grid of one row a thread would have at
// least this many blocks: a few times what a large GPU holds at once, so
// that halving the grid still leaves every SM busy to the end.
constexpr int64_t kBcastTwoRowsFrom = 4096;

struct Bcast32 {
  uint32_t n0, n1;         // columns (dimension 0) and rows (dimension 1)
  uint32_t row_stride[3];  // [0] out, [1] a, [2] b; 0 for a broadcast row
  FastDivisor col_tiles;   // blocks along a row
};

// The 8 elements of row `row` at columns col .. col + 7 of an input of kind
// kKind: one 16-byte load, or one 2-byte load repeated.
template <typename scalar_t, Bcast kKind>
__device__ __forceinline__ Vec<scalar_t, 8> load_bcast(const scalar_t* p, uint32_t row,
                                                       uint32_t row_stride, uint32_t col) {
  using V = Vec<scalar_t, 8>;
  if constexpr (kKind == Bcast::kRows) {
    return *reinterpret_cast<const V*>(p + row * row_stride + col);
  } else if constexpr (kKind == Bcast::kOneRow) {
    return *reinterpret_cast<const V*>(p + col);
  } else {
    V v;
    const scalar_t x = p[row * row_stride];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      v.v[k] = x;
    }
    return v;
  }
}

// Thread t of a block: columns 8 * (t % 32) .. + 7 of its column tile, rows
// t / 32 + kBcastRows * u of its row group for u < kPasses. Every load
// before any store: out may be a or b, each element read before it is
// written by the same thread. Threads past the last column or row skip it
// (the launch requires whole vectors: n0 a multiple of 8). Capped at 32
// registers, as dense_rows_kernel.
template <typename scalar_t, Bcast kA, Bcast kB, int kPasses, typename Op>
__global__ void __launch_bounds__(kThreads, 8)
    broadcast_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, const Bcast32 m, Op op) {
  using V = Vec<scalar_t, 8>;
  const uint32_t group = m.col_tiles.div(blockIdx.x);
  const uint32_t tile = blockIdx.x - group * m.col_tiles.divisor;
  const uint32_t col = tile * kBcastCols + (threadIdx.x % (kBcastCols / 8)) * 8;
  const uint32_t row0 = group * (kBcastRows * kPasses) + threadIdx.x / (kBcastCols / 8);
  if (col >= m.n0) {
    return;
  }
  V x[kPasses], y[kPasses];
#pragma unroll
  for (int u = 0; u < kPasses; ++u) {
    const uint32_t row = row0 + u * kBcastRows;
    if (row < m.n1) {
      // A broadcast row's vector is the same for every pass: loaded once.
      x[u] = kA == Bcast::kOneRow && u > 0 ? x[0]
                                           : load_bcast<scalar_t, kA>(a, row, m.row_stride[1], col);
      y[u] = kB == Bcast::kOneRow && u > 0 ? y[0]
                                           : load_bcast<scalar_t, kB>(b, row, m.row_stride[2], col);
    }
  }
#pragma unroll
  for (int u = 0; u < kPasses; ++u) {
    const uint32_t row = row0 + u * kBcastRows;
    if (row < m.n1) {
      *reinterpret_cast<V*>(out + row * m.row_stride[0] + col) = apply<scalar_t, 8>(x[u], y[u], op);
    }
  }
}

// How the broadcast kernel would read input t (1: a, 2: b) of a 2-D layout,
// or false where it can't: a dense row needs its start and row stride on
// 16-byte boundaries (the stride 0 of a broadcast row is).
template <typename scalar_t>
bool bcast_kind(const scalar_t* p, const BinaryLayout& l, int t, Bcast* kind) {
  if (l.strides[t][0] == 0) {
    *kind = Bcast::kOneEach;
    return true;
  }
  if (l.strides[t][0] != 1 || !rows_start_at(p, l, t, 0)) {
    return false;
  }
  *kind = l.strides[t][1] == 0 ? Bcast::kOneRow : Bcast::kRows;
  return true;
}

// Launches the broadcast kernel and returns true where the layout is one it
// takes: a 2-byte type, two dimensions, whole vectors along the rows, the
// output dense rows on 16-byte boundaries, and one input a broadcast row or
// column beside dense rows. Otherwise returns false, having launched
// nothing. The caller has checked that every offset fits in 31 bits.
template <typename scalar_t, typename Op>
bool broadcast(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l, Op op,
               cudaStream_t stream) {
  if constexpr (sizeof(scalar_t) != 2) {
    return false;
  } else {
    Bcast ka, kb;
    if (l.ndim != 2 || l.sizes[0] % 8 != 0 || run_of(out, l, 0) != Run::kAligned ||
        !bcast_kind(a, l, 1, &ka) || !bcast_kind(b, l, 2, &kb) ||
        (ka == Bcast::kRows) == (kb == Bcast::kRows)) {
      return false;
    }
    Bcast32 m;
    m.n0 = static_cast<uint32_t>(l.sizes[0]);
    m.n1 = static_cast<uint32_t>(l.sizes[1]);
    for (int t = 0; t < 3; ++t) {
      m.row_stride[t] = static_cast<uint32_t>(l.strides[t][1]);
    }
    const uint32_t col_tiles = (m.n0 + kBcastCols - 1) / kBcastCols;
    m.col_tiles = FastDivisor(col_tiles);
    const int64_t one_row_blocks = int64_t{col_tiles} * ((m.n1 + kBcastRows - 1) / kBcastRows);
    const bool two_rows = one_row_blocks >= kBcastTwoRowsFrom;
    auto launch = [&](auto kinds, auto passes) {
      constexpr int kPasses = decltype(passes)::value;
      const int64_t rows_per_block = kBcastRows * kPasses;
      const int64_t blocks = int64_t{col_tiles} * ((m.n1 + rows_per_block - 1) / rows_per_block);
      broadcast_kernel<scalar_t, decltype(kinds)::a, decltype(kinds)::b, kPasses>
          <<<blocks, kThreads, 0, stream>>>(out, a, b, m, op);
    };
    auto with_passes = [&](auto kinds) {
      if (two_rows) {
        launch(kinds, std::integral_constant<int, 2>{});
      } else {
        launch(kinds, std::integral_constant<int, 1>{});
      }
    };
    using B = Bcast;
    if (ka == B::kOneRow) {
      with_passes(BcastKinds<B::kOneRow, B::kRows>{});
    } else if (kb == B::kOneRow) {
      with_passes(BcastKinds<B::kRows, B::kOneRow>{});
    } else if (ka == B::kOneEach) {
      with_passes(BcastKinds<B::kOneEach, B::kRows>{});
    } else {
      with_passes(BcastKinds<B::kRows, B::kOneEach>{});
    }
    return true;
  }
}

}  // namespace extension_cpp::fast::cuda
