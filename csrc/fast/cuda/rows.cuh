// Rows on CUDA: slices, broadcasts, a misaligned start.
//
// When the output's rows (dimension 0 of the layout) are at least half a
// block's chunk long, a block takes one chunk of one row: the row's offsets
// are computed once per thread, a broadcast input is read once per vector,
// and each operand moves 16 bytes at a time wherever its row start allows.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../../elementwise.h"
#include "../../runtime.cuh"
#include "strided32.cuh"
#include "vectorized.cuh"

namespace extension_cpp::fast::cuda {

// The merged layout as rows of n0 elements (dimension 0, the output's
// fastest) picked by the other dimensions. A block covers one chunk of
// kThreads * kVec elements of one row, so a row's offsets are computed once
// per thread rather than once per element, and a stride-0 (broadcast) input
// is read once per vector.
struct Rows32 {
  uint32_t n0;
  uint32_t inner[3];   // each operand's stride along the row
  FastDivisor chunks;  // chunks per row
  Layout32 outer;      // dimensions 1.. of the layout: row index -> offsets
};

// The kVec consecutive row elements p[i0 .. i0 + kVec) (stride 1) or kVec
// copies of p[0] (stride 0). One 16-byte load when p + i0 is aligned to it,
// else kVec scalar loads.
template <typename scalar_t, int kVec>
__device__ __forceinline__ Vec<scalar_t, kVec> load_run(const scalar_t* p, uint32_t i0,
                                                        uint32_t stride) {
  Vec<scalar_t, kVec> v;
  if (stride == 0) {
    const scalar_t x = p[0];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      v.v[k] = x;
    }
  } else if (aligned_to(p + i0, sizeof(v))) {
    v = *reinterpret_cast<const Vec<scalar_t, kVec>*>(p + i0);
  } else {
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      v.v[k] = p[i0 + k];
    }
  }
  return v;
}

// Row kernel. `dense_rows`: the output's rows are dense and each input's
// dense or repeated (stride 0). Then each thread takes kVec consecutive
// elements, and each operand moves them in one 16-byte access where its
// row start allows (every row of a contiguous or broadcast tensor; one row
// in kVec of a row-sliced one), in kVec scalar accesses where not. Other
// rows (a stride-2 slice, say) take the coalesced scalar loop: thread t of
// the block the elements t, t + kThreads, ...
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
      const Vec<scalar_t, kVec> x = load_run<scalar_t, kVec>(pa, i0, rows.inner[1]);
      const Vec<scalar_t, kVec> y = load_run<scalar_t, kVec>(pb, i0, rows.inner[2]);
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

template <typename scalar_t, int kVec, typename Op>
void launch_rows(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l, Op op,
                 cudaStream_t stream) {
  Rows32 rows;
  rows.n0 = static_cast<uint32_t>(l.sizes[0]);
  for (int t = 0; t < 3; ++t) {
    rows.inner[t] = static_cast<uint32_t>(l.strides[t][0]);
  }
  const uint32_t chunk = kThreads * kVec;
  const uint32_t chunks = (rows.n0 + chunk - 1) / chunk;
  rows.chunks = FastDivisor(chunks);
  rows.outer = to_32_bits(l, 1);
  const int64_t blocks = l.numel / rows.n0 * chunks;
  const bool dense_rows = rows.inner[0] == 1 && rows.inner[1] <= 1 && rows.inner[2] <= 1;
  rows_kernel<scalar_t, kVec><<<blocks, kThreads, 0, stream>>>(out, a, b, rows, dense_rows, op);
}

}  // namespace extension_cpp::fast::cuda
