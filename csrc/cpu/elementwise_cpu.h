// The simple CPU loop: out[i] = op(a[i], b[i]) for every element of a
// BinaryLayout.
//
// It takes raw pointers and the merged layout (elementwise.h), so both
// bindings run it: the classic kernels (ops_cpu.cpp) and the stable-ABI ones
// (stable/csrc/ops_cpu.cpp). The loop is correct on every layout; csrc/loops.h
// runs it wherever the tuned loops of csrc/fast/cpu/ are not built.
#pragma once

#include <cstdint>

#include "../elementwise.h"
#include "../runtime.h"

namespace extension_cpp::cpu {

// out: the op's output; a, b: its inputs, of one dtype; l: their layout.
// op computes in opmath_t<scalar_t> (float for float16 and bfloat16).
template <typename scalar_t, typename Op>
void elementwise(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                 Op op) {
  using T = opmath_t<scalar_t>;
  parallel_for(0, l.numel, kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const Offsets o = offsets_of(l, i);  // element i's offset in each operand
      out[o.out] = static_cast<scalar_t>(op(static_cast<T>(a[o.a]), static_cast<T>(b[o.b])));
    }
  });
}

}  // namespace extension_cpp::cpu
