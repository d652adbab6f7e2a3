// The checks every kernel runs on its arguments, written once for both C++
// bindings.
//
// The classic kernels (csrc/ops.cpp) and the stable-ABI ones
// (stable/csrc/ops.cpp) run these templates on a small view of their tensor
// type (View, below), which says how each fact about a tensor is read and how
// an error is raised. What is checked, in which order and in which words
// (checks.h) is written here alone. The fake kernels check the same things in
// Python (extension_cpp/_checks.py), where they run on FakeTensors;
// tests/conformance/test_check_parity.py holds the three to the same answers.
#pragma once

#ifdef TORCH_TARGET_VERSION  // the stable-ABI build (stable/csrc/): torch/headeronly only
#include <torch/headeronly/core/ScalarType.h>
#else
#include <c10/core/ScalarType.h>
#endif

#include <cstdint>
#include <iterator>
#include <string>

#include "checks.h"
#include "elementwise.h"

namespace extension_cpp::checks {

// A tensor as the checks read it. Each binding defines a View that refers to
// one of its tensors and has:
//   bool defined() const;                     false for Python's None
//   c10::ScalarType dtype() const;
//   bool same_device(const View&) const;
//   std::string device_name() const;          "cpu", "cuda:0", as Python prints it
//   int64_t dim() const, numel() const, storage_offset() const;
//   const int64_t* sizes() const;             dim() values each
//   const int64_t* strides() const;
//   bool same_storage(const View&) const;     true if both view one allocation
//   [[noreturn]] static void fail(const std::string& message);   the binding's error

// "torch.float32", as Python prints a dtype. Indexed by c10::ScalarType's
// value, whose order torch keeps fixed (saved files depend on it).
inline std::string dtype_name(c10::ScalarType t) {
  // clang-format off
  static constexpr const char* kNames[] = {
      "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",     // 0
      "complex32", "complex64", "complex128", "bool", "qint8", "quint8", "qint32",     // 8
      "bfloat16", "quint4x2", "quint2x4", "bits1x8", "bits2x4", "bits4x2", "bits8",    // 15
      "bits16", "float8_e5m2", "float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3fnuz",  // 22
      "uint16", "uint32", "uint64", "uint1", "uint2", "uint3", "uint4", "uint5",       // 27
      "uint6", "uint7", "int1", "int2", "int3", "int4", "int5", "int6", "int7",        // 35
      "float8_e8m0fnu", "float4_e2m1fn_x2", "bcomplex32"};                             // 44
  // clang-format on
  const auto index = static_cast<size_t>(t);
  if (index >= std::size(kNames)) {  // a dtype newer than this list
    return "torch.<dtype " + std::to_string(index) + ">";
  }
  return std::string("torch.") + kNames[index];
}

// Raises View's error with the message message() builds, if ok is false; the
// message is built only then.
template <typename View, typename Message>
void require(bool ok, const Message& message) {
  if (!ok) {
    View::fail(message());
  }
}

namespace detail {

inline bool same_values(const int64_t* x, const int64_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] != y[i]) {
      return false;
    }
  }
  return true;
}

template <typename View>
std::string shape_str(const View& t) {
  return list_str(t.sizes(), t.dim());
}

template <typename View>
void check_dtype(const char* op, const char* name, const View& t) {
  // Python's None reaches a `Tensor` argument as an undefined tensor, which
  // has no dtype to print.
  require<View>(t.defined(), [&] { return format("none", {{"op", op}, {"name", name}}); });
  const c10::ScalarType dtype = t.dtype();
  const bool floating = dtype == c10::ScalarType::Half || dtype == c10::ScalarType::BFloat16 ||
                        dtype == c10::ScalarType::Float || dtype == c10::ScalarType::Double;
  require<View>(floating, [&] {
    return format("dtype", {{"op", op}, {"name", name}, {"dtype", dtype_name(dtype)}});
  });
}

