// The extension_cpp operators: their schemas and their CPU kernels.
//
// TORCH_LIBRARY declares what each op is (step 1); TORCH_LIBRARY_IMPL gives
// the dispatcher a CPU kernel for each (step 2). The CUDA kernels are in
// muladd_cuda.cu, the fake kernels and the autograd formulas in
// extension_cpp/ops.py.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "checks.h"

namespace extension_cpp {

// a, b: [..] same shape, any layout. Returns a * b + c, contiguous.
at::Tensor mymuladd_cpu(const at::Tensor& a, const at::Tensor& b, double c) {
  check_inputs("mymuladd", a, b);
  TORCH_CHECK(a.is_cpu(), "mymuladd: expected a to be a CPU tensor, got ", a.device());
  // The kernel reads dense inputs; .contiguous() is free when they already are.
  const at::Tensor a_c = a.contiguous();
  const at::Tensor b_c = b.contiguous();
  // Always contiguous: the fake kernel promises exactly these strides.
  at::Tensor out = at::empty(a.sizes(), a.options());
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "mymuladd_cpu", [&] {
    const scalar_t* pa = a_c.const_data_ptr<scalar_t>();
    const scalar_t* pb = b_c.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    const auto cc = static_cast<scalar_t>(c);
    for (int64_t i = 0; i < out.numel(); ++i) {
      po[i] = pa[i] * pb[i] + cc;
    }
  });
  return out;
}

// a, b: [..] same shape, any layout. Returns a * b, contiguous.
at::Tensor mymul_cpu(const at::Tensor& a, const at::Tensor& b) {
  check_inputs("mymul", a, b);
  TORCH_CHECK(a.is_cpu(), "mymul: expected a to be a CPU tensor, got ", a.device());
  const at::Tensor a_c = a.contiguous();
  const at::Tensor b_c = b.contiguous();
  at::Tensor out = at::empty(a.sizes(), a.options());
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "mymul_cpu", [&] {
    const scalar_t* pa = a_c.const_data_ptr<scalar_t>();
    const scalar_t* pb = b_c.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      po[i] = pa[i] * pb[i];
    }
  });
  return out;
}

// a, b: [..] same shape, any layout; out: contiguous [..], may be a or b.
// Writes a + b into out.
void myadd_out_cpu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  check_inputs("myadd_out", a, b);
  check_out("myadd_out", a, out);
  TORCH_CHECK(a.is_cpu(), "myadd_out: expected a to be a CPU tensor, got ", a.device());
  const at::Tensor a_c = a.contiguous();
  const at::Tensor b_c = b.contiguous();
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "myadd_out_cpu", [&] {
    const scalar_t* pa = a_c.const_data_ptr<scalar_t>();
    const scalar_t* pb = b_c.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      po[i] = pa[i] + pb[i];
    }
  });
}

// Step 1: the schemas. `float` is a C++ double; `Tensor(a!)` marks out as
// written to; `-> ()` returns nothing.
TORCH_LIBRARY(extension_cpp, m) {
  m.def("mymuladd(Tensor a, Tensor b, float c) -> Tensor");
  m.def("mymul(Tensor a, Tensor b) -> Tensor");
  m.def("myadd_out(Tensor a, Tensor b, Tensor(a!) out) -> ()");
}

// Step 2: the CPU kernels.
TORCH_LIBRARY_IMPL(extension_cpp, CPU, m) {
  m.impl("mymuladd", &mymuladd_cpu);
  m.impl("mymul", &mymul_cpu);
  m.impl("myadd_out", &myadd_out_cpu);
}

}  // namespace extension_cpp
