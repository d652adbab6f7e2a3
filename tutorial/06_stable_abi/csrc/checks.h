// Input checks shared by the CPU (muladd.cpp) and CUDA (muladd_cuda.cu) kernels.
//
// Everything here is something the caller controls, so it is a check whose
// message names the argument and shows what was received. The fake kernels
// in extension_cpp/ops.py (step 3) repeat them with the same words.
//
// Step 6: the same checks on torch::stable::Tensor. TORCH_CHECK and c10's
// printers are not part of the stable ABI, so `check` below throws a
// std::runtime_error (PyTorch turns it into a RuntimeError with the same
// text), and dtypes and devices are printed here.
#pragma once

#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>

#include <stdexcept>
#include <string>

namespace extension_cpp {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

inline void check(bool ok, const std::string& message) {
  if (!ok) {
    throw std::runtime_error(message);
  }
}

// "[3, 4]", as Python prints a shape. Step 5 streamed a.sizes() into
// TORCH_CHECK, which prints c10's IntArrayRef; the stable ABI's sizes are a
// header-only array without that printer, so the text is built here.
inline std::string shape_str(torch::headeronly::IntHeaderOnlyArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    s += (i == 0 ? "" : ", ") + std::to_string(sizes[i]);
  }
  return s + "]";
}

// "Float", as c10 prints a dtype in the classic build's messages.
inline std::string dtype_str(ScalarType t) { return torch::headeronly::toString(t); }

// "cpu", "cuda:0".
inline std::string device_str(const Tensor& t) {
  if (t.is_cpu()) {
    return "cpu";
  }
  return std::string(t.is_cuda() ? "cuda:" : "device:") + std::to_string(t.get_device_index());
}

// a, b: same shape, same device, float32 or float64 (the same one).
inline void check_inputs(const char* op, const Tensor& a, const Tensor& b) {
  check(
      a.scalar_type() == ScalarType::Float || a.scalar_type() == ScalarType::Double,
      std::string(op) + ": expected a to be float32 or float64, got " + dtype_str(a.scalar_type()));
  check(b.scalar_type() == a.scalar_type(), std::string(op) + ": expected b to have a's dtype " +
                                                dtype_str(a.scalar_type()) + ", got " +
                                                dtype_str(b.scalar_type()));
  check(a.sizes().equals(b.sizes()), std::string(op) +
                                         ": expected a and b to have the same shape, got " +
                                         shape_str(a.sizes()) + " and " + shape_str(b.sizes()));
  check(a.device() == b.device(), std::string(op) +
                                      ": expected a and b to be on the same device, got " +
                                      device_str(a) + " and " + device_str(b));
}

// out: like a, and contiguous (the kernels write it as one dense run).
inline void check_out(const char* op, const Tensor& a, const Tensor& out) {
  check(out.scalar_type() == a.scalar_type(),
        std::string(op) + ": expected out to have a's dtype " + dtype_str(a.scalar_type()) +
            ", got " + dtype_str(out.scalar_type()));
  check(out.sizes().equals(a.sizes()), std::string(op) + ": expected out to have a's shape " +
                                           shape_str(a.sizes()) + ", got " +
                                           shape_str(out.sizes()));
  check(out.device() == a.device(), std::string(op) + ": expected out to be on a's device " +
                                        device_str(a) + ", got " + device_str(out));
  check(out.is_contiguous(), std::string(op) + ": expected out to be contiguous, got strides " +
                                 shape_str(out.strides()) + " for shape " + shape_str(out.sizes()));
}

}  // namespace extension_cpp
