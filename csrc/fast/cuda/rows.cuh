// Rows on CUDA: slices, broadcasts, a misaligned start.
//
// When the output's rows (dimension 0 of the layout) are at least half a
// block's chunk long, a block takes one chunk of a row (or two whole rows
// where a row is half a chunk): the row's offsets are computed once per
// thread, a broadcast input is read once per vector, and each operand moves
// 16 bytes at a time wherever its row starts allow. Dense rows take
// dense_rows_kernel, the rest rows_kernel (Note [CUDA rows]).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../elementwise.h"
#include "../../runtime.cuh"
#include "strided32.cuh"
#include "vectorized.cuh"

namespace extension_cpp::fast::cuda {

// The merged layout as rows of n0 elements (dimension 0, the output's
// fastest) picked by the other dimensions. A block covers one chunk of
// kThreads * kVec elements of one row, or 2^log2_rows consecutive rows of
// kThreads >> log2_rows threads each.
struct Rows32 {
  uint32_t n0;
  uint32_t inner[3];             // each operand's stride along the row
  uint32_t log2_rows;            // rows per block, as a power of two
  FastDivisor chunks;            // chunks per row
  Layout32<kFewDims - 1> outer;  // dimensions 1.. of the layout: row index -> offsets
};

// How a kernel reads one operand's row, fixed at compile time where the
// launch knows it, so that each kernel holds only its own loads: a branch
// taken per thread is compiled to both sides, predicated, and the SM issues
// both. kAny tells the others apart at run time, per row and thread.
enum class Run {
  kRepeat,     // stride 0: one element repeated (a broadcast)
  kAligned,    // stride 1, every row start on a 16-byte boundary
  kUnaligned,  // stride 1, row starts off it
  kStep2,      // stride 2, every row start on a 16-byte boundary or one element past it
  kAny,        // any of those, and an output row start off the boundary
};

// Whether load_run reads bytes beside the run for this kind (load_shifted,
// a stride-2 pair, or either where kAny finds them).
constexpr bool reads_beside(Run run) {
  return run == Run::kUnaligned || run == Run::kStep2 || run == Run::kAny;
}

template <Run kA, Run kB>
struct Kinds {
  static constexpr Run a = kA, b = kB;
};

constexpr uint32_t kLog2Threads = 8;
static_assert(kThreads == 1 << kLog2Threads, "the row kernel splits a block by shifts");

// The 16 bytes at run, which is a whole number of elements past a 16-byte
// boundary: the aligned 16-byte vectors that hold them (one, read twice,
// where run is on the boundary), shifted into place. Each vector holds bytes
// of the run, so neither reads past the 16 bytes its allocation's last
// element sits in. The shift is selected, not branched on, so that the
// compiler issues both operands' loads before either is shifted.
template <typename scalar_t, int kVec>
__device__ __forceinline__ Vec<scalar_t, kVec> load_shifted(const scalar_t* run) {
  const uint32_t bytes = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(run)) & 15;
  const uint4* first = reinterpret_cast<const uint4*>(reinterpret_cast<const char*>(run) - bytes);
  const uint4 lo = first[0], hi = first[bytes != 0 ? 1 : 0];
  const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  // Whole words first, two then one, by selects: register indices must be
  // constants. Then the odd two bytes with __byte_perm (0x5432: the upper
  // half of one word, then the lower half of the next).
  const bool two = (bytes & 8) != 0, one = (bytes & 4) != 0;
  uint32_t u[6], t[5];
#pragma unroll
  for (int j = 0; j < 6; ++j) {
    u[j] = two ? w[j + 2] : w[j];
  }
#pragma unroll
  for (int j = 0; j < 5; ++j) {
    t[j] = one ? u[j + 1] : u[j];
  }
  const uint32_t sel = (bytes & 2) != 0 ? 0x5432 : 0x3210;
  const uint4 r = make_uint4(__byte_perm(t[0], t[1], sel), __byte_perm(t[1], t[2], sel),
                             __byte_perm(t[2], t[3], sel), __byte_perm(t[3], t[4], sel));
  Vec<scalar_t, kVec> v;
  memcpy(&v, &r, sizeof(v));
  return v;
}

