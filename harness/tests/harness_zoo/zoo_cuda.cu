// The harness zoo's CUDA bugs, built by zoo.py only where a GPU is present.
//
// default_stream_mul: a kernel launched with <<<grid, block>>> and no stream,
// so it runs on the legacy default stream instead of the caller's current
// stream (the upstream example did this for a year: pytorch/pytorch#157363).
// On a side stream it races the work queued there, and under CUDA graph
// capture the launch is an error.
//
// device_synced_mul: a correct multiply that then waits for the whole device
// with cudaDeviceSynchronize(), as some kernels do to report their errors.
// No copy to the host, so torch's sync debug mode does not see it, and a CUDA
// graph capture fails inside the op.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>

namespace harness_zoo {
namespace {

__global__ void mul_kernel(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    out[i] = a[i] * b[i];
  }
}

// float32, contiguous inputs of one shape (zoo.py's spec asks no more of it).
at::Tensor default_stream_mul(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat,
              "harness_zoo.default_stream_mul: expected float32 tensors");
  TORCH_CHECK(a.sizes() == b.sizes(), "harness_zoo.default_stream_mul: expected one shape");
  const c10::cuda::CUDAGuard guard(a.device());
  const at::Tensor ac = a.contiguous(), bc = b.contiguous();
  at::Tensor out = at::empty_like(ac);
  const int64_t n = out.numel();
  if (n == 0) {
    return out;
  }
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
  // Bug: no stream argument. The fix is
  // <<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>.
  mul_kernel<<<blocks, threads>>>(ac.const_data_ptr<float>(), bc.const_data_ptr<float>(),
                                  out.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

at::Tensor device_synced_mul(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor out = at::mul(a, b);
  C10_CUDA_CHECK(cudaDeviceSynchronize());  // the bug
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(harness_zoo, CUDA, m) {
  m.impl("default_stream_mul", &default_stream_mul);
  m.impl("device_synced_mul", &device_synced_mul);
}

}  // namespace harness_zoo
