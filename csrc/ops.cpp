// The extension_cpp ops: their schemas, and the checks every backend runs.
//
// TORCH_LIBRARY defines each op once, here. The kernels are added elsewhere
// with TORCH_LIBRARY_IMPL: csrc/cpu/ops_cpu.cpp (CPU), csrc/cuda/ops_cuda.cu
// (CUDA), csrc/autograd.cpp (Autograd, with the derivatives);
// extension_cpp/ops.py adds the fake kernels, which check the same things
// with the same words (checks.h).
#include "ops.h"

#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <string>

#include "checks.h"

namespace extension_cpp {
namespace {

using checks::format;

// "torch.float32", as Python prints the dtype.
std::string dtype_name(at::ScalarType t) {
  return "torch." + std::string(c10::getDtypeNames(t).first);
}

std::string list_str(c10::IntArrayRef values) {
  return checks::list_str(values.data(), static_cast<int64_t>(values.size()));
}

bool is_supported_dtype(at::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 || t == at::kFloat || t == at::kDouble;
}

void check_dtype(const char* op, const char* name, const at::Tensor& t) {
  // Python's None reaches a `Tensor` argument as an undefined tensor, which
  // has no dtype to print.
  TORCH_CHECK(t.defined(), format("none", {{"op", op}, {"name", name}}));
  TORCH_CHECK(
      is_supported_dtype(t.scalar_type()),
      format("dtype", {{"op", op}, {"name", name}, {"dtype", dtype_name(t.scalar_type())}}));
}

// x and y must agree in device, dtype and shape, in that order.
void check_same(const char* op, const char* x, const at::Tensor& xt, const char* y,
                const at::Tensor& yt) {
  TORCH_CHECK(xt.device() == yt.device(), format("device", {{"op", op},
                                                            {"x", x},
                                                            {"y", y},
                                                            {"x_got", xt.device().str()},
                                                            {"y_got", yt.device().str()}}));
  TORCH_CHECK(xt.scalar_type() == yt.scalar_type(),
              format("same_dtype", {{"op", op},
                                    {"x", x},
                                    {"y", y},
                                    {"x_got", dtype_name(xt.scalar_type())},
                                    {"y_got", dtype_name(yt.scalar_type())}}));
  TORCH_CHECK(xt.sizes() == yt.sizes(), format("shape", {{"op", op},
                                                         {"x", x},
                                                         {"y", y},
                                                         {"x_got", list_str(xt.sizes())},
                                                         {"y_got", list_str(yt.sizes())}}));
}

// out may be exactly an input (same memory, same strides: every element is
// read before it is written) or share no memory with it.
void check_no_partial_overlap(const char* op, const at::Tensor& out, const char* name,
                              const at::Tensor& input) {
  if (out.numel() == 0 || input.numel() == 0 || !out.storage().is_alias_of(input.storage())) {
    return;
  }
  TORCH_CHECK(out.storage_offset() == input.storage_offset() && out.strides() == input.strides(),
              format("partial_overlap", {{"op", op}, {"name", name}}));
}

void check_rank(const char* op, const at::Tensor& a) {
  TORCH_CHECK(a.dim() <= kMaxInputDims, format("rank", {{"op", op},
                                                        {"max", std::to_string(kMaxInputDims)},
                                                        {"dim", std::to_string(a.dim())}}));
}

}  // namespace

void check_input(const char* op, const at::Tensor& a) {
  check_dtype(op, "a", a);
  check_rank(op, a);
}

void check_inputs(const char* op, const at::Tensor& a, const at::Tensor& b) {
  check_dtype(op, "a", a);
  check_dtype(op, "b", b);
  check_same(op, "a", a, "b", b);
  check_rank(op, a);
}

void check_out(const char* op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  check_inputs(op, a, b);
  check_dtype(op, "out", out);
  check_same(op, "out", out, "a", a);
  TORCH_CHECK(
      checks::provably_non_overlapping(out.dim(), out.sizes().data(), out.strides().data()),
      format("internal_overlap",
             {{"op", op}, {"strides", list_str(out.strides())}, {"shape", list_str(out.sizes())}}));
  check_no_partial_overlap(op, out, "a", a);
  check_no_partial_overlap(op, out, "b", b);
}

at::DimVector output_strides(const at::Tensor& a, const at::Tensor& b) {
  at::DimVector strides(a.dim());
  elementwise_output_strides(static_cast<int>(a.dim()), a.sizes().data(), a.strides().data(),
                             b.strides().data(), strides.data());
  return strides;
}

BinaryLayout merged_layout(const char* op, const at::Tensor& out, const at::Tensor& a,
                           const at::Tensor& b) {
  const int64_t* strides[3] = {out.strides().data(), a.strides().data(), b.strides().data()};
  BinaryLayout layout;
  TORCH_CHECK(make_binary_layout(static_cast<int>(a.dim()), a.sizes().data(), strides, &layout),
              format("unmergeable", {{"op", op},
                                     {"max", std::to_string(kMaxDims)},
                                     {"shape", list_str(a.sizes())},
                                     {"strides", list_str(a.strides())}}));
  return layout;
}

TORCH_LIBRARY(extension_cpp, m) {
  m.def("mymuladd(Tensor a, Tensor b, float c) -> Tensor", {at::Tag::pt2_compliant_tag});
  m.def("mymul(Tensor a, Tensor b) -> Tensor", {at::Tag::pt2_compliant_tag});
  m.def("myadd_out(Tensor a, Tensor b, Tensor(a!) out) -> ()", {at::Tag::pt2_compliant_tag});
}

}  // namespace extension_cpp
