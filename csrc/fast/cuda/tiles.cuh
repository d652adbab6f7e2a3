// Transposed inputs on CUDA: tiles through shared memory.
//
// An input transposed against the output is read a tile at a time along its
// own rows into shared memory, and the output is written along its rows, so
// both sides are coalesced; the classic tiled transpose, with a pad word per
// 32 against bank conflicts. Up to 16 bytes per access where sizes and
// alignment allow (Note [CUDA tiles]). PyTorch's own kernels read such an
// input element by element.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../../elementwise.h"
#include "../../runtime.cuh"
#include "../layout.h"
#include "strided32.cuh"
#include "vectorized.cuh"

namespace extension_cpp::fast::cuda {

// A tile is t0 x t1 elements of dimensions 0 and 1, both powers of two, t0 <=
// 32 (64 for 4-byte types at 16 bytes per access) unless dimension 1 is
// narrower than the rest of the tile, t0 * t1 <= kCells
// (kTileCells, or twice that for 16-byte accesses and for 2-byte types' four
// elements), kCells / kThreads elements per thread.
// A transposed input is read along its own rows (dimension 1) into shared
// memory, and the output written along its rows (dimension 0); an input dense
// along dimension 0 is read directly. Every global load of a tile is issued
// before the barrier.
constexpr int kTileCells = 1024;

// The layout's strides, up to kFewDims dimensions (strided32.cuh).
struct TileLayout {
  int ndim;
  int64_t strides[3][kFewDims];  // [0] out, [1] a, [2] b
};

struct TileShape {
  int64_t n0, n1;                   // sizes of dimensions 0 and 1
  int log2_t0, log2_t1;             // the tile's extent in dimensions 0 and 1
  FastDivisor tiles0, tiles1;       // tiles along dimensions 0 and 1
  FastDivisor sizes[kFewDims - 2];  // sizes of dimensions 2..
};

// Shared-memory index idx is stored at idx + idx / (kCells / 32): one pad word
// per 32nd of the tile. A warp reading a column of the staged tile (writing
// order: consecutive threads along dimension 0, t0 * t1 = kCells) then touches
// each bank once, and a warp writing rows of it (staging order) does too,
// except with four or more elements per access in 2048-element tiles, where
// it touches some banks twice.
template <int kCells>
__device__ __forceinline__ uint32_t padded(uint32_t idx) {
  constexpr int kShift = kCells == 1024 ? 5 : 6;
  static_assert(kCells >> kShift == 32, "kCells must be 1024 or 2048");
  return idx + (idx >> kShift);
}

// Where element (i0, i1) of a tile of 2-byte types at 16 bytes per access is
// staged: row i0 of the tile holds 8-element chunks, and chunk j of it sits
// at chunk j ^ s(i0), within the row. A warp stores whole rows, 16 bytes a
// thread, each bank once per phase. It reads columns: in 32 x 64 tiles with
// ldmatrix (staged_column), eight rows at once, rows whose s differ, so eight
// banks' words; in narrower tiles element v of up to four groups of eight
// rows (rows v, 8 + v, ...), s = the group, so other banks.
__device__ __forceinline__ uint32_t swizzled(uint32_t i0, uint32_t i1, int log2_t0, int log2_t1) {
  const uint32_t group = i0 >> 3;
  const uint32_t s = log2_t0 == 5  ? (i0 & 1) | (group << 1)
                     : log2_t0 < 5 ? group << (5 - log2_t0)
                                   : group;
  const uint32_t chunks = 1u << (log2_t1 - 3);
  return (i0 << log2_t1) + ((((i1 >> 3) ^ (s & (chunks - 1))) << 3) | (i1 & 7));
}

// Elements (w0 .. w0 + 7, w1) of a staged tile of 2-byte types: the output's
// run of eight that the thread writes. Called by every thread of the block,
// in range or not. In a 32 x 64 tile, thread l of a warp writes rows 8 * (l %
// 4) .. + 7 of column 8 * warp + l / 4: one ldmatrix with .trans hands it
// exactly those, as four pairs, from four 8 x 8 matrices whose rows are
// chosen so (matrix j: rows 2j, 2j + 1, 8 + 2j, 9 + 2j, ... of the tile).
template <typename scalar_t>
__device__ __forceinline__ Vec<scalar_t, 8> staged_column(const scalar_t* stage, uint32_t w0,
                                                          uint32_t w1, int log2_t0, int log2_t1) {
  Vec<scalar_t, 8> v;
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 750
  if (log2_t0 == 5 && log2_t1 == 6) {
    // Lane l gives the address of row l % 8 of matrix l / 8.
    const uint32_t l = threadIdx.x & 31;
    const uint32_t row = ((l & 7) >> 1) * 8 + (l >> 3) * 2 + (l & 1);
    const uint32_t at = static_cast<uint32_t>(
        __cvta_generic_to_shared(stage + swizzled(row, w1 & ~7u, log2_t0, log2_t1)));
    uint32_t r[4];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(at)
                 : "memory");
    memcpy(&v, r, sizeof(v));
    return v;
  }
#endif
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    v.v[k] = stage[swizzled(w0 + k, w1, log2_t0, log2_t1)];
  }
  return v;
}

