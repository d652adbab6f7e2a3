// CUDA kernels of mymuladd, mymul and myadd_out.
//
// One kernel template per access pattern, shared by the three ops. The
// layout is merged in the output's memory order (csrc/elementwise.h), so
// inputs that share the output's dense layout (transposed, channels_last,
// any permutation) are one dense run for contiguous_kernel:
//   * contiguous_kernel: every operand one dense run. 16-byte vector loads and
//     stores when all three pointers allow it, one vector per thread.
//   * strided_kernel: any other layout (transposed, sliced, expanded), one
//     element per iteration, offsets from the merged BinaryLayout.
// Indices are int64_t throughout, so tensors past 2^31 elements are correct.
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
  if (!layout.contiguous()) {
    strided_kernel<<<blocks_for(n, resident_blocks(device)), kThreads, 0, stream>>>(out, a, b,
                                                                                    layout, op);
  } else if (aligned_to(out, 16) && aligned_to(a, 16) && aligned_to(b, 16)) {
    contiguous_kernel<scalar_t, kVec>
        <<<blocks_for(n / kVec, kMaxBlocks), kThreads, 0, stream>>>(out, a, b, n, op);
  } else {
    contiguous_kernel<scalar_t, 1>
        <<<blocks_for(n, kMaxBlocks), kThreads, 0, stream>>>(out, a, b, n, op);
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
