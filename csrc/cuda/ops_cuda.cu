// CUDA kernels of mymuladd, mymul and myadd_out.
//
// One kernel template per access pattern, shared by the three ops. The
// layout is merged in the output's memory order first (csrc/elementwise.h),
// so inputs that share the output's dense layout (contiguous, transposed,
// channels_last, any permutation) are one dense run:
//   * contiguous_kernel: every operand one dense run. 16-byte vector loads and
//     stores when all three pointers allow it, one vector per thread.
//   * tiled_kernel: an input transposed against the output (use_tiles). A
//     block reads a tile of it along its own rows into shared memory, then
//     writes the output along its rows: both sides coalesced.
//   * strided32_kernel: any other layout (slices, broadcasts, a misaligned
//     start) that 32-bit offsets can address. kWork elements per thread, all
//     loads issued before the first store; offsets with precomputed
//     multiply-shift divisors instead of a 64-bit division per dimension.
//   * strided_kernel: the same beyond 2^31 elements or offsets, with int64_t
//     indices and divisions.
// Launches go to the current stream of the inputs' device (never the legacy
// default stream, which breaks under CUDA graphs: pytorch/pytorch#157363) and
// are checked with C10_CUDA_KERNEL_LAUNCH_CHECK.
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../ops.h"

namespace extension_cpp::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 30;

template <typename scalar_t, int kVec>
struct alignas(sizeof(scalar_t) * kVec) Vec {
  scalar_t v[kVec];
};

template <typename scalar_t, int kVec, typename Op>
__device__ __forceinline__ Vec<scalar_t, kVec> apply(const Vec<scalar_t, kVec>& x,
                                                     const Vec<scalar_t, kVec>& y, Op op) {
  using T = at::opmath_type<scalar_t>;
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
      using T = at::opmath_type<scalar_t>;
      out[t] = static_cast<scalar_t>(op(static_cast<T>(a[t]), static_cast<T>(b[t])));
    }
  }
}

