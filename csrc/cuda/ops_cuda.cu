// CUDA kernels of mymuladd, mymul and myadd_out: the classic binding.
//
// The kernels and the choice between them are in elementwise_cuda.cuh, which
// the stable-ABI build compiles too; this file supplies the current stream and
// the allocator, and registers them.
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../ops.h"
#include "elementwise_cuda.cuh"

namespace extension_cpp::cuda {
namespace {

void launch(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, BinaryOpKind kind,
            double c, const BinaryLayout& layout) {
  const c10::cuda::CUDAGuard device_guard(a.device());
  const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream();
  dispatch_binary(out, a, b, kind, c, [&](auto* o, const auto* x, const auto* y, auto op) {
    run(o, x, y, layout, op, stream.stream(), stream.device_index());
  });
}

at::Tensor empty(const at::Tensor& like, c10::IntArrayRef strides) {
  return at::detail::empty_strided_cuda(like.sizes(), strides, like.scalar_type(), like.device());
}

}  // namespace

TORCH_LIBRARY_IMPL(extension_cpp, CUDA, m) { register_kernels<launch, empty>(m); }

}  // namespace extension_cpp::cuda
