// Contiguous tensors on CUDA: 16 bytes per load and store.
//
// When out, a and b are each one dense run, aligned to 16 bytes, every
// thread moves one vector of 16 bytes per operand (Vec), as PyTorch's own
// vectorised elementwise kernel does. One vector per thread and 256 threads
// a block: the shape that led a sweep of eight (Note [CUDA block shape]).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../elementwise.h"
#include "../../runtime.cuh"

namespace extension_cpp::fast::cuda {

template <typename scalar_t, int kVec>
struct alignas(sizeof(scalar_t) * kVec) Vec {
  scalar_t v[kVec];
};

// float16 and bfloat16 products and sums, two elements per instruction
// (HMUL2, HADD2) in the storage type, where the float path widens each
// element, computes in float and rounds back. Both round the exact result
// once to nearest even, so every bit matches PyTorch's (Note [Half pairs]).
// mymuladd stays in float: its c is a float.
template <typename scalar_t, typename Op>
constexpr bool kPairs =
    (std::is_same_v<scalar_t, c10::Half> || std::is_same_v<scalar_t, c10::BFloat16>) &&
    (std::is_same_v<Op, MulOp<float>> || std::is_same_v<Op, AddOp<float>>);

template <typename scalar_t>
using Pair = std::conditional_t<std::is_same_v<scalar_t, c10::Half>, __half2, __nv_bfloat162>;

template <typename P>
__device__ __forceinline__ P pair_op(MulOp<float>, P x, P y) {
  return __hmul2_rn(x, y);
}

template <typename P>
__device__ __forceinline__ P pair_op(AddOp<float>, P x, P y) {
  return __hadd2_rn(x, y);
}

template <typename scalar_t, int kVec, typename Op>
__device__ __forceinline__ Vec<scalar_t, kVec> apply_pairs(const Vec<scalar_t, kVec>& x,
                                                           const Vec<scalar_t, kVec>& y, Op op) {
  using P = Pair<scalar_t>;
  Vec<scalar_t, kVec> r;
#pragma unroll
  for (int k = 0; k < kVec; k += 2) {
    P px, py;
    memcpy(&px, &x.v[k], sizeof(P));
    memcpy(&py, &y.v[k], sizeof(P));
    const P pr = pair_op(op, px, py);
    memcpy(&r.v[k], &pr, sizeof(P));
  }
  return r;
}

template <typename scalar_t, int kVec, typename Op>
__device__ __forceinline__ Vec<scalar_t, kVec> apply(const Vec<scalar_t, kVec>& x,
                                                     const Vec<scalar_t, kVec>& y, Op op) {
  if constexpr (kVec % 2 == 0 && kPairs<scalar_t, Op>) {
    return apply_pairs(x, y, op);
  } else {
    using T = opmath_t<scalar_t>;
    Vec<scalar_t, kVec> r;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      r.v[k] = static_cast<scalar_t>(op(static_cast<T>(x.v[k]), static_cast<T>(y.v[k])));
    }
    return r;
  }
}

C10_HOST_DEVICE inline bool aligned_to(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// out, a, b: n dense elements each; when kVec > 1 all three are aligned to
// kVec elements. out may be exactly a or b (each element is read, then
// written, by the same thread), so the pointers are not __restrict__. The
// grid-stride loop only runs more than once past kMaxGridBlocks * kThreads
// vectors. Launched with at least one block (blocks_for), as block 0 also
// handles the last n % kVec elements.
template <typename scalar_t, int kVec, typename Op>
__global__ void contiguous_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n,
                                  Op op) {
  using V = Vec<scalar_t, kVec>;
  const V* va = reinterpret_cast<const V*>(a);
  const V* vb = reinterpret_cast<const V*>(b);
  V* vo = reinterpret_cast<V*>(out);
  const int64_t nvec = n / kVec;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < nvec;
       i += stride) {
    // Copy each vector out of global memory whole: passing va[i] to apply()
    // by reference let the compiler read it one element at a time (eight
    // 2-byte loads instead of one 16-byte load for float16/bfloat16).
    const V x = va[i];
    const V y = vb[i];
    vo[i] = apply<scalar_t, kVec>(x, y, op);
  }
  // The last n % kVec elements, one per thread of block 0.
  if (kVec > 1 && blockIdx.x == 0) {
    const int64_t t = nvec * kVec + threadIdx.x;
    if (t < n) {
      using T = opmath_t<scalar_t>;
      out[t] = static_cast<scalar_t>(op(static_cast<T>(a[t]), static_cast<T>(b[t])));
    }
  }
}

}  // namespace extension_cpp::fast::cuda
