// The CUDA kernels of mymuladd, mymul and myadd_out.
//
// The same three kernels as csrc/cpu/ops_cpu.cpp, launching elementwise_cuda
// (csrc/loops.cuh) on the current stream of the inputs' device.
#include <ATen/Dispatch_v2.h>
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../loops.cuh"
#include "../ops.h"

namespace extension_cpp {
namespace {

// A new tensor for f(a, b) on a's device, laid out as torch.mul(a, b) would
// be, straight from the CUDA allocator (as in ops_cpu.cpp).
at::Tensor new_output(const at::Tensor& a, const Prepared& prepared) {
  return at::detail::empty_strided_cuda(a.sizes(), prepared.out_strides, a.scalar_type(),
                                        a.device());
}

at::Tensor mymuladd_cuda(const at::Tensor& a, const at::Tensor& b, double c) {
  const Prepared prepared = prepare("mymuladd", a, b);
  const c10::cuda::CUDAGuard device_guard(a.device());
  at::Tensor out = new_output(a, prepared);
  const BinaryLayout& layout = prepared.layout;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_V2(a.scalar_type(), "mymuladd_cuda", AT_WRAP([&] {
                   using T = opmath_t<scalar_t>;
                   elementwise_cuda(out.mutable_data_ptr<scalar_t>(), a.const_data_ptr<scalar_t>(),
                                    b.const_data_ptr<scalar_t>(), layout,
                                    MulAddOp<T>{static_cast<T>(c)}, stream);
                 }),
                 AT_EXPAND(AT_FLOATING_TYPES), at::kHalf, at::kBFloat16);
  return out;
}

at::Tensor mymul_cuda(const at::Tensor& a, const at::Tensor& b) {
  const Prepared prepared = prepare("mymul", a, b);
  const c10::cuda::CUDAGuard device_guard(a.device());
  at::Tensor out = new_output(a, prepared);
  const BinaryLayout& layout = prepared.layout;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_V2(a.scalar_type(), "mymul_cuda", AT_WRAP([&] {
                   elementwise_cuda(out.mutable_data_ptr<scalar_t>(), a.const_data_ptr<scalar_t>(),
                                    b.const_data_ptr<scalar_t>(), layout,
                                    MulOp<opmath_t<scalar_t>>{}, stream);
                 }),
                 AT_EXPAND(AT_FLOATING_TYPES), at::kHalf, at::kBFloat16);
  return out;
}

void myadd_out_cuda(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  const BinaryLayout layout = prepare_out("myadd_out", a, b, out);
  const c10::cuda::CUDAGuard device_guard(a.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_V2(a.scalar_type(), "myadd_out_cuda", AT_WRAP([&] {
                   elementwise_cuda(out.mutable_data_ptr<scalar_t>(), a.const_data_ptr<scalar_t>(),
                                    b.const_data_ptr<scalar_t>(), layout,
                                    AddOp<opmath_t<scalar_t>>{}, stream);
                 }),
                 AT_EXPAND(AT_FLOATING_TYPES), at::kHalf, at::kBFloat16);
}

}  // namespace

TORCH_LIBRARY_IMPL(extension_cpp, CUDA, m) {
  m.impl("mymuladd", &mymuladd_cuda);
  m.impl("mymul", &mymul_cuda);
  m.impl("myadd_out", &myadd_out_cuda);
}

}  // namespace extension_cpp