// One tile per block. The block's tile index is split into its position
// with the 32-bit divisors: 64-bit divisions here, once per block, cost more
// than the tile's loads and stores (Note [32-bit indexing]).
//
// kVec consecutive elements per access: along dimension 1 for a staged input,
// along dimension 0 for a direct input and the output (vector_tiles_ok says
// when every such run is whole and aligned).
//
// Capped at 32 registers, 8 blocks of 256 threads per SM: a tile's loads are
// all issued before its barrier, so the tiles in flight per SM set the speed
// (Note [CUDA tiles]).
template <typename scalar_t, typename Op, int kCells, int kVec, bool kStageA, bool kStageB>
__global__ void __launch_bounds__(kThreads, 8)
    tiled_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, const TileLayout l,
                 const TileShape shape, Op op) {
  using T = opmath_t<scalar_t>;
  using V = Vec<scalar_t, kVec>;
  constexpr int kLog2Vec = kVec == 1 ? 0 : (kVec == 2 ? 1 : (kVec == 4 ? 2 : 3));
  constexpr int kPerThread = kCells / kThreads / kVec;
  constexpr int kStaged = (kStageA ? 1 : 0) + (kStageB ? 1 : 0);
  // 2-byte types at 16 bytes per access stage in their own type, a vector
  // per store, with the swizzle of swizzled(); the rest as T, padded.
  constexpr bool kSwizzle = sizeof(scalar_t) == 2 && kVec == 8;
  using S = std::conditional_t<kSwizzle, scalar_t, T>;
  __shared__ alignas(16) S stage[kStaged][kSwizzle ? kCells : kCells + 32];
  const uint32_t t0 = 1u << shape.log2_t0, t1 = 1u << shape.log2_t1;
  const uint32_t vectors = (t0 * t1) >> kLog2Vec;
  const uint32_t q0 = shape.tiles0.div(blockIdx.x);
  const uint32_t q1 = shape.tiles1.div(q0);
  const int64_t j0 = static_cast<int64_t>(blockIdx.x - q0 * shape.tiles0.divisor) * t0;
  const int64_t j1 = static_cast<int64_t>(q0 - q1 * shape.tiles1.divisor) * t1;
  int64_t base[3];
  for (int t = 0; t < 3; ++t) {
    base[t] = j0 * l.strides[t][0] + j1 * l.strides[t][1];
  }
  uint32_t rest = q1;
#pragma unroll
  for (int d = 2; d < kFewDims; ++d) {
    if (d >= l.ndim) {
      break;
    }
    const uint32_t q = shape.sizes[d - 2].div(rest);
    const int64_t i = rest - q * shape.sizes[d - 2].divisor;
    rest = q;
    for (int t = 0; t < 3; ++t) {
      base[t] += i * l.strides[t][d];
    }
  }
  const uint32_t m0 = static_cast<uint32_t>(std::min<int64_t>(t0, shape.n0 - j0));
  const uint32_t m1 = static_cast<uint32_t>(std::min<int64_t>(t1, shape.n1 - j1));
  const scalar_t* pa = a + base[1];
  const scalar_t* pb = b + base[2];
  // Access c of the block, in staging order (consecutive threads along
  // dimension 1, a staged input's rows) and in writing order (along
  // dimension 0, as the output is written).
  auto staging = [&](uint32_t c, uint32_t& r0, uint32_t& r1) {
    r0 = c >> (shape.log2_t1 - kLog2Vec);
    r1 = (c & ((t1 >> kLog2Vec) - 1)) << kLog2Vec;
  };
  auto writing = [&](uint32_t c, uint32_t& w0, uint32_t& w1) {
    w0 = (c & ((t0 >> kLog2Vec) - 1)) << kLog2Vec;
    w1 = c >> (shape.log2_t0 - kLog2Vec);
  };
  auto load = [](const scalar_t* p) {
    if constexpr (kVec == 1) {
      V v;
      v.v[0] = *p;
      return v;
    } else {
      return *reinterpret_cast<const V*>(p);
    }
  };
  // Every global load of the tile first.
  V sa[kPerThread], sb[kPerThread], da[kPerThread], db[kPerThread];
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const uint32_t c = threadIdx.x + k * kThreads;
    uint32_t r0, r1, w0, w1;
    staging(c, r0, r1);
    writing(c, w0, w1);
    const bool r_in = c < vectors && r0 < m0 && r1 < m1;
    const bool w_in = c < vectors && w0 < m0 && w1 < m1;
    if (kStageA && r_in) {
      sa[k] = load(pa + r0 * l.strides[1][0] + r1);
    }
    if (!kStageA && w_in) {
      da[k] = kVec == 1 ? load(pa + w0 * l.strides[1][0] + w1 * l.strides[1][1])
                        : load(pa + w0 + w1 * l.strides[1][1]);
    }
    if (kStageB && r_in) {
      sb[k] = load(pb + r0 * l.strides[2][0] + r1);
    }
    if (!kStageB && w_in) {
      db[k] = kVec == 1 ? load(pb + w0 * l.strides[2][0] + w1 * l.strides[2][1])
                        : load(pb + w0 + w1 * l.strides[2][1]);
    }
  }
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const uint32_t c = threadIdx.x + k * kThreads;
    uint32_t r0, r1;
    staging(c, r0, r1);
    if (c < vectors && r0 < m0 && r1 < m1) {
      if constexpr (kSwizzle) {
        const uint32_t at = swizzled(r0, r1, shape.log2_t0, shape.log2_t1);
        if (kStageA) {
          *reinterpret_cast<V*>(&stage[0][at]) = sa[k];
        }
        if (kStageB) {
          *reinterpret_cast<V*>(&stage[kStaged - 1][at]) = sb[k];
        }
      } else {
#pragma unroll
        for (int v = 0; v < kVec; ++v) {
          if (kStageA) {
            stage[0][padded<kCells>(r0 * t1 + r1 + v)] = static_cast<T>(sa[k].v[v]);
          }
          if (kStageB) {
            stage[kStaged - 1][padded<kCells>(r0 * t1 + r1 + v)] = static_cast<T>(sb[k].v[v]);
          }
        }
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const uint32_t c = threadIdx.x + k * kThreads;
    uint32_t w0, w1;
    writing(c, w0, w1);
    V r;
    if constexpr (kSwizzle) {
      static_assert(kPerThread == 1, "staged_column reads one run a thread");
      const V x = kStageA ? staged_column(stage[0], w0, w1, shape.log2_t0, shape.log2_t1) : da[k];
      const V y =
          kStageB ? staged_column(stage[kStaged - 1], w0, w1, shape.log2_t0, shape.log2_t1) : db[k];
      r = apply<scalar_t, kVec>(x, y, op);
    }
    if (c < vectors && w0 < m0 && w1 < m1) {
      if constexpr (!kSwizzle) {
#pragma unroll
        for (int v = 0; v < kVec; ++v) {
          const uint32_t at = padded<kCells>((w0 + v) * t1 + w1);
          const T x = kStageA ? stage[0][at] : static_cast<T>(da[k].v[v]);
          const T y = kStageB ? stage[kStaged - 1][at] : static_cast<T>(db[k].v[v]);
          r.v[v] = static_cast<scalar_t>(op(x, y));
        }
      }
      scalar_t* po = out + base[0] + w0 + w1 * l.strides[0][1];
      if constexpr (kVec == 1) {
        *po = r.v[0];
      } else {
        *reinterpret_cast<V*>(po) = r;
      }
    }
  }
}

