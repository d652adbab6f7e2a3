// The extension_cpp operators: their schemas and their CPU kernels.
//
// STABLE_TORCH_LIBRARY declares what each op is (step 1);
// STABLE_TORCH_LIBRARY_IMPL gives the dispatcher a CPU kernel for each (step
// 2). The CUDA kernels are in muladd_cuda.cu, the fake kernels and the
// autograd formulas in extension_cpp/ops.py.
//
// Step 6: written against the LibTorch stable ABI (torch/csrc/stable/,
// torch/headeronly/), so one build loads on every torch from the release
// setup.py names in TORCH_TARGET_VERSION on.
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include "checks.h"

namespace extension_cpp {

// a, b: [..] same shape, any layout. Returns a * b + c, contiguous.
Tensor mymuladd_cpu(const Tensor& a, const Tensor& b, double c) {
  check_inputs("mymuladd", a, b);
  check(a.is_cpu(), "mymuladd: expected a to be a CPU tensor, got " + device_str(a));
  // The kernel reads dense inputs; contiguous() is free when they already are.
  const Tensor a_c = torch::stable::contiguous(a);
  const Tensor b_c = torch::stable::contiguous(b);
  // Always contiguous: the fake kernel promises exactly these strides.
  Tensor out = torch::stable::new_empty(a, a.sizes());
  THO_DISPATCH_V2(a.scalar_type(), "mymuladd_cpu", AT_WRAP([&] {
                    const scalar_t* pa = a_c.const_data_ptr<scalar_t>();
                    const scalar_t* pb = b_c.const_data_ptr<scalar_t>();
                    scalar_t* po = out.mutable_data_ptr<scalar_t>();
                    const auto cc = static_cast<scalar_t>(c);
                    for (int64_t i = 0; i < out.numel(); ++i) {
                      po[i] = pa[i] * pb[i] + cc;
                    }
                  }),
                  AT_FLOATING_TYPES);
  return out;
}

// a, b: [..] same shape, any layout. Returns a * b, contiguous.
Tensor mymul_cpu(const Tensor& a, const Tensor& b) {
  check_inputs("mymul", a, b);
  check(a.is_cpu(), "mymul: expected a to be a CPU tensor, got " + device_str(a));
  const Tensor a_c = torch::stable::contiguous(a);
  const Tensor b_c = torch::stable::contiguous(b);
  Tensor out = torch::stable::new_empty(a, a.sizes());
  THO_DISPATCH_V2(a.scalar_type(), "mymul_cpu", AT_WRAP([&] {
                    const scalar_t* pa = a_c.const_data_ptr<scalar_t>();
                    const scalar_t* pb = b_c.const_data_ptr<scalar_t>();
                    scalar_t* po = out.mutable_data_ptr<scalar_t>();
                    for (int64_t i = 0; i < out.numel(); ++i) {
                      po[i] = pa[i] * pb[i];
                    }
                  }),
                  AT_FLOATING_TYPES);
  return out;
}

// a, b: [..] same shape, any layout; out: contiguous [..], may be a or b.
// Writes a + b into out.
void myadd_out_cpu(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_inputs("myadd_out", a, b);
  check_out("myadd_out", a, out);
  check(a.is_cpu(), "myadd_out: expected a to be a CPU tensor, got " + device_str(a));
  const Tensor a_c = torch::stable::contiguous(a);
  const Tensor b_c = torch::stable::contiguous(b);
  THO_DISPATCH_V2(a.scalar_type(), "myadd_out_cpu", AT_WRAP([&] {
                    const scalar_t* pa = a_c.const_data_ptr<scalar_t>();
                    const scalar_t* pb = b_c.const_data_ptr<scalar_t>();
                    scalar_t* po = out.mutable_data_ptr<scalar_t>();
                    for (int64_t i = 0; i < out.numel(); ++i) {
                      po[i] = pa[i] + pb[i];
                    }
                  }),
                  AT_FLOATING_TYPES);
}

// Step 1: the schemas. `float` is a C++ double; `Tensor(a!)` marks out as
// written to; `-> ()` returns nothing.
STABLE_TORCH_LIBRARY(extension_cpp, m) {
  m.def("mymuladd(Tensor a, Tensor b, float c) -> Tensor");
  m.def("mymul(Tensor a, Tensor b) -> Tensor");
  m.def("myadd_out(Tensor a, Tensor b, Tensor(a!) out) -> ()");
}

// Step 2: the CPU kernels. TORCH_BOX wraps each function in the boxed
// calling convention the stable ABI passes kernels through.
STABLE_TORCH_LIBRARY_IMPL(extension_cpp, CPU, m) {
  m.impl("mymuladd", TORCH_BOX(&mymuladd_cpu));
  m.impl("mymul", TORCH_BOX(&mymul_cpu));
  m.impl("myadd_out", TORCH_BOX(&myadd_out_cpu));
}

}  // namespace extension_cpp
