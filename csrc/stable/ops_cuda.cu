// CUDA kernels of the stable-ABI build: the classic build's kernels
// (csrc/cuda/elementwise_cuda.cuh), launched on PyTorch's current stream and
// registered with STABLE_TORCH_LIBRARY_IMPL.
//
// What the classic binding takes from c10 comes from the stable ABI here: the
// device guard from torch::stable::accelerator, the current stream from the
// C shim (torch 2.10's stable ABI has no C++ stream type). Allocation is the
// shared aoti_torch_empty_strided in ops.cpp.
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>

#include <stdexcept>

#include "../cuda/elementwise_cuda.cuh"
#include "ops.h"

namespace extension_cpp::stable {
namespace {

// PyTorch's current CUDA stream on `device`: a side stream under
// torch.cuda.stream(...), the capture stream under CUDA graphs.
cudaStream_t current_stream(int32_t device) {
  void* stream = nullptr;
  if (aoti_torch_get_current_cuda_stream(device, &stream) != AOTI_TORCH_SUCCESS) {
    throw std::runtime_error(
        "extension_cpp_stable: aoti_torch_get_current_cuda_stream failed (a bug: please report "
        "it)");
  }
  return static_cast<cudaStream_t>(stream);
}

void launch_cuda(const Tensor& out, const Tensor& a, const Tensor& b, BinaryOpKind kind, double c,
                 const BinaryLayout& layout) {
  const int32_t device = a.get_device_index();
  const torch::stable::accelerator::DeviceGuard device_guard(device);
  const cudaStream_t stream = current_stream(device);
  dispatch_binary(out, a, b, kind, c, [&](auto* o, const auto* x, const auto* y, auto op) {
    cuda::run(o, x, y, layout, op, stream, device);
  });
}

}  // namespace

STABLE_TORCH_LIBRARY_IMPL(extension_cpp_stable, CUDA, m) { register_kernels<launch_cuda>(m); }

}  // namespace extension_cpp::stable