inline int log2_ceil(int64_t n) {
  int k = 0;
  while ((int64_t{1} << k) < n) {
    ++k;
  }
  return k;
}

// True when the tiled kernel may move kVec elements per access: every run
// it reads or writes is whole (sizes of dimensions 0 and 1 divisible by
// kVec) and starts aligned (the pointers, and every stride but the one along
// the run, divisible by kVec), and no input is repeated along dimension 0.
template <typename scalar_t>
bool vector_tiles_ok(const scalar_t* out, const scalar_t* a, const scalar_t* b,
                     const BinaryLayout& l, int vec) {
  if (l.sizes[0] % vec != 0 || l.sizes[1] % vec != 0) {
    return false;
  }
  const scalar_t* ptrs[3] = {out, a, b};
  for (int t = 0; t < 3; ++t) {
    if (!aligned_to(ptrs[t], vec * sizeof(scalar_t))) {
      return false;
    }
    const int run = transposed_input(l, t) ? 1 : 0;  // the dimension of stride 1
    if (l.strides[t][run] != 1) {
      return false;
    }
    for (int d = 0; d < l.ndim; ++d) {
      if (d != run && l.strides[t][d] % vec != 0) {
        return false;
      }
    }
  }
  return true;
}

// The tile for sizes n0 x n1 of dimensions 0 and 1, as log2 of its extents
// {t0, t1}: up to kCells elements, t0 at most 2^kLog2MaxT0, each at least
// kVec. tiles32.cuh asks it too, so that kernel takes exactly the layouts
// whose tile would be its own.
template <int kCells, int kVec, int kLog2MaxT0>
std::pair<int, int> tile_log2(int64_t n0, int64_t n1) {
  int log2_t0 = std::max(std::min(log2_ceil(n0), kLog2MaxT0), log2_ceil(kVec));
  const int log2_t1 =
      std::max(std::min(log2_ceil(n1), log2_ceil(kCells) - log2_t0), log2_ceil(kVec));
  // A dimension 1 narrower than the tile leaves it room along dimension 0:
  // filled, no thread of the block idles.
  log2_t0 = std::max(log2_t0, std::min(log2_ceil(n0), log2_ceil(kCells) - log2_t1));
  return {log2_t0, log2_t1};
}

