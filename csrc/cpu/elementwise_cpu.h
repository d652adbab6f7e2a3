// The CPU elementwise loop: out[i] = op(a[i], b[i]) over a BinaryLayout.
//
// Takes raw pointers and the merged layout, so it does not depend on the
// binding: the classic build and the stable-ABI one (csrc/stable/) compile
// this same file. Work is split with runtime.h's parallel_for (ATen's thread
// pool), which follows torch.get_num_threads(). binary_kernel picks one of three loops:
//   * one dense run (contiguous, or any layout the inputs share with the
//     output): the vectorised run loop below, over all of it;
//   * a transposed input (use_tiles): cache-blocked tiles, see tiled_loop
//     (float32 beside a dense input on an AVX-512 CPU: 16 x 16 blocks
//     transposed in registers, see transposed_rows_avx512);
//   * anything else: strided_loop, a run at a time along the innermost
//     dimension (whole short rows a batch at a time), vectorised where the
//     inputs are dense or repeated in it.
//
// The run loop is compiled up to three times from one body:
//   * generic: the x86-64 baseline (SSE2) the wheel is built for, and every
//     other architecture;
//   * avx2: under __attribute__((target("avx2,f16c")));
//   * avx512 (GCC only): AVX-512F/BW/VL, for bfloat16 only (see
//     pick_run: the other dtypes are faster at 256 bits), and the float32
//     transposed blocks of transposed_rows_avx512.
// The level is picked once, at run time: the best one the CPU has, capped by
// ATen's own CPU capability (torch.backends.cpu.get_cpu_capability(), which
// follows the ATEN_CPU_CAPABILITY environment variable, so
// ATEN_CPU_CAPABILITY=default runs and tests the generic build). The wheel is
// compiled without -mavx2, so it still loads and runs on a CPU without it.
// FMA is kept out of every level: a fused a * b + c rounds once, and mymuladd
// would stop matching eager a * b + c (and its own generic build) bit for bit.
//
// float16 and bfloat16 are converted to float a block at a time (kBlock
// elements into buffers that stay in L1), computed in float, and rounded back
// to nearest even, exactly as c10::Half and c10::BFloat16 do. The compiler
// vectorises the float loop and the bfloat16 conversions; the float16 ones
// use the F16C instructions in the avx2 build (c10::Half converts one element
// at a time in software otherwise).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#if defined(__GNUC__) && defined(__x86_64__)
#define EXTENSION_CPP_X86_DISPATCH 1
#include <immintrin.h>
#define EXTENSION_CPP_TARGET_AVX2 __attribute__((target("avx2,f16c")))
#if !defined(__clang__)
// AVX-512F brings FMA instructions with it; GCC's optimize attribute keeps
// the compiler from fusing a * b + c with them. Clang has no such attribute,
// so a clang build stops at AVX2.
#define EXTENSION_CPP_AVX512 1
#define EXTENSION_CPP_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c"), optimize("fp-contract=off")))
#else
#define EXTENSION_CPP_AVX512 0
#endif
#else
#define EXTENSION_CPP_X86_DISPATCH 0
#endif

#include "../dispatch.h"
#include "../elementwise.h"
#include "runtime.h"

namespace extension_cpp::cpu {

// Below this many elements a call runs on the calling thread: handing work
// to the pool costs more than the loop (ATen uses the same grain).
constexpr int64_t kGrainSize = 32768;

// float16/bfloat16 elements converted to float per step: three float buffers
// of this size stay in L1 (64 measured best: larger blocks lose to L1 traffic).
constexpr int64_t kBlock = 64;

// ---------------------------------------------------------------------------
// Block conversions between the storage type and float.
// ---------------------------------------------------------------------------

// bfloat16 is the top half of a float: widening is a shift. Narrowing rounds
// to nearest even and maps NaN to 0x7FC0, as c10::BFloat16(float) does. Both
// are plain integer code the compiler vectorises.
C10_ALWAYS_INLINE void to_float(const c10::BFloat16* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(src[i].x) << 16;
    std::memcpy(dst + i, &bits, sizeof(bits));
  }
}

C10_ALWAYS_INLINE void from_float(const float* src, c10::BFloat16* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, src + i, sizeof(u));
    const uint32_t rounded = (u + UINT32_C(0x7FFF) + ((u >> 16) & 1)) >> 16;
    dst[i].x = static_cast<uint16_t>(src[i] != src[i] ? UINT32_C(0x7FC0) : rounded);
  }
}

