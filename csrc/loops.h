// The loop every CPU kernel runs, and the one place that picks it.
//
// Built with the fast kernels (EXTENSION_CPP_KERNELS=fast, the default), the
// tuned loops of csrc/fast/cpu/ run; built without them
// (EXTENSION_CPP_KERNELS=simple), the simple loop of csrc/cpu/elementwise_cpu.h
// runs, and nothing in csrc/fast/ is compiled. The CPU kernels of both
// bindings call elementwise_cpu (csrc/cpu/ops_cpu.cpp, stable/csrc/ops_cpu.cpp).
#pragma once

#include "cpu/elementwise_cpu.h"
#include "elementwise.h"

#if EXTENSION_CPP_FAST_KERNELS
#include "fast/cpu/elementwise.h"
#endif

namespace extension_cpp {

// out[i] = op(a[i], b[i]) over the layout l; out, a and b of one dtype, op
// computing in opmath_t<scalar_t> (float for float16 and bfloat16).
template <typename scalar_t, typename Op>
void elementwise_cpu(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                     Op op) {
#if EXTENSION_CPP_FAST_KERNELS
  if (fast::cpu::elementwise(out, a, b, l, op)) {
    return;
  }
#endif
  cpu::elementwise(out, a, b, l, op);
}

// One-input ops: out[i] = op(a[i]), through the loop above with a as both
// inputs (OneInput, elementwise.h).
template <typename scalar_t, typename Op>
void elementwise_cpu(scalar_t* out, const scalar_t* a, const BinaryLayout& l, Op op) {
  elementwise_cpu(out, a, a, l, OneInput<Op>{op});
}

}  // namespace extension_cpp
