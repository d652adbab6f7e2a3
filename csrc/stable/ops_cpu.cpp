// CPU kernels of the stable-ABI build: the classic build's CPU loop
// (csrc/cpu/elementwise_cpu.h), compiled against torch's header-only API and
// registered with STABLE_TORCH_LIBRARY_IMPL.
#include "../cpu/elementwise_cpu.h"
#include "ops.h"

namespace extension_cpp::stable {
namespace {

void launch_cpu(const Tensor& out, const Tensor& a, const Tensor& b, BinaryOpKind kind, double c,
                const BinaryLayout& layout) {
  dispatch_binary(out, a, b, kind, c, [&](auto* o, const auto* x, const auto* y, auto op) {
    cpu::binary_kernel(o, x, y, layout, op);
  });
}

}  // namespace

STABLE_TORCH_LIBRARY_IMPL(extension_cpp_stable, CPU, m) { register_kernels<launch_cpu>(m); }

}  // namespace extension_cpp::stable
