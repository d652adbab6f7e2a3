// mymuladd as a JIT-compiled operator, for fast iteration (CPU only).
//
// torch.utils.cpp_extension.load compiles this file on first use and caches
// the build; editing it and re-running rebuilds only what changed. The op is
// in its own namespace, tutorial_jit, so it can be loaded next to the
// extension_cpp package in one process.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace tutorial_jit {

// a, b: [..] same shape, float32 or float64, any layout. Returns a * b + c, contiguous.
at::Tensor mymuladd_cpu(const at::Tensor& a, const at::Tensor& b, double c) {
  TORCH_CHECK(a.sizes() == b.sizes(), "mymuladd: expected a and b to have the same shape, got ",
              a.sizes(), " and ", b.sizes());
  TORCH_CHECK(b.scalar_type() == a.scalar_type(), "mymuladd: expected b to have a's dtype ",
              a.scalar_type(), ", got ", b.scalar_type());
  const at::Tensor a_c = a.contiguous();
  const at::Tensor b_c = b.contiguous();
  at::Tensor out = at::empty(a.sizes(), a.options());
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "mymuladd_cpu", [&] {
    const scalar_t* pa = a_c.const_data_ptr<scalar_t>();
    const scalar_t* pb = b_c.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      po[i] = pa[i] * pb[i] + static_cast<scalar_t>(c);
    }
  });
  return out;
}

TORCH_LIBRARY(tutorial_jit, m) { m.def("mymuladd(Tensor a, Tensor b, float c) -> Tensor"); }

TORCH_LIBRARY_IMPL(tutorial_jit, CPU, m) { m.impl("mymuladd", &mymuladd_cpu); }

}  // namespace tutorial_jit
