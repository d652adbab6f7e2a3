// What the CPU and CUDA kernels of the stable-ABI build share: the checks of
// their arguments and the layout of what they write.
//
// The same functions as csrc/ops.h, on torch::stable::Tensor instead of
// at::Tensor. The library built from csrc/stable/ loads on every torch from
// the one TORCH_TARGET_VERSION names (2.10, set by stable/setup.py) on. The
// math is not repeated: the kernels run the same loops as the classic build
// (csrc/loops.h, csrc/loops.cuh).
#pragma once

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include "../elementwise.h"

namespace extension_cpp::stable {

using torch::stable::Tensor;

// The checks of input_checks.h, on torch::stable::Tensor (ops.cpp).
// mymuladd, mymul: a and b must be floating-point tensors of one dtype,
// device and shape, in that order.
void check_inputs(const char* op, const Tensor& a, const Tensor& b);

// myadd_out: a and b as above, and out like them, without internal overlap,
// and either a or b itself or sharing no memory with them.
void check_out(const char* op, const Tensor& a, const Tensor& b, const Tensor& out);

// A new tensor for f(a, b), laid out as torch.mul(a, b) would be.
Tensor new_output(const char* op, const Tensor& a, const Tensor& b);

// out, a and b as one strided layout, with neighbouring dimensions merged
// where all three allow it (elementwise.h).
BinaryLayout merged_layout(const char* op, const Tensor& out, const Tensor& a, const Tensor& b);

}  // namespace extension_cpp::stable