// The kVec row elements p[s * i0 .. s * (i0 + kVec)) for the stride s of
// kRun (`stride` where kRun is kAny), i0 a multiple of kVec:
//  * kRepeat: kVec copies of p[0];
//  * kAligned: one 16-byte load;
//  * kUnaligned: load_shifted, two 16-byte loads;
//  * kStep2: two 16-byte loads and every other element, from a run that
//    starts on a 16-byte boundary or one element past it (a [::2] or a
//    [1::2] slice of an aligned row: the launch checks every row). The two
//    loads cover the run and one element beside it, in the same 16 bytes as
//    an element of the run.
template <typename scalar_t, int kVec, Run kRun>
__device__ __forceinline__ Vec<scalar_t, kVec> load_run(const scalar_t* p, uint32_t i0,
                                                        uint32_t stride) {
  using V = Vec<scalar_t, kVec>;
  if constexpr (kRun == Run::kAny) {
    if (stride == 0) {
      return load_run<scalar_t, kVec, Run::kRepeat>(p, i0, 0);
    }
    if constexpr (sizeof(scalar_t) == 2) {  // the only size whose stride-2 rows come here
      if (stride == 2) {
        return load_run<scalar_t, kVec, Run::kStep2>(p, i0, 2);
      }
    }
    return load_run<scalar_t, kVec, Run::kUnaligned>(p, i0, 1);  // aligned or not
  } else if constexpr (kRun == Run::kAligned) {
    return *reinterpret_cast<const V*>(p + i0);
  } else {
    V v;
    if constexpr (kRun == Run::kRepeat) {
      const scalar_t x = p[0];
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        v.v[k] = x;
      }
    } else if constexpr (kRun == Run::kUnaligned) {
      v = load_shifted<scalar_t, kVec>(p + i0);
    } else {
      // Two branches, each with constant register indices: an index computed
      // at run time would put the pair in local memory.
      const scalar_t* run = p + 2 * i0;
      if (aligned_to(run, sizeof(V))) {
        const V* pair = reinterpret_cast<const V*>(run);
        const V lo = pair[0], hi = pair[1];
#pragma unroll
        for (int k = 0; k < kVec / 2; ++k) {
          v.v[k] = lo.v[2 * k];
          v.v[k + kVec / 2] = hi.v[2 * k];
        }
      } else {
        const V* pair = reinterpret_cast<const V*>(run - 1);
        const V lo = pair[0], hi = pair[1];
#pragma unroll
        for (int k = 0; k < kVec / 2; ++k) {
          v.v[k] = lo.v[2 * k + 1];
          v.v[k + kVec / 2] = hi.v[2 * k + 1];
        }
      }
    }
    return v;
  }
}

// Row kernel for rows that dense_rows_kernel does not take (a stride-2
// slice of a 4- or 8-byte type, say): the coalesced scalar loop, thread t of
// the block the elements t, t + kThreads, ... of one chunk of a row.
template <typename scalar_t, int kVec, typename Op>
__global__ void rows_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, const Rows32 rows,
                            Op op) {
  using T = opmath_t<scalar_t>;
  const uint32_t row = rows.chunks.div(blockIdx.x);
  const uint32_t start = (blockIdx.x - row * rows.chunks.divisor) * (kThreads * kVec);
  uint32_t base[3];
  rows.outer.offsets(row, base);
  const scalar_t* pa = a + base[1];
  const scalar_t* pb = b + base[2];
  scalar_t* po = out + base[0];
  T x[kVec], y[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const uint32_t i = start + threadIdx.x + k * kThreads;
    if (i < rows.n0) {
      x[k] = static_cast<T>(pa[i * rows.inner[1]]);
      y[k] = static_cast<T>(pb[i * rows.inner[2]]);
    }
  }
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const uint32_t i = start + threadIdx.x + k * kThreads;
    if (i < rows.n0) {
      po[i * rows.inner[0]] = static_cast<scalar_t>(op(x[k], y[k]));
    }
  }
}

