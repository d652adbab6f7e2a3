// The extension_cpp ops: their schemas, and the checks every backend runs.
//
// TORCH_LIBRARY defines each op once, here. The kernels are added elsewhere
// with TORCH_LIBRARY_IMPL: csrc/cpu/ops_cpu.cpp (CPU), csrc/cuda/ops_cuda.cu
// (CUDA), csrc/autograd.cpp (Autograd, with the derivatives);
// extension_cpp/_library.py adds the fake kernels, which check the same
// things with the same words (checks.h). The checks themselves are
// input_checks.h's, shared with the stable-ABI build; this file says how they
// read an at::Tensor, and holds the kernel for calls no backend takes.
#include "ops.h"

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <string>

#include "input_checks.h"

namespace extension_cpp {
namespace {

// at::Tensor as the checks read it (input_checks.h). Errors are TORCH_CHECK's
// c10::Error, which Python sees as RuntimeError.
struct View {
  const at::Tensor& t;

  bool defined() const { return t.defined(); }
  c10::ScalarType dtype() const { return t.scalar_type(); }
  bool same_device(const View& other) const { return t.device() == other.t.device(); }
  std::string device_name() const { return t.device().str(); }
  int64_t dim() const { return t.dim(); }
  int64_t numel() const { return t.numel(); }
  int64_t storage_offset() const { return t.storage_offset(); }
  const int64_t* sizes() const { return t.sizes().data(); }
  const int64_t* strides() const { return t.strides().data(); }
  bool same_storage(const View& other) const { return t.storage().is_alias_of(other.t.storage()); }
  [[noreturn]] static void fail(const std::string& message) { TORCH_CHECK(false, message); }
};

}  // namespace

namespace {

// The strides of a new output for f(a, b), and the merged layout with it.
Prepared output_and_layout(const char* op, const at::Tensor& a, const at::Tensor& b) {
  Prepared prepared{at::DimVector(a.dim()), {}};
  elementwise_output_strides(static_cast<int>(a.dim()), a.sizes().data(), a.strides().data(),
                             b.strides().data(), prepared.out_strides.data());
  prepared.layout = checks::merged_layout(op, prepared.out_strides.data(), View{a}, View{b});
  return prepared;
}

}  // namespace

Prepared prepare(const char* op, const at::Tensor& a, const at::Tensor& b) {
  checks::check_inputs(op, View{a}, View{b});
  return output_and_layout(op, a, b);
}

Prepared prepare(const char* op, const at::Tensor& a) {
  checks::check_input(op, View{a});
  return output_and_layout(op, a, a);
}

BinaryLayout prepare_out(const char* op, const at::Tensor& a, const at::Tensor& b,
                         const at::Tensor& out) {
  checks::check_out(op, View{a}, View{b}, View{out});
  return checks::merged_layout(op, out.strides().data(), View{a}, View{b});
}

TORCH_LIBRARY(extension_cpp, m) {
  m.def("mymuladd(Tensor a, Tensor b, float c) -> Tensor", {at::Tag::pt2_compliant_tag});
  m.def("mymul(Tensor a, Tensor b) -> Tensor", {at::Tag::pt2_compliant_tag});
  m.def("myadd_out(Tensor a, Tensor b, Tensor(a!) out) -> ()", {at::Tag::pt2_compliant_tag});
}

namespace {

// Note [Calls no backend takes]
// A call with no tensor at all (every tensor argument None) gives the
// dispatcher no device to choose a kernel by, and one with tensors on a
// device this library has no kernels for (MPS, XPU, ...) finds none: both
// reach the CompositeExplicitAutograd kernel. It runs the op's checks, which
// name a None argument in the words of every other error, and otherwise
// names the device.
[[noreturn]] void no_kernel(const char* op, const at::Tensor& a) {
  TORCH_CHECK(false, checks::format("no_kernel", {{"op", op}, {"device", a.device().str()}}));
}

at::Tensor mymuladd_elsewhere(const at::Tensor& a, const at::Tensor& b, double) {
  checks::check_inputs("mymuladd", View{a}, View{b});
  no_kernel("mymuladd", a);
}

at::Tensor mymul_elsewhere(const at::Tensor& a, const at::Tensor& b) {
  checks::check_inputs("mymul", View{a}, View{b});
  no_kernel("mymul", a);
}

void myadd_out_elsewhere(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  checks::check_out("myadd_out", View{a}, View{b}, View{out});
  no_kernel("myadd_out", a);
}

}  // namespace

TORCH_LIBRARY_IMPL(extension_cpp, CompositeExplicitAutograd, m) {
  m.impl("mymuladd", &mymuladd_elsewhere);
  m.impl("mymul", &mymul_elsewhere);
  m.impl("myadd_out", &myadd_out_elsewhere);
}

}  // namespace extension_cpp
