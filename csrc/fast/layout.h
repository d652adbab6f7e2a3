// Which fast path a merged layout (elementwise.h) takes: the tests the CPU
// and CUDA fast paths share.
#pragma once

#include "../elementwise.h"

namespace extension_cpp::fast {

// A transposed input: the output's innermost dimension (dimension 0 of the
// layout) is not the input's, whose stride-1 dimension is dimension 1
// instead. Reading it in the output's order touches a new cache line (CPU)
// or memory sector (GPU) for every element, so both backends read such an
// input a tile at a time along its own rows, through a buffer (tiled_loop on
// the CPU, tiled_kernel on CUDA). `t`: 1 for a, 2 for b.
inline bool transposed_input(const BinaryLayout& l, int t) {
  return l.ndim >= 2 && l.strides[t][0] != 0 && l.strides[t][0] != 1 && l.strides[t][1] == 1;
}

// The tiled loops take layouts whose output is dense along dimension 0, with
// at least one transposed input and each other input dense or repeated
// (stride 0) along it.
inline bool use_tiles(const BinaryLayout& l) {
  if (l.ndim < 2 || l.strides[0][0] != 1) {
    return false;
  }
  auto ok = [&](int t) {
    return transposed_input(l, t) || l.strides[t][0] == 0 || l.strides[t][0] == 1;
  };
  return ok(1) && ok(2) && (transposed_input(l, 1) || transposed_input(l, 2));
}

}  // namespace extension_cpp::fast
