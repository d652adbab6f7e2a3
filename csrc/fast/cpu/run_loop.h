// The run loop: out = op(a, b) along dense rows, vectorised, for every dtype.
//
// Every fast CPU path ends here: a contiguous tensor is one long row, a
// tile of the tiled loop or a batch of short rows is a Rows block. Each input
// steps along the row by 1 (dense), 0 (one value repeated: an expanded input)
// or 2 (every other element: a [..., ::2] slice). The loop body is
// compiled once per instruction set (isa.h) from one template, and pick_run
// returns the best one for the CPU and dtype. float16 and bfloat16 go a
// block at a time through float buffers (half.h).
#pragma once

#include <cstdint>
#include <type_traits>

#include "half.h"
#include "isa.h"
#include "vector.h"

namespace extension_cpp::fast::cpu {

// float16/bfloat16 elements converted to float per step: three float buffers
// of this size stay in L1 (Note [Half conversions]).
constexpr int64_t kBlock = 64;

// Whether the run loop takes an input with this step.
constexpr bool run_step_ok(int64_t step) { return step == 0 || step == 1 || step == 2; }

// m <= kBlock float16/bfloat16 elements of src into float: src[k * kStep]
// for a step of 1 or 2, src[0] repeated for a step of 0.
template <Isa isa, int64_t kStep, typename scalar_t>
C10_ALWAYS_INLINE void load_block(const scalar_t* src, float* dst, int64_t m) {
  if constexpr (kStep == 0) {
    const float v = static_cast<float>(src[0]);
    for (int64_t k = 0; k < m; ++k) {
      dst[k] = v;
    }
  } else if constexpr (kStep == 2) {
    // Every other element, packed into a dense block of raw bits first: with
    // the step a constant, the compiler loads two vectors and keeps the even
    // lanes (Note [Step-2 pattern]). Then widened as a dense block.
    scalar_t packed[kBlock];
    for (int64_t k = 0; k < m; ++k) {
      packed[k].x = src[2 * k].x;
    }
    load_block<isa, 1>(packed, dst, m);
  } else {
#if EXTENSION_CPP_X86_DISPATCH
    if constexpr (std::is_same_v<scalar_t, c10::Half> && isa == Isa::kAvx2) {
      return to_float_f16c(src, dst, m);
    }
#endif
    to_float(src, dst, m);
  }
}

// One block of m <= kBlock float16/bfloat16 elements, through float buffers.
template <Isa isa, typename P, typename scalar_t, typename Op>
C10_ALWAYS_INLINE void reduced_block(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t m,
                                     Op op) {
  float x[kBlock], y[kBlock];
  load_block<isa, P::a>(a, x, m);
  load_block<isa, P::b>(b, y, m);
  for (int64_t k = 0; k < m; ++k) {
    x[k] = op(x[k], y[k]);
  }
#if EXTENSION_CPP_X86_DISPATCH
  if constexpr (std::is_same_v<scalar_t, c10::Half> && isa == Isa::kAvx2) {
    from_float_f16c(x, out, m);
  } else
#endif
  {
    from_float(x, out, m);
  }
}

// out: n dense elements; a and b with the steps P gives. out may be exactly a
// or b: each element (each block, for float16/bfloat16) is read before it is
// written.
template <Isa isa, typename P, typename scalar_t, typename Op>
C10_ALWAYS_INLINE void run_body(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n,
                                Op op) {
  using T = opmath_t<scalar_t>;
  constexpr int64_t sa = P::a, sb = P::b;
#if EXTENSION_CPP_VECTORS
  if constexpr (std::is_same_v<T, scalar_t> && sa <= 1 && sb <= 1) {
    return vector_run<isa, P>(out, a, b, n, op);
  }
#endif
  if constexpr (std::is_same_v<T, scalar_t>) {
    for (int64_t i = 0; i < n; ++i) {
      out[i] = op(a[i * sa], b[i * sb]);
    }
  } else {
    static_assert(std::is_same_v<T, float>, "reduced-precision types compute in float");
    int64_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {  // full blocks: a constant trip count
      reduced_block<isa, P>(out + i, a + i * sa, b + i * sb, kBlock, op);
    }
    if (i < n) {
      reduced_block<isa, P>(out + i, a + i * sa, b + i * sb, n - i, op);
    }
  }
}

// Rows of a 2-D block for one call of the run loop: `count` rows, row r of
// out, a and b starting `out`, `a` and `b` elements after row 0. A tile of
// the tiled loop, or a batch of short rows in the strided loop, is one call,
// not one call per row (an indirect call, the stride dispatch and the
// compiler's overlap checks each time: Note [Row batches]).
struct Rows {
  int64_t count = 1;
  int64_t out = 0, a = 0, b = 0;
};

// The run loop of one instruction set: out[0, n) = op(a, b) on each row, with
// a's and b's steps along the row (run_step_ok) picked at run time, once.
// The rows are walked by stepping the three pointers, not by multiplying the
// row index (Note [Row batches]).
template <Isa isa, typename P, typename scalar_t, typename Op>
C10_ALWAYS_INLINE void rows_body(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n,
                                 Rows rows, Op op) {
  for (int64_t r = rows.count; r > 0; --r) {
    run_body<isa, P>(out, a, b, n, op);
    out += rows.out;
    a += rows.a;
    b += rows.b;
  }
}

// The dispatch over steps is written as always-inline functions, not
// lambdas: a lambda is a function of its own, compiled for the baseline
// instruction set whatever its caller's target attribute, and where GCC does
// not inline one the float16 and bfloat16 loops run at SSE2 speed.
// a's step is fixed (kStepA); b's is picked here.
template <Isa isa, int64_t kStepA, typename scalar_t, typename Op>
C10_ALWAYS_INLINE void run_step_b(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n,
                                  int64_t sb, Rows rows, Op op) {
  if (sb == 1) {
    rows_body<isa, Pattern<kStepA, 1>>(out, a, b, n, rows, op);
  } else if (sb == 0) {
    rows_body<isa, Pattern<kStepA, 0>>(out, a, b, n, rows, op);
  } else {
    rows_body<isa, Pattern<kStepA, 2>>(out, a, b, n, rows, op);
  }
}

template <Isa isa, typename scalar_t, typename Op>
C10_ALWAYS_INLINE void run_dispatch(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n,
                                    int64_t sa, int64_t sb, Rows rows, Op op) {
  if (sa == 1) {
    run_step_b<isa, 1>(out, a, b, n, sb, rows, op);
  } else if (sa == 0) {
    run_step_b<isa, 0>(out, a, b, n, sb, rows, op);
  } else {
    run_step_b<isa, 2>(out, a, b, n, sb, rows, op);
  }
}

template <typename scalar_t, typename Op>
void run_generic(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n, int64_t sa,
                 int64_t sb, Rows rows, Op op) {
  run_dispatch<Isa::kGeneric>(out, a, b, n, sa, sb, rows, op);
}

#if EXTENSION_CPP_X86_DISPATCH
template <typename scalar_t, typename Op>
EXTENSION_CPP_TARGET_AVX2 void run_avx2(scalar_t* out, const scalar_t* a, const scalar_t* b,
                                        int64_t n, int64_t sa, int64_t sb, Rows rows, Op op) {
  run_dispatch<Isa::kAvx2>(out, a, b, n, sa, sb, rows, op);
}
#endif

#if EXTENSION_CPP_AVX512
template <typename scalar_t, typename Op>
EXTENSION_CPP_TARGET_AVX512 void run_avx512(scalar_t* out, const scalar_t* a, const scalar_t* b,
                                            int64_t n, int64_t sa, int64_t sb, Rows rows, Op op) {
  run_dispatch<Isa::kAvx512>(out, a, b, n, sa, sb, rows, op);
}
#endif

template <typename scalar_t, typename Op>
using RunFn = void (*)(scalar_t*, const scalar_t*, const scalar_t*, int64_t, int64_t, int64_t, Rows,
                       Op);

// The best run loop this CPU has, for this dtype.
template <typename scalar_t, typename Op>
RunFn<scalar_t, Op> pick_run() {
  RunFn<scalar_t, Op> run = &run_generic<scalar_t, Op>;
#if EXTENSION_CPP_X86_DISPATCH
  if (use_avx2()) {
    run = &run_avx2<scalar_t, Op>;
  }
#endif
#if EXTENSION_CPP_AVX512
  // Only bfloat16 goes to 512 bits: its conversions are arithmetic, and twice
  // the width halves them. The other dtypes are bound by loads and stores,
  // which 512-bit stores make slower on L2-resident data (as ATen, which runs
  // its own float add/mul at AVX2 on AVX-512 machines), and float16's F16C
  // conversions mixed with 512-bit math stall on the float buffers.
  if constexpr (std::is_same_v<scalar_t, c10::BFloat16>) {
    if (use_avx512()) {
      run = &run_avx512<scalar_t, Op>;
    }
  }
#endif
  return run;
}

}  // namespace extension_cpp::fast::cpu
