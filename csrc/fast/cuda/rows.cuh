// Rows on CUDA: slices, broadcasts, a misaligned start.
//
// When the output's rows (dimension 0 of the layout) are at least half a
// block's chunk long, a block takes one chunk of a row (for 2-byte types,
// two whole rows where a row is exactly half a chunk): the row's offsets are
// computed once per thread, a broadcast input is read once per vector, and
// each operand moves 16 bytes at a time wherever its row start allows.
// 4- and 8-byte types take rows_kernel; 2-byte types, dense_rows_kernel,
// where they fit it (Note [CUDA rows]).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../../elementwise.h"
#include "../../runtime.cuh"
#include "strided32.cuh"
#include "vectorized.cuh"

namespace extension_cpp::fast::cuda {

// The merged layout as rows of n0 elements (dimension 0, the output's
// fastest) picked by the other dimensions. A block covers one chunk of
// kThreads * kVec elements of one row, or 2^log2_rows consecutive rows of
// kThreads >> log2_rows threads each.
struct Rows32 {
  uint32_t n0;
  uint32_t inner[3];   // each operand's stride along the row
  uint32_t log2_rows;  // rows per block, as a power of two
  FastDivisor chunks;  // chunks per row
  Layout32 outer;      // dimensions 1.. of the layout: row index -> offsets
};

// A dense row's stride along the row, fixed at compile time where the launch
// knows it, so that each kernel holds only its own loads; else read at run
// time, from one of two sets.
constexpr int kZeroOrOne = -1;  // 0 or 1
constexpr int kAnyStride = -2;  // 0, 1 or 2

constexpr uint32_t kLog2Threads = 8;
static_assert(kThreads == 1 << kLog2Threads, "the row kernel splits a block by shifts");

// The kVec row elements p[s * i0 .. s * (i0 + kVec)) for the stride s = 0,
// 1 or 2 (kStride, or `stride` where kStride is a set):
//  * 0: kVec copies of p[0] (a broadcast);
//  * 1: one 16-byte load where p + i0 is aligned to it, else kVec scalars;
//  * 2: two 16-byte loads and every other element, from a run that starts on
//    a 16-byte boundary or one element past it (a [::2] or a [1::2] slice of
//    an aligned row: the launch checks every row). The two loads cover the
//    run and one element beside it, in the same 16 bytes as an element of
//    the run.
template <typename scalar_t, int kVec, int kStride>
__device__ __forceinline__ Vec<scalar_t, kVec> load_run(const scalar_t* p, uint32_t i0,
                                                        uint32_t stride) {
  using V = Vec<scalar_t, kVec>;
  if constexpr (kStride >= 0) {
    stride = kStride;
  }
  V v;
  if (stride == 0) {
    const scalar_t x = p[0];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      v.v[k] = x;
    }
  } else if (kStride == 2 || (kStride == kAnyStride && stride == 2)) {
    // Two branches, each with constant register indices: an index computed
    // at run time would put the pair in local memory.
    const scalar_t* run = p + 2 * i0;
    if (aligned_to(run, sizeof(V))) {
      const V* pair = reinterpret_cast<const V*>(run);
      const V lo = pair[0], hi = pair[1];
#pragma unroll
      for (int k = 0; k < kVec / 2; ++k) {
        v.v[k] = lo.v[2 * k];
        v.v[k + kVec / 2] = hi.v[2 * k];
      }
    } else {
      const V* pair = reinterpret_cast<const V*>(run - 1);
      const V lo = pair[0], hi = pair[1];
#pragma unroll
      for (int k = 0; k < kVec / 2; ++k) {
        v.v[k] = lo.v[2 * k + 1];
        v.v[k + kVec / 2] = hi.v[2 * k + 1];
      }
    }
  } else if (aligned_to(p + i0, sizeof(V))) {
    v = *reinterpret_cast<const V*>(p + i0);
  } else {
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      v.v[k] = p[i0 + k];
    }
  }
  return v;
}

