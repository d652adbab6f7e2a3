// The CUDA kernels of mymuladd, mymul and myadd_out, for either binding.
//
// One kernel template per access pattern, shared by the three ops. The
// layout is merged in the output's memory order first (csrc/elementwise.h),
// so inputs that share the output's dense layout (contiguous, transposed,
// channels_last, any permutation) are one dense run. run() picks:
//   * contiguous_kernel: every operand one aligned dense run. 16-byte vector
//     loads and stores, one vector per thread.
//   * tiled_kernel: an input transposed against the output (use_tiles). A
//     block reads a tile of it along its own rows into shared memory, then
//     writes the output along its rows: both sides coalesced, two or four
//     elements per access where sizes and alignment allow.
//   * rows_kernel: rows (the output's fastest dimension) of at least half a
//     block's chunk: slices, broadcasts, a misaligned start. A block takes
//     one chunk of one row, so offsets are computed once per thread, and
//     each operand moves 16 bytes at a time where its row start allows.
//   * strided32_kernel: shorter rows. kWork elements per thread, offsets
//     from precomputed multiply-shift divisors.
//   * strided_kernel (and contiguous_kernel unvectorised): the same beyond
//     2^31 elements or offsets, with int64_t indices and divisions.
// The figures behind each choice: docs/performance.md, "Layouts".
// run() takes raw pointers, the merged layout and the stream to launch on,
// so both bindings compile this one file: the classic one
// (csrc/cuda/ops_cuda.cu) and the stable-ABI one (csrc/stable/ops_cuda.cu).
// Each passes its current stream on the inputs' device (never the legacy
// default stream, which breaks under CUDA graphs: pytorch/pytorch#157363).
// Launches are checked with cudaGetLastError, and a failure is thrown as
// std::runtime_error.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "../dispatch.h"
#include "../elementwise.h"

namespace extension_cpp::cuda {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 30;

template <typename scalar_t, int kVec>
struct alignas(sizeof(scalar_t) * kVec) Vec {
  scalar_t v[kVec];
};

template <typename scalar_t, int kVec, typename Op>
__device__ __forceinline__ Vec<scalar_t, kVec> apply(const Vec<scalar_t, kVec>& x,
                                                     const Vec<scalar_t, kVec>& y, Op op) {
  using T = opmath_t<scalar_t>;
  Vec<scalar_t, kVec> r;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    r.v[k] = static_cast<scalar_t>(op(static_cast<T>(x.v[k]), static_cast<T>(y.v[k])));
  }
  return r;
}

// out, a, b: n dense elements each; when kVec > 1 all three are aligned to
// kVec elements. out may be exactly a or b (each element is read, then
// written, by the same thread), so the pointers are not __restrict__.
//
// One vector per thread and as many blocks as it takes: the loop only runs
// more than once for tensors beyond kMaxBlocks * kThreads vectors. Chosen by
// scripts/cuda_block_shapes.py (kernel time, CUDA graph replay) on an H100
// among eight shapes from 64 to 512 threads and 1 to 4 vectors per thread:
// from DRAM (2^23 elements and up) all were within 1% of each other; where
// the operands fit in L2, 256 x 1 led: 0.98x torch.mul at 2^22 bfloat16,
// where our earlier 256 x 2 reached 0.88x, and 1.13x at 2^21 float32, where
// 256 x 2 reached 1.01x (an H200 agreed: 0.98x against 0.88x, and 1.09x
// against 0.97x). Smaller blocks keep more of them in flight, so the loads of
// one overlap the stores of another.
template <typename scalar_t, int kVec, typename Op>
__global__ void contiguous_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n,
                                  Op op) {
  using V = Vec<scalar_t, kVec>;
  const V* va = reinterpret_cast<const V*>(a);
  const V* vb = reinterpret_cast<const V*>(b);
  V* vo = reinterpret_cast<V*>(out);
  const int64_t nvec = n / kVec;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < nvec;
       i += stride) {
    // Copy each vector out of global memory whole: passing va[i] to apply()
    // by reference let the compiler read it one element at a time (eight
    // 2-byte loads instead of one 16-byte load for float16/bfloat16).
    const V x = va[i];
    const V y = vb[i];
    vo[i] = apply<scalar_t, kVec>(x, y, op);
  }
  // The last n % kVec elements, one per thread of block 0.
  if (kVec > 1 && blockIdx.x == 0) {
    const int64_t t = nvec * kVec + threadIdx.x;
    if (t < n) {
      using T = opmath_t<scalar_t>;
      out[t] = static_cast<scalar_t>(op(static_cast<T>(a[t]), static_cast<T>(b[t])));
    }
  }
}

