// CPU kernels of mymuladd, mymul and myadd_out.
//
// All three are the loop in elementwise_cpu.h with a different functor; this
// file only supplies the launcher and the allocator, and registers them.
#include <ATen/EmptyTensor.h>

#include "../ops.h"
#include "elementwise_cpu.h"

namespace extension_cpp::cpu {
namespace {

void launch(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, BinaryOpKind kind,
            double c, const BinaryLayout& layout) {
  dispatch_binary(out, a, b, kind, c, [&](auto* o, const auto* x, const auto* y, auto op) {
    binary_kernel(o, x, y, layout, op);
  });
}

at::Tensor empty(const at::Tensor& like, c10::IntArrayRef strides) {
  return at::detail::empty_strided_cpu(like.sizes(), strides, like.scalar_type());
}

}  // namespace

TORCH_LIBRARY_IMPL(extension_cpp, CPU, m) { register_kernels<launch, empty>(m); }

}  // namespace extension_cpp::cpu
