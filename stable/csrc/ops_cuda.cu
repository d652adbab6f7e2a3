// The CUDA kernels of the stable-ABI build: ops.h's three kernels over the
// classic build's CUDA kernels (csrc/loops.cuh), launched on PyTorch's current
// stream of the inputs' device.
//
// What the classic binding takes from c10 comes from the stable ABI here: the
// device guard from torch::stable::accelerator, the current stream from the
// C shim (torch 2.10's stable ABI has no C++ stream type).
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <stdexcept>

#include "loops.cuh"
#include "ops.h"

namespace extension_cpp::stable {
namespace {

using torch::headeronly::ScalarType;

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

struct CudaLoop {
  template <template <typename> class Op, typename... Args>
  static void run(const Tensor& out, const Tensor& a, const Tensor& b, const BinaryLayout& layout,
                  Args... args) {
    const int32_t device = a.get_device_index();
    const torch::stable::accelerator::DeviceGuard device_guard(device);
    const cudaStream_t stream = current_stream(device);
    THO_DISPATCH_V2(a.scalar_type(), "extension_cpp_stable", AT_WRAP([&] {
                      using T = opmath_t<scalar_t>;
                      elementwise_cuda(static_cast<scalar_t*>(out.mutable_data_ptr()),
                                       static_cast<const scalar_t*>(a.const_data_ptr()),
                                       static_cast<const scalar_t*>(b.const_data_ptr()), layout,
                                       Op<T>{static_cast<T>(args)...}, stream);
                    }),
                    AT_EXPAND(AT_FLOATING_TYPES), ScalarType::Half, ScalarType::BFloat16);
  }
};

using Cuda = Kernels<CudaLoop>;

}  // namespace

STABLE_TORCH_LIBRARY_IMPL(extension_cpp_stable, CUDA, m) {
  m.impl("mymuladd", TORCH_BOX(&Cuda::mymuladd));
  m.impl("mymul", TORCH_BOX(&Cuda::mymul));
  m.impl("myadd_out", TORCH_BOX(&Cuda::myadd_out));
}

}  // namespace extension_cpp::stable
