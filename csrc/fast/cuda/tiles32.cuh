// Transposed 2-byte inputs on CUDA in 32-bit offsets: 32 x 64 tiles.
//
// The common case of tiles.cuh's kernel, on its own: float16 or bfloat16,
// 16 bytes per access, the 32 x 64 tile that kernel would pick, and every
// offset within 31 bits. Its index math is a few 32-bit operations, where
// the general kernel's 64-bit strides and products delay its first load,
// which a tile that stays in L2 waits on most (Note [CUDA tiles]). The
// staging is the general kernel's: a staged input's rows stored 16 bytes a
// thread, swizzled, and its columns read back with ldmatrix (swizzled,
// staged_column).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "../../elementwise.h"
#include "../../runtime.cuh"
#include "../layout.h"
#include "strided32.cuh"
#include "tiles.cuh"
#include "vectorized.cuh"

namespace extension_cpp::fast::cuda {

// The tile: 32 elements of dimension 0 (2^kLog2T0) by 64 of dimension 1.
constexpr int kLog2T0 = 5, kLog2T1 = 6;

// The layout in 32 bits. The output and an input read directly are dense
// along dimension 0, a staged input along dimension 1; `across` is each
// one's stride along the other.
struct Tiles32 {
  uint32_t n0, n1;               // sizes of dimensions 0 and 1
  uint32_t across[3];            // [0] out, [1] a, [2] b
  FastDivisor tiles0;            // tiles along dimension 0
  Layout32<kFewDims - 2> outer;  // dimensions 2..
};

// One tile per block, one 16-byte vector of each operand per thread: the
// block's x index picks the tile in dimensions 0 and 1, its y index the
// index of dimensions 2.., so that one division places the tile. A staged
// input is read along its rows, 8 threads a row of 64 elements; the output
// and a direct input along dimension 0, 4 threads a column of 32.
template <typename scalar_t, bool kStageA, bool kStageB, typename Op>
__global__ void __launch_bounds__(kThreads, 8)
    tiles32_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, const Tiles32 l, Op op) {
  using V = Vec<scalar_t, 8>;
  constexpr int kStaged = (kStageA ? 1 : 0) + (kStageB ? 1 : 0);
  __shared__ alignas(16) scalar_t stage[kStaged][1 << (kLog2T0 + kLog2T1)];
  const uint32_t q = l.tiles0.div(blockIdx.x);
  const uint32_t j0 = (blockIdx.x - q * l.tiles0.divisor) << kLog2T0, j1 = q << kLog2T1;
  uint32_t base[3];
  l.outer.offsets(blockIdx.y, base);
  const uint32_t r0 = threadIdx.x >> 3, r1 = (threadIdx.x & 7) * 8;  // staging order
  const uint32_t w0 = (threadIdx.x & 3) * 8, w1 = threadIdx.x >> 2;  // writing order
  const bool r_in = j0 + r0 < l.n0 && j1 + r1 < l.n1;
  const bool w_in = j0 + w0 < l.n0 && j1 + w1 < l.n1;
  // Operand t's vector: a staged input's at (r0, r1) of the tile, along
  // dimension 1; the others' at (w0, w1), along dimension 0.
  auto at = [&](int t, bool staged) {
    return staged ? base[t] + (j0 + r0) * l.across[t] + j1 + r1
                  : base[t] + j0 + w0 + (j1 + w1) * l.across[t];
  };
  V x, y;
  if (kStageA ? r_in : w_in) {
    x = *reinterpret_cast<const V*>(a + at(1, kStageA));
  }
  if (kStageB ? r_in : w_in) {
    y = *reinterpret_cast<const V*>(b + at(2, kStageB));
  }
  if (r_in) {
    const uint32_t cell = swizzled(r0, r1, kLog2T0, kLog2T1);
    if (kStageA) {
      *reinterpret_cast<V*>(&stage[0][cell]) = x;
    }
    if (kStageB) {
      *reinterpret_cast<V*>(&stage[kStaged - 1][cell]) = y;
    }
  }
  __syncthreads();
  // Every thread of the block, in range or not: ldmatrix is a warp's.
  if (kStageA) {
    x = staged_column(stage[0], w0, w1, kLog2T0, kLog2T1);
  }
  if (kStageB) {
    y = staged_column(stage[kStaged - 1], w0, w1, kLog2T0, kLog2T1);
  }
  if (w_in) {
    *reinterpret_cast<V*>(out + at(0, false)) = apply<scalar_t, 8>(x, y, op);
  }
}

// Launches tiles32_kernel where the layout fits it, and returns whether it
// did: a 2-byte type, 16 bytes per access (vector_tiles_ok), the general
// kernel's tile for these sizes the 32 x 64 one (tile_log2), offsets within
// 31 bits (`in_32_bits`, fits_32_bits of the layout), and at most 65,535
// indices of dimensions 2.. (a grid's y extent). The rest take tiles.cuh.
template <typename scalar_t, typename Op>
bool tiles32(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
             bool in_32_bits, Op op, cudaStream_t stream) {
  if constexpr (sizeof(scalar_t) != 2) {
    return false;
  } else {
    constexpr int64_t t0 = 1 << kLog2T0, t1 = 1 << kLog2T1;
    const int64_t matrices = l.numel / (l.sizes[0] * l.sizes[1]);
    const auto general =
        tile_log2<2 * kTileCells, 8, kWideLog2MaxT0<scalar_t>>(l.sizes[0], l.sizes[1]);
    if (general != std::pair{kLog2T0, kLog2T1} || !in_32_bits || matrices > 65535 ||
        !vector_tiles_ok(out, a, b, l, 8)) {
      return false;
    }
    const bool stage_a = transposed_input(l, 1), stage_b = transposed_input(l, 2);
    Tiles32 t{};
    t.n0 = static_cast<uint32_t>(l.sizes[0]);
    t.n1 = static_cast<uint32_t>(l.sizes[1]);
    t.across[0] = static_cast<uint32_t>(l.strides[0][1]);
    t.across[1] = static_cast<uint32_t>(l.strides[1][stage_a ? 0 : 1]);
    t.across[2] = static_cast<uint32_t>(l.strides[2][stage_b ? 0 : 1]);
    const int64_t tiles0 = (l.sizes[0] + t0 - 1) / t0, tiles1 = (l.sizes[1] + t1 - 1) / t1;
    t.tiles0 = FastDivisor(static_cast<uint32_t>(tiles0));
    t.outer = to_32_bits<kFewDims - 2>(l, 2);
    const dim3 blocks(static_cast<uint32_t>(tiles0 * tiles1), static_cast<uint32_t>(matrices));
    if (stage_a && stage_b) {
      tiles32_kernel<scalar_t, true, true><<<blocks, kThreads, 0, stream>>>(out, a, b, t, op);
    } else if (stage_a) {
      tiles32_kernel<scalar_t, true, false><<<blocks, kThreads, 0, stream>>>(out, a, b, t, op);
    } else {
      tiles32_kernel<scalar_t, false, true><<<blocks, kThreads, 0, stream>>>(out, a, b, t, op);
    }
    return true;
  }
}

}  // namespace extension_cpp::fast::cuda
