// CUDA kernels of the extension_cpp operators.
//
// One grid-stride kernel for all three ops; each op is a small functor. The
// launch follows the rules every CUDA op needs:
//   * a device guard, so a tensor on cuda:1 runs on cuda:1;
//   * the current stream, never the legacy default one (which breaks CUDA
//     graphs and stream-ordered code: pytorch/pytorch#157363);
//   * C10_CUDA_KERNEL_LAUNCH_CHECK after the launch;
//   * int64_t indices, so tensors past 2^31 elements are correct.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>

#include "checks.h"

namespace extension_cpp {
namespace {

template <typename T>
struct MulAdd {
  T c;
  __device__ T operator()(T x, T y) const { return x * y + c; }
};

template <typename T>
struct Mul {
  __device__ T operator()(T x, T y) const { return x * y; }
};

template <typename T>
struct Add {
  __device__ T operator()(T x, T y) const { return x + y; }
};

// out, a, b: n dense elements each. out may be a or b: each element is read,
// then written, by the same thread.
template <typename T, typename Op>
__global__ void binary_kernel(T* out, const T* a, const T* b, int64_t n, Op op) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = op(a[i], b[i]);
  }
}

template <typename T, typename Op>
void launch(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, Op op) {
  const int64_t n = out.numel();
  if (n == 0) {
    return;
  }
  constexpr int kThreads = 256;
  // Enough blocks for one element per thread, capped: the loop covers the rest.
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 65535);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  binary_kernel<<<blocks, kThreads, 0, stream>>>(out.mutable_data_ptr<T>(), a.const_data_ptr<T>(),
                                                 b.const_data_ptr<T>(), n, op);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

// a, b: [..] same shape, any layout. Returns a * b + c, contiguous.
at::Tensor mymuladd_cuda(const at::Tensor& a, const at::Tensor& b, double c) {
  check_inputs("mymuladd", a, b);
  TORCH_CHECK(a.is_cuda(), "mymuladd: expected a to be a CUDA tensor, got ", a.device());
  const c10::cuda::CUDAGuard device_guard(a.device());
  const at::Tensor a_c = a.contiguous();
  const at::Tensor b_c = b.contiguous();
  at::Tensor out = at::empty(a.sizes(), a.options());
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "mymuladd_cuda", [&] {
    launch<scalar_t>(out, a_c, b_c, MulAdd<scalar_t>{static_cast<scalar_t>(c)});
  });
  return out;
}

// a, b: [..] same shape, any layout. Returns a * b, contiguous.
at::Tensor mymul_cuda(const at::Tensor& a, const at::Tensor& b) {
  check_inputs("mymul", a, b);
  TORCH_CHECK(a.is_cuda(), "mymul: expected a to be a CUDA tensor, got ", a.device());
  const c10::cuda::CUDAGuard device_guard(a.device());
  const at::Tensor a_c = a.contiguous();
  const at::Tensor b_c = b.contiguous();
  at::Tensor out = at::empty(a.sizes(), a.options());
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "mymul_cuda",
                             [&] { launch<scalar_t>(out, a_c, b_c, Mul<scalar_t>{}); });
  return out;
}

// a, b: [..] same shape, any layout; out: contiguous [..], may be a or b.
void myadd_out_cuda(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  check_inputs("myadd_out", a, b);
  check_out("myadd_out", a, out);
  TORCH_CHECK(a.is_cuda(), "myadd_out: expected a to be a CUDA tensor, got ", a.device());
  const c10::cuda::CUDAGuard device_guard(a.device());
  const at::Tensor a_c = a.contiguous();
  const at::Tensor b_c = b.contiguous();
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "myadd_out_cuda",
                             [&] { launch<scalar_t>(out, a_c, b_c, Add<scalar_t>{}); });
}

TORCH_LIBRARY_IMPL(extension_cpp, CUDA, m) {
  m.impl("mymuladd", &mymuladd_cuda);
  m.impl("mymul", &mymul_cuda);
  m.impl("myadd_out", &myadd_out_cuda);
}

}  // namespace extension_cpp