C10_ALWAYS_INLINE void to_float(const c10::Half* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = static_cast<float>(src[i]);
  }
}

C10_ALWAYS_INLINE void from_float(const float* src, c10::Half* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = static_cast<c10::Half>(src[i]);
  }
}

#if EXTENSION_CPP_X86_DISPATCH
// float16 with F16C: 8 elements per instruction, rounding to nearest even.
// Out of line (one call per block): a target-specific function can only be
// inlined into a caller compiled for the same target.
EXTENSION_CPP_TARGET_AVX2 inline void to_float_f16c(const c10::Half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) {
    dst[i] = _cvtsh_ss(src[i].x);
  }
}

EXTENSION_CPP_TARGET_AVX2 inline void from_float_f16c(const float* src, c10::Half* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) {
    dst[i].x = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
  }
}
#endif

// ---------------------------------------------------------------------------
// The dense loop, one body for every build.
// ---------------------------------------------------------------------------

// The instruction set a body is compiled for: it picks the float16
// conversions; everything else is the compiler's vectorisation.
enum class Isa { kGeneric, kAvx2, kAvx512 };

// A run's inputs, by their step along it: dense (1), one value repeated
// (0, an expanded input) or, for float32 and float64, every other element
// (2, a [..., ::2] slice). The loops below are compiled once per pattern, so
// each is a plain loop the compiler vectorises; with a constant step of 2 it
// loads two vectors and keeps the even lanes, where a step known only at run
// time leaves one scalar load per element.
template <int64_t kStepA, int64_t kStepB>
struct Pattern {
  static constexpr int64_t a = kStepA, b = kStepB;
};

// Whether the run loop takes an input with this step, for this dtype. Steps of
// 2 are compiled for the types computed as they are stored: float16 and
// bfloat16 gather strided elements into a block instead (strided_loop).
template <typename scalar_t>
constexpr bool run_step_ok(int64_t step) {
  return step == 0 || step == 1 || (step == 2 && std::is_same_v<opmath_t<scalar_t>, scalar_t>);
}

