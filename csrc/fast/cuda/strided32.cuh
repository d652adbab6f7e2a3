// Strided layouts on CUDA with 32-bit indices.
//
// Where every index and offset of a layout fits in 31 bits, the index math
// runs in 32 bits, and each division by a size is a multiply-high and a shift
// by a divisor fixed at launch (FastDivisor), as ATen's OffsetCalculator and
// IntDivider do: 64-bit divisions cost more than the loads they place
// (Note [32-bit indexing]). Each thread takes kWork elements a block-width
// apart, so a warp's loads are of neighbouring elements.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "../../elementwise.h"
#include "../../runtime.cuh"
#include "vectorized.cuh"

namespace extension_cpp::fast::cuda {

// Division by a divisor fixed at launch, as a multiply-high, an add and a
// shift (Granlund and Montgomery's method, which ATen's IntDivider uses too):
// q = (umulhi(n, m) + n) >> s, with 2^(s-1) < d <= 2^s and
// m = floor(2^32 * (2^s - d) / d) + 1. Exact for n < 2^31.
struct FastDivisor {
  uint32_t divisor = 1, multiplier = 1, shift = 0;
  FastDivisor() = default;
  explicit FastDivisor(uint32_t d) : divisor(d) {
    while ((uint64_t{1} << shift) < d) {
      ++shift;
    }
    multiplier =
        static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    return (__umulhi(n, multiplier) + n) >> shift;
  }
};

// The row and tiled kernels take layouts of up to kFewDims dimensions, so
// that their parameters stay small: a launch copies them, and room for
// kMaxDims is 600 to 800 bytes (Note [Kernel parameters]). Layouts with
// more, rare after merging, take strided32_kernel.
constexpr int kFewDims = 6;

// The merged layout, up to kDims dimensions, with 32-bit sizes, strides and
// divisors.
template <int kDims>
struct Layout32 {
  int ndim;
  FastDivisor sizes[kDims];
  uint32_t strides[3][kDims];

  // The loop runs over kDims and stops at ndim, as TensorIterator's
  // OffsetCalculator does, so every array index is a constant: the kernel
  // parameters are then read with fixed addresses, not indexed loads.
  __device__ __forceinline__ void offsets(uint32_t i, uint32_t (&o)[3]) const {
    o[0] = o[1] = o[2] = 0;
#pragma unroll
    for (int d = 0; d < kDims; ++d) {
      if (d == ndim) {
        break;
      }
      const uint32_t q = sizes[d].div(i);
      const uint32_t r = i - q * sizes[d].divisor;
      o[0] += r * strides[0][d];
      o[1] += r * strides[1][d];
      o[2] += r * strides[2][d];
      i = q;
    }
  }
};

// True when every element index and offset of `l` fits in 31 bits (strides
// are never negative here: PyTorch tensors have none).
inline bool fits_32_bits(const BinaryLayout& l) {
  constexpr int64_t kMax = (int64_t{1} << 31) - 1;
  if (l.numel > kMax) {
    return false;
  }
  for (int t = 0; t < 3; ++t) {
    int64_t reach = 0;
    for (int d = 0; d < l.ndim; ++d) {
      reach += (l.sizes[d] - 1) * l.strides[t][d];
    }
    if (reach > kMax) {
      return false;
    }
  }
  return true;
}

// Dimensions [first, l.ndim) of l in 32 bits, at most kDims of them.
template <int kDims = kMaxDims>
Layout32<kDims> to_32_bits(const BinaryLayout& l, int first = 0) {
  if (l.ndim - first > kDims) {
    throw std::runtime_error("extension_cpp: " + std::to_string(l.ndim - first) +
                             " dimensions for a kernel that takes " + std::to_string(kDims) +
                             " (a bug: please report it)");
  }
  Layout32<kDims> r{};  // strides past ndim are 0: the row kernel reads them for 1-D layouts
  r.ndim = l.ndim - first;
  for (int d = first; d < l.ndim; ++d) {
    r.sizes[d - first] = FastDivisor(static_cast<uint32_t>(l.sizes[d]));
    for (int t = 0; t < 3; ++t) {
      r.strides[t][d - first] = static_cast<uint32_t>(l.strides[t][d]);
    }
  }
  return r;
}

// Elements per thread of strided32_kernel: a block covers kWork * kThreads
// consecutive indices, thread t the ones t, t + kThreads, ..., so each load
// instruction of a warp reads neighbouring elements.
constexpr int kWork = 4;

template <typename scalar_t, typename Op>
__global__ void strided32_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b,
                                 const Layout32<kMaxDims> layout, uint32_t n, Op op) {
  using T = opmath_t<scalar_t>;
  const uint32_t first = blockIdx.x * (kThreads * kWork) + threadIdx.x;
  T x[kWork], y[kWork];
  uint32_t at_out[kWork];
#pragma unroll
  for (int k = 0; k < kWork; ++k) {
    const uint32_t i = first + k * kThreads;
    if (i < n) {
      uint32_t o[3];
      layout.offsets(i, o);
      x[k] = static_cast<T>(a[o[1]]);
      y[k] = static_cast<T>(b[o[2]]);
      at_out[k] = o[0];
    }
  }
#pragma unroll
  for (int k = 0; k < kWork; ++k) {
    if (first + k * kThreads < n) {
      out[at_out[k]] = static_cast<scalar_t>(op(x[k], y[k]));
    }
  }
}

// One dense run whose operands do not all start on a 16-byte boundary (a
// [1:] slice, say), of a 4-byte type: strided32_kernel's loop without its
// index math. For these types it leads the row path's shifted 16-byte loads,
// which read each input twice over (Note [CUDA rows]); 2-byte types keep
// those, as 4 elements a thread are too few for them.
template <typename scalar_t, typename Op>
__global__ void unaligned_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, uint32_t n,
                                 Op op) {
  using T = opmath_t<scalar_t>;
  const uint32_t first = blockIdx.x * (kThreads * kWork) + threadIdx.x;
  T x[kWork], y[kWork];
#pragma unroll
  for (int k = 0; k < kWork; ++k) {
    const uint32_t i = first + k * kThreads;
    if (i < n) {
      x[k] = static_cast<T>(a[i]);
      y[k] = static_cast<T>(b[i]);
    }
  }
#pragma unroll
  for (int k = 0; k < kWork; ++k) {
    const uint32_t i = first + k * kThreads;
    if (i < n) {
      out[i] = static_cast<scalar_t>(op(x[k], y[k]));
    }
  }
}

// Launches unaligned_kernel over a dense run of n < 2^31 elements; 4-byte
// types only (the launch compiles to nothing for others).
template <typename scalar_t, typename Op>
void launch_unaligned(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n, Op op,
                      cudaStream_t stream) {
  if constexpr (sizeof(scalar_t) == 4) {
    const int64_t blocks = (n + kThreads * kWork - 1) / (kThreads * kWork);
    unaligned_kernel<<<blocks, kThreads, 0, stream>>>(out, a, b, static_cast<uint32_t>(n), op);
  }
}

}  // namespace extension_cpp::fast::cuda
