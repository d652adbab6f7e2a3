// CUDA kernels of the extension_cpp operators.
//
// One grid-stride kernel for all three ops; each op is a small functor. The
// launch follows the rules every CUDA op needs:
//   * a device guard, so a tensor on cuda:1 runs on cuda:1;
//   * the current stream, never the legacy default one (which breaks CUDA
//     graphs and stream-ordered code: pytorch/pytorch#157363);
//   * a check of cudaGetLastError after the launch;
//   * int64_t indices, so tensors past 2^31 elements are correct.
//
// Step 6: the same rules through the stable ABI: torch::stable's
// DeviceGuard, the current stream from the C shim (the stable ABI of torch
// 2.10 has no C++ stream type), and a launch check written out, as
// C10_CUDA_KERNEL_LAUNCH_CHECK is c10.
#include <cuda_runtime.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <algorithm>
#include <cstdint>
#include <string>

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

// PyTorch's current CUDA stream on the tensor's device.
cudaStream_t current_stream(const Tensor& t) {
  void* stream = nullptr;
  check(aoti_torch_get_current_cuda_stream(t.get_device_index(), &stream) == AOTI_TORCH_SUCCESS,
        "extension_cpp: could not get the current CUDA stream");
  return static_cast<cudaStream_t>(stream);
}

template <typename T, typename Op>
void launch(const Tensor& out, const Tensor& a, const Tensor& b, Op op) {
  const int64_t n = out.numel();
  if (n == 0) {
    return;
  }
  constexpr int kThreads = 256;
  // Enough blocks for one element per thread, capped: the loop covers the rest.
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 65535);
  binary_kernel<<<blocks, kThreads, 0, current_stream(out)>>>(
      out.mutable_data_ptr<T>(), a.const_data_ptr<T>(), b.const_data_ptr<T>(), n, op);
  const cudaError_t error = cudaGetLastError();
  check(error == cudaSuccess,
        std::string("CUDA kernel launch failed: ") + cudaGetErrorString(error));
}

}  // namespace

// a, b: [..] same shape, any layout. Returns a * b + c, contiguous.
Tensor mymuladd_cuda(const Tensor& a, const Tensor& b, double c) {
  check_inputs("mymuladd", a, b);
  check(a.is_cuda(), "mymuladd: expected a to be a CUDA tensor, got " + device_str(a));
  const torch::stable::accelerator::DeviceGuard device_guard(a.get_device_index());
  const Tensor a_c = torch::stable::contiguous(a);
  const Tensor b_c = torch::stable::contiguous(b);
  Tensor out = torch::stable::new_empty(a, a.sizes());
  THO_DISPATCH_V2(a.scalar_type(), "mymuladd_cuda", AT_WRAP([&] {
                    launch<scalar_t>(out, a_c, b_c, MulAdd<scalar_t>{static_cast<scalar_t>(c)});
                  }),
                  AT_FLOATING_TYPES);
  return out;
}

// a, b: [..] same shape, any layout. Returns a * b, contiguous.
Tensor mymul_cuda(const Tensor& a, const Tensor& b) {
  check_inputs("mymul", a, b);
  check(a.is_cuda(), "mymul: expected a to be a CUDA tensor, got " + device_str(a));
  const torch::stable::accelerator::DeviceGuard device_guard(a.get_device_index());
  const Tensor a_c = torch::stable::contiguous(a);
  const Tensor b_c = torch::stable::contiguous(b);
  Tensor out = torch::stable::new_empty(a, a.sizes());
  THO_DISPATCH_V2(a.scalar_type(), "mymul_cuda",
                  AT_WRAP([&] { launch<scalar_t>(out, a_c, b_c, Mul<scalar_t>{}); }),
                  AT_FLOATING_TYPES);
  return out;
}

// a, b: [..] same shape, any layout; out: contiguous [..], may be a or b.
void myadd_out_cuda(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_inputs("myadd_out", a, b);
  check_out("myadd_out", a, out);
  check(a.is_cuda(), "myadd_out: expected a to be a CUDA tensor, got " + device_str(a));
  const torch::stable::accelerator::DeviceGuard device_guard(a.get_device_index());
  const Tensor a_c = torch::stable::contiguous(a);
  const Tensor b_c = torch::stable::contiguous(b);
  THO_DISPATCH_V2(a.scalar_type(), "myadd_out_cuda",
                  AT_WRAP([&] { launch<scalar_t>(out, a_c, b_c, Add<scalar_t>{}); }),
                  AT_FLOATING_TYPES);
}

STABLE_TORCH_LIBRARY_IMPL(extension_cpp, CUDA, m) {
  m.impl("mymuladd", TORCH_BOX(&mymuladd_cuda));
  m.impl("mymul", TORCH_BOX(&mymul_cuda));
  m.impl("myadd_out", TORCH_BOX(&myadd_out_cuda));
}

}  // namespace extension_cpp