// m <= kBlock float16/bfloat16 elements of x (dense, or x[0] repeated) into
// float.
template <Isa isa, bool kDense, typename scalar_t>
C10_ALWAYS_INLINE void load_block(const scalar_t* src, float* dst, int64_t m) {
  if constexpr (!kDense) {
    const float v = static_cast<float>(src[0]);
    for (int64_t k = 0; k < m; ++k) {
      dst[k] = v;
    }
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
  static_assert(P::a <= 1 && P::b <= 1, "float16/bfloat16 runs are dense or repeated");
  load_block<isa, P::a == 1>(a, x, m);
  load_block<isa, P::b == 1>(b, y, m);
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

// ---------------------------------------------------------------------------
// Whole vectors of float32/float64, for dense and repeated inputs.
//
// With the data in L1 or L2, the shape of the loop shows: the compiler's
// vectorisation of the plain loop stores each vector before it loads the
// next, where ATen's loop loads two vectors of each input before it stores
// either. Timed inside the extension (the kernel alone, float32 add, 2^16
// elements, one thread of the CI machine's Xeon, 62000 calls): 5.82-6.00 us
// per call the compiler's way, 5.66-5.73 us this way, two builds twice each;
// whole calls from Python (scripts/bench_ratios.py, two runs each) went from
// 0.91-0.93 of torch.mul to 0.94, and myadd_out from 0.90 of torch.add(out=)
// to 0.92. Out of L2 (2^20 elements) both loops measure the same. Four
// vectors a step were not kept: GCC interleaved their stores between two
// cache lines, which ran 41% slower (7.86 against 5.57 us, the two store
// orders forced in C++).
// ---------------------------------------------------------------------------

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
// compiler's overlap checks each time). mymul at 1 thread of a 16-core Xeon,
// float32, one call per row -> one per block (an A/B interleaved in one
// process): one transposed input, 1024 x 1024, 1190 -> 772 us (torch.compile
// 797); 256 x 4096, 1018 -> 702 us; rows of 16 elements, 65536 of them,
// row-sliced 1422 -> 507 us and a broadcast row 931 -> 342 us (torch.mul 482
// and 336).
struct Rows {
  int64_t count = 1;
  int64_t out = 0, a = 0, b = 0;
};

// The run loop of one instruction set: out[0, n) = op(a, b) on each row, with
// a's and b's steps along the row (run_step_ok) picked at run time, once.
//
// The rows are walked by stepping the three pointers, not by multiplying the
// row index: one transposed float32 input, 2^20 elements, 1 thread of the
// GPU host's Xeon (GCC 13), mymul took 801-838 us this way against 948-1060
// us with the index (two runs each, same process as torch.mul), and
// mymuladd went from 0.80 to 1.07 of torch.compile in the layout sweep.
//
// Two ways to shorten a tile's 64-element rows were measured and not kept:
// a loop of its own for rows of exactly kTile0 (straight-line rows, no
// remainder code) and `#pragma GCC ivdep` (no run-time overlap checks). With
// both, one transposed float32 input, 2^20 elements, 1 thread: mymul 0.92
// of torch.compile on the GPU host's Xeon (GCC 13) against 1.04 without
// them, and 0.86-0.93 of this code's time on this repository's EPYC.
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
// instruction set whatever its caller's target attribute, and where GCC did
// not inline one here the float16 and bfloat16 loops ran at SSE2 speed
// (contiguous bfloat16 mymuladd in the AVX-512 build, this repository's EPYC:
// 0.32 of torch.compile).
// a's step is fixed (kStepA); b's is picked here.
template <Isa isa, int64_t kStepA, typename scalar_t, typename Op>
C10_ALWAYS_INLINE void run_step_b(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n,
                                  int64_t sb, Rows rows, Op op) {
  if (sb == 1) {
    rows_body<isa, Pattern<kStepA, 1>>(out, a, b, n, rows, op);
  } else if (sb == 0) {
    rows_body<isa, Pattern<kStepA, 0>>(out, a, b, n, rows, op);
  } else if constexpr (run_step_ok<scalar_t>(2)) {
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
  } else if constexpr (run_step_ok<scalar_t>(2)) {
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

// Decided once per process: the CPU has the instructions, and ATen has not
// been told to stay below AVX2 (ATEN_CPU_CAPABILITY=default).
inline bool use_avx2() {
  static const bool yes = [] {
    const std::string capability = cpu_capability();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
           (capability == "AVX2" || capability == "AVX512");
  }();
  return yes;
}
#endif

#if EXTENSION_CPP_X86_DISPATCH && EXTENSION_CPP_AVX512
template <typename scalar_t, typename Op>
EXTENSION_CPP_TARGET_AVX512 void run_avx512(scalar_t* out, const scalar_t* a, const scalar_t* b,
                                            int64_t n, int64_t sa, int64_t sb, Rows rows, Op op) {
  run_dispatch<Isa::kAvx512>(out, a, b, n, sa, sb, rows, op);
}

inline bool use_avx512() {
  static const bool yes = use_avx2() && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && cpu_capability() == "AVX512";
  return yes;
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
#if EXTENSION_CPP_X86_DISPATCH && EXTENSION_CPP_AVX512
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
// broadcast row or column, a [..., ::2] slice of float32) goes to the
// vectorised run loop; any other run (other steps, a transposed input the
// tiled loop below does not take) is read element by element.
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
  const bool vector_run = so == 1 && run_step_ok<scalar_t>(sa) && run_step_ok<scalar_t>(sb);
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

// ---------------------------------------------------------------------------
// Transposed inputs: cache-blocked tiles.
//
// When an input is transposed against the output (the output's innermost
// dimension, dimension 0 of the layout, is not that input's, and its stride-1
// dimension is dimension 1 instead), reading it along the output's order
// touches a new cache line for every element. The tiled loop instead copies
// a tile of it (up to kTileElems elements, kTile0 along dimension 0) into a
// buffer in the output's order, reading along its own rows, and then runs the
// vectorised run loop on buffer rows. Eager PyTorch reads element by element
// here; Inductor tiles, and so must we to match it.
// ---------------------------------------------------------------------------

// kTileElems bounds each buffer to 16 KiB of float32, well inside L1. A tile
// is kTile0 = 64 output elements by 64 input elements: each of the
// transposed input's rows is read 64 elements (256 bytes of float32) at a
// time, which the hardware prefetchers follow, where 256 x 16 read a single
// cache line from each of 256 rows 16 KiB apart. On one transposed input,
// 2^20 elements, this repository's 2-core CPU (scripts/bench_layouts.py),
// mymul at 1 thread: float32 522-542 us against 609-658, bfloat16 309-318
// against 404, float16 305-318 against 422; kTile0 = 128 and 32 were slower.
constexpr int64_t kTile0 = 64;
constexpr int64_t kTileElems = 4096;

#if EXTENSION_CPP_X86_DISPATCH
// One 16-byte block of rows transposed in registers (SSE2, which every x86-64
// CPU has, so no run-time dispatch): 4 x 4 elements of 4 bytes, or 8 x 8 of 2
// bytes. Row k of the block starts at src + k * src_stride, and column j of
// it is stored at dst + j * dst_stride. Shuffles move bits, so any 4- or
// 2-byte type goes through unchanged, NaN payloads included.
C10_ALWAYS_INLINE void transpose_block(uint32_t* dst, int64_t dst_stride, const uint32_t* src,
                                       int64_t src_stride) {
  __m128 r0 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
  __m128 r1 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + src_stride)));
  __m128 r2 =
      _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * src_stride)));
  __m128 r3 =
      _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 3 * src_stride)));
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  const __m128 cols[4] = {r0, r1, r2, r3};
  for (int j = 0; j < 4; ++j) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j * dst_stride), _mm_castps_si128(cols[j]));
  }
}