// Row kernel for 4- and 8-byte types. `dense_rows`: the output's rows are
// dense and each input's dense or repeated (stride 0). Then each thread
// takes kVec consecutive elements, and each operand moves them in one
// 16-byte access where its row start allows (every row of a contiguous or
// broadcast tensor; one row in kVec of a row-sliced one), in kVec scalar
// accesses where not. Other rows (a stride-2 slice, say, and any row of a
// 2-byte type that dense_rows_kernel does not take) take the coalesced
// scalar loop: thread t of the block the elements t, t + kThreads, ...
template <typename scalar_t, int kVec, typename Op>
__global__ void rows_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, const Rows32 rows,
                            bool dense_rows, Op op) {
  using T = opmath_t<scalar_t>;
  const uint32_t row = rows.chunks.div(blockIdx.x);
  const uint32_t start = (blockIdx.x - row * rows.chunks.divisor) * (kThreads * kVec);
  uint32_t base[3];
  rows.outer.offsets(row, base);
  const scalar_t* pa = a + base[1];
  const scalar_t* pb = b + base[2];
  scalar_t* po = out + base[0];
  if (dense_rows) {
    const uint32_t i0 = start + threadIdx.x * kVec;
    if (i0 + kVec <= rows.n0) {
      const Vec<scalar_t, kVec> x = load_run<scalar_t, kVec, kZeroOrOne>(pa, i0, rows.inner[1]);
      const Vec<scalar_t, kVec> y = load_run<scalar_t, kVec, kZeroOrOne>(pb, i0, rows.inner[2]);
      const Vec<scalar_t, kVec> r = apply<scalar_t, kVec>(x, y, op);
      if (aligned_to(po + i0, sizeof(r))) {
        *reinterpret_cast<Vec<scalar_t, kVec>*>(po + i0) = r;
      } else {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          po[i0 + k] = r.v[k];
        }
      }
    } else {
      for (uint32_t i = i0; i < rows.n0; ++i) {
        po[i] = static_cast<scalar_t>(
            op(static_cast<T>(pa[i * rows.inner[1]]), static_cast<T>(pb[i * rows.inner[2]])));
      }
    }
    return;
  }
  T x[kVec], y[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const uint32_t i = start + threadIdx.x + k * kThreads;
    if (i < rows.n0) {
      x[k] = static_cast<T>(pa[i * rows.inner[1]]);
      y[k] = static_cast<T>(pb[i * rows.inner[2]]);
    }
  }
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const uint32_t i = start + threadIdx.x + k * kThreads;
    if (i < rows.n0) {
      po[i * rows.inner[0]] = static_cast<scalar_t>(op(x[k], y[k]));
    }
  }
}

// Row kernel for 2-byte types, where rows_kernel takes 42 registers for
// eight elements per thread and an SM holds five of its blocks, not eight:
// the output's rows are dense and each input's dense, repeated (stride 0) or
// every other element of an aligned row. Each thread takes kVec consecutive
// elements of one row. Capped at 32 registers (8 blocks of 256 threads per
// SM), as the bytes in flight per SM are what its speed follows; one kernel
// per stride kind (launch_dense_rows) keeps it under the cap with no spills.
template <typename scalar_t, int kVec, int kStrideA, int kStrideB, typename Op>
__global__ void __launch_bounds__(kThreads, 8)
    dense_rows_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, const Rows32 rows,
                      Op op) {
  using T = opmath_t<scalar_t>;
  using V = Vec<scalar_t, kVec>;
  // Threads per row: kThreads over the rows per block.
  const uint32_t log2_per_row = kLog2Threads - rows.log2_rows;
  const uint32_t group = rows.chunks.div(blockIdx.x);
  const uint32_t chunk = blockIdx.x - group * rows.chunks.divisor;
  const uint32_t row_in_block = threadIdx.x >> log2_per_row;
  const uint32_t lane = threadIdx.x & ((1u << log2_per_row) - 1);
  const uint32_t i0 = ((chunk << log2_per_row) + lane) * kVec;
  // A block's rows are consecutive along dimension 1 and never cross its end
  // (the launch checks it divides), so a row is the group's first row plus
  // row_in_block steps of dimension 1.
  uint32_t base[3];
  rows.outer.offsets(group << rows.log2_rows, base);
  const scalar_t* pa = a + base[1] + row_in_block * rows.outer.strides[1][0];
  const scalar_t* pb = b + base[2] + row_in_block * rows.outer.strides[2][0];
  scalar_t* po = out + base[0] + row_in_block * rows.outer.strides[0][0];
  if (i0 + kVec <= rows.n0) {
    const V x = load_run<scalar_t, kVec, kStrideA>(pa, i0, rows.inner[1]);
    const V y = load_run<scalar_t, kVec, kStrideB>(pb, i0, rows.inner[2]);
    const V r = apply<scalar_t, kVec>(x, y, op);
    if (aligned_to(po + i0, sizeof(V))) {
      *reinterpret_cast<V*>(po + i0) = r;
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        po[i0 + k] = r.v[k];
      }
    }
  } else {
    for (uint32_t i = i0; i < rows.n0; ++i) {
      po[i] = static_cast<scalar_t>(
          op(static_cast<T>(pa[i * rows.inner[1]]), static_cast<T>(pb[i * rows.inner[2]])));
    }
  }
}

