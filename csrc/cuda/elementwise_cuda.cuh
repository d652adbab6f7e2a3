// The CUDA kernel: out[i] = op(a[i], b[i]) for every element of a BinaryLayout.
//
// A grid-stride loop over 64-bit linear indices; each element's offset in
// each operand comes from its index (offsets_of in elementwise.h), so every
// layout works. It takes raw pointers, the merged layout and the stream to
// launch on, so both bindings run it: the classic kernels (ops_cuda.cu) and
// the stable-ABI ones (csrc/stable/ops_cuda.cu). Each passes PyTorch's
// current stream on the inputs' device, never the legacy default stream,
// which races work queued on other streams and breaks CUDA graph capture.
// Built with the fast kernels (EXTENSION_CPP_KERNELS=fast, the default), the
// tuned kernels of csrc/fast/cuda/ run instead wherever they can.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "../elementwise.h"

#if EXTENSION_CPP_FAST_KERNELS
#include "../fast/cuda/elementwise.cuh"
#endif

namespace extension_cpp::cuda {

constexpr int kThreads = 256;
// Enough blocks to fill a GPU many times over; the loop covers the rest.
constexpr int64_t kMaxBlocks = 65536;

template <typename scalar_t, typename Op>
__global__ void elementwise_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b,
                                   const BinaryLayout layout, Op op) {
  using T = opmath_t<scalar_t>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < layout.numel;
       i += step) {
    const Offsets o = offsets_of(layout, i);
    out[o.out] = static_cast<scalar_t>(op(static_cast<T>(a[o.a]), static_cast<T>(b[o.b])));
  }
}

// out: the op's output; a, b: its inputs, of one dtype, on the current
// device; l: their layout. A failed launch throws std::runtime_error, which
// either binding turns into a Python RuntimeError.
template <typename scalar_t, typename Op>
void elementwise_cuda(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                      Op op, cudaStream_t stream) {
  if (l.numel == 0) {
    return;
  }
#if EXTENSION_CPP_FAST_KERNELS
  const bool launched = fast::cuda::elementwise(out, a, b, l, op, stream);
#else
  const bool launched = false;
#endif
  if (!launched) {
    const int64_t blocks = std::min((l.numel + kThreads - 1) / kThreads, kMaxBlocks);
    elementwise_kernel<<<blocks, kThreads, 0, stream>>>(out, a, b, l, op);
  }
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA kernel launch: ") + cudaGetErrorString(error));
  }
}

// One-input ops: out[i] = op(a[i]), as elementwise_cpu's one-input form.
template <typename scalar_t, typename Op>
void elementwise_cuda(scalar_t* out, const scalar_t* a, const BinaryLayout& l, Op op,
                      cudaStream_t stream) {
  elementwise_cuda(out, a, a, l, OneInput<Op>{op}, stream);
}

}  // namespace extension_cpp::cuda