template <typename scalar_t, typename Op>
__global__ void strided_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b,
                               const BinaryLayout layout, Op op) {
  using T = opmath_t<scalar_t>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < layout.numel;
       i += stride) {
    const Offsets o = offsets_of(layout, i);
    out[o.out] = static_cast<scalar_t>(op(static_cast<T>(a[o.a]), static_cast<T>(b[o.b])));
  }
}

C10_HOST_DEVICE inline bool aligned_to(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// ---------------------------------------------------------------------------
// 32-bit strided path.
// ---------------------------------------------------------------------------

// Division by a divisor fixed at launch, as a multiply-high, an add and a
// shift (Granlund and Montgomery's method, which ATen's IntDivider uses too):
// q = (umulhi(n, m) + n) >> s, with 2^(s-1) < d <= 2^s and
// m = floor(2^32 * (2^s - d) / d) + 1. Exact for n < 2^31.
struct FastDivisor {
  uint32_t divisor = 1, multiplier = 1, shift = 0;
  FastDivisor() = default;
  explicit FastDivisor(uint32_t d) : divisor(d) {
    while ((uint64_t{1} << shift) < d) {
      ++shift;
    }
    multiplier =
        static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    return (__umulhi(n, multiplier) + n) >> shift;
  }
};

// The merged layout with 32-bit sizes, strides and divisors.
struct Layout32 {
  int ndim;
  FastDivisor sizes[kMaxDims];
  uint32_t strides[3][kMaxDims];

  // The loop runs over kMaxDims and stops at ndim, as TensorIterator's
  // OffsetCalculator does, so every array index is a constant: the kernel
  // parameters are then read with fixed addresses, not indexed loads.
  __device__ __forceinline__ void offsets(uint32_t i, uint32_t (&o)[3]) const {
    o[0] = o[1] = o[2] = 0;
#pragma unroll
    for (int d = 0; d < kMaxDims; ++d) {
      if (d == ndim) {
        break;
      }
      const uint32_t q = sizes[d].div(i);
      const uint32_t r = i - q * sizes[d].divisor;
      o[0] += r * strides[0][d];
      o[1] += r * strides[1][d];
      o[2] += r * strides[2][d];
      i = q;
    }
  }
};

// True when every element index and offset of `l` fits in 31 bits (strides
// are never negative here: PyTorch tensors have none).
inline bool fits_32_bits(const BinaryLayout& l) {
  constexpr int64_t kMax = (int64_t{1} << 31) - 1;
  if (l.numel > kMax) {
    return false;
  }
  for (int t = 0; t < 3; ++t) {
    int64_t reach = 0;
    for (int d = 0; d < l.ndim; ++d) {
      reach += (l.sizes[d] - 1) * l.strides[t][d];
    }
    if (reach > kMax) {
      return false;
    }
  }
  return true;
}

// Dimensions [first, l.ndim) of l in 32 bits.
inline Layout32 to_32_bits(const BinaryLayout& l, int first = 0) {
  Layout32 r;
  r.ndim = l.ndim - first;
  for (int d = first; d < l.ndim; ++d) {
    r.sizes[d - first] = FastDivisor(static_cast<uint32_t>(l.sizes[d]));
    for (int t = 0; t < 3; ++t) {
      r.strides[t][d - first] = static_cast<uint32_t>(l.strides[t][d]);
    }
  }
  return r;
}

// Elements per thread of strided32_kernel: a block covers kWork * kThreads
// consecutive indices, thread t the ones t, t + kThreads, ..., so each load
// instruction of a warp reads neighbouring elements.
constexpr int kWork = 4;

template <typename scalar_t, typename Op>
__global__ void strided32_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b,
                                 const Layout32 layout, uint32_t n, Op op) {
  using T = opmath_t<scalar_t>;
  const uint32_t first = blockIdx.x * (kThreads * kWork) + threadIdx.x;
  T x[kWork], y[kWork];
  uint32_t at_out[kWork];
#pragma unroll
  for (int k = 0; k < kWork; ++k) {
    const uint32_t i = first + k * kThreads;
    if (i < n) {
      uint32_t o[3];
      layout.offsets(i, o);
      x[k] = static_cast<T>(a[o[1]]);
      y[k] = static_cast<T>(b[o[2]]);
      at_out[k] = o[0];
    }
  }
#pragma unroll
  for (int k = 0; k < kWork; ++k) {
    if (first + k * kThreads < n) {
      out[at_out[k]] = static_cast<scalar_t>(op(x[k], y[k]));
    }
  }
}

