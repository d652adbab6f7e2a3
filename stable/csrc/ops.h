// What the CPU and CUDA kernels of the stable-ABI build share: the one call
// before a kernel's loop (ops.cpp), and the three kernels themselves, written
// once over the device's loop (ops_cpu.cpp, ops_cuda.cu).
//
// The same steps as the classic build's (csrc/ops.h), on torch::stable::Tensor
// instead of at::Tensor. The library built from stable/csrc/ loads on every
// torch from the one TORCH_TARGET_VERSION names (2.10, set by
// stable/setup.py) on. The math is not repeated: the kernels run the same
// loops as the classic build (csrc/loops.h, csrc/loops.cuh).
#pragma once

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include "elementwise.h"

namespace extension_cpp::stable {

using torch::stable::Tensor;

// mymuladd, mymul: a and b checked (input_checks.h: floating-point tensors of
// one dtype, device and shape), a new output laid out as torch.mul(a, b)
// would be, and out, a and b as one merged strided layout (elementwise.h).
struct Prepared {
  Tensor out;
  BinaryLayout layout;
};
Prepared prepare(const char* op, const Tensor& a, const Tensor& b);

// myadd_out: a and b as above, and out like them, without internal overlap,
// and either a or b itself or sharing no memory with them. Its layout.
BinaryLayout prepare_out(const char* op, const Tensor& a, const Tensor& b, const Tensor& out);

// The three kernels on one device. Loop::run<Op>(out, a, b, layout, args...)
// runs out = Op<T>{args...}(a, b) elementwise there, T the dtype's math type.
template <class Loop>
struct Kernels {
  static Tensor mymuladd(const Tensor& a, const Tensor& b, double c) {
    const Prepared prepared = prepare("mymuladd", a, b);
    Loop::template run<MulAddOp>(prepared.out, a, b, prepared.layout, c);
    return prepared.out;
  }

  static Tensor mymul(const Tensor& a, const Tensor& b) {
    const Prepared prepared = prepare("mymul", a, b);
    Loop::template run<MulOp>(prepared.out, a, b, prepared.layout);
    return prepared.out;
  }

  static void myadd_out(const Tensor& a, const Tensor& b, const Tensor& out) {
    const BinaryLayout layout = prepare_out("myadd_out", a, b, out);
    Loop::template run<AddOp>(out, a, b, layout);
  }
};

}  // namespace extension_cpp::stable
