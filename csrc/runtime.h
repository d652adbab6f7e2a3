// The intra-op thread pool, for every CPU loop and either binding: the simple
// loop (csrc/cpu/) and the tuned ones (csrc/fast/cpu/) split their work with
// parallel_for, which follows torch.get_num_threads().
//
// The classic build calls ATen's at::parallel_for. The stable-ABI build
// (TORCH_TARGET_VERSION defined) may not include ATen: it reaches the same
// thread pool through torch::stable::parallel_for, a C shim call per chunk.
#pragma once

#include <cstdint>

#ifdef TORCH_TARGET_VERSION
#include <torch/csrc/stable/ops.h>
#else
#include <ATen/Parallel.h>
#endif

namespace extension_cpp {

// Below this many elements a call runs on the calling thread: handing work
// to the thread pool costs more than the loop (ATen's grain size).
constexpr int64_t kGrainSize = 32768;

// f(begin, end) over [begin, end) in chunks of at least `grain`.
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
#ifdef TORCH_TARGET_VERSION
  torch::stable::parallel_for(begin, end, grain, f);
#else
  at::parallel_for(begin, end, grain, f);
#endif
}

}  // namespace extension_cpp