// x and y must agree in device, dtype and shape, in that order.
template <typename View>
void check_same(const char* op, const char* x, const View& xt, const char* y, const View& yt) {
  require<View>(xt.same_device(yt), [&] {
    return format(
        "device",
        {{"op", op}, {"x", x}, {"y", y}, {"x_got", xt.device_name()}, {"y_got", yt.device_name()}});
  });
  require<View>(xt.dtype() == yt.dtype(), [&] {
    return format("same_dtype", {{"op", op},
                                 {"x", x},
                                 {"y", y},
                                 {"x_got", dtype_name(xt.dtype())},
                                 {"y_got", dtype_name(yt.dtype())}});
  });
  require<View>(xt.dim() == yt.dim() && same_values(xt.sizes(), yt.sizes(), xt.dim()), [&] {
    return format(
        "shape",
        {{"op", op}, {"x", x}, {"y", y}, {"x_got", shape_str(xt)}, {"y_got", shape_str(yt)}});
  });
}

template <typename View>
void check_rank(const char* op, const View& a) {
  require<View>(a.dim() <= kMaxInputDims, [&] {
    return format(
        "rank",
        {{"op", op}, {"max", std::to_string(kMaxInputDims)}, {"dim", std::to_string(a.dim())}});
  });
}

// out may be exactly an input (same memory, same strides: every element is
// read before it is written) or share no memory with it. out and input have
// one shape (checked before).
template <typename View>
void check_no_partial_overlap(const char* op, const View& out, const char* name,
                              const View& input) {
  if (out.numel() == 0 || input.numel() == 0 || !out.same_storage(input)) {
    return;
  }
  const bool same_view = out.storage_offset() == input.storage_offset() &&
                         same_values(out.strides(), input.strides(), out.dim());
  require<View>(same_view, [&] { return format("partial_overlap", {{"op", op}, {"name", name}}); });
}

}  // namespace detail

// A one-input op: a must be a floating-point tensor of at most kMaxInputDims
// dimensions.
template <typename View>
void check_input(const char* op, const View& a) {
  detail::check_dtype(op, "a", a);
  detail::check_rank(op, a);
}

// mymuladd, mymul: a and b must be floating-point tensors of one dtype,
// device and shape, in that order (the errors say what was received).
template <typename View>
void check_inputs(const char* op, const View& a, const View& b) {
  detail::check_dtype(op, "a", a);
  detail::check_dtype(op, "b", b);
  detail::check_same(op, "a", a, "b", b);
  detail::check_rank(op, a);
}

// myadd_out: a and b as above, and out like them, without internal overlap,
// and either a or b itself or sharing no memory with them.
template <typename View>
void check_out(const char* op, const View& a, const View& b, const View& out) {
  check_inputs(op, a, b);
  detail::check_dtype(op, "out", out);
  detail::check_same(op, "out", out, "a", a);
  require<View>(provably_non_overlapping(out.dim(), out.sizes(), out.strides()), [&] {
    return format("internal_overlap", {{"op", op},
                                       {"strides", list_str(out.strides(), out.dim())},
                                       {"shape", detail::shape_str(out)}});
  });
  detail::check_no_partial_overlap(op, out, "a", a);
  detail::check_no_partial_overlap(op, out, "b", b);
}

// out (of a's sizes, with out_strides), a and b (checked as above) as one
// strided layout, with neighbouring dimensions merged where all three allow
// it (elementwise.h).
template <typename View>
BinaryLayout merged_layout(const char* op, const int64_t* out_strides, const View& a,
                           const View& b) {
  const int64_t* strides[3] = {out_strides, a.strides(), b.strides()};
  BinaryLayout layout;
  const bool ok = make_binary_layout(static_cast<int>(a.dim()), a.sizes(), strides, &layout);
  require<View>(ok, [&] {
    return format("unmergeable", {{"op", op},
                                  {"max", std::to_string(kMaxDims)},
                                  {"shape", detail::shape_str(a)},
                                  {"strides", list_str(a.strides(), a.dim())}});
  });
  return layout;
}

}  // namespace extension_cpp::checks
