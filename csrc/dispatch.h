// From a runtime dtype to typed pointers and a functor, for either binding.
//
// Both bindings (the classic libtorch one in csrc/ops.h and the stable-ABI one
// in csrc/stable/) check their inputs, then call dispatch_binary with raw
// pointers: it picks the element type and the functor of the op, and calls
// the backend's loop once with both. Only header-only torch types appear
// here (c10::ScalarType, c10::Half, c10::BFloat16), so the stable build,
// which may not include c10's or ATen's headers, compiles it unchanged.
#pragma once

#ifdef TORCH_TARGET_VERSION  // the stable-ABI build: torch/headeronly only
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>
#else
#include <c10/core/ScalarType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#endif

#include <stdexcept>
#include <string>
#include <type_traits>

#include "elementwise.h"

namespace extension_cpp {

enum class BinaryOpKind { kMulAdd, kMul, kAdd };

// The type the math runs in: float for float16 and bfloat16 storage, the
// storage type otherwise (what at::opmath_type gives, without ATen).
template <typename scalar_t>
using opmath_t = std::conditional_t<std::is_same_v<scalar_t, c10::Half> ||
                                        std::is_same_v<scalar_t, c10::BFloat16>,
                                    float, scalar_t>;

namespace dispatch_detail {

template <typename scalar_t, typename Body>
void typed(void* out, const void* a, const void* b, BinaryOpKind kind, double c, Body&& body) {
  using T = opmath_t<scalar_t>;
  scalar_t* o = static_cast<scalar_t*>(out);
  const scalar_t* x = static_cast<const scalar_t*>(a);
  const scalar_t* y = static_cast<const scalar_t*>(b);
  switch (kind) {
    case BinaryOpKind::kMulAdd:
      return body(o, x, y, MulAddOp<T>{static_cast<T>(c)});
    case BinaryOpKind::kMul:
      return body(o, x, y, MulOp<T>{});
    case BinaryOpKind::kAdd:
      return body(o, x, y, AddOp<T>{});
  }
  throw std::logic_error("extension_cpp: unhandled BinaryOpKind " +
                         std::to_string(static_cast<int>(kind)) + " (a bug: please report it)");
}

}  // namespace dispatch_detail

// Calls body(out_ptr, a_ptr, b_ptr, functor) with the pointers typed by
// `dtype` and the functor of `kind`, computing in opmath_t. The bindings check
// the dtype first, so any other dtype here is a bug, and it raises rather than
// falling through.
template <typename Body>
void dispatch_binary(c10::ScalarType dtype, void* out, const void* a, const void* b,
                     BinaryOpKind kind, double c, Body&& body) {
  using dispatch_detail::typed;
  switch (dtype) {
    case c10::ScalarType::Half:
      return typed<c10::Half>(out, a, b, kind, c, body);
    case c10::ScalarType::BFloat16:
      return typed<c10::BFloat16>(out, a, b, kind, c, body);
    case c10::ScalarType::Float:
      return typed<float>(out, a, b, kind, c, body);
    case c10::ScalarType::Double:
      return typed<double>(out, a, b, kind, c, body);
    default:
      throw std::logic_error("extension_cpp: dtype code " +
                             std::to_string(static_cast<int>(dtype)) +
                             " reached the kernel dispatch unchecked (a bug: please report it)");
  }
}

}  // namespace extension_cpp