// The widest tiles, 16 bytes an access: t1 is 128 bytes of elements, t0
// the rest of the tile's 2^11.
template <typename scalar_t>
constexpr int kWideLog2MaxT0 = sizeof(scalar_t) == 2 ? 5 : 6;

// t0 is at most 2^kLog2MaxT0 (and at most 32 where kCells is 1024).
template <typename scalar_t, typename Op, int kCells, int kVec, int kLog2MaxT0 = 5>
void launch_tiled(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l, Op op,
                  cudaStream_t stream) {
  TileShape shape;
  shape.n0 = l.sizes[0];
  shape.n1 = l.sizes[1];
  std::tie(shape.log2_t0, shape.log2_t1) = tile_log2<kCells, kVec, kLog2MaxT0>(shape.n0, shape.n1);
  const int64_t t0 = int64_t{1} << shape.log2_t0, t1 = int64_t{1} << shape.log2_t1;
  const int64_t tiles0 = (shape.n0 + t0 - 1) / t0, tiles1 = (shape.n1 + t1 - 1) / t1;
  const int64_t count = tiles0 * tiles1 * (l.numel / (shape.n0 * shape.n1));
  // A tile holds up to kCells elements: 2^31 tiles would be 2^41 elements.
  if (count >= (int64_t{1} << 31)) {
    throw std::runtime_error("extension_cpp: too many tiles: " + std::to_string(count) +
                             " (a bug: please report it)");
  }
  shape.tiles0 = FastDivisor(static_cast<uint32_t>(tiles0));
  shape.tiles1 = FastDivisor(static_cast<uint32_t>(tiles1));
  if (l.ndim > kFewDims) {
    throw std::runtime_error("extension_cpp: a tiled layout of " + std::to_string(l.ndim) +
                             " dimensions (a bug: please report it)");
  }
  TileLayout tl{};
  tl.ndim = l.ndim;
  for (int d = 0; d < l.ndim; ++d) {
    for (int t = 0; t < 3; ++t) {
      tl.strides[t][d] = l.strides[t][d];
    }
    if (d >= 2) {
      shape.sizes[d - 2] = FastDivisor(static_cast<uint32_t>(l.sizes[d]));
    }
  }
  const int64_t blocks = count;
  const bool stage_a = transposed_input(l, 1), stage_b = transposed_input(l, 2);
  if (stage_a && stage_b) {
    tiled_kernel<scalar_t, Op, kCells, kVec, true, true>
        <<<blocks, kThreads, 0, stream>>>(out, a, b, tl, shape, op);
  } else if (stage_a) {
    tiled_kernel<scalar_t, Op, kCells, kVec, true, false>
        <<<blocks, kThreads, 0, stream>>>(out, a, b, tl, shape, op);
  } else {
    tiled_kernel<scalar_t, Op, kCells, kVec, false, true>
        <<<blocks, kThreads, 0, stream>>>(out, a, b, tl, shape, op);
  }
}