// True when every row of operand t starts on a 16-byte boundary or one
// element past it: p and every stride but the row's own (dimension 0) a
// multiple of 16 bytes.
template <typename scalar_t>
bool rows_start_aligned(const scalar_t* p, const BinaryLayout& l, int t) {
  if (!aligned_to(p, 16) && !aligned_to(p - 1, 16)) {
    return false;
  }
  for (int d = 1; d < l.ndim; ++d) {
    if (l.strides[t][d] * static_cast<int64_t>(sizeof(scalar_t)) % 16 != 0) {
      return false;
    }
  }
  return true;
}

// The stride kinds with a kernel of their own: a broadcast column of either
// input, dense rows (a broadcast row, a row slice, a misaligned run) and two
// stride-2 slices. The rest of the dense rows take the kernel that reads
// each stride at run time.
template <typename scalar_t, int kVec, typename Op>
void launch_dense_rows(scalar_t* out, const scalar_t* a, const scalar_t* b, const Rows32& rows,
                       int64_t blocks, Op op, cudaStream_t stream) {
  auto launch = [&](auto stride_a, auto stride_b) {
    dense_rows_kernel<scalar_t, kVec, decltype(stride_a)::value, decltype(stride_b)::value>
        <<<blocks, kThreads, 0, stream>>>(out, a, b, rows, op);
  };
  using S0 = std::integral_constant<int, 0>;
  using S1 = std::integral_constant<int, 1>;
  using S2 = std::integral_constant<int, 2>;
  using Any = std::integral_constant<int, kAnyStride>;
  const uint32_t sa = rows.inner[1], sb = rows.inner[2];
  if (sa == 1 && sb == 1) {
    launch(S1{}, S1{});
  } else if (sa == 1 && sb == 0) {
    launch(S1{}, S0{});
  } else if (sa == 0 && sb == 1) {
    launch(S0{}, S1{});
  } else if (sa == 2 && sb == 2) {
    launch(S2{}, S2{});
  } else {
    launch(Any{}, Any{});
  }
}

template <typename scalar_t, int kVec, typename Op>
void launch_rows(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l, Op op,
                 cudaStream_t stream) {
  Rows32 rows;
  rows.n0 = static_cast<uint32_t>(l.sizes[0]);
  for (int t = 0; t < 3; ++t) {
    rows.inner[t] = static_cast<uint32_t>(l.strides[t][0]);
  }
  rows.outer = to_32_bits(l, 1);
  rows.log2_rows = 0;
  if constexpr (sizeof(scalar_t) == 2) {
    auto dense_input = [&](int t, const scalar_t* p) {
      const uint32_t s = rows.inner[t];
      return s <= 1 || (s == 2 && rows_start_aligned(p, l, t));
    };
    if (rows.inner[0] == 1 && dense_input(1, a) && dense_input(2, b)) {
      // Rows of half a chunk or less share a block, so that no thread
      // idles, where the rows per block divide dimension 1.
      while (l.ndim >= 2 && (kThreads >> (rows.log2_rows + 1)) >= 32 &&
             rows.n0 <= static_cast<uint32_t>(kThreads * kVec) >> (rows.log2_rows + 1) &&
             l.sizes[1] % (int64_t{2} << rows.log2_rows) == 0) {
        ++rows.log2_rows;
      }
      const uint32_t chunk = (kThreads >> rows.log2_rows) * kVec;
      const uint32_t chunks = (rows.n0 + chunk - 1) / chunk;
      rows.chunks = FastDivisor(chunks);
      const int64_t blocks = ((l.numel / rows.n0) >> rows.log2_rows) * chunks;
      launch_dense_rows<scalar_t, kVec>(out, a, b, rows, blocks, op, stream);
      return;
    }
  }
  const uint32_t chunk = kThreads * kVec;
  const uint32_t chunks = (rows.n0 + chunk - 1) / chunk;
  rows.chunks = FastDivisor(chunks);
  const int64_t blocks = l.numel / rows.n0 * chunks;
  const bool dense_rows = rows.inner[0] == 1 && rows.inner[1] <= 1 && rows.inner[2] <= 1;
  rows_kernel<scalar_t, kVec><<<blocks, kThreads, 0, stream>>>(out, a, b, rows, dense_rows, op);
}

}  // namespace extension_cpp::fast::cuda
