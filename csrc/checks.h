// The words of every input check, shared by both bindings.
//
// The classic binding (csrc/ops.cpp) and the stable-ABI one
// (csrc/stable/ops.cpp) test the same conditions on their own tensor types;
// the tests that need no tensor type at all are here once, as are the
// messages of the stable binding. extension_cpp/_checks.py repeats them word
// for word for the fake kernels, so eager calls and torch.compile'd calls
// fail alike.
//
// The classic binding streams these same words through TORCH_CHECK, as
// PyTorch's own code does; the stable binding, whose errors are plain
// std::runtime_error, builds them here. tests/conformance/test_errors.py runs
// against both builds and holds them to one text.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "elementwise.h"

namespace extension_cpp::checks {

// "[3, 4]", as Python prints list(t.shape).
inline std::string list_str(const int64_t* values, int64_t n) {
  std::string s = "[";
  for (int64_t i = 0; i < n; ++i) {
    s += (i == 0 ? "" : ", ") + std::to_string(values[i]);
  }
  return s + "]";
}

// True when no two elements of a tensor of these sizes and strides can share
// a memory location: with the dimensions sorted by stride, each stride must
// step past everything the smaller ones reach. (This rejects the rare
// interleaved layout that does not overlap either; no tensor PyTorch creates,
// short of as_strided, has one.)
inline bool provably_non_overlapping(int64_t ndim, const int64_t* sizes, const int64_t* strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (int64_t d = 0; d < ndim; ++d) {
    if (sizes[d] == 0) {
      return true;  // no element at all, whatever the strides (an expanded empty tensor)
    }
    if (sizes[d] > 1) {
      dims.emplace_back(strides[d], sizes[d]);
    }
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;  // largest offset reachable with the smaller strides
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) {
      return false;
    }
    reach += stride * (size - 1);
  }
  return true;
}

// The messages, in the order the bindings check. `dtype` and `device` are
// as Python prints them ("torch.float32", "cuda:0").

inline std::string none(const char* op, const char* name) {
  return std::string(op) + ": expected " + name + " to be a Tensor, got None";
}

inline std::string not_floating(const char* op, const char* name, const std::string& dtype) {
  return std::string(op) + ": expected " + name +
         " to have a floating-point dtype (torch.float16, torch.bfloat16, torch.float32 or "
         "torch.float64), got " +
         dtype;
}

// what: "be on the same device", "have the same dtype", "have the same shape".
inline std::string not_same(const char* op, const char* x_name, const char* y_name,
                            const char* what, const std::string& x, const std::string& y) {
  return std::string(op) + ": expected " + x_name + " and " + y_name + " to " + what + ", got " +
         x + " and " + y;
}

inline std::string too_many_dims(const char* op, int64_t dim) {
  return std::string(op) + ": tensors with more than " + std::to_string(kMaxInputDims) +
         " dimensions are not supported, got " + std::to_string(dim);
}

inline std::string internal_overlap(const char* op, const std::string& strides,
                                    const std::string& shape) {
  return std::string(op) +
         ": expected out to have no internal overlap (each element its own memory location, "
         "unlike an expanded tensor), got strides " +
         strides + " for shape " + shape;
}

inline std::string partial_overlap(const char* op, const char* name) {
  return std::string(op) + ": out overlaps " + name +
         " in memory without being the same view of it; pass an out that shares no memory "
         "with " +
         name + ", or " + name + " itself";
}

inline std::string unmergeable(const char* op, const std::string& shape,
                               const std::string& strides) {
  return std::string(op) + ": tensors with more than " + std::to_string(kMaxDims) +
         " non-mergeable dimensions are not supported, got a tensor of shape " + shape +
         " and strides " + strides;
}

}  // namespace extension_cpp::checks
