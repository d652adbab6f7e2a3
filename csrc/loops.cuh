// The kernel every CUDA op launches, and the one place that picks it.
//
// Built with the fast kernels (EXTENSION_CPP_KERNELS=fast, the default), the
// tuned kernels of csrc/fast/cuda/ take the layouts they were written for;
// the simple kernel of csrc/cuda/elementwise_cuda.cuh takes the rest, and
// every layout in a build without them (EXTENSION_CPP_KERNELS=simple), which
// compiles nothing in csrc/fast/. The CUDA kernels of both bindings call
// elementwise_cuda (csrc/cuda/ops_cuda.cu, stable/csrc/ops_cuda.cu).
#pragma once

#include <cuda_runtime.h>

#include "cuda/elementwise_cuda.cuh"
#include "elementwise.h"

#if EXTENSION_CPP_FAST_KERNELS
#include "fast/cuda/elementwise.cuh"
#endif

namespace extension_cpp {

// out[i] = op(a[i], b[i]) over the layout l, launched on `stream`; out, a and
// b of one dtype on the current device. A failed launch throws
// std::runtime_error, which either binding turns into a Python RuntimeError.
template <typename scalar_t, typename Op>
void elementwise_cuda(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                      Op op, cudaStream_t stream) {
#if EXTENSION_CPP_FAST_KERNELS
  if (fast::cuda::elementwise(out, a, b, l, op, stream)) {
    return;
  }
#endif
  cuda::elementwise(out, a, b, l, op, stream);
}

// One-input ops: out[i] = op(a[i]), as elementwise_cpu's one-input form.
template <typename scalar_t, typename Op>
void elementwise_cuda(scalar_t* out, const scalar_t* a, const BinaryLayout& l, Op op,
                      cudaStream_t stream) {
  elementwise_cuda(out, a, a, l, OneInput<Op>{op}, stream);
}

}  // namespace extension_cpp