// ---------------------------------------------------------------------------
// Row path: slices, broadcasts, a misaligned start.
// ---------------------------------------------------------------------------

// The merged layout as rows of n0 elements (dimension 0, the output's
// fastest) picked by the other dimensions. A block covers one chunk of
// kThreads * kVec elements of one row, so a row's offsets are computed once
// per thread rather than once per element, and a stride-0 (broadcast) input
// is read once per vector.
struct Rows32 {
  uint32_t n0;
  uint32_t inner[3];   // each operand's stride along the row
  FastDivisor chunks;  // chunks per row
  Layout32 outer;      // dimensions 1.. of the layout: row index -> offsets
};

// The kVec consecutive row elements p[i0 .. i0 + kVec) (stride 1) or kVec
// copies of p[0] (stride 0). One 16-byte load when p + i0 is aligned to it,
// else kVec scalar loads.
template <typename scalar_t, int kVec>
__device__ __forceinline__ Vec<scalar_t, kVec> load_run(const scalar_t* p, uint32_t i0,
                                                        uint32_t stride) {
  Vec<scalar_t, kVec> v;
  if (stride == 0) {
    const scalar_t x = p[0];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      v.v[k] = x;
    }
  } else if (aligned_to(p + i0, sizeof(v))) {
    v = *reinterpret_cast<const Vec<scalar_t, kVec>*>(p + i0);
  } else {
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      v.v[k] = p[i0 + k];
    }
  }
  return v;
}

// Row kernel. `dense_rows`: the output's rows are dense and each input's
// dense or repeated (stride 0). Then each thread takes kVec consecutive
// elements, and each operand moves them in one 16-byte access where its
// row start allows (every row of a contiguous or broadcast tensor; one row
// in kVec of a row-sliced one), in kVec scalar accesses where not. Other
// rows (a stride-2 slice, say) take the coalesced scalar loop: thread t of
// the block the elements t, t + kThreads, ...
template <typename scalar_t, int kVec, typename Op>
__global__ void rows_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, const Rows32 rows,
                            bool dense_rows, Op op) {
  using T = opmath_t<scalar_t>;
  const uint32_t row = rows.chunks.div(blockIdx.x);
  const uint32_t start = (blockIdx.x - row * rows.chunks.divisor) * (kThreads * kVec);
  uint32_t base[3];
  rows.outer.offsets(row, base);
  const scalar_t* pa = a + base[1];
  const scalar_t* pb = b + base[2];
  scalar_t* po = out + base[0];
  if (dense_rows) {
    const uint32_t i0 = start + threadIdx.x * kVec;
    if (i0 + kVec <= rows.n0) {
      const Vec<scalar_t, kVec> x = load_run<scalar_t, kVec>(pa, i0, rows.inner[1]);
      const Vec<scalar_t, kVec> y = load_run<scalar_t, kVec>(pb, i0, rows.inner[2]);
      const Vec<scalar_t, kVec> r = apply<scalar_t, kVec>(x, y, op);
      if (aligned_to(po + i0, sizeof(r))) {
        *reinterpret_cast<Vec<scalar_t, kVec>*>(po + i0) = r;
      } else {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          po[i0 + k] = r.v[k];
        }
      }
    } else {
      for (uint32_t i = i0; i < rows.n0; ++i) {
        po[i] = static_cast<scalar_t>(
            op(static_cast<T>(pa[i * rows.inner[1]]), static_cast<T>(pb[i * rows.inner[2]])));
      }
    }
    return;
  }
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

