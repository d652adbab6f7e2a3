// What the CPU and CUDA kernels of the classic build share: the checks of
// their arguments and the layout of what they write.
#pragma once

#include <ATen/core/DimVector.h>
#include <ATen/core/Tensor.h>

#include "elementwise.h"

namespace extension_cpp {

// What a kernel needs before its loop, in one call (csrc/ops.cpp): its
// arguments checked (input_checks.h: the errors say what was received), the
// strides of a new output, and out, a and b as one strided layout, with
// neighbouring dimensions merged where all three allow it (elementwise.h).
struct Prepared {
  at::DimVector out_strides;  // those torch.mul(a, b) gives its result
  BinaryLayout layout;
};

// mymuladd, mymul: a and b must be floating-point tensors of one dtype,
// device and shape, in that order.
Prepared prepare(const char* op, const at::Tensor& a, const at::Tensor& b);

// A one-input op: a must be a floating-point tensor (the first check of the
// two-input ops, in the same words); a stands in both input places.
Prepared prepare(const char* op, const at::Tensor& a);

// myadd_out: a and b as above, and out like them, without internal overlap,
// and either a or b itself or sharing no memory with them. Its layout.
BinaryLayout prepare_out(const char* op, const at::Tensor& a, const at::Tensor& b,
                         const at::Tensor& out);

}  // namespace extension_cpp
