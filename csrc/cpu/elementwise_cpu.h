// The CPU elementwise loop: out[i] = op(a[i], b[i]) over a BinaryLayout.
//
// Takes raw pointers and the merged layout, so it does not depend on the
// binding. Work is split with at::parallel_for, which follows
// torch.get_num_threads(). Contiguous operands take a flat loop the compiler
// vectorises; anything else walks the strides, innermost dimension first.
#pragma once

#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

#include "../elementwise.h"

namespace extension_cpp::cpu {

// Below this many elements a call runs on the calling thread: handing work
// to the pool costs more than the loop (ATen uses the same grain).
constexpr int64_t kGrainSize = 32768;

template <typename scalar_t, typename Op>
inline void contiguous_loop(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n, Op op) {
  using T = at::opmath_type<scalar_t>;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<scalar_t>(op(static_cast<T>(a[i]), static_cast<T>(b[i])));
  }
}

// Elements [begin, end) in linear (row-major) order of the layout.
template <typename scalar_t, typename Op>
void strided_loop(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                  int64_t begin, int64_t end, Op op) {
  using T = at::opmath_type<scalar_t>;
  int64_t index[kMaxDims];
  Offsets o{0, 0, 0};
  int64_t rest = begin;
  for (int d = 0; d < l.ndim; ++d) {
    index[d] = rest % l.sizes[d];
    rest /= l.sizes[d];
    o.out += index[d] * l.strides[0][d];
    o.a += index[d] * l.strides[1][d];
    o.b += index[d] * l.strides[2][d];
  }
  const int64_t so = l.strides[0][0], sa = l.strides[1][0], sb = l.strides[2][0];
  for (int64_t i = begin; i < end;) {
    const int64_t run = std::min(l.sizes[0] - index[0], end - i);
    for (int64_t k = 0; k < run; ++k) {
      out[o.out + k * so] = static_cast<scalar_t>(
          op(static_cast<T>(a[o.a + k * sa]), static_cast<T>(b[o.b + k * sb])));
    }
    i += run;
    index[0] += run;
    o.out += run * so;
    o.a += run * sa;
    o.b += run * sb;
    // Carry into the outer dimensions.
    for (int d = 0; d + 1 < l.ndim && index[d] == l.sizes[d]; ++d) {
      index[d] = 0;
      ++index[d + 1];
      o.out += l.strides[0][d + 1] - l.sizes[d] * l.strides[0][d];
      o.a += l.strides[1][d + 1] - l.sizes[d] * l.strides[1][d];
      o.b += l.strides[2][d + 1] - l.sizes[d] * l.strides[2][d];
    }
  }
}

template <typename scalar_t, typename Op>
void binary_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                   Op op) {
  if (l.contiguous()) {
    at::parallel_for(0, l.numel, kGrainSize, [&](int64_t begin, int64_t end) {
      contiguous_loop(out + begin, a + begin, b + begin, end - begin, op);
    });
  } else {
    at::parallel_for(0, l.numel, kGrainSize, [&](int64_t begin, int64_t end) {
      strided_loop(out, a, b, l, begin, end, op);
    });
  }
}

}  // namespace extension_cpp::cpu
