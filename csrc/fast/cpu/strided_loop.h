// The strided loop: any layout, a run along the innermost dimension at a time.
//
// What the other fast paths do not take (a sliced or broadcast input, short
// rows, a layout of several dimensions) is walked in the layout's linear
// order with an index that carries from one dimension into the next, rather
// than dividing each element's index. Runs whose inputs step by 0, 1 or 2
// go to the vectorised run loop, several short rows per call (Rows).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../../elementwise.h"
#include "run_loop.h"

namespace extension_cpp::fast::cpu {

// Moves index (and the offsets o) k elements on along dimension d, then
// carries into the outer dimensions where d, or one after it, ran off its end.
inline void advance(const BinaryLayout& l, int64_t* index, Offsets& o, int d, int64_t k) {
  index[d] += k;
  o.out += k * l.strides[0][d];
  o.a += k * l.strides[1][d];
  o.b += k * l.strides[2][d];
  for (; d + 1 < l.ndim && index[d] == l.sizes[d]; ++d) {
    index[d] = 0;
    ++index[d + 1];
    o.out += l.strides[0][d + 1] - l.sizes[d] * l.strides[0][d];
    o.a += l.strides[1][d + 1] - l.sizes[d] * l.strides[1][d];
    o.b += l.strides[2][d + 1] - l.sizes[d] * l.strides[2][d];
  }
}

// Elements [begin, end) in linear order of the layout (innermost dimension
// fastest), one inner run at a time. A run whose output is dense and whose
// inputs have steps the run loop takes (run_step_ok: a row-sliced tensor, a
// broadcast row or column, a [..., ::2] slice) goes to the vectorised run
// loop; any other run (other steps, a transposed input the tiled loop does
// not take) is read element by element.
template <typename scalar_t, typename Op>
void strided_loop(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                  int64_t begin, int64_t end, RunFn<scalar_t, Op> run_fn, Op op) {
  using T = opmath_t<scalar_t>;
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
  const bool vector_run = so == 1 && run_step_ok(sa) && run_step_ok(sb);
  for (int64_t i = begin; i < end;) {
    if (vector_run && index[0] == 0 && l.ndim >= 2 && end - i >= 2 * l.sizes[0]) {
      // Whole rows along dimension 1 in one call of the run loop (see Rows).
      const int64_t rows = std::min(l.sizes[1] - index[1], (end - i) / l.sizes[0]);
      run_fn(out + o.out, a + o.a, b + o.b, l.sizes[0], sa, sb,
             Rows{rows, l.strides[0][1], l.strides[1][1], l.strides[2][1]}, op);
      i += rows * l.sizes[0];
      advance(l, index, o, 1, rows);
      continue;
    }
    const int64_t run = std::min(l.sizes[0] - index[0], end - i);
    if (vector_run) {
      run_fn(out + o.out, a + o.a, b + o.b, run, sa, sb, Rows{}, op);
    } else if constexpr (std::is_same_v<T, scalar_t>) {
      for (int64_t k = 0; k < run; ++k) {
        out[o.out + k * so] = op(a[o.a + k * sa], b[o.b + k * sb]);
      }
    } else {
      // float16/bfloat16: gather kBlock elements at a time into dense
      // buffers, run the vectorised loop on them (which converts a block at
      // once, not one element at a time in software), and scatter the result.
      scalar_t x[kBlock], y[kBlock], z[kBlock];
      for (int64_t k0 = 0; k0 < run; k0 += kBlock) {
        const int64_t m = std::min(kBlock, run - k0);
        const scalar_t* pa = a + o.a + k0 * sa;
        const scalar_t* pb = b + o.b + k0 * sb;
        for (int64_t k = 0; k < m; ++k) {
          x[k] = pa[k * sa];
          y[k] = pb[k * sb];
        }
        run_fn(z, x, y, m, 1, 1, Rows{}, op);
        scalar_t* po = out + o.out + k0 * so;
        for (int64_t k = 0; k < m; ++k) {
          po[k * so] = z[k];
        }
      }
    }
    i += run;
    advance(l, index, o, 0, run);
  }
}

}  // namespace extension_cpp::fast::cpu
