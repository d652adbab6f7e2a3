// The stable-ABI binding's glue, shared by its CPU and CUDA registrations.
//
// The same ops as csrc/ops.h, bound through the LibTorch stable ABI instead
// of the classic C++ API: torch::stable::Tensor in place of at::Tensor,
// STABLE_TORCH_LIBRARY_IMPL in place of TORCH_LIBRARY_IMPL. The library built
// from csrc/stable/ loads on every torch from the one TORCH_TARGET_VERSION
// names (2.10, set by stable/setup.py) on. The maths is not repeated: the
// launchers call the same loops as the classic build (csrc/cpu/, csrc/cuda/)
// with raw pointers and the merged layout.
#pragma once

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include "../dispatch.h"
#include "../elementwise.h"

namespace extension_cpp::stable {

using torch::stable::Tensor;

// Runs out = f(a, b) for an already checked, same-shape, same-dtype triple on
// one device. `c` is used by kMulAdd only.
using BinaryLauncher = void (*)(const Tensor& out, const Tensor& a, const Tensor& b,
                                BinaryOpKind kind, double c, const BinaryLayout& layout);

// mymuladd / mymul: checks a and b, returns a new tensor laid out as
// torch.mul(a, b) would be (elementwise_output_strides).
Tensor binary_functional(const char* op, const Tensor& a, const Tensor& b, BinaryOpKind kind,
                         double c, BinaryLauncher launch);

// myadd_out: checks a, b and out (shape, dtype, device, overlap), writes out.
void binary_out(const char* op, const Tensor& a, const Tensor& b, const Tensor& out,
                BinaryOpKind kind, double c, BinaryLauncher launch);

// dispatch.h's dispatch_binary for three checked stable tensors.
template <typename Body>
void dispatch_binary(const Tensor& out, const Tensor& a, const Tensor& b, BinaryOpKind kind,
                     double c, Body&& body) {
  extension_cpp::dispatch_binary(a.scalar_type(), out.mutable_data_ptr(), a.const_data_ptr(),
                                 b.const_data_ptr(), kind, c, body);
}

// The three kernels of one backend, given its launcher. A backend file writes
// the launcher and then only:
//   STABLE_TORCH_LIBRARY_IMPL(extension_cpp_stable, CPU, m) { register_kernels<launch>(m); }
// (One allocator serves every device here: aoti_torch_empty_strided takes
// the device as an argument.)
template <BinaryLauncher launch>
struct Kernels {
  static Tensor mymuladd(const Tensor& a, const Tensor& b, double c) {
    return binary_functional("mymuladd", a, b, BinaryOpKind::kMulAdd, c, launch);
  }
  static Tensor mymul(const Tensor& a, const Tensor& b) {
    return binary_functional("mymul", a, b, BinaryOpKind::kMul, 0.0, launch);
  }
  static void myadd_out(const Tensor& a, const Tensor& b, const Tensor& out) {
    binary_out("myadd_out", a, b, out, BinaryOpKind::kAdd, 0.0, launch);
  }
};

template <BinaryLauncher launch>
void register_kernels(torch::stable::detail::StableLibrary& m) {
  using K = Kernels<launch>;
  m.impl("mymuladd", TORCH_BOX(&K::mymuladd));
  m.impl("mymul", TORCH_BOX(&K::mymul));
  m.impl("myadd_out", TORCH_BOX(&K::myadd_out));
}

}  // namespace extension_cpp::stable