template <typename scalar_t, int kVec, typename Op>
void launch_rows(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l, Op op,
                 cudaStream_t stream) {
  Rows32 rows;
  rows.n0 = static_cast<uint32_t>(l.sizes[0]);
  for (int t = 0; t < 3; ++t) {
    rows.inner[t] = static_cast<uint32_t>(l.strides[t][0]);
  }
  const uint32_t chunk = kThreads * kVec;
  const uint32_t chunks = (rows.n0 + chunk - 1) / chunk;
  rows.chunks = FastDivisor(chunks);
  rows.outer = to_32_bits(l, 1);
  const int64_t blocks = l.numel / rows.n0 * chunks;
  const bool dense_rows = rows.inner[0] == 1 && rows.inner[1] <= 1 && rows.inner[2] <= 1;
  rows_kernel<scalar_t, kVec><<<blocks, kThreads, 0, stream>>>(out, a, b, rows, dense_rows, op);
}

// ---------------------------------------------------------------------------
// Tiled path for transposed inputs.
// ---------------------------------------------------------------------------

// A tile is t0 x t1 elements of dimensions 0 and 1, both powers of two, t0 <=
// 32, t0 * t1 <= kCells (kTileCells, or twice that for four elements per
// access), kCells / kThreads elements per thread.
// A transposed input is read along its own rows (dimension 1) into shared
// memory, and the output written along its rows (dimension 0); an input dense
// along dimension 0 is read directly. Every global load of a tile is issued
// before the barrier.
constexpr int kTileCells = 1024;

struct TileShape {
  int64_t n0, n1;                   // sizes of dimensions 0 and 1
  int log2_t0, log2_t1;             // the tile's extent in dimensions 0 and 1
  FastDivisor tiles0, tiles1;       // tiles along dimensions 0 and 1
  FastDivisor sizes[kMaxDims - 2];  // sizes of dimensions 2..
};

// Shared-memory index idx is stored at idx + idx / (kCells / 32): one pad word
// per 32nd of the tile. A warp reading a column of the staged tile (writing
// order: consecutive threads along dimension 0, t0 * t1 = kCells) then touches
// each bank once, and a warp writing rows of it (staging order) does too,
// except with four elements per access in 2048-element tiles, where it
// touches each of half the banks twice (measured at 0.97-1.10 of a copy all
// the same).
template <int kCells>
__device__ __forceinline__ uint32_t padded(uint32_t idx) {
  constexpr int kShift = kCells == 1024 ? 5 : 6;
  static_assert(kCells >> kShift == 32, "kCells must be 1024 or 2048");
  return idx + (idx >> kShift);
}

