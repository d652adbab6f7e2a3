// The math of the ops, and the layouts the loops walk, for every backend and
// binding.
//
// mymuladd, mymul and myadd_out are one pattern: out[i] = f(a[i], b[i]) over
// tensors of one shape. This header holds the three functors f, the rule for
// the output's strides, and the merged strided layout the CPU and CUDA loops
// walk. Nothing here includes ATen's Tensor: the loops take raw pointers,
// sizes and strides, so the stable-ABI binding runs them unchanged.
#pragma once

#ifdef TORCH_TARGET_VERSION  // the stable-ABI build (stable/csrc/): torch/headeronly only
#include <torch/headeronly/macros/Macros.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>
#else
#include <c10/macros/Macros.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#endif

#include <cstdint>
#include <type_traits>

#include "checks.h"

namespace extension_cpp {

// The type the math runs in: float for float16 and bfloat16 storage, the
// storage type otherwise (what at::opmath_type gives, without ATen).
template <typename scalar_t>
using opmath_t = std::conditional_t<std::is_same_v<scalar_t, c10::Half> ||
                                        std::is_same_v<scalar_t, c10::BFloat16>,
                                    float, scalar_t>;

// ---------------------------------------------------------------------------
// Functors. `T` is the math type, opmath_t of the storage type: the loops
// convert each value on load and round once on store.
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

// A one-input functor f(x), as the two-input loops call it: they pass the
// same element twice (the one-input elementwise_cpu and elementwise_cuda give
// `a` as both inputs), and f sees it once.
template <typename Op>
struct OneInput {
  Op op;
  template <typename T>
  C10_HOST_DEVICE T operator()(T x, T) const {
    return op(x);
  }
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

// The most dimensions an input may have before merging: checks.h's limit,
// which the ops check before any layout code runs.
using checks::kMaxInputDims;

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

// Sorts the dimension indices dims[0, n) stably so that `before(x, y)` holds
// for no y ahead of x: an insertion sort, as n is small and it allocates
// nothing.
template <typename Before>
inline void sort_dims(int* dims, int n, Before before) {
  for (int i = 1; i < n; ++i) {
    const int d = dims[i];
    int k = i;
    for (; k > 0 && before(d, dims[k - 1]); --k) {
      dims[k] = dims[k - 1];
    }
    dims[k] = d;
  }
}

// Builds the merged layout from PyTorch-order (outermost first) sizes and the
// three operands' strides. Dimensions are walked in the output's memory order
// (by its strides, largest outermost), not in logical order: an output that
// keeps a channels_last or transposed input's layout then merges with it into
// one dense run, which the vectorised loops take. Returns false if more than
// kMaxDims dimensions remain after merging; the caller reports that as a user
// error.
inline bool make_binary_layout(int ndim, const int64_t* sizes, const int64_t* const strides[3],
                               BinaryLayout* layout) {
  if (ndim > kMaxInputDims) {
    return false;
  }
  // order: dimensions by the output's stride, largest first; equal strides
  // keep their logical order.
  int order[kMaxInputDims];
  for (int d = 0; d < ndim; ++d) {
    order[d] = d;
  }
  sort_dims(order, ndim, [&](int x, int y) { return strides[0][x] > strides[0][y]; });
  BinaryLayout& l = *layout;
  l.ndim = 0;
  l.numel = 1;
  for (int k = ndim - 1; k >= 0; --k) {  // innermost first
    const int d = order[k];
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

// ---------------------------------------------------------------------------
// The output's strides: PyTorch's rule for elementwise ops, so that
// mymul(a, b) is laid out exactly as torch.mul(a, b) (at::TensorIterator:
// fast_set_up, then reorder_dimensions and allocate_or_resize_outputs in
// aten/src/ATen/TensorIterator.cpp). In short: inputs that are both
// contiguous, both channels_last, or both dense with equal strides give an
// output of that layout; otherwise the output is dense with its dimensions
// ordered by the inputs' strides (a's first, b's to break ties, stride-0
// dimensions ignored). A layout-preserving output is what lets a transposed
// or channels_last input run at copy speed: a contiguous output would turn
// the op into a transpose.
// ---------------------------------------------------------------------------

namespace layout_detail {

// True when the dimensions dims[0, n), innermost first, are laid out densely
// in that order; size-1 dimensions may have any stride, as in c10.
inline bool dense_in_order(const int* dims, int n, const int64_t* sizes, const int64_t* strides) {
  int64_t expected = 1;
  for (int k = 0; k < n; ++k) {
    const int d = dims[k];
    if (sizes[d] != 1) {
      if (strides[d] != expected) {
        return false;
      }
      expected *= sizes[d];
    }
  }
  return true;
}

// c10's TensorImpl::is_contiguous().
inline bool is_contiguous(int ndim, const int64_t* sizes, const int64_t* strides) {
  int dims[kMaxInputDims];
  for (int k = 0; k < ndim; ++k) {
    if (sizes[k] == 0) {
      return true;  // no elements: any strides will do
    }
    dims[k] = ndim - 1 - k;
  }
  return dense_in_order(dims, ndim, sizes, strides);
}

// is_contiguous(memory_format=torch.channels_last), for 4-d tensors: NHWC.
inline bool is_channels_last(int ndim, const int64_t* sizes, const int64_t* strides) {
  static constexpr int kNhwc[4] = {1, 3, 2, 0};  // C, W, H, N: innermost first
  return ndim == 4 && dense_in_order(kNhwc, 4, sizes, strides);
}

// c10's is_non_overlapping_and_dense(): some permutation of the dimensions
// is contiguous.
inline bool is_dense(int ndim, const int64_t* sizes, const int64_t* strides) {
  if (ndim == 1) {
    return sizes[0] < 2 || strides[0] == 1;
  }
  // Dimensions of size >= 2 by increasing stride (size-1 ones do not count).
  int dims[kMaxInputDims];
  int n = 0;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] >= 2) {
      dims[n++] = d;
    }
  }
  sort_dims(dims, n, [&](int x, int y) { return strides[x] < strides[y]; });
  return dense_in_order(dims, n, sizes, strides);
}

}  // namespace layout_detail

// Writes the strides (in elements) of f(a, b)'s output to `out`; a and b
// have `ndim` <= kMaxInputDims dimensions of `sizes`.
inline void elementwise_output_strides(int ndim, const int64_t* sizes, const int64_t* a_strides,
                                       const int64_t* b_strides, int64_t* out) {
  using namespace layout_detail;
  const int64_t* in[2] = {a_strides, b_strides};
  auto contiguous = [&] {
    int64_t next = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      out[d] = next;
      next *= sizes[d] > 1 ? sizes[d] : 1;
    }
  };
  // TensorIterator's fast set-up: both inputs of one standard layout.
  if (is_contiguous(ndim, sizes, a_strides) && is_contiguous(ndim, sizes, b_strides)) {
    return contiguous();
  }
  if (is_channels_last(ndim, sizes, a_strides) && is_channels_last(ndim, sizes, b_strides)) {
    out[1] = 1;  // N, C, H, W laid out as N, H, W, C
    out[3] = sizes[1];
    out[2] = out[3] * sizes[3];
    out[0] = out[2] * sizes[2];
    return;
  }
  bool same = true;
  for (int d = 0; d < ndim; ++d) {
    same = same && a_strides[d] == b_strides[d];
  }
  if (same && is_dense(ndim, sizes, a_strides)) {
    for (int d = 0; d < ndim; ++d) {
      out[d] = a_strides[d];
    }
    return;
  }
  // The general rule: perm[0] is the fastest-moving dimension. Start from the
  // logical order (innermost first) and insertion-sort by the inputs'
  // strides; `compare` returns 1 if dim0 should move after dim1, -1 if it
  // should stay before it, 0 if the inputs do not say.
  auto compare = [&](int dim0, int dim1) {
    for (const int64_t* s : in) {
      if (s[dim0] == 0 || s[dim1] == 0) {
        continue;  // broadcast along one of them: ask the next input
      }
      if (s[dim0] != s[dim1]) {
        return s[dim0] < s[dim1] ? -1 : 1;
      }
      if (sizes[dim0] > sizes[dim1]) {
        return 1;  // equal strides: the smaller dimension goes first
      }
    }
    return 0;
  };
  int perm[kMaxInputDims];
  for (int k = 0; k < ndim; ++k) {
    perm[k] = ndim - 1 - k;
  }
  for (int i = 1; i < ndim; ++i) {
    int dim1 = i;
    for (int dim0 = i - 1; dim0 >= 0; --dim0) {
      const int c = compare(perm[dim0], perm[dim1]);
      if (c > 0) {
        const int t = perm[dim0];
        perm[dim0] = perm[dim1];
        perm[dim1] = t;
        dim1 = dim0;
      } else if (c < 0) {
        break;
      }
    }
  }
  bool logical = true;
  for (int k = 0; k < ndim; ++k) {
    logical = logical && perm[k] == ndim - 1 - k;
  }
  if (logical) {
    return contiguous();
  }
  int64_t next = 1;
  for (int k = 0; k < ndim; ++k) {
    out[perm[k]] = next;
    next *= sizes[perm[k]];
  }
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
