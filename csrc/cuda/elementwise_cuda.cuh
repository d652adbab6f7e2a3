// The simple CUDA kernel: out[i] = op(a[i], b[i]) for every element of a
// BinaryLayout.
//
// A grid-stride loop over 64-bit linear indices; each element's offset in
// each operand comes from its index (offsets_of in elementwise.h), so every
// layout works. It takes raw pointers, the merged layout and the stream to
// launch on, so both bindings run it: the classic kernels (ops_cuda.cu) and
// the stable-ABI ones (stable/csrc/ops_cuda.cu). Each passes PyTorch's
// current stream on the inputs' device, never the legacy default stream,
// which races work queued on other streams and breaks CUDA graph capture.
// csrc/loops.cuh runs it wherever the tuned kernels of csrc/fast/cuda/ are
// not built or do not take the layout.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../elementwise.h"
#include "../runtime.cuh"

namespace extension_cpp::cuda {

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
// device; l: their layout. A failed launch throws std::runtime_error.
template <typename scalar_t, typename Op>
void elementwise(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l, Op op,
                 cudaStream_t stream) {
  if (l.numel == 0) {
    return;
  }
  elementwise_kernel<<<blocks_for(l.numel, kGridStrideBlocks), kThreads, 0, stream>>>(out, a, b, l,
                                                                                      op);
  check_launch();
}

}  // namespace extension_cpp::cuda