// One tile per block. The block's tile index is split into its position
// with the 32-bit divisors: int64_t divisions here, once per block, took more
// time than the tile's loads and stores (measured on an H100, 2^24 float32
// elements: 114 us against a 71 us copy).
//
// kVec consecutive elements per access: along dimension 1 for a staged input,
// along dimension 0 for a direct input and the output (vector_tiles_ok says
// when every such run is whole and aligned).
template <typename scalar_t, typename Op, int kCells, int kVec, bool kStageA, bool kStageB>
__global__ void __launch_bounds__(kThreads, 4)
    tiled_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout l,
                 const TileShape shape, Op op) {
  using T = opmath_t<scalar_t>;
  using V = Vec<scalar_t, kVec>;
  constexpr int kLog2Vec = kVec == 1 ? 0 : (kVec == 2 ? 1 : 2);
  constexpr int kPerThread = kCells / kThreads / kVec;
  constexpr int kStaged = (kStageA ? 1 : 0) + (kStageB ? 1 : 0);
  __shared__ T stage[kStaged][kCells + 32];
  const uint32_t t0 = 1u << shape.log2_t0, t1 = 1u << shape.log2_t1;
  const uint32_t vectors = (t0 * t1) >> kLog2Vec;
  const uint32_t q0 = shape.tiles0.div(blockIdx.x);
  const uint32_t q1 = shape.tiles1.div(q0);
  const int64_t j0 = static_cast<int64_t>(blockIdx.x - q0 * shape.tiles0.divisor) * t0;
  const int64_t j1 = static_cast<int64_t>(q0 - q1 * shape.tiles1.divisor) * t1;
  int64_t base[3];
  for (int t = 0; t < 3; ++t) {
    base[t] = j0 * l.strides[t][0] + j1 * l.strides[t][1];
  }
  uint32_t rest = q1;
#pragma unroll
  for (int d = 2; d < kMaxDims; ++d) {
    if (d >= l.ndim) {
      break;
    }
    const uint32_t q = shape.sizes[d - 2].div(rest);
    const int64_t i = rest - q * shape.sizes[d - 2].divisor;
    rest = q;
    for (int t = 0; t < 3; ++t) {
      base[t] += i * l.strides[t][d];
    }
  }
  const uint32_t m0 = static_cast<uint32_t>(std::min<int64_t>(t0, shape.n0 - j0));
  const uint32_t m1 = static_cast<uint32_t>(std::min<int64_t>(t1, shape.n1 - j1));
  const scalar_t* pa = a + base[1];
  const scalar_t* pb = b + base[2];
  // Access c of the block, in staging order (consecutive threads along
  // dimension 1, a staged input's rows) and in writing order (along
  // dimension 0, as the output is written).
  auto staging = [&](uint32_t c, uint32_t& r0, uint32_t& r1) {
    r0 = c >> (shape.log2_t1 - kLog2Vec);
    r1 = (c & ((t1 >> kLog2Vec) - 1)) << kLog2Vec;
  };
  auto writing = [&](uint32_t c, uint32_t& w0, uint32_t& w1) {
    w0 = (c & ((t0 >> kLog2Vec) - 1)) << kLog2Vec;
    w1 = c >> (shape.log2_t0 - kLog2Vec);
  };
  auto load = [](const scalar_t* p) {
    if constexpr (kVec == 1) {
      V v;
      v.v[0] = *p;
      return v;
    } else {
      return *reinterpret_cast<const V*>(p);
    }
  };
  // Every global load of the tile first.
  V sa[kPerThread], sb[kPerThread], da[kPerThread], db[kPerThread];
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const uint32_t c = threadIdx.x + k * kThreads;
    uint32_t r0, r1, w0, w1;
    staging(c, r0, r1);
    writing(c, w0, w1);
    const bool r_in = c < vectors && r0 < m0 && r1 < m1;
    const bool w_in = c < vectors && w0 < m0 && w1 < m1;
    if (kStageA && r_in) {
      sa[k] = load(pa + r0 * l.strides[1][0] + r1);
    }
    if (!kStageA && w_in) {
      da[k] = kVec == 1 ? load(pa + w0 * l.strides[1][0] + w1 * l.strides[1][1])
                        : load(pa + w0 + w1 * l.strides[1][1]);
    }
    if (kStageB && r_in) {
      sb[k] = load(pb + r0 * l.strides[2][0] + r1);
    }
    if (!kStageB && w_in) {
      db[k] = kVec == 1 ? load(pb + w0 * l.strides[2][0] + w1 * l.strides[2][1])
                        : load(pb + w0 + w1 * l.strides[2][1]);
    }
  }
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const uint32_t c = threadIdx.x + k * kThreads;
    uint32_t r0, r1;
    staging(c, r0, r1);
    if (c < vectors && r0 < m0 && r1 < m1) {
#pragma unroll
      for (int v = 0; v < kVec; ++v) {
        if (kStageA) {
          stage[0][padded<kCells>(r0 * t1 + r1 + v)] = static_cast<T>(sa[k].v[v]);
        }
        if (kStageB) {
          stage[kStaged - 1][padded<kCells>(r0 * t1 + r1 + v)] = static_cast<T>(sb[k].v[v]);
        }
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const uint32_t c = threadIdx.x + k * kThreads;
    uint32_t w0, w1;
    writing(c, w0, w1);
    if (c < vectors && w0 < m0 && w1 < m1) {
      V r;
#pragma unroll
      for (int v = 0; v < kVec; ++v) {
        const uint32_t at = padded<kCells>((w0 + v) * t1 + w1);
        const T x = kStageA ? stage[0][at] : static_cast<T>(da[k].v[v]);
        const T y = kStageB ? stage[kStaged - 1][at] : static_cast<T>(db[k].v[v]);
        r.v[v] = static_cast<scalar_t>(op(x, y));
      }
      scalar_t* po = out + base[0] + w0 + w1 * l.strides[0][1];
      if constexpr (kVec == 1) {
        *po = r.v[0];
      } else {
        *reinterpret_cast<V*>(po) = r;
      }
    }
  }
}

