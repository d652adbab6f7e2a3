// Narrow transposes on CUDA: an input transposed against an output whose
// dimension 0 spans at most 16 bytes.
//
// A permuted tensor such as x.permute(2, 0, 1) of shape (4, R, C) beside a
// contiguous one gives a layout whose dimension 0 has 4 elements: the
// transposed input's rows (dimension 1) are long, but a tile could only be 4
// deep. Here each thread takes kPerThread consecutive indices of dimension 1
// and every element of dimension 0 for each, 16 bytes of the output: one
// 16-byte load of each input laid out as the output, one load per plane of
// dimension 0 from the transposed input (a warp's loads of a plane are
// neighbours), and one 16-byte store. No shared memory and no barrier, so a
// block's loads overlap the next block's (Note [CUDA narrow transposes]).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../../elementwise.h"
#include "../../runtime.cuh"
#include "../layout.h"
#include "strided32.cuh"
#include "vectorized.cuh"

namespace extension_cpp::fast::cuda {

// The layout in 32 bits: the transposed input's stride along dimension 0,
// and dimensions 2.. of every operand.
struct Narrow32 {
  uint32_t plane;                // the transposed input's stride of dimension 0
  FastDivisor groups;            // dimension 1's size over kPerThread
  Layout32<kFewDims - 2> outer;  // dimensions 2..
};

// kN0: dimension 0's size. kTransposedA: a is the transposed input (read a
// plane at a time), else b is; the other is dense like the output in
// dimensions 0 and 1. One thread per kN0 * kPerThread elements: `threads`.
template <typename scalar_t, int kN0, bool kTransposedA, typename Op>
__global__ void __launch_bounds__(kThreads)
    narrow_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, const Narrow32 l,
                  uint32_t threads, Op op) {
  constexpr int kPerThread = 16 / (kN0 * sizeof(scalar_t));
  constexpr int kVec = kN0 * kPerThread;
  using V = Vec<scalar_t, kVec>;
  using R = Vec<scalar_t, kPerThread>;
  const uint32_t i = blockIdx.x * kThreads + threadIdx.x;
  if (i >= threads) {
    return;
  }
  const uint32_t q = l.groups.div(i);
  const uint32_t i1 = (i - q * l.groups.divisor) * kPerThread;
  uint32_t base[3];
  l.outer.offsets(q, base);
  // Element (i0, i1 + k) of the thread's 16 bytes is element k * kN0 + i0.
  auto load = [&](const scalar_t* p, auto transposed) {
    V v;
    if constexpr (decltype(transposed)::value) {
      R r[kN0];
#pragma unroll
      for (int i0 = 0; i0 < kN0; ++i0) {
        r[i0] = *reinterpret_cast<const R*>(p + i0 * l.plane + i1);
      }
#pragma unroll
      for (int i0 = 0; i0 < kN0; ++i0) {
#pragma unroll
        for (int k = 0; k < kPerThread; ++k) {
          v.v[k * kN0 + i0] = r[i0].v[k];
        }
      }
    } else {
      v = *reinterpret_cast<const V*>(p + i1 * kN0);
    }
    return v;
  };
  const V x = load(a + base[1], std::bool_constant<kTransposedA>{});
  const V y = load(b + base[2], std::bool_constant<!kTransposedA>{});
  *reinterpret_cast<V*>(out + base[0] + i1 * kN0) = apply<scalar_t, kVec>(x, y, op);
}

// True when the layout (one that use_tiles takes, in 32 bits) fits
// narrow_kernel with a dimension 0 of kN0 elements: the output and every
// input that is not transposed are dense in dimensions 0 and 1, each
// thread's 16 bytes of them start on a 16-byte boundary, and each
// transposed input's runs of kPerThread elements start on a boundary of
// their own size.
template <int kN0, typename scalar_t>
bool narrow_ok(const scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l) {
  constexpr int kPerThread = 16 / (kN0 * sizeof(scalar_t));
  if (l.sizes[0] != kN0 || l.sizes[1] % kPerThread != 0 || l.ndim > kFewDims) {
    return false;
  }
  const scalar_t* ptrs[3] = {out, a, b};
  for (int t = 0; t < 3; ++t) {
    const bool transposed = t > 0 && transposed_input(l, t);
    if (!transposed && (l.strides[t][0] != 1 || l.strides[t][1] != kN0)) {
      return false;
    }
    // The elements of one access: a run along dimension 1 of a transposed
    // input, else the thread's 16 bytes. Every stride but those fixed above
    // keeps each access on a boundary of its size.
    const int run = transposed ? kPerThread : kN0 * kPerThread;
    if (!aligned_to(ptrs[t], run * sizeof(scalar_t))) {
      return false;
    }
    for (int d = transposed ? 0 : 2; d < l.ndim; ++d) {
      if (d != 1 && l.strides[t][d] % run != 0) {
        return false;
      }
    }
  }
  return true;
}

template <typename scalar_t, int kN0, typename Op>
void launch_narrow(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                   Op op, cudaStream_t stream) {
  constexpr int kPerThread = 16 / (kN0 * sizeof(scalar_t));
  Narrow32 n{};
  const bool transposed_a = transposed_input(l, 1);
  n.plane = static_cast<uint32_t>(l.strides[transposed_a ? 1 : 2][0]);
  n.groups = FastDivisor(static_cast<uint32_t>(l.sizes[1] / kPerThread));
  n.outer = to_32_bits<kFewDims - 2>(l, 2);
  const uint32_t threads = static_cast<uint32_t>(l.numel / (kN0 * kPerThread));
  const int64_t blocks = (threads + kThreads - 1) / kThreads;
  if (transposed_a) {
    narrow_kernel<scalar_t, kN0, true><<<blocks, kThreads, 0, stream>>>(out, a, b, n, threads, op);
  } else {
    narrow_kernel<scalar_t, kN0, false><<<blocks, kThreads, 0, stream>>>(out, a, b, n, threads, op);
  }
}

// Launches narrow_kernel where the layout fits it, for 2- and 4-byte types
// (dimension 0 of 2, 4 or 8 elements of a 2-byte type, 2 or 4 of a 4-byte
// one: 4 to 16 bytes) with exactly one input transposed and offsets within
// 31 bits (`in_32_bits`, fits_32_bits of the layout), and returns whether
// it did; the rest take the tiles.
template <typename scalar_t, typename Op>
bool narrow(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
            bool in_32_bits, Op op, cudaStream_t stream) {
  if constexpr (sizeof(scalar_t) == 2 || sizeof(scalar_t) == 4) {
    if (transposed_input(l, 1) == transposed_input(l, 2) || !in_32_bits) {
      return false;
    }
    constexpr int kWide = 16 / sizeof(scalar_t);
    if (narrow_ok<kWide>(out, a, b, l)) {
      launch_narrow<scalar_t, kWide>(out, a, b, l, op, stream);
      return true;
    }
    if (narrow_ok<kWide / 2>(out, a, b, l)) {
      launch_narrow<scalar_t, kWide / 2>(out, a, b, l, op, stream);
      return true;
    }
    if constexpr (sizeof(scalar_t) == 2) {
      if (narrow_ok<2>(out, a, b, l)) {
        launch_narrow<scalar_t, 2>(out, a, b, l, op, stream);
        return true;
      }
    }
  }
  return false;
}

}  // namespace extension_cpp::fast::cuda