template <typename scalar_t, typename Op>
__global__ void strided_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b,
                               const BinaryLayout layout, Op op) {
  using T = at::opmath_type<scalar_t>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < layout.numel;
       i += stride) {
    const Offsets o = offsets_of(layout, i);
    out[o.out] = static_cast<scalar_t>(op(static_cast<T>(a[o.a]), static_cast<T>(b[o.b])));
  }
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

  __device__ __forceinline__ void offsets(uint32_t i, uint32_t (&o)[3]) const {
    o[0] = o[1] = o[2] = 0;
#pragma unroll 4
    for (int d = 0; d < ndim; ++d) {
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
bool fits_32_bits(const BinaryLayout& l) {
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

Layout32 to_32_bits(const BinaryLayout& l) {
  Layout32 r;
  r.ndim = l.ndim;
  for (int d = 0; d < l.ndim; ++d) {
    r.sizes[d] = FastDivisor(static_cast<uint32_t>(l.sizes[d]));
    for (int t = 0; t < 3; ++t) {
      r.strides[t][d] = static_cast<uint32_t>(l.strides[t][d]);
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
  using T = at::opmath_type<scalar_t>;
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
// Tiled path for transposed inputs.
// ---------------------------------------------------------------------------

// A tile is t0 x t1 elements of dimensions 0 and 1 (t0 <= 32, t0 * t1 <=
// kTileElems). Its transposed inputs are staged in shared memory, each row of
// t1 padded by one element so that reading a column touches every bank once.
constexpr int kTileElems = 1024;

struct TileShape {
  int64_t n0, n1, tiles0, tiles1, count;  // sizes, tiles per dimension, tiles in all
  FastDivisor t0, t1;                     // the tile's extent in dimensions 0 and 1
};

template <typename scalar_t, typename Op, bool kStageA, bool kStageB>
__global__ void tiled_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b,
                             const BinaryLayout l, const TileShape shape, Op op) {
  using T = at::opmath_type<scalar_t>;
  __shared__ T stage[2][kTileElems + 32];
  const uint32_t t0 = shape.t0.divisor, t1 = shape.t1.divisor, cells = t0 * t1;
  const scalar_t* inputs[2] = {a, b};
  for (int64_t tile = blockIdx.x; tile < shape.count; tile += gridDim.x) {
    const int64_t j0 = (tile % shape.tiles0) * t0;
    const int64_t j1 = (tile / shape.tiles0 % shape.tiles1) * t1;
    int64_t rest = tile / (shape.tiles0 * shape.tiles1);
    int64_t base[3] = {0, 0, 0};
    for (int d = 2; d < l.ndim; ++d) {
      const int64_t i = rest % l.sizes[d];
      rest /= l.sizes[d];
      for (int t = 0; t < 3; ++t) {
        base[t] += i * l.strides[t][d];
      }
    }
    for (int t = 0; t < 3; ++t) {
      base[t] += j0 * l.strides[t][0] + j1 * l.strides[t][1];
    }
    const uint32_t m0 = static_cast<uint32_t>(std::min<int64_t>(t0, shape.n0 - j0));
    const uint32_t m1 = static_cast<uint32_t>(std::min<int64_t>(t1, shape.n1 - j1));
    // Stage: consecutive threads read along dimension 1, the input's rows.
    const bool staged[2] = {kStageA, kStageB};
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      if (!staged[t]) {
        continue;
      }
      const int64_t s0 = l.strides[t + 1][0];
      for (uint32_t c = threadIdx.x; c < cells; c += kThreads) {
        const uint32_t i0 = shape.t1.div(c), i1 = c - i0 * t1;
        if (i0 < m0 && i1 < m1) {
          stage[t][i0 * (t1 + 1) + i1] = static_cast<T>(inputs[t][base[t + 1] + i0 * s0 + i1]);
        }
      }
    }
    __syncthreads();
    // Compute: consecutive threads walk dimension 0, the output's rows.
    for (uint32_t c = threadIdx.x; c < cells; c += kThreads) {
      const uint32_t i1 = shape.t0.div(c), i0 = c - i1 * t0;
      if (i0 < m0 && i1 < m1) {
        auto value = [&](int t) -> T {
          if (staged[t]) {
            return stage[t][i0 * (t1 + 1) + i1];
          }
          return static_cast<T>(
              inputs[t][base[t + 1] + i0 * l.strides[t + 1][0] + i1 * l.strides[t + 1][1]]);
        };
        out[base[0] + i0 + i1 * l.strides[0][1]] = static_cast<scalar_t>(op(value(0), value(1)));
      }
    }
    __syncthreads();  // the next tile overwrites the stage
  }
}

template <typename scalar_t, typename Op>
void launch_tiled(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& l, Op op,
                  int64_t blocks_cap, const c10::cuda::CUDAStream& stream) {
  TileShape shape;
  shape.n0 = l.sizes[0];
  shape.n1 = l.sizes[1];
  const int64_t t0 = std::min<int64_t>(shape.n0, 32);
  const int64_t t1 = std::min<int64_t>(shape.n1, kTileElems / t0);
  shape.t0 = FastDivisor(static_cast<uint32_t>(t0));
  shape.t1 = FastDivisor(static_cast<uint32_t>(t1));
  shape.tiles0 = (shape.n0 + t0 - 1) / t0;
  shape.tiles1 = (shape.n1 + t1 - 1) / t1;
  shape.count = shape.tiles0 * shape.tiles1 * (l.numel / (shape.n0 * shape.n1));
  const int64_t blocks = std::max<int64_t>(1, std::min(shape.count, blocks_cap));
  const bool stage_a = transposed_input(l, 1), stage_b = transposed_input(l, 2);
  if (stage_a && stage_b) {
    tiled_kernel<scalar_t, Op, true, true>
        <<<blocks, kThreads, 0, stream>>>(out, a, b, l, shape, op);
  } else if (stage_a) {
    tiled_kernel<scalar_t, Op, true, false>
        <<<blocks, kThreads, 0, stream>>>(out, a, b, l, shape, op);
  } else {
    tiled_kernel<scalar_t, Op, false, true>
        <<<blocks, kThreads, 0, stream>>>(out, a, b, l, shape, op);
  }
}

// Blocks of kThreads that device `device` keeps resident at once, read once
// per process. (Only c10 headers here: ATen's CUDAContext would pull in the
// cuBLAS and cuSPARSE headers, which a bare CUDA toolkit may lack.)
int64_t resident_blocks(c10::DeviceIndex device) {
  static const std::vector<int64_t> blocks = [] {
    std::vector<int64_t> v(c10::cuda::device_count());
    for (size_t d = 0; d < v.size(); ++d) {
      int sms = 0, threads_per_sm = 0;
      C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d));
      C10_CUDA_CHECK(
          cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, d));
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
int64_t blocks_for(int64_t work, int64_t cap) {
  return std::max<int64_t>(1, std::min((work + kThreads - 1) / kThreads, cap));
}

bool aligned_to(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

template <typename scalar_t, typename Op>
void run(scalar_t* out, const scalar_t* a, const scalar_t* b, const BinaryLayout& layout, Op op,
         const c10::cuda::CUDAStream& stream) {
  const c10::DeviceIndex device = stream.device_index();
  constexpr int kVec = 16 / sizeof(scalar_t);
  const int64_t n = layout.numel;
  const bool aligned = aligned_to(out, 16) && aligned_to(a, 16) && aligned_to(b, 16);
  if (layout.contiguous() && aligned) {
    contiguous_kernel<scalar_t, kVec>
        <<<blocks_for(n / kVec, kMaxBlocks), kThreads, 0, stream>>>(out, a, b, n, op);
  } else if (use_tiles(layout)) {
    launch_tiled(out, a, b, layout, op, 4 * resident_blocks(device), stream);
  } else if (fits_32_bits(layout)) {  // a misaligned dense run comes here too
    const int64_t blocks = (n + kThreads * kWork - 1) / (kThreads * kWork);
    strided32_kernel<<<blocks, kThreads, 0, stream>>>(out, a, b, to_32_bits(layout),
                                                      static_cast<uint32_t>(n), op);
  } else if (layout.contiguous()) {
    contiguous_kernel<scalar_t, 1>
        <<<blocks_for(n, kMaxBlocks), kThreads, 0, stream>>>(out, a, b, n, op);
  } else {
    strided_kernel<<<blocks_for(n, resident_blocks(device)), kThreads, 0, stream>>>(out, a, b,
                                                                                    layout, op);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void launch(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, BinaryOpKind kind,
            double c, const BinaryLayout& layout) {
  const c10::cuda::CUDAGuard device_guard(a.device());
  const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream();
  dispatch_binary(out, a, b, kind, c, [&](auto* o, const auto* x, const auto* y, auto op) {
    run(o, x, y, layout, op, stream);
  });
}

at::Tensor empty(const at::Tensor& like, c10::IntArrayRef strides) {
  return at::detail::empty_strided_cuda(like.sizes(), strides, like.scalar_type(), like.device());
}

}  // namespace

TORCH_LIBRARY_IMPL(extension_cpp, CUDA, m) { register_kernels<launch, empty>(m); }

}  // namespace extension_cpp::cuda
