// Which x86 instruction sets the fast CPU loops may use, decided at run time.
//
// The wheel is compiled for the x86-64 baseline (SSE2), so it loads on any
// x86-64 CPU. Loops that gain from wider vectors are compiled a second and
// third time under a target attribute (AVX2 with F16C; AVX-512 with GCC), and
// the best level the CPU has is picked once per process, capped by ATen's own
// CPU capability (torch.backends.cpu.get_cpu_capability(), which follows the
// ATEN_CPU_CAPABILITY environment variable): ATEN_CPU_CAPABILITY=default runs
// and tests the baseline loops on any machine. See Note [No FMA] (docs'
// design notes) for why no level fuses a * b + c.
#pragma once

#include <cctype>
#include <cstdlib>
#include <string>

#if defined(__GNUC__) && defined(__x86_64__)
#define EXTENSION_CPP_X86_DISPATCH 1
// GCC's AVX-512 intrinsics fill their "undefined" operands by a
// deliberate self-initialisation, which its -Wuninitialized reports where
// the build keeps line tables only (-g1, build_options.py): a false positive
// about the header's own code, silenced for the header alone.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
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
#define EXTENSION_CPP_AVX512 0
#endif

#ifndef TORCH_TARGET_VERSION
#include <ATen/Version.h>
#endif

namespace extension_cpp::fast::cpu {

// The instruction set a loop body is compiled for.
enum class Isa { kGeneric, kAvx2, kAvx512 };

// The highest instruction set ATen allows: "AVX512", "AVX2", "DEFAULT", ...
// The stable ABI has no call for it, so the stable build reads the
// environment variable that sets ATen's, as ATen does.
inline std::string cpu_capability() {
#ifdef TORCH_TARGET_VERSION
  const char* setting = std::getenv("ATEN_CPU_CAPABILITY");
  std::string capability = setting == nullptr ? "AVX512" : setting;
  for (char& ch : capability) {
    ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  return capability;
#else
  return at::get_cpu_capability();
#endif
}

#if EXTENSION_CPP_X86_DISPATCH
// The CPU has AVX2 and F16C, and ATen has not been held below AVX2.
inline bool use_avx2() {
  static const bool yes = [] {
    const std::string capability = cpu_capability();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
           (capability == "AVX2" || capability == "AVX512");
  }();
  return yes;
}
#endif

#if EXTENSION_CPP_AVX512
inline bool use_avx512() {
  static const bool yes = use_avx2() && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && cpu_capability() == "AVX512";
  return yes;
}
#endif

}  // namespace extension_cpp::fast::cpu