C10_ALWAYS_INLINE void transpose_block(uint16_t* dst, int64_t dst_stride, const uint16_t* src,
                                       int64_t src_stride) {
  __m128i r[8];
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k * src_stride));
  }
  // Interleave 2-, then 4-, then 8-byte pieces of row pairs: after the
  // three steps, register j holds column j.
  __m128i t[8], u[8];
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm_unpacklo_epi16(r[2 * k], r[2 * k + 1]);      // columns 0-3 of rows 2k, 2k+1
    t[k + 4] = _mm_unpackhi_epi16(r[2 * k], r[2 * k + 1]);  // columns 4-7
  }
  for (int h = 0; h < 2; ++h) {    // h: columns 0-3 or 4-7
    for (int q = 0; q < 2; ++q) {  // q: rows 0-3 or 4-7
      const __m128i x = t[4 * h + 2 * q], y = t[4 * h + 2 * q + 1];
      u[4 * h + q] = _mm_unpacklo_epi32(x, y);      // columns 4h, 4h+1 of four rows
      u[4 * h + q + 2] = _mm_unpackhi_epi32(x, y);  // columns 4h+2, 4h+3
    }
  }
  for (int p = 0; p < 4; ++p) {                      // p: a pair of columns, 2p and 2p+1
    const __m128i lo = u[2 * p], hi = u[2 * p + 1];  // rows 0-3, rows 4-7
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * p * dst_stride),
                     _mm_unpacklo_epi64(lo, hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * p + 1) * dst_stride),
                     _mm_unpackhi_epi64(lo, hi));
  }
}
#endif

// dst[i1 * m0 + i0] = src[i0 * s0 + i1] for i0 < m0, i1 < m1: an m0 x m1
// block of rows of src, transposed into m1 rows of m0.
//
// On x86-64, 4- and 2-byte types go 16 bytes at a time (transpose_block).
// With one transposed input, 2^20 elements, 1 thread of a 16-core Xeon
// (scripts/bench_layouts.py, two runs each), mymul took 791-822 us against
// 989-1031 us with the element loop below in float32, 446-489 against
// 710-717 in bfloat16, and 366-400 against 575-645 in float16. Elsewhere, and
// for what the blocks leave over, eight source rows at a time, so each step
// writes eight neighbouring elements of dst while reading eight rows in order
// (one row at a time wrote a single element into each of m1 rows): on this
// repository's 2-core CPU that took mymul from 461-513 us to 404 us in
// bfloat16 and from 439-465 to 422 us in float16.
template <typename scalar_t>
C10_ALWAYS_INLINE void transpose_into(scalar_t* dst, const scalar_t* src, int64_t m0, int64_t m1,
                                      int64_t s0) {
  int64_t i0 = 0;
#if EXTENSION_CPP_X86_DISPATCH
  if constexpr (sizeof(scalar_t) == 4 || sizeof(scalar_t) == 2) {
    using Bits = std::conditional_t<sizeof(scalar_t) == 4, uint32_t, uint16_t>;
    constexpr int64_t kB = 16 / sizeof(scalar_t);
    auto* d = reinterpret_cast<Bits*>(dst);
    const auto* x = reinterpret_cast<const Bits*>(src);
    for (; i0 + kB <= m0; i0 += kB) {
      int64_t i1 = 0;
      for (; i1 + kB <= m1; i1 += kB) {
        transpose_block(d + i1 * m0 + i0, m0, x + i0 * s0 + i1, s0);
      }
      for (; i1 < m1; ++i1) {
        for (int64_t k = 0; k < kB; ++k) {
          dst[i1 * m0 + i0 + k] = src[(i0 + k) * s0 + i1];
        }
      }
    }
  }
#endif
  constexpr int64_t kRows = 8;
  for (; i0 + kRows <= m0; i0 += kRows) {
    const scalar_t* rows = src + i0 * s0;
    for (int64_t i1 = 0; i1 < m1; ++i1) {
      scalar_t* d = dst + i1 * m0 + i0;
      for (int64_t k = 0; k < kRows; ++k) {
        d[k] = rows[k * s0 + i1];
      }
    }
  }
  for (; i0 < m0; ++i0) {
    for (int64_t i1 = 0; i1 < m1; ++i1) {
      dst[i1 * m0 + i0] = src[i0 * s0 + i1];
    }
  }
}

