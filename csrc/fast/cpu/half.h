// float16 and bfloat16 to and from float, a block of elements at a time.
//
// The fast loops compute float16 and bfloat16 in float, as PyTorch does: a
// block of each input is widened into a float buffer that stays in L1, the
// op runs on the buffers, and the result is rounded back to nearest even,
// exactly as c10::Half and c10::BFloat16 round. Converting a block at once
// lets the compiler vectorise what c10's types do one element at a time
// (see Note [Half conversions] in the docs' design notes).
#pragma once

#include <cstdint>
#include <cstring>

#include "../../elementwise.h"
#include "isa.h"

namespace extension_cpp::fast::cpu {

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

}  // namespace extension_cpp::fast::cpu