inline int log2_ceil(int64_t n) {
  int k = 0;
  while ((int64_t{1} << k) < n) {
    ++k;
  }
  return k;
}

// True when the tiled kernel may move kVec elements per access: every run
// it reads or writes is whole (sizes of dimensions 0 and 1 divisible by
// kVec) and starts aligned (the pointers, and every stride but the one along
// the run, divisible by kVec), and no input is repeated along dimension 0.
template <typename scalar_t>
bool vector_tiles_ok(const scalar_t* out, const scalar_t* a, const scalar_t* b,
                     const BinaryLayout& l, int vec) {
  if (l.sizes[0] % vec != 0 || l.sizes[1] % vec != 0) {
    return false;
  }
  const scalar_t* ptrs[3] = {out, a, b};
  for (int t = 0; t < 3; ++t) {
    if (!aligned_to(ptrs[t], vec * sizeof(scalar_t))) {
      return false;
    }
    const int run = transposed_input(l, t) ? 1 : 0;  // the dimension of stride 1
    if (l.strides[t][run] != 1) {
      return false;
    }
    for (int d = 0; d < l.ndim; ++d) {
      if (d != run && l.strides[t][d] % vec != 0) {
        return false;
      }
    }
  }
  return true;
}

template <typename scalar_t, typename Op, int kCells, int kVec>
void launch_tiled(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l, Op op,
                  cudaStream_t stream) {
  TileShape shape;
  shape.n0 = l.sizes[0];
  shape.n1 = l.sizes[1];
  shape.log2_t0 = std::max(std::min(log2_ceil(shape.n0), 5), log2_ceil(kVec));
  shape.log2_t1 =
      std::max(std::min(log2_ceil(shape.n1), log2_ceil(kCells) - shape.log2_t0), log2_ceil(kVec));
  const int64_t t0 = int64_t{1} << shape.log2_t0, t1 = int64_t{1} << shape.log2_t1;
  const int64_t tiles0 = (shape.n0 + t0 - 1) / t0, tiles1 = (shape.n1 + t1 - 1) / t1;
  const int64_t count = tiles0 * tiles1 * (l.numel / (shape.n0 * shape.n1));
  // A tile holds up to kCells elements: 2^31 tiles would be 2^41 elements.
  if (count >= (int64_t{1} << 31)) {
    throw std::runtime_error("extension_cpp: too many tiles: " + std::to_string(count) +
                             " (a bug: please report it)");
  }
  shape.tiles0 = FastDivisor(static_cast<uint32_t>(tiles0));
  shape.tiles1 = FastDivisor(static_cast<uint32_t>(tiles1));
  for (int d = 2; d < l.ndim; ++d) {
    shape.sizes[d - 2] = FastDivisor(static_cast<uint32_t>(l.sizes[d]));
  }
  const int64_t blocks = count;
  const bool stage_a = transposed_input(l, 1), stage_b = transposed_input(l, 2);
  if (stage_a && stage_b) {
    tiled_kernel<scalar_t, Op, kCells, kVec, true, true>
        <<<blocks, kThreads, 0, stream>>>(out, a, b, l, shape, op);
  } else if (stage_a) {
    tiled_kernel<scalar_t, Op, kCells, kVec, true, false>
        <<<blocks, kThreads, 0, stream>>>(out, a, b, l, shape, op);
  } else {
    tiled_kernel<scalar_t, Op, kCells, kVec, false, true>
        <<<blocks, kThreads, 0, stream>>>(out, a, b, l, shape, op);
  }
}

