// Input checks shared by the CPU (muladd.cpp) and CUDA (muladd_cuda.cu) kernels.
//
// Everything here is something the caller controls, so it is a TORCH_CHECK
// whose message names the argument and shows what was received. The fake
// kernels in extension_cpp/ops.py (step 3) repeat them with the same words.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <string>

namespace extension_cpp {

// "[3, 4]", as Python prints a shape. Built with std::to_string rather than
// by streaming a.sizes() into the message: on one of our GPU machines (torch
// 2.11, g++ 13.3) streaming any integer into an ostream inside an extension
// crashed the process, so the checks format numbers themselves.
inline std::string shape_str(at::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    s += (i == 0 ? "" : ", ") + std::to_string(sizes[i]);
  }
  return s + "]";
}

// a, b: same shape, same device, float32 or float64 (the same one).
inline void check_inputs(const char* op, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == at::kFloat || a.scalar_type() == at::kDouble, op,
              ": expected a to be float32 or float64, got ", a.scalar_type());
  TORCH_CHECK(b.scalar_type() == a.scalar_type(), op, ": expected b to have a's dtype ",
              a.scalar_type(), ", got ", b.scalar_type());
  TORCH_CHECK(a.sizes() == b.sizes(), op, ": expected a and b to have the same shape, got ",
              shape_str(a.sizes()), " and ", shape_str(b.sizes()));
  TORCH_CHECK(a.device() == b.device(), op, ": expected a and b to be on the same device, got ",
              a.device(), " and ", b.device());
}

// out: like a, and contiguous (the kernels write it as one dense run).
inline void check_out(const char* op, const at::Tensor& a, const at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == a.scalar_type(), op, ": expected out to have a's dtype ",
              a.scalar_type(), ", got ", out.scalar_type());
  TORCH_CHECK(out.sizes() == a.sizes(), op, ": expected out to have a's shape ",
              shape_str(a.sizes()), ", got ", shape_str(out.sizes()));
  TORCH_CHECK(out.device() == a.device(), op, ": expected out to be on a's device ", a.device(),
              ", got ", out.device());
  TORCH_CHECK(out.is_contiguous(), op, ": expected out to be contiguous, got strides ",
              shape_str(out.strides()), " for shape ", shape_str(out.sizes()));
}

}  // namespace extension_cpp
