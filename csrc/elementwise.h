// The math shared by every op and every backend, independent of the binding.
//
// mymuladd, mymul and myadd_out are one pattern: out[i] = f(a[i], b[i]) over
// tensors of one shape. This header holds the three functors and the strided
// layout the CPU and CUDA loops walk. Nothing here includes ATen's Tensor: the
// loops take raw pointers, sizes and strides, so a second binding (the LibTorch
// stable ABI, a test harness) can reuse them unchanged.
#pragma once

#include <c10/macros/Macros.h>

#include <cstdint>

namespace extension_cpp {

// ---------------------------------------------------------------------------
// Functors. `T` is the math type: float for float16/bfloat16/float32 storage,
// double for float64 (at::opmath_type). Values are converted on load/store.
// ---------------------------------------------------------------------------

template <typename T>
struct MulAddOp {
  T c;
  C10_HOST_DEVICE T operator()(T a, T b) const { return a * b + c; }
};

template <typename T>
struct MulOp {
  C10_HOST_DEVICE T operator()(T a, T b) const { return a * b; }
};

template <typename T>
struct AddOp {
  C10_HOST_DEVICE T operator()(T a, T b) const { return a + b; }
};

// ---------------------------------------------------------------------------
// Strided layout of out, a and b after merging dimensions.
//
// Dimensions are stored innermost first. Size-1 dimensions are dropped and
// neighbours that are contiguous with each other in all three operands are
// merged, so a contiguous tensor of any rank becomes one dimension and a
// transposed matrix stays two. Strides are in elements; 0 is allowed (expanded
// inputs).
// ---------------------------------------------------------------------------

constexpr int kMaxDims = 25;  // as TensorIterator's OffsetCalculator

struct BinaryLayout {
  int ndim = 0;
  int64_t numel = 1;
  int64_t sizes[kMaxDims];
  int64_t strides[3][kMaxDims];  // [0] out, [1] a, [2] b

  // True when every operand is one dense run of `numel` elements.
  bool contiguous() const {
    return ndim == 0 ||
           (ndim == 1 && strides[0][0] == 1 && strides[1][0] == 1 && strides[2][0] == 1);
  }
};

// Builds the merged layout from PyTorch-order (outermost first) sizes and the
// three operands' strides. Returns false if more than kMaxDims dimensions
// remain after merging; the caller reports that as a user error.
inline bool make_binary_layout(int ndim, const int64_t* sizes, const int64_t* const strides[3],
                               BinaryLayout* layout) {
  BinaryLayout& l = *layout;
  l.ndim = 0;
  l.numel = 1;
  for (int d = ndim - 1; d >= 0; --d) {  // innermost first
    const int64_t size = sizes[d];
    l.numel *= size;
    if (size == 1) {
      continue;
    }
    if (l.ndim > 0) {
      const int prev = l.ndim - 1;
      bool mergeable = true;
      for (int t = 0; t < 3; ++t) {
        mergeable = mergeable && strides[t][d] == l.strides[t][prev] * l.sizes[prev];
      }
      if (mergeable) {
        l.sizes[prev] *= size;
        continue;
      }
    }
    if (l.ndim == kMaxDims) {
      return false;
    }
    l.sizes[l.ndim] = size;
    for (int t = 0; t < 3; ++t) {
      l.strides[t][l.ndim] = strides[t][d];
    }
    ++l.ndim;
  }
  if (l.numel == 0) {
    l.ndim = 1;
    l.sizes[0] = 0;
    for (int t = 0; t < 3; ++t) {
      l.strides[t][0] = 1;
    }
  }
  return true;
}

// Element offsets (in elements) of linear index `i` in each operand.
struct Offsets {
  int64_t out, a, b;
};

C10_HOST_DEVICE inline Offsets offsets_of(const BinaryLayout& l, int64_t i) {
  Offsets o{0, 0, 0};
  for (int d = 0; d < l.ndim; ++d) {
    const int64_t q = i / l.sizes[d];
    const int64_t r = i - q * l.sizes[d];
    o.out += r * l.strides[0][d];
    o.a += r * l.strides[1][d];
    o.b += r * l.strides[2][d];
    i = q;
  }
  return o;
}

}  // namespace extension_cpp
