// The CPU loop: out[i] = op(a[i], b[i]) for every element of a BinaryLayout.
//
// It takes raw pointers and the merged layout (elementwise.h), so both
// bindings run it: the classic kernels (ops_cpu.cpp) and the stable-ABI ones
// (csrc/stable/ops_cpu.cpp). The plain loop below is correct on every
// layout. Built with the fast kernels (EXTENSION_CPP_KERNELS=fast, the
// default), the tuned loops of csrc/fast/cpu/ run instead wherever they can.
#pragma once

#include <cstdint>

#include "../elementwise.h"
#include "runtime.h"

#if EXTENSION_CPP_FAST_KERNELS
#include "../fast/cpu/elementwise.h"
#endif

namespace extension_cpp::cpu {

// out: the op's output; a, b: its inputs, of one dtype; l: their layout.
// op computes in opmath_t<scalar_t> (float for float16 and bfloat16).
template <typename scalar_t, typename Op>
void elementwise_cpu(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                     Op op) {
#if EXTENSION_CPP_FAST_KERNELS
  if (fast::cpu::elementwise(out, a, b, l, op)) {
    return;
  }
#endif
  using T = opmath_t<scalar_t>;
  parallel_for(0, l.numel, kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const Offsets o = offsets_of(l, i);  // element i's offset in each operand
      out[o.out] = static_cast<scalar_t>(op(static_cast<T>(a[o.a]), static_cast<T>(b[o.b])));
    }
  });
}

// One-input ops: out[i] = op(a[i]), through the loop above with a as both
// inputs (OneInput, elementwise.h).
template <typename scalar_t, typename Op>
void elementwise_cpu(scalar_t* out, const scalar_t* a, const BinaryLayout& l, Op op) {
  elementwise_cpu(out, a, a, l, OneInput<Op>{op});
}

}  // namespace extension_cpp::cpu
