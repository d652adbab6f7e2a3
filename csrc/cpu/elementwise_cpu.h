// The CPU elementwise loop: out[i] = op(a[i], b[i]) over a BinaryLayout.
//
// Takes raw pointers and the merged layout, so it does not depend on the
// binding. Work is split with at::parallel_for, which follows
// torch.get_num_threads(). Anything that is not one dense run walks the
// strides, innermost dimension first, one element at a time.
//
// Dense runs take a vectorised loop, compiled up to three times from one body:
//   * generic: the x86-64 baseline (SSE2) the wheel is built for, and every
//     other architecture;
//   * avx2: under __attribute__((target("avx2,f16c")));
//   * avx512 (GCC only): AVX-512F/BW/VL, for bfloat16 only (see
//     binary_kernel: the other dtypes are faster at 256 bits).
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

#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <c10/macros/Macros.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

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

#include "../elementwise.h"

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

// One block of m <= kBlock float16/bfloat16 elements, through float buffers.
template <Isa isa, typename scalar_t, typename Op>
C10_ALWAYS_INLINE void reduced_block(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t m,
                                     Op op) {
  float x[kBlock], y[kBlock];
  constexpr bool kHalf = std::is_same_v<scalar_t, c10::Half>;
#if EXTENSION_CPP_X86_DISPATCH
  if constexpr (kHalf && isa == Isa::kAvx2) {
    to_float_f16c(a, x, m);
    to_float_f16c(b, y, m);
  } else
#endif
  {
    to_float(a, x, m);
    to_float(b, y, m);
  }
  for (int64_t k = 0; k < m; ++k) {
    x[k] = op(x[k], y[k]);
  }
#if EXTENSION_CPP_X86_DISPATCH
  if constexpr (kHalf && isa == Isa::kAvx2) {
    from_float_f16c(x, out, m);
  } else
#endif
  {
    from_float(x, out, m);
  }
}

// out, a, b: n dense elements each. out may be exactly a or b: each element
// (each block, for float16/bfloat16) is read before it is written.
template <Isa isa, typename scalar_t, typename Op>
C10_ALWAYS_INLINE void contiguous_body(scalar_t* out, const scalar_t* a, const scalar_t* b,
                                       int64_t n, Op op) {
  using T = at::opmath_type<scalar_t>;
  if constexpr (std::is_same_v<T, scalar_t>) {
    for (int64_t i = 0; i < n; ++i) {
      out[i] = op(a[i], b[i]);
    }
  } else {
    static_assert(std::is_same_v<T, float>, "reduced-precision types compute in float");
    int64_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {  // full blocks: a constant trip count
      reduced_block<isa>(out + i, a + i, b + i, kBlock, op);
    }
    if (i < n) {
      reduced_block<isa>(out + i, a + i, b + i, n - i, op);
    }
  }
}

template <typename scalar_t, typename Op>
void contiguous_generic(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n, Op op) {
  contiguous_body<Isa::kGeneric>(out, a, b, n, op);
}

#if EXTENSION_CPP_X86_DISPATCH
template <typename scalar_t, typename Op>
EXTENSION_CPP_TARGET_AVX2 void contiguous_avx2(scalar_t* out, const scalar_t* a, const scalar_t* b,
                                               int64_t n, Op op) {
  contiguous_body<Isa::kAvx2>(out, a, b, n, op);
}

// Decided once per process: the CPU has the instructions, and ATen has not
// been told to stay below AVX2 (ATEN_CPU_CAPABILITY=default).
inline bool use_avx2() {
  static const bool yes = [] {
    const std::string capability = at::get_cpu_capability();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
           (capability == "AVX2" || capability == "AVX512");
  }();
  return yes;
}
#endif

#if EXTENSION_CPP_X86_DISPATCH && EXTENSION_CPP_AVX512
template <typename scalar_t, typename Op>
EXTENSION_CPP_TARGET_AVX512 void contiguous_avx512(scalar_t* out, const scalar_t* a,
                                                   const scalar_t* b, int64_t n, Op op) {
  contiguous_body<Isa::kAvx512>(out, a, b, n, op);
}

inline bool use_avx512() {
  static const bool yes =
      use_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && at::get_cpu_capability() == "AVX512";
  return yes;
}
#endif

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
  if (!l.contiguous()) {
    at::parallel_for(0, l.numel, kGrainSize, [&](int64_t begin, int64_t end) {
      strided_loop(out, a, b, l, begin, end, op);
    });
    return;
  }
  auto loop = &contiguous_generic<scalar_t, Op>;
#if EXTENSION_CPP_X86_DISPATCH
  if (use_avx2()) {
    loop = &contiguous_avx2<scalar_t, Op>;
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
      loop = &contiguous_avx512<scalar_t, Op>;
    }
  }
#endif
  if (l.numel < kGrainSize) {  // skip parallel_for's bookkeeping for small calls
    loop(out, a, b, l.numel, op);
    return;
  }
  at::parallel_for(0, l.numel, kGrainSize, [&](int64_t begin, int64_t end) {
    loop(out + begin, a + begin, b + begin, end - begin, op);
  });
}

}  // namespace extension_cpp::cpu
