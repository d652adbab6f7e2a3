// The fast CPU loops, and the one place that picks among them.
//
// csrc/loops.h calls elementwise() below when the build has the fast
// kernels (EXTENSION_CPP_KERNELS=fast, the default). Each path is
// its own unit; all of them end in the vectorised run loop (run_loop.h):
//   * one dense run (contiguous, or any layout the inputs share with the
//     output): the run loop over all of it, split between threads;
//   * one float32 input transposed against a dense one, on an AVX-512 CPU:
//     register_transposes.h;
//   * other transposed inputs: buffered tiles, tiles.h;
//   * anything else: strided_loop.h, a run at a time.
// Why each exists: the notes of docs/design_notes.md; what each measures
// against PyTorch and torch.compile: the results pages.
#pragma once

#include <cstdint>

#include "../../runtime.h"
#include "../layout.h"
#include "register_transposes.h"
#include "run_loop.h"
#include "strided_loop.h"
#include "tiles.h"

namespace extension_cpp::fast::cpu {

// out = op(a, b) over the layout l. Returns true: every layout has a fast
// path (the strided loop takes any).
template <typename scalar_t, typename Op>
bool elementwise(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l,
                 Op op) {
  const RunFn<scalar_t, Op> run_fn = pick_run<scalar_t, Op>();
  if (l.contiguous()) {
    if (l.numel < kGrainSize) {  // skip parallel_for's bookkeeping for small calls
      run_fn(out, a, b, l.numel, 1, 1, Rows{}, op);
    } else {
      parallel_for(0, l.numel, kGrainSize, [&](int64_t begin, int64_t end) {
        run_fn(out + begin, a + begin, b + begin, end - begin, 1, 1, Rows{}, op);
      });
    }
  } else if (use_register_transposes<scalar_t>(l)) {
    register_transposes_loop(out, a, b, l, op);
  } else if (use_tiles(l)) {
    tiled_loop(out, a, b, l, run_fn, op);
  } else {
    parallel_for(0, l.numel, kGrainSize, [&](int64_t begin, int64_t end) {
      strided_loop(out, a, b, l, begin, end, run_fn, op);
    });
  }
  return true;
}

}  // namespace extension_cpp::fast::cpu