#if EXTENSION_CPP_X86_DISPATCH && EXTENSION_CPP_AVX512
// ---------------------------------------------------------------------------
// One transposed float32 input beside a dense one, with AVX-512: no buffer.
//
// Sixteen float32 are one 64-byte cache line and one 512-bit register, so a
// 16 x 16 block of the transposed input is sixteen whole lines, transposed
// in registers and combined with sixteen rows of the other input at once,
// as Inductor's kernel for `a * b` does. The loop walks sixteen output rows
// along their whole length: out and the dense input are 32 long sequential
// streams, which the hardware prefetchers follow, and each line of the
// transposed input is read once, all of it used.
//
// The buffered tiles above fall behind torch.compile once the operands no
// longer fit in cache. mymul, one transposed float32 input, 1 thread, in
// one process with the same code's 64 x 64 tiles (scratch build picking the
// path at run time, scripts/bench_layouts.py's layouts; medians; these
// before the pointer walk of transposed_rows_avx512, which only made the
// loop faster):
//   * 2048 x 2048 (2^22), this repository's 2-core Xeon: 4663 and 4704 us
//     against 7027 and 7204 with the tiles; torch.compile 4456 and 4811.
//   * 512 x 512 (2^18), the GPU host's Xeon: 206 us against 232 (torch.compile
//     288); at 16 threads 2^20: 67 against 79 us, 2^22: 385 against 395,
//     2^24: 8608 against 8938 (torch.compile 114, 510 and 8618).
// With the walk, myadd_out at 2^22 and 1 thread on the GPU host's Xeon,
// fastest batch of three runs: 2682-6463 us against 3529-8702 for the tiles
// and 2717-6061 for Inductor's own kernel on the same tensors.
// Kept in registers: the same loop with the transposed block stored to a
// stack array and reloaded row by row (the compiler's choice until the loops
// were unrolled) took 4.4-6.7 ms against Inductor's 3.6-4.0 at 2^22 on the
// 2-core Xeon. Not kept: rows 32 at a time (64 streams: 4.9-5.2 ms),
// shorter runs of 512 or 256 columns (4.7-4.8 and 5.5-6.8 ms), software
// prefetch of the transposed lines 2 to 8 blocks ahead (7.2-9.1 ms), and
// AVX2's 8 x 8 blocks (16 rows as two blocks, or 8 rows as Inductor does on
// AVX2), which on the GPU host's Xeon at 2^22 took 5.6-6.1 ms against
// 4.2-5.0 ms for the tiles. CPUs without AVX-512 keep the tiles, which lead
// torch.compile's own AVX2 code there: with ATEN_CPU_CAPABILITY=avx2 (which
// Inductor follows too), 1.7-2.2x at 2^20 and 2^22 on the GPU host's Xeon
// and 1.9-2.2x on the 2-core one.
// ---------------------------------------------------------------------------

// Rows of a 16 x 16 float32 block in r[0..15] become its columns: 32-bit,
// then 64-bit interleaves within each 128-bit lane, then two exchanges of
// 128-bit lanes. Shuffles move bits, so values pass through unchanged.
EXTENSION_CPP_TARGET_AVX512 C10_ALWAYS_INLINE void transpose_16x16(__m512 r[16]) {
  __m512 t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // t[2i], t[2i+1]: rows 2i and 2i+1 interleaved
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // u[4i + c], lane L: column 4L + c of rows 4i..4i+3
    const __m512d lo0 = _mm512_castps_pd(t[4 * i]), hi0 = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d lo1 = _mm512_castps_pd(t[4 * i + 2]), hi1 = _mm512_castps_pd(t[4 * i + 3]);
    u[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo0, lo1));
    u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo0, lo1));
    u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi0, hi1));
    u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi0, hi1));
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {  // lane L of u[c], u[4 + c], ... -> r[4L + c]
    const __m512 p0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44);
    const __m512 p1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xEE);
    const __m512 p2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44);
    const __m512 p3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xEE);
    r[c] = _mm512_shuffle_f32x4(p0, p2, 0x88);
    r[4 + c] = _mm512_shuffle_f32x4(p0, p2, 0xDD);
    r[8 + c] = _mm512_shuffle_f32x4(p1, p3, 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(p1, p3, 0xDD);
  }
}

