// Block-shape sweep for the contiguous kernel (not part of the package).
//
// out = a * b over dense tensors, 16-byte vectors, one tile of
// kThreads x kUnroll vectors per block, for several (kThreads, kUnroll).
// scripts/cuda_block_shapes.py builds this with torch.utils.cpp_extension
// and times each shape against torch.mul; csrc/cuda/ops_cuda.cu says which
// shape won and by how much.
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/extension.h>

template <typename scalar_t, int kVec>
struct alignas(sizeof(scalar_t) * kVec) Vec {
  scalar_t v[kVec];
};

template <typename scalar_t, int kVec, int kThreads, int kUnroll>
__global__ void tile_kernel(scalar_t* out, const scalar_t* a, const scalar_t* b, int64_t n) {
  using V = Vec<scalar_t, kVec>;
  using T = at::opmath_type<scalar_t>;
  constexpr int64_t kTile = int64_t{kThreads} * kUnroll;
  const V* va = reinterpret_cast<const V*>(a);
  const V* vb = reinterpret_cast<const V*>(b);
  V* vo = reinterpret_cast<V*>(out);
  const int64_t nvec = n / kVec;
  const int64_t base = blockIdx.x * kTile + threadIdx.x;
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
      V r;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        r.v[k] = static_cast<scalar_t>(static_cast<T>(x[u].v[k]) * static_cast<T>(y[u].v[k]));
      }
      vo[i] = r;
    }
  }
}

template <int kThreads, int kUnroll, typename scalar_t>
void launch_t(torch::Tensor out, torch::Tensor a, torch::Tensor b) {
  constexpr int kVec = 16 / sizeof(scalar_t);
  const int64_t n = a.numel();
  const int64_t nvec = n / kVec;
  const int64_t tile = int64_t{kThreads} * kUnroll;
  const int64_t blocks = (nvec + tile - 1) / tile;
  auto stream = c10::cuda::getCurrentCUDAStream();
  tile_kernel<scalar_t, kVec, kThreads, kUnroll><<<blocks, kThreads, 0, stream>>>(
      out.data_ptr<scalar_t>(), a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <int kThreads, int kUnroll>
void launch(torch::Tensor out, torch::Tensor a, torch::Tensor b) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "block_shapes",
                                  [&] { launch_t<kThreads, kUnroll, scalar_t>(out, a, b); });
}

// The shapes, in the order of SHAPES in cuda_block_shapes.py.
void run(int64_t variant, torch::Tensor out, torch::Tensor a, torch::Tensor b) {
  switch (variant) {
    case 0:
      return launch<256, 2>(out, a, b);
    case 1:
      return launch<256, 1>(out, a, b);
    case 2:
      return launch<128, 1>(out, a, b);
    case 3:
      return launch<128, 2>(out, a, b);
    case 4:
      return launch<512, 1>(out, a, b);
    case 5:
      return launch<128, 4>(out, a, b);
    case 6:
      return launch<256, 4>(out, a, b);
    case 7:
      return launch<64, 2>(out, a, b);
  }
  TORCH_CHECK(false, "unknown variant ", std::to_string(variant));
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
