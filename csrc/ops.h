// Binding glue shared by the CPU and CUDA registrations.
//
// Every op is "check the inputs, make or check the output, merge the layout,
// run one elementwise loop". The checks and the layout live here once; each
// backend supplies only a BinaryLauncher that runs the loop on its device
// and an EmptyLike that allocates an output there.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include "dispatch.h"
#include "elementwise.h"

namespace extension_cpp {

// Runs out = f(a, b) for an already checked, same-shape, same-dtype triple.
// `c` is used by kMulAdd only.
using BinaryLauncher = void (*)(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b,
                                BinaryOpKind kind, double c, const BinaryLayout& layout);

// A new tensor of like's shape, dtype and device with the given strides. Each
// backend calls its allocator directly (at::detail::empty_strided_cpu,
// empty_strided_cuda) rather than at::empty_strided, which goes through the
// dispatcher: a measurable part of the per-call cost at small sizes.
using EmptyLike = at::Tensor (*)(const at::Tensor& like, c10::IntArrayRef strides);

// dispatch.h's dispatch_binary for three checked at::Tensors.
template <typename Body>
void dispatch_binary(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b,
                     BinaryOpKind kind, double c, Body&& body) {
  dispatch_binary(a.scalar_type(), out.data_ptr(), a.const_data_ptr(), b.const_data_ptr(), kind, c,
                  body);
}

// mymuladd / mymul: checks a and b, returns a new tensor laid out as
// torch.mul(a, b) would be (elementwise_output_strides).
at::Tensor binary_functional(const char* op, const at::Tensor& a, const at::Tensor& b,
                             BinaryOpKind kind, double c, BinaryLauncher launch, EmptyLike empty);

// myadd_out: checks a, b and out (shape, dtype, device, overlap), writes out.
void binary_out(const char* op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out,
                BinaryOpKind kind, double c, BinaryLauncher launch);

// The three kernels of one backend, given its launcher and allocator. A
// backend file (CPU, CUDA, or a new XPU/MPS one) writes those two and then only:
//   TORCH_LIBRARY_IMPL(extension_cpp, CPU, m) { register_kernels<launch, empty>(m); }
template <BinaryLauncher launch, EmptyLike empty>
struct Kernels {
  static at::Tensor mymuladd(const at::Tensor& a, const at::Tensor& b, double c) {
    return binary_functional("mymuladd", a, b, BinaryOpKind::kMulAdd, c, launch, empty);
  }
  static at::Tensor mymul(const at::Tensor& a, const at::Tensor& b) {
    return binary_functional("mymul", a, b, BinaryOpKind::kMul, 0.0, launch, empty);
  }
  static void myadd_out(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
    binary_out("myadd_out", a, b, out, BinaryOpKind::kAdd, 0.0, launch);
  }
};

template <BinaryLauncher launch, EmptyLike empty>
void register_kernels(torch::Library& m) {
  using K = Kernels<launch, empty>;
  m.impl("mymuladd", &K::mymuladd);
  m.impl("mymul", &K::mymul);
  m.impl("myadd_out", &K::myadd_out);
}

}  // namespace extension_cpp