// An empty asm statement that may change p, as far as the compiler knows:
// each row's address is then the previous one plus the stride, not one of
// sixteen row pointers per operand computed once. Without it GCC (12, on
// this repository's machine) precomputes those 48 pointers, keeps them on
// the stack and in vector registers and reloads them every block: 330
// instructions in the function against 193 (objdump), and on the GPU host's
// Xeon (GCC 13) at 2^22 elements and 1 thread myadd_out took 2943-8059 us
// against 2682-6463 this way, in three runs timed alternately with
// Inductor's own kernel for `a + b` on the same tensors (2717-6061 us; the
// host's load changed between the runs).
template <typename T>
C10_ALWAYS_INLINE void opaque(T*& p) {
  asm("" : "+r"(p));
}

// How far ahead of the block, in floats, transposed_rows_avx512 asks for
// each output row's line: four blocks. Without the prefetch, float32 one
// transposed at 1 thread on the 2-core Xeon took `mymul` 791-816 us on
// 1000 x 1048 and `myadd_out` into an output allocated once 808-824, against
// 511-515 and 503-511 with it (992 x 1048: 815-819 against 542-549; 1024 x
// 1024 within the noise, 601-664 against 623-636). 128 or 256 floats ahead,
// or the dense input's rows prefetched as well, were slower; the dense
// input's rows alone changed nothing.
constexpr int64_t kOutPrefetch = 64;

// z = op(dense, tr) lane by lane, or op(tr, dense) when the transposed input
// is a (kTransposedA). Vectors pass by reference, as in op_lanes: this
// function has no AVX-512 target of its own.
template <bool kTransposedA, typename V, typename Op>
C10_ALWAYS_INLINE void combine(V& z, const V& dense, const V& tr, Op op) {
  if constexpr (kTransposedA) {
    op_lanes(z, tr, dense, op);
  } else {
    op_lanes(z, dense, tr, op);
  }
}

// 16 rows of out, `cols` (a multiple of 16) long: out[r * so + k] =
// op(dense[r * sd + k], tr[k * st + r]), or op(tr, dense) when the transposed
// input is a (kTransposedA). The 16-lane loop of op compiles to one vector
// instruction per arithmetic operation (fp-contract=off, as in every body:
// a * b + c stays two roundings, as in PyTorch). out may be exactly the dense
// input: each row is read before it is written.
template <bool kTransposedA, typename Op>
EXTENSION_CPP_TARGET_AVX512 void transposed_rows_avx512(float* out, int64_t so, const float* dense,
                                                        int64_t sd, const float* tr, int64_t st,
                                                        int64_t cols, Op op) {
  typedef float V __attribute__((vector_size(64)));
  for (int64_t k = 0; k < cols; k += 16) {
    __m512 r[16];
    const float* t = tr + k * st;
#pragma GCC unroll 16
    for (int q = 0; q < 16; ++q) {  // rows k..k+15 of the transposed input's storage
      r[q] = _mm512_loadu_ps(t);
      t += st;
      opaque(t);
    }
    transpose_16x16(r);  // r[q]: tr[k * st + q] ... tr[(k + 15) * st + q], output row q
    const float* x = dense + k;
    float* o = out + k;
#pragma GCC unroll 16
    for (int q = 0; q < 16; ++q) {
      _mm_prefetch(reinterpret_cast<const char*>(o + kOutPrefetch), _MM_HINT_T0);
      const V xq = (V)_mm512_loadu_ps(x), yq = (V)r[q];
      V z;
      combine<kTransposedA>(z, xq, yq, op);
      _mm512_storeu_ps(o, (__m512)z);
      x += sd;
      o += so;
      opaque(x);
      opaque(o);
    }
  }
}