// As many elements per access as vector_tiles_ok allows. 2- and 4-byte
// types: 16 bytes, in 2048-element tiles whose staged rows are 128 bytes (32
// x 64 elements for 2-byte types, 64 x 32 for 4-byte ones); then, for 2-byte
// types, four elements. Otherwise two elements, else one. The kernel is
// bound by its load and store instructions, not by bytes in flight, so wider
// accesses are what raise it to a copy's bandwidth (Note [CUDA tiles]).
template <typename scalar_t, typename Op>
void launch_tiled(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l, Op op,
                  cudaStream_t stream) {
  if constexpr (sizeof(scalar_t) <= 4) {
    constexpr int kWide = 16 / sizeof(scalar_t);
    if (vector_tiles_ok(out, a, b, l, kWide)) {
      launch_tiled<scalar_t, Op, 2 * kTileCells, kWide, kWideLog2MaxT0<scalar_t>>(out, a, b, l, op,
                                                                                  stream);
      return;
    }
  }
  if constexpr (sizeof(scalar_t) == 2) {
    if (vector_tiles_ok(out, a, b, l, 4)) {
      launch_tiled<scalar_t, Op, 2 * kTileCells, 4>(out, a, b, l, op, stream);
      return;
    }
  }
  if (vector_tiles_ok(out, a, b, l, 2)) {
    launch_tiled<scalar_t, Op, kTileCells, 2>(out, a, b, l, op, stream);
  } else {
    launch_tiled<scalar_t, Op, kTileCells, 1>(out, a, b, l, op, stream);
  }
}

}  // namespace extension_cpp::fast::cuda
