// Whole vectors of float32 or float64 along a run, for dense and repeated inputs.
//
// The run loop's vector body: two vectors of each input loaded before either
// result is stored, which the compiler's own vectorisation of the plain loop
// does not do (Note [Two vectors a step] in the docs' design notes). Written
// with GCC's and Clang's vector extension, so one body compiles for SSE2,
// AVX2 and AVX-512 alike; other compilers take the plain loop.
#pragma once

#include <cstdint>
#include <cstring>

#include "isa.h"

namespace extension_cpp::fast::cpu {

// A run's inputs, by their step along it: dense (1), one value repeated
// (0, an expanded input) or every other element (2, a [..., ::2] slice). The loops below are
// compiled once per pattern, so each is a plain loop the compiler vectorises; with a constant step
// of 2 it loads two vectors and keeps the even lanes, where a step known only at run time leaves
// one scalar load per element.
template <int64_t kStepA, int64_t kStepB>
struct Pattern {
  static constexpr int64_t a = kStepA, b = kStepB;
};

#if defined(__GNUC__)  // GCC and Clang: their vector extension
#define EXTENSION_CPP_VECTORS 1

// As wide as the instruction set's registers: 32 bytes with AVX2, else 16
// (SSE2, which every x86-64 CPU has, or NEON). Lane k is v[k]; + and * act
// lane by lane.
template <Isa isa, typename T>
struct VecOf {
  typedef T type __attribute__((vector_size(isa == Isa::kGeneric ? 16 : 32)));
};

// Vectors are passed by reference: by value, one of 32 bytes would change
// the calling convention between the baseline and the AVX2 bodies
// (-Wpsabi). None of these is a lambda, which would be compiled for the
// baseline instruction set (see run_step_b).

// v = x in every lane: a copy, where 0 + x would turn -0.0 into 0.0.
template <typename V, typename T>
C10_ALWAYS_INLINE void fill_vec(V& v, T x) {
  for (size_t k = 0; k < sizeof(V) / sizeof(T); ++k) {
    v[k] = x;
  }
}

// An input's next vector: `repeated` for a step of 0, else the one at p.
template <int64_t kStep, typename V, typename T>
C10_ALWAYS_INLINE void input_vec(V& v, const V& repeated, const T* p) {
  if constexpr (kStep == 0) {
    v = repeated;
  } else {
    std::memcpy(&v, p, sizeof(V));
  }
}

// r = op(x, y) lane by lane; the compiler emits one vector instruction per
// arithmetic operation of op.
template <typename V, typename Op>
C10_ALWAYS_INLINE void op_lanes(V& r, const V& x, const V& y, Op op) {
  for (size_t k = 0; k < sizeof(V) / sizeof(x[0]); ++k) {
    r[k] = op(x[k], y[k]);
  }
}

// out[0, n) = op(a, b) with a's and b's steps 0 or 1 (P): two vectors a
// step, both loaded before either is stored, then one vector, then single
// elements. out may be exactly a or b: each vector is read before it is
// written. A repeated input cannot be out (out repeats no element), so its
// value is read once.
template <Isa isa, typename P, typename T, typename Op>
C10_ALWAYS_INLINE void vector_run(T* out, const T* a, const T* b, int64_t n, Op op) {
  using V = typename VecOf<isa, T>::type;
  constexpr int64_t sa = P::a, sb = P::b, kW = sizeof(V) / sizeof(T);
  V ra{}, rb{};  // a's and b's value in every lane, where repeated
  if constexpr (sa == 0) {
    fill_vec(ra, a[0]);
  }
  if constexpr (sb == 0) {
    fill_vec(rb, b[0]);
  }
  int64_t i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    V x0, y0, x1, y1, r0, r1;
    input_vec<sa>(x0, ra, a + i);
    input_vec<sb>(y0, rb, b + i);
    input_vec<sa>(x1, ra, a + i + kW);
    input_vec<sb>(y1, rb, b + i + kW);
    op_lanes(r0, x0, y0, op);
    op_lanes(r1, x1, y1, op);
    std::memcpy(out + i, &r0, sizeof(V));
    std::memcpy(out + i + kW, &r1, sizeof(V));
  }
  if (i + kW <= n) {
    V x, y, r;
    input_vec<sa>(x, ra, a + i);
    input_vec<sb>(y, rb, b + i);
    op_lanes(r, x, y, op);
    std::memcpy(out + i, &r, sizeof(V));
    i += kW;
  }
  for (; i < n; ++i) {
    out[i] = op(a[i * sa], b[i * sb]);
  }
}
#else
#define EXTENSION_CPP_VECTORS 0
#endif

}  // namespace extension_cpp::fast::cpu