// As many elements per access as vector_tiles_ok allows: four for 2-byte
// types, two otherwise, else one. Measured on an H100
// (scripts/bench_layouts.py, 2^24 elements, mymul, as a fraction of a device
// copy's bandwidth), one input transposed, one element per access -> two:
// float32 0.86 -> 0.99, bfloat16 0.57 -> 0.79, float16 0.57 -> 0.88; the
// permuted 3-D layout 0.93 -> 1.07, 0.62 -> 0.87, 0.62 -> 0.93. The kernel is
// bound by its load and store instructions, not by bytes in flight (twice the
// elements per thread at one element per access gave 0.67-0.69 in half
// precision), so 2-byte types move four elements (8 bytes, as float32 pairs
// do) per access, in 2048-element tiles of 32 x 64, whose staged rows are 128
// bytes: bfloat16 0.80 -> 0.97 and float16 0.85 -> 0.99 (permuted 3-D 0.88 ->
// 1.07, 0.94 -> 1.10), where 1024-element tiles of four per access reached
// 0.90 and 0.92, and 4096-element ones 0.96 and 0.97.
template <typename scalar_t, typename Op>
void launch_tiled(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l, Op op,
                  cudaStream_t stream) {
  if constexpr (sizeof(scalar_t) == 2) {
    if (vector_tiles_ok(out, a, b, l, 4)) {
      launch_tiled<scalar_t, Op, 2 * kTileCells, 4>(out, a, b, l, op, stream);
      return;
    }
  }
  if (vector_tiles_ok(out, a, b, l, 2)) {
    launch_tiled<scalar_t, Op, kTileCells, 2>(out, a, b, l, op, stream);
  } else {
    launch_tiled<scalar_t, Op, kTileCells, 1>(out, a, b, l, op, stream);
  }
}

// Throws std::runtime_error for a failed CUDA runtime call: the bindings
// turn it into a Python RuntimeError, as TORCH_CHECK's error would be.
inline void check_cuda(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(error));
  }
}

// Blocks of kThreads that device `device` keeps resident at once, read once
// per process.
inline int64_t resident_blocks(int device) {
  static const std::vector<int64_t> blocks = [] {
    int count = 0;
    check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    std::vector<int64_t> v(count);
    for (int d = 0; d < count; ++d) {
      int sms = 0, threads_per_sm = 0;
      check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d),
                 "cudaDeviceGetAttribute");
      check_cuda(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, d),
                 "cudaDeviceGetAttribute");
      v[d] = static_cast<int64_t>(sms) * (threads_per_sm / kThreads);
    }
    return v;
  }();
  return blocks.at(device);
}

// One block per kThreads items of work, at least one (block 0 of the
// contiguous kernel also handles the remainder) and at most `cap`: the
// kernels' grid-stride loops cover what lies beyond. The strided kernel caps
// at one full wave of the device (resident_blocks), the contiguous kernel at
// kMaxBlocks.
inline int64_t blocks_for(int64_t work, int64_t cap) {
  return std::max<int64_t>(1, std::min((work + kThreads - 1) / kThreads, cap));
}

template <typename scalar_t, typename Op>
void run(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& layout, Op op,
         cudaStream_t stream, int device) {
  constexpr int kVec = 16 / sizeof(scalar_t);
  const int64_t n = layout.numel;
  if (n == 0) {
    return;
  }
  const bool aligned = aligned_to(out, 16) && aligned_to(a, 16) && aligned_to(b, 16);
  if (layout.contiguous() && aligned) {
    contiguous_kernel<scalar_t, kVec>
        <<<blocks_for(n / kVec, kMaxBlocks), kThreads, 0, stream>>>(out, a, b, n, op);
  } else if (use_tiles(layout)) {
    launch_tiled(out, a, b, layout, op, stream);
  } else if (fits_32_bits(layout)) {  // a misaligned dense run comes here too
    // Rows of half a chunk and more take the row path; with shorter ones
    // most threads of a block would idle.
    if (layout.ndim >= 1 && layout.sizes[0] >= kThreads * kVec / 2) {
      launch_rows<scalar_t, kVec>(out, a, b, layout, op, stream);
    } else {
      const int64_t blocks = (n + kThreads * kWork - 1) / (kThreads * kWork);
      strided32_kernel<<<blocks, kThreads, 0, stream>>>(out, a, b, to_32_bits(layout),
                                                        static_cast<uint32_t>(n), op);
    }
  } else if (layout.contiguous()) {
    contiguous_kernel<scalar_t, 1>
        <<<blocks_for(n, kMaxBlocks), kThreads, 0, stream>>>(out, a, b, n, op);
  } else {
    strided_kernel<<<blocks_for(n, resident_blocks(device)), kThreads, 0, stream>>>(out, a, b,
                                                                                    layout, op);
  }
  check_cuda(cudaGetLastError(), "CUDA kernel launch");
}

}  // namespace extension_cpp::cuda