// The part of one block at a tile's edge: `rows` rows of out (at most 16)
// and `cols` columns (at most 16), through masked loads and stores, which
// touch no memory in the lanes they leave out. Done element by element,
// the edges took `mymul` on a 24 x 43690 output (a block and a half high)
// to 544-575 us against 448-451 this way, and torch.compile's 506-528
// (float32, 1 thread, a 2-core Xeon).
template <bool kTransposedA, typename Op>
EXTENSION_CPP_TARGET_AVX512 void transposed_edge_avx512(float* out, int64_t so, const float* dense,
                                                        int64_t sd, const float* tr, int64_t st,
                                                        int rows, int cols, Op op) {
  typedef float V __attribute__((vector_size(64)));
  const __mmask16 row_lanes = static_cast<__mmask16>((1u << rows) - 1);
  const __mmask16 col_lanes = static_cast<__mmask16>((1u << cols) - 1);
  __m512 r[16];
  for (int q = 0; q < 16; ++q) {  // storage row q of the block is column q of out
    r[q] = q < cols ? _mm512_maskz_loadu_ps(row_lanes, tr + q * st) : _mm512_setzero_ps();
  }
  transpose_16x16(r);
  for (int q = 0; q < rows; ++q) {
    const V xq = (V)_mm512_maskz_loadu_ps(col_lanes, dense + q * sd), yq = (V)r[q];
    V z;
    combine<kTransposedA>(z, xq, yq, op);
    _mm512_mask_storeu_ps(out + q * so, col_lanes, (__m512)z);
  }
}

// One tile of `rows` (at most 16) rows of out, `cols` long: whole 16 x 16
// blocks in one call of transposed_rows_avx512, the columns past the last
// multiple of 16, and every block of a tile short of 16 rows, a masked block
// at a time.
template <bool kTransposedA, typename Op>
void transposed_tile_avx512(float* out, int64_t so, const float* dense, int64_t sd, const float* tr,
                            int64_t st, int64_t cols, int64_t rows, Op op) {
  const int64_t whole = rows == 16 ? cols / 16 * 16 : 0;
  if (whole > 0) {
    transposed_rows_avx512<kTransposedA>(out, so, dense, sd, tr, st, whole, op);
  }
  for (int64_t k = whole; k < cols; k += 16) {
    transposed_edge_avx512<kTransposedA>(out + k, so, dense + k, sd, tr + k * st, st,
                                         static_cast<int>(rows),
                                         static_cast<int>(std::min<int64_t>(16, cols - k)), op);
  }
}
#endif

// Whether tiled_loop runs this layout through transposed_rows_avx512: float32
// on an AVX-512 CPU (and ATen allowing it), exactly one transposed input, the
// other dense along dimension 0, and at least a 16 x 16 block.
template <typename scalar_t>
bool use_transposed_rows(const BinaryLayout& l) {
#if EXTENSION_CPP_X86_DISPATCH && EXTENSION_CPP_AVX512
  if constexpr (std::is_same_v<scalar_t, float>) {
    const bool t1 = transposed_input(l, 1), t2 = transposed_input(l, 2);
    return t1 != t2 && l.strides[t1 ? 2 : 1][0] == 1 && l.sizes[0] >= 16 && l.sizes[1] >= 16 &&
           use_avx512();
  }
#endif
  (void)l;
  return false;
}

// Columns of out per tile of the unbuffered path: 16 rows of 2048 float32
// are kGrainSize elements, one tile per parallel chunk at the least.
constexpr int64_t kRowsTileCols = 2048;

