// The CPU kernels of the stable-ABI build: csrc/cpu/ops_cpu.cpp's three
// kernels on torch::stable::Tensor, running the same loops (csrc/loops.h),
// registered with STABLE_TORCH_LIBRARY_IMPL.
#include <torch/headeronly/core/Dispatch_v2.h>

#include "../loops.h"
#include "ops.h"

namespace extension_cpp::stable {
namespace {

using torch::headeronly::ScalarType;

// out = Op<T>{args...}(a, b) elementwise, T the math type of the dtype.
template <template <typename> class Op, typename... Args>
void elementwise(const char* op, const Tensor& out, const Tensor& a, const Tensor& b,
                 Args... args) {
  const BinaryLayout layout = merged_layout(op, out, a, b);
  THO_DISPATCH_V2(a.scalar_type(), "extension_cpp_stable", AT_WRAP([&] {
                    using T = opmath_t<scalar_t>;
                    elementwise_cpu(static_cast<scalar_t*>(out.mutable_data_ptr()),
                                    static_cast<const scalar_t*>(a.const_data_ptr()),
                                    static_cast<const scalar_t*>(b.const_data_ptr()), layout,
                                    Op<T>{static_cast<T>(args)...});
                  }),
                  AT_EXPAND(AT_FLOATING_TYPES), ScalarType::Half, ScalarType::BFloat16);
}

Tensor mymuladd_cpu(const Tensor& a, const Tensor& b, double c) {
  check_inputs("mymuladd", a, b);
  Tensor out = new_output("mymuladd", a, b);
  elementwise<MulAddOp>("mymuladd", out, a, b, c);
  return out;
}

Tensor mymul_cpu(const Tensor& a, const Tensor& b) {
  check_inputs("mymul", a, b);
  Tensor out = new_output("mymul", a, b);
  elementwise<MulOp>("mymul", out, a, b);
  return out;
}

void myadd_out_cpu(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_out("myadd_out", a, b, out);
  elementwise<AddOp>("myadd_out", out, a, b);
}

}  // namespace

STABLE_TORCH_LIBRARY_IMPL(extension_cpp_stable, CPU, m) {
  m.impl("mymuladd", TORCH_BOX(&mymuladd_cpu));
  m.impl("mymul", TORCH_BOX(&mymul_cpu));
  m.impl("myadd_out", TORCH_BOX(&myadd_out_cpu));
}

}  // namespace extension_cpp::stable
