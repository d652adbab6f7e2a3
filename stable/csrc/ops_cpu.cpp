// The CPU kernels of the stable-ABI build: ops.h's three kernels over the
// classic build's CPU loops (csrc/loops.h), registered with
// STABLE_TORCH_LIBRARY_IMPL.
#include <torch/headeronly/core/Dispatch_v2.h>

#include "loops.h"
#include "ops.h"

namespace extension_cpp::stable {
namespace {

using torch::headeronly::ScalarType;

struct CpuLoop {
  template <template <typename> class Op, typename... Args>
  static void run(const Tensor& out, const Tensor& a, const Tensor& b, const BinaryLayout& layout,
                  Args... args) {
    THO_DISPATCH_V2(a.scalar_type(), "extension_cpp_stable", AT_WRAP([&] {
                      using T = opmath_t<scalar_t>;
                      elementwise_cpu(static_cast<scalar_t*>(out.mutable_data_ptr()),
                                      static_cast<const scalar_t*>(a.const_data_ptr()),
                                      static_cast<const scalar_t*>(b.const_data_ptr()), layout,
                                      Op<T>{static_cast<T>(args)...});
                    }),
                    AT_EXPAND(AT_FLOATING_TYPES), ScalarType::Half, ScalarType::BFloat16);
  }
};

using Cpu = Kernels<CpuLoop>;

}  // namespace

STABLE_TORCH_LIBRARY_IMPL(extension_cpp_stable, CPU, m) {
  m.impl("mymuladd", TORCH_BOX(&Cpu::mymuladd));
  m.impl("mymul", TORCH_BOX(&Cpu::mymul));
  m.impl("myadd_out", TORCH_BOX(&Cpu::myadd_out));
}

}  // namespace extension_cpp::stable