template <typename scalar_t, typename Op>
void tiled_loop(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                RunFn<scalar_t, Op> run_fn, Op op) {
  const int64_t n0 = l.sizes[0], n1 = l.sizes[1];
  const bool rows16 = use_transposed_rows<scalar_t>(l);
  const int64_t t0 = std::min(n0, rows16 ? kRowsTileCols : kTile0);
  const int64_t t1 = rows16 ? 16 : std::min(n1, kTileElems / t0);
  const int64_t tiles0 = (n0 + t0 - 1) / t0, tiles1 = (n1 + t1 - 1) / t1;
  const int64_t outer = l.numel / (n0 * n1);  // product of dimensions 2 and up
  const int64_t grain = std::max<int64_t>(1, kGrainSize / (t0 * t1));
  // Per operand (0: out, 1: a, 2: b): whether it is read through a buffer,
  // and its step along dimension 0 in what the run loop reads.
  const bool buffered[3] = {false, transposed_input(l, 1), transposed_input(l, 2)};
  const scalar_t* inputs[3] = {nullptr, a, b};
  const int64_t step[3] = {1, buffered[1] ? 1 : l.strides[1][0], buffered[2] ? 1 : l.strides[2][0]};
  // When a tile spans all of dimension 0 and out and every unbuffered input
  // continue from one row to the next (a channels_last input read into the
  // layout of a contiguous one, say), its rows form one run.
  auto continues = [&](int t) {
    return buffered[t] || (l.strides[t][0] == 1 && l.strides[t][1] == n0) ||
           (l.strides[t][0] == 0 && l.strides[t][1] == 0);
  };
  const bool whole_rows = t0 == n0 && continues(0) && continues(1) && continues(2);
  parallel_for(0, outer * tiles1 * tiles0, grain, [&](int64_t begin, int64_t end) {
    scalar_t buf[2][kTileElems];  // buf[t - 1] holds input t's tile
    for (int64_t tile = begin; tile < end; ++tile) {
      // Which tile: dimension 0 fastest, then 1, then the outer dimensions.
      const int64_t j0 = (tile % tiles0) * t0;
      const int64_t j1 = (tile / tiles0 % tiles1) * t1;
      int64_t rest = tile / (tiles0 * tiles1);
      int64_t base[3] = {0, 0, 0};
      for (int d = 2; d < l.ndim; ++d) {
        const int64_t i = rest % l.sizes[d];
        rest /= l.sizes[d];
        for (int t = 0; t < 3; ++t) {
          base[t] += i * l.strides[t][d];
        }
      }
      const int64_t m0 = std::min(t0, n0 - j0), m1 = std::min(t1, n1 - j1);
      scalar_t* out_tile = out + base[0] + j1 * l.strides[0][1] + j0;
      // The tile's first element in input t.
      auto origin = [&](int t) {
        return inputs[t] + base[t] + j0 * l.strides[t][0] + j1 * l.strides[t][1];
      };
#if EXTENSION_CPP_X86_DISPATCH && EXTENSION_CPP_AVX512
      if constexpr (std::is_same_v<scalar_t, float>) {
        if (rows16) {
          const int tr = buffered[1] ? 1 : 2, dn = 3 - tr;
          const auto tile_fn =
              tr == 1 ? &transposed_tile_avx512<true, Op> : &transposed_tile_avx512<false, Op>;
          tile_fn(out_tile, l.strides[0][1], origin(dn), l.strides[dn][1], origin(tr),
                  l.strides[tr][0], m0, m1, op);
          continue;
        }
      }
#endif
      for (int t = 1; t < 3; ++t) {
        if (!buffered[t]) {
          continue;
        }
        // Rows of the input (stride 1 along dimension 1) into columns of the
        // buffer, which is laid out as the tile of the output: m1 rows of m0.
        transpose_into(buf[t - 1], origin(t), m0, m1, l.strides[t][0]);
      }
      // The tile's first row in input t or its buffer, and the step from one
      // row to the next.
      auto first_row = [&](int t) { return buffered[t] ? buf[t - 1] : origin(t); };
      auto row_step = [&](int t) { return buffered[t] ? m0 : l.strides[t][1]; };
      if (whole_rows) {  // the tile is one dense run in out, the buffers and the other input
        run_fn(out_tile, first_row(1), first_row(2), m0 * m1, step[1], step[2], Rows{}, op);
        continue;
      }
      run_fn(out_tile, first_row(1), first_row(2), m0, step[1], step[2],
             Rows{m1, l.strides[0][1], row_step(1), row_step(2)}, op);
    }
  });
}

template <typename scalar_t, typename Op>
void binary_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                   Op op) {
  const RunFn<scalar_t, Op> run_fn = pick_run<scalar_t, Op>();
  if (l.contiguous()) {
    if (l.numel < kGrainSize) {  // skip parallel_for's bookkeeping for small calls
      run_fn(out, a, b, l.numel, 1, 1, Rows{}, op);
      return;
    }
    parallel_for(0, l.numel, kGrainSize, [&](int64_t begin, int64_t end) {
      run_fn(out + begin, a + begin, b + begin, end - begin, 1, 1, Rows{}, op);
    });
  } else if (use_tiles(l)) {
    tiled_loop(out, a, b, l, run_fn, op);
  } else {
    parallel_for(0, l.numel, kGrainSize, [&](int64_t begin, int64_t end) {
      strided_loop(out, a, b, l, begin, end, run_fn, op);
    });
  }
}

}  // namespace extension_cpp::cpu
