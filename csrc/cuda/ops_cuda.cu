// CUDA kernels of mymuladd, mymul and myadd_out.
//
// One kernel template per access pattern, shared by the three ops:
//   * contiguous_kernel: every operand one dense run. 16-byte vector loads and
//     stores when all three pointers allow it, two vectors in flight per
//     thread, one tile per block.
//   * strided_kernel: any other layout (transposed, sliced, expanded), one
//     element per iteration, offsets from the merged BinaryLayout.
// Indices are int64_t throughout, so tensors past 2^31 elements are correct.
// Launches go to the current stream of the inputs' device (never the legacy
// default stream, which breaks under CUDA graphs: pytorch/pytorch#157363) and
// are checked with C10_CUDA_KERNEL_LAUNCH_CHECK.
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
constexpr int kUnroll = 2;  // vectors per thread in the contiguous kernel
constexpr int64_t kTile = kThreads * kUnroll;
constexpr int64_t kMaxTiles = int64_t{1} << 30;

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
// Each block takes one tile of kThreads * kUnroll vectors: all loads of a
// thread are issued before its first store. One tile per block, with as many
// blocks as tiles, measured 1.02-1.05x the device copy bandwidth on an H200
// (fp32, 2^24-2^28 elements), where a grid-stride loop over one resident wave
// measured 0.96-0.98x. The tile loop only runs more than once for tensors
// beyond 2^30 tiles.
template <typename scalar_t, int kVec, typename Op>
__global__ void contiguous_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n,
                                  Op op) {
  using V = Vec<scalar_t, kVec>;
  const V* va = reinterpret_cast<const V*>(a);
  const V* vb = reinterpret_cast<const V*>(b);
  V* vo = reinterpret_cast<V*>(out);
  const int64_t nvec = n / kVec;
  const int64_t num_tiles = (nvec + kTile - 1) / kTile;
  for (int64_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const int64_t base = tile * kTile + threadIdx.x;
    V x[kUnroll], y[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * kThreads;
      if (i < nvec) {
        x[u] = va[i];
        y[u] = vb[i];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * kThreads;
      if (i < nvec) {
        vo[i] = apply<scalar_t, kVec>(x[u], y[u], op);
      }
    }
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

// Enough blocks for `work` threads, capped at one full wave of the device:
// the strided kernel's grid-stride loop covers the rest.
int64_t grid_for(int64_t work, c10::DeviceIndex device) {
  return std::max<int64_t>(1, std::min((work + kThreads - 1) / kThreads, resident_blocks(device)));
}

// One block per tile of the contiguous kernel (at least one: block 0 also
// handles the remainder).
int64_t tiles_for(int64_t vectors) {
  return std::max<int64_t>(1, std::min((vectors + kTile - 1) / kTile, kMaxTiles));
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
  if (!layout.contiguous()) {
    strided_kernel<<<grid_for(n, device), kThreads, 0, stream>>>(out, a, b, layout, op);
  } else if (aligned_to(out, 16) && aligned_to(a, 16) && aligned_to(b, 16)) {
    contiguous_kernel<scalar_t, kVec>
        <<<tiles_for(n / kVec), kThreads, 0, stream>>>(out, a, b, n, op);
  } else {
    contiguous_kernel<scalar_t, 1><<<tiles_for(n), kThreads, 0, stream>>>(out, a, b, n, op);
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

}  // namespace

TORCH_LIBRARY_IMPL(extension_cpp, CUDA, m) { register_kernels<launch>(m); }

}  // namespace extension_cpp::cuda
