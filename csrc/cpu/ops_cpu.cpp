// CPU kernels of mymuladd, mymul and myadd_out.
//
// All three are the loop in elementwise_cpu.h with a different functor; this
// file only supplies the launcher and registers it.
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

}  // namespace

TORCH_LIBRARY_IMPL(extension_cpp, CPU, m) { register_kernels<launch>(m); }

}  // namespace extension_cpp::cpu
