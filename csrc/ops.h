// What the CPU and CUDA kernels of the classic build share: the checks of
// their arguments and the layout of what they write.
#pragma once

#include <ATen/core/DimVector.h>
#include <ATen/core/Tensor.h>

#include "elementwise.h"

namespace extension_cpp {

// The checks of input_checks.h, on at::Tensor (csrc/ops.cpp).
// mymuladd, mymul: a and b must be floating-point tensors of one dtype,
// device and shape, in that order (the errors say what was received).
void check_inputs(const char* op, const at::Tensor& a, const at::Tensor& b);

// A one-input op: a must be a floating-point tensor (the first check of
// check_inputs, in the same words).
void check_input(const char* op, const at::Tensor& a);

// myadd_out: a and b as above, and out like them, without internal overlap,
// and either a or b itself or sharing no memory with them.
void check_out(const char* op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out);

// The strides torch.mul(a, b) would give its result (elementwise.h's rule).
at::DimVector output_strides(const at::Tensor& a, const at::Tensor& b);

// out, a and b as one strided layout, with neighbouring dimensions merged
// where all three allow it (elementwise.h).
BinaryLayout merged_layout(const char* op, const at::Tensor& out, const at::Tensor& a,
                           const at::Tensor& b);

// A one-input op's layout: out and a, with a in both input places.
inline BinaryLayout merged_layout(const char* op, const at::Tensor& out, const at::Tensor& a) {
  return merged_layout(op, out, a, a);
}

}  // namespace extension_cpp
