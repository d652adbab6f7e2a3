// What the CPU loop (elementwise_cpu.h) needs from torch at run time, for
// either binding: the intra-op thread pool and ATen's CPU capability.
//
// The classic build calls ATen directly. The stable-ABI build
// (TORCH_TARGET_VERSION defined) may not include ATen: it reaches the same
// thread pool through torch::stable::parallel_for, a C shim call per chunk,
// and reads the capability from the environment variable that sets ATen's.
#pragma once

#include <cstdint>
#include <string>

#ifdef TORCH_TARGET_VERSION
#include <torch/csrc/stable/ops.h>

#include <cctype>
#include <cstdlib>
#else
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#endif

namespace extension_cpp::cpu {

// f(begin, end) over [begin, end) in chunks of at least `grain`, on the
// threads torch.get_num_threads() says.
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
#ifdef TORCH_TARGET_VERSION
  torch::stable::parallel_for(begin, end, grain, f);
#else
  at::parallel_for(begin, end, grain, f);
#endif
}

// The highest instruction set ATen allows: "AVX512", "AVX2", "DEFAULT", ...
// (torch.backends.cpu.get_cpu_capability()). The stable ABI has no call for
// it, so the stable build honours ATEN_CPU_CAPABILITY as ATen does and
// otherwise leaves the choice to the CPU's own flags (elementwise_cpu.h
// checks those either way).
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

}  // namespace extension_cpp::cpu