// Row kernel for dense rows: the output's rows are dense and each input's
// dense, repeated (stride 0) or, for 2-byte types, every other element of an
// aligned row. Each thread takes kVec consecutive elements of one row, 16
// bytes. Capped at 32 registers (8 blocks of 256 threads per SM), as the
// bytes in flight per SM are what its speed follows; one kernel per pair of
// row kinds (launch_dense_rows) keeps it under the cap with no spills, and
// issues only its own loads. Where kA is not kAny, every output row starts
// on a 16-byte boundary.
template <typename scalar_t, int kVec, Run kA, Run kB, typename Op>
__global__ void __launch_bounds__(kThreads, 8)
    dense_rows_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, const Rows32 rows,
                      Op op) {
  using V = Vec<scalar_t, kVec>;
  // Threads per row: kThreads over the rows per block.
  const uint32_t log2_per_row = kLog2Threads - rows.log2_rows;
  const uint32_t group = rows.chunks.div(blockIdx.x);
  const uint32_t chunk = blockIdx.x - group * rows.chunks.divisor;
  const uint32_t row_in_block = threadIdx.x >> log2_per_row;
  const uint32_t lane = threadIdx.x & ((1u << log2_per_row) - 1);
  const uint32_t i0 = ((chunk << log2_per_row) + lane) * kVec;
  // A block's rows are consecutive along dimension 1 and never cross its end
  // (the launch checks it divides), so a row is the group's first row plus
  // row_in_block steps of dimension 1.
  uint32_t base[3];
  rows.outer.offsets(group << rows.log2_rows, base);
  const scalar_t* pa = a + base[1] + row_in_block * rows.outer.strides[1][0];
  const scalar_t* pb = b + base[2] + row_in_block * rows.outer.strides[2][0];
  scalar_t* po = out + base[0] + row_in_block * rows.outer.strides[0][0];
  // Shifted and stride-2 reads take in bytes beside their run, less than 16
  // past it: inside the row for all but its last run, which may end the
  // tensor's memory. So where a kernel reads so, each row's last run is read
  // element by element.
  constexpr bool kBeside = reads_beside(kA) || reads_beside(kB);
  if (i0 + (kBeside ? 2 : 1) * kVec <= rows.n0) {
    const V x = load_run<scalar_t, kVec, kA>(pa, i0, rows.inner[1]);
    const V y = load_run<scalar_t, kVec, kB>(pb, i0, rows.inner[2]);
    const V r = apply<scalar_t, kVec>(x, y, op);
    if (kA != Run::kAny || aligned_to(po + i0, sizeof(V))) {
      *reinterpret_cast<V*>(po + i0) = r;
    } else {
      scalar_t* run = po + i0;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        run[k] = r.v[k];
      }
    }
  } else {
    // Every load before any store, so that they are in flight together. An
    // element past the row reads the row's last one instead, and is not
    // stored. Out may be a or b: each element is read before it is written.
    const uint32_t last = rows.n0 - 1;
    V x, y;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const uint32_t i = i0 + k < last ? i0 + k : last;
      x.v[k] = pa[i * rows.inner[1]];
      y.v[k] = pb[i * rows.inner[2]];
    }
    const V r = apply<scalar_t, kVec>(x, y, op);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      if (i0 + k < rows.n0) {
        po[i0 + k] = r.v[k];
      }
    }
  }
}

// True when every row of operand t starts on a 16-byte boundary (`past` = 0)
// or one element past it (`past` = 1): p and every stride but the row's own
// (dimension 0) a multiple of 16 bytes.
template <typename scalar_t>
bool rows_start_at(const scalar_t* p, const BinaryLayout& l, int t, int past) {
  if (!aligned_to(p - past, 16)) {
    return false;
  }
  for (int d = 1; d < l.ndim; ++d) {
    if (l.strides[t][d] * static_cast<int64_t>(sizeof(scalar_t)) % 16 != 0) {
      return false;
    }
  }
  return true;
}

// How dense_rows_kernel reads operand t (out: 0): kAny where its stride is
// not 0, 1 or 2, or is 2 from rows that do not start on or one past a
// 16-byte boundary, which no kernel takes.
template <typename scalar_t>
Run run_of(const scalar_t* p, const BinaryLayout& l, int t) {
  switch (l.strides[t][0]) {
    case 0:
      return Run::kRepeat;
    case 1:
      return rows_start_at(p, l, t, 0) ? Run::kAligned : Run::kUnaligned;
    case 2:
      return rows_start_at(p, l, t, 0) || rows_start_at(p, l, t, 1) ? Run::kStep2 : Run::kAny;
    default:
      return Run::kAny;
  }
}

