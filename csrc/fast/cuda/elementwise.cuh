// The fast CUDA kernels, and the one place that picks among them.
//
// csrc/loops.cuh calls elementwise() below when the build has the fast
// kernels (EXTENSION_CPP_KERNELS=fast, the default). The layout is
// merged in the output's memory order first (csrc/elementwise.h), so inputs
// that share the output's dense layout (contiguous, transposed,
// channels_last, any permutation) are one dense run. Each path is its own
// unit:
//   * one aligned dense run: 16-byte vectors, vectorized.cuh;
//   * an input transposed against an output whose dimension 0 is 4 to 16
//     bytes: a thread's 16 bytes of output, narrow.cuh;
//   * an input of a 2-byte type transposed against the output, offsets in
//     32 bits: 32 x 64 shared-memory tiles, tiles32.cuh;
//   * other inputs transposed against the output: shared-memory tiles,
//     tiles.cuh;
//   * one misaligned dense run of a 4-byte type: a few elements a thread,
//     strided32.cuh;
//   * rows of at least half a block's chunk (slices, broadcasts, a
//     misaligned start): rows.cuh; of them, a 2-byte type's broadcast row
//     or column beside dense rows: broadcast.cuh;
//   * shorter rows: 32-bit index math, strided32.cuh.
// Past 2^31 elements or offsets it takes only dense runs, and leaves the rest
// to the plain kernel.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../../elementwise.h"
#include "../../runtime.cuh"
#include "../layout.h"
#include "broadcast.cuh"
#include "narrow.cuh"
#include "rows.cuh"
#include "strided32.cuh"
#include "tiles.cuh"
#include "tiles32.cuh"
#include "vectorized.cuh"

namespace extension_cpp::fast::cuda {

// Launches out = op(a, b) over the layout on `stream` and checks the launch;
// returns false, having launched nothing, where the simple kernel must run
// instead.
template <typename scalar_t, typename Op>
bool elementwise(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& layout,
                 Op op, cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(scalar_t);
  const int64_t n = layout.numel;
  if (n == 0) {
    return true;  // nothing to launch
  }
  const bool aligned = aligned_to(out, 16) && aligned_to(a, 16) && aligned_to(b, 16);
  if (layout.contiguous() && aligned) {
    contiguous_kernel<scalar_t, kVec>
        <<<blocks_for(n / kVec, kMaxGridBlocks), kThreads, 0, stream>>>(out, a, b, n, op);
  } else if (use_tiles(layout) && layout.ndim <= kFewDims) {
    const bool in_32_bits = fits_32_bits(layout);
    if (!narrow(out, a, b, layout, in_32_bits, op, stream) &&
        !tiles32(out, a, b, layout, in_32_bits, op, stream)) {
      launch_tiled(out, a, b, layout, op, stream);
    }
  } else if (sizeof(scalar_t) == 4 && layout.contiguous() && fits_32_bits(layout)) {
    launch_unaligned(out, a, b, n, op, stream);
  } else if (fits_32_bits(layout)) {  // other misaligned dense runs come here too
    // Rows of half a chunk and more take the row path; with shorter ones
    // most threads of a block would idle.
    if (layout.ndim >= 1 && layout.ndim <= kFewDims && layout.sizes[0] >= kThreads * kVec / 2) {
      if (!broadcast(out, a, b, layout, op, stream)) {
        launch_rows<scalar_t, kVec>(out, a, b, layout, op, stream);
      }
    } else {
      const int64_t blocks = (n + kThreads * kWork - 1) / (kThreads * kWork);
      strided32_kernel<<<blocks, kThreads, 0, stream>>>(out, a, b, to_32_bits(layout),
                                                        static_cast<uint32_t>(n), op);
    }
  } else if (layout.contiguous()) {
    contiguous_kernel<scalar_t, 1>
        <<<blocks_for(n, kMaxGridBlocks), kThreads, 0, stream>>>(out, a, b, n, op);
  } else {
    return false;
  }
  check_launch();
  return true;
}

}  // namespace extension_cpp::fast::cuda
