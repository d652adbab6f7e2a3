// Launch settings and the launch check, for every CUDA kernel and either
// binding: the simple kernel (csrc/cuda/) and the tuned ones (csrc/fast/cuda/).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace extension_cpp {

// Threads per block, in every kernel.
constexpr int kThreads = 256;

// Two caps on a grid's blocks, for two launch shapes:
//   * kGridStrideBlocks: the simple kernel's grid-stride loop. Enough blocks
//     to fill any GPU many times over; past that, each thread takes several
//     elements rather than the grid growing.
//   * kMaxGridBlocks: kernels that give each thread one vector of work and
//     size the grid to it (the fast contiguous kernel: one 16-byte vector per
//     thread is the shape it is tuned for, Note [CUDA block shape]). The
//     largest power of two under CUDA's limit of 2^31 - 1 blocks along x;
//     their grid-stride loop covers only what lies beyond it.
constexpr int64_t kGridStrideBlocks = 65536;
constexpr int64_t kMaxGridBlocks = int64_t{1} << 30;

// One block per kThreads items of work, at least one and at most `cap`.
inline int64_t blocks_for(int64_t work, int64_t cap) {
  return std::max<int64_t>(1, std::min((work + kThreads - 1) / kThreads, cap));
}

// Throws std::runtime_error, which either binding turns into a Python
// RuntimeError, if the last kernel launch failed.
inline void check_launch() {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA kernel launch: ") + cudaGetErrorString(error));
  }
}

}  // namespace extension_cpp
