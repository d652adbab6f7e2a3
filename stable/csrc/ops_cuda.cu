// The CUDA kernels of the stable-ABI build: csrc/cuda/ops_cuda.cu's three
// kernels on torch::stable::Tensor, launching the same kernels
// (csrc/loops.cuh) on PyTorch's current stream.
//
// What the classic binding takes from c10 comes from the stable ABI here: the
// device guard from torch::stable::accelerator, the current stream from the
// C shim (torch 2.10's stable ABI has no C++ stream type).
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <stdexcept>

#include "../loops.cuh"
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

// out = Op<T>{args...}(a, b) elementwise on a's device, T the math type.
template <template <typename> class Op, typename... Args>
void elementwise(const char* op, const Tensor& out, const Tensor& a, const Tensor& b,
                 Args... args) {
  const int32_t device = a.get_device_index();
  const torch::stable::accelerator::DeviceGuard device_guard(device);
  const BinaryLayout layout = merged_layout(op, out, a, b);
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

Tensor mymuladd_cuda(const Tensor& a, const Tensor& b, double c) {
  check_inputs("mymuladd", a, b);
  Tensor out = new_output("mymuladd", a, b);
  elementwise<MulAddOp>("mymuladd", out, a, b, c);
  return out;
}

Tensor mymul_cuda(const Tensor& a, const Tensor& b) {
  check_inputs("mymul", a, b);
  Tensor out = new_output("mymul", a, b);
  elementwise<MulOp>("mymul", out, a, b);
  return out;
}

void myadd_out_cuda(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_out("myadd_out", a, b, out);
  elementwise<AddOp>("myadd_out", out, a, b);
}

}  // namespace

STABLE_TORCH_LIBRARY_IMPL(extension_cpp_stable, CUDA, m) {
  m.impl("mymuladd", TORCH_BOX(&mymuladd_cuda));
  m.impl("mymul", TORCH_BOX(&mymul_cuda));
  m.impl("myadd_out", TORCH_BOX(&myadd_out_cuda));
}

}  // namespace extension_cpp::stable