// The pairs of row kinds with a kernel of their own, for an output whose
// rows all start on a 16-byte boundary: a broadcast row (aligned rows), a
// broadcast column of either input, a row slice or misaligned run of either
// or both, and, with `half_vectors` (launch_rows), two stride-2 slices of a
// 2-byte type, half a vector a thread. The rest take the kernel that tells the
// kinds apart at run time.
template <typename scalar_t, int kVec, typename Op>
void launch_dense_rows(scalar_t* out, const scalar_t* a, const scalar_t* b, Run ka, Run kb,
                       bool out_aligned, bool half_vectors, const Rows32& rows, int64_t blocks,
                       Op op, cudaStream_t stream) {
  auto launch = [&](auto kinds) {
    dense_rows_kernel<scalar_t, kVec, decltype(kinds)::a, decltype(kinds)::b>
        <<<blocks, kThreads, 0, stream>>>(out, a, b, rows, op);
  };
  using R = Run;
  // load_shifted reads a run on the boundary right too, so an aligned run
  // beside a misaligned one takes the misaligned pair's kernel.
  if ((ka == R::kAligned && kb == R::kUnaligned) || (ka == R::kUnaligned && kb == R::kAligned)) {
    ka = kb = R::kUnaligned;
  }
  auto is = [&](Run x, Run y) { return out_aligned && ka == x && kb == y; };
  if constexpr (sizeof(scalar_t) == 2) {
    if (half_vectors) {
      dense_rows_kernel<scalar_t, kVec / 2, R::kStep2, R::kStep2>
          <<<blocks, kThreads, 0, stream>>>(out, a, b, rows, op);
      return;
    }
  }
  if (is(R::kAligned, R::kAligned)) {
    launch(Kinds<R::kAligned, R::kAligned>{});
  } else if (is(R::kAligned, R::kRepeat)) {
    launch(Kinds<R::kAligned, R::kRepeat>{});
  } else if (is(R::kRepeat, R::kAligned)) {
    launch(Kinds<R::kRepeat, R::kAligned>{});
  } else if (is(R::kUnaligned, R::kUnaligned)) {
    launch(Kinds<R::kUnaligned, R::kUnaligned>{});
  } else {
    launch(Kinds<R::kAny, R::kAny>{});
  }
}

template <typename scalar_t, int kVec, typename Op>
void launch_rows(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l, Op op,
                 cudaStream_t stream) {
  Rows32 rows;
  rows.n0 = static_cast<uint32_t>(l.sizes[0]);
  for (int t = 0; t < 3; ++t) {
    rows.inner[t] = static_cast<uint32_t>(l.strides[t][0]);
  }
  rows.outer = to_32_bits<kFewDims - 1>(l, 1);
  rows.log2_rows = 0;
  const Run ka = run_of(a, l, 1), kb = run_of(b, l, 2);
  // Two stride-2 inputs take half the elements a thread, so twice the
  // threads (Note [CUDA rows]): 2-byte types half a vector in
  // dense_rows_kernel, 4-byte ones two elements in rows_kernel.
  const bool step2_pair = ka == Run::kStep2 && kb == Run::kStep2;
  // Stride-2 rows as pairs of 16-byte vectors pay for 2-byte types only: 4-
  // and 8-byte ones read them faster one element a thread (Note [CUDA rows]).
  auto dense = [](Run run) {
    return run != Run::kAny && (run != Run::kStep2 || sizeof(scalar_t) == 2);
  };
  if (rows.inner[0] == 1 && dense(ka) && dense(kb)) {
    // Half a vector needs the kernel whose output rows start aligned.
    const bool out_aligned = run_of(out, l, 0) == Run::kAligned;
    const bool half_vectors = step2_pair && out_aligned;
    const int vec = half_vectors ? kVec / 2 : kVec;
    // Rows of half a chunk or less share a block, so that no thread idles,
    // where the rows per block divide dimension 1.
    while (l.ndim >= 2 && (kThreads >> (rows.log2_rows + 1)) >= 32 &&
           rows.n0 <= static_cast<uint32_t>(kThreads * vec) >> (rows.log2_rows + 1) &&
           l.sizes[1] % (int64_t{2} << rows.log2_rows) == 0) {
      ++rows.log2_rows;
    }
    const uint32_t chunk = (kThreads >> rows.log2_rows) * vec;
    const uint32_t chunks = (rows.n0 + chunk - 1) / chunk;
    rows.chunks = FastDivisor(chunks);
    const int64_t blocks = ((l.numel / rows.n0) >> rows.log2_rows) * chunks;
    launch_dense_rows<scalar_t, kVec>(out, a, b, ka, kb, out_aligned, half_vectors, rows, blocks,
                                      op, stream);
    return;
  }
  auto launch = [&](auto vec) {
    const uint32_t chunk = kThreads * decltype(vec)::value;
    const uint32_t chunks = (rows.n0 + chunk - 1) / chunk;
    rows.chunks = FastDivisor(chunks);
    const int64_t blocks = l.numel / rows.n0 * chunks;
    rows_kernel<scalar_t, decltype(vec)::value>
        <<<blocks, kThreads, 0, stream>>>(out, a, b, rows, op);
  };
  if constexpr (sizeof(scalar_t) == 4) {
    if (step2_pair) {
      launch(std::integral_constant<int, kVec / 2>{});
      return;
    }
  }
  launch(std::integral_constant<int, kVec>{});
}

}  // namespace extension_cpp::fast::cuda
