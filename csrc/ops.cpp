// Schemas of the extension_cpp ops, and the checks every backend shares.
//
// The schemas are defined once here; csrc/cpu and csrc/cuda add kernels with
// TORCH_LIBRARY_IMPL, csrc/autograd.cpp adds the Autograd kernels and
// extension_cpp/ops.py the fake (meta) kernels. The error messages below are
// mirrored word for word by extension_cpp/_checks.py, so eager calls and
// torch.compile'd calls fail alike.
#include "ops.h"

#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "checks.h"

namespace extension_cpp {
namespace {

// "torch.float32", as Python prints the dtype.
std::string dtype_name(at::ScalarType t) {
  return "torch." + std::string(c10::getDtypeNames(t).first);
}

bool is_supported_dtype(at::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 || t == at::kFloat || t == at::kDouble;
}

void check_dtype(const char* op, const char* name, const at::Tensor& t) {
  // Python's None reaches a `Tensor` argument as an undefined tensor, which
  // has no dtype to print (issue #13: it used to read "Unimplemented scalar type").
  TORCH_CHECK(t.defined(), op, ": expected ", name, " to be a Tensor, got None");
  TORCH_CHECK(is_supported_dtype(t.scalar_type()), op, ": expected ", name,
              " to have a floating-point dtype (torch.float16, torch.bfloat16, torch.float32 or "
              "torch.float64), got ",
              dtype_name(t.scalar_type()));
}

// x and y must agree in device, dtype and shape, in that order.
void check_same(const char* op, const char* x_name, const at::Tensor& x, const char* y_name,
                const at::Tensor& y) {
  TORCH_CHECK(x.device() == y.device(), op, ": expected ", x_name, " and ", y_name,
              " to be on the same device, got ", x.device().str(), " and ", y.device().str());
  TORCH_CHECK(x.scalar_type() == y.scalar_type(), op, ": expected ", x_name, " and ", y_name,
              " to have the same dtype, got ", dtype_name(x.scalar_type()), " and ",
              dtype_name(y.scalar_type()));
  TORCH_CHECK(x.sizes() == y.sizes(), op, ": expected ", x_name, " and ", y_name,
              " to have the same shape, got ", x.sizes(), " and ", y.sizes());
}

void check_rank(const char* op, const at::Tensor& a) {
  TORCH_CHECK(a.dim() <= kMaxInputDims, op, ": tensors with more than ", kMaxInputDims,
              " dimensions are not supported, got ", a.dim());
}

void check_inputs(const char* op, const at::Tensor& a, const at::Tensor& b) {
  check_dtype(op, "a", a);
  check_dtype(op, "b", b);
  check_same(op, "a", a, "b", b);
  check_rank(op, a);
}

// out may be exactly an input (same memory, same strides: every element is
// read before it is written, by the same thread) or share no memory with it.
void check_no_partial_overlap(const char* op, const at::Tensor& out, const char* name,
                              const at::Tensor& input) {
  if (out.numel() == 0 || input.numel() == 0 || !out.storage().is_alias_of(input.storage())) {
    return;
  }
  const bool same =
      out.storage_offset() == input.storage_offset() && out.strides() == input.strides();
  TORCH_CHECK(same, op, ": out overlaps ", name,
              " in memory without being the same view of it; pass an out that shares no memory "
              "with ",
              name, ", or ", name, " itself");
}

BinaryLayout layout_of(const char* op, const at::Tensor& out, const at::Tensor& a,
                       const at::Tensor& b) {
  const int64_t* strides[3] = {out.strides().data(), a.strides().data(), b.strides().data()};
  BinaryLayout layout;
  TORCH_CHECK(make_binary_layout(static_cast<int>(a.dim()), a.sizes().data(), strides, &layout), op,
              ": tensors with more than ", kMaxDims,
              " non-mergeable dimensions are not supported, got a tensor of shape ", a.sizes(),
              " and strides ", a.strides());
  return layout;
}

}  // namespace

at::Tensor binary_functional(const char* op, const at::Tensor& a, const at::Tensor& b,
                             BinaryOpKind kind, double c, BinaryLauncher launch, EmptyLike empty) {
  check_inputs(op, a, b);
  // The strides torch.mul(a, b) would have; the fake kernel in
  // extension_cpp/ops.py returns exactly these.
  int64_t strides[kMaxInputDims];
  elementwise_output_strides(static_cast<int>(a.dim()), a.sizes().data(), a.strides().data(),
                             b.strides().data(), strides);
  at::Tensor out = empty(a, c10::IntArrayRef(strides, a.dim()));
  if (out.numel() > 0) {
    launch(out, a, b, kind, c, layout_of(op, out, a, b));
  }
  return out;
}

void binary_out(const char* op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out,
                BinaryOpKind kind, double c, BinaryLauncher launch) {
  check_inputs(op, a, b);
  check_dtype(op, "out", out);
  check_same(op, "out", out, "a", a);
  TORCH_CHECK(checks::provably_non_overlapping(out.dim(), out.sizes().data(), out.strides().data()),
              op,
              ": expected out to have no internal overlap (each element its own memory location, "
              "unlike an expanded tensor), got strides ",
              out.strides(), " for shape ", out.sizes());
  check_no_partial_overlap(op, out, "a", a);
  check_no_partial_overlap(op, out, "b", b);
  if (out.numel() > 0) {
    launch(out, a, b, kind, c, layout_of(op, out, a, b));
  }
}

TORCH_LIBRARY(extension_cpp, m) {
  m.def("mymuladd(Tensor a, Tensor b, float c) -> Tensor", {at::Tag::pt2_compliant_tag});
  m.def("mymul(Tensor a, Tensor b) -> Tensor", {at::Tag::pt2_compliant_tag});
  m.def("myadd_out(Tensor a, Tensor b, Tensor(a!) out) -> ()", {at::Tag::pt2_compliant_tag});
}

}  // namespace extension_cpp
