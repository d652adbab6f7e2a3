// Input checks shared by the CPU (muladd.cpp) and CUDA (muladd_cuda.cu) kernels.
//
// Everything here is something the caller controls, so it is a TORCH_CHECK
// whose message names the argument and shows what was received: the values
// are streamed into it (sizes print as [3, 4], as Python prints a shape). The fake
// kernels in extension_cpp/ops.py (step 3) repeat them with the same words.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

namespace extension_cpp {

// a, b: same shape, same device, float32 or float64 (the same one).
inline void check_inputs(const char* op, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == at::kFloat || a.scalar_type() == at::kDouble, op,
              ": expected a to be float32 or float64, got ", a.scalar_type());
  TORCH_CHECK(b.scalar_type() == a.scalar_type(), op, ": expected b to have a's dtype ",
              a.scalar_type(), ", got ", b.scalar_type());
  TORCH_CHECK(a.sizes() == b.sizes(), op, ": expected a and b to have the same shape, got ",
              a.sizes(), " and ", b.sizes());
  TORCH_CHECK(a.device() == b.device(), op, ": expected a and b to be on the same device, got ",
              a.device(), " and ", b.device());
}

// out: like a, and contiguous (the kernels write it as one dense run).
inline void check_out(const char* op, const at::Tensor& a, const at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == a.scalar_type(), op, ": expected out to have a's dtype ",
              a.scalar_type(), ", got ", out.scalar_type());
  TORCH_CHECK(out.sizes() == a.sizes(), op, ": expected out to have a's shape ", a.sizes(),
              ", got ", out.sizes());
  TORCH_CHECK(out.device() == a.device(), op, ": expected out to be on a's device ", a.device(),
              ", got ", out.device());
  TORCH_CHECK(out.is_contiguous(), op, ": expected out to be contiguous, got strides ",
              out.strides(), " for shape ", out.sizes());
}

}  // namespace extension_cpp
