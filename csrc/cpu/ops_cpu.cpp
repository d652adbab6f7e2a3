// The CPU kernels of mymuladd, mymul and myadd_out.
//
// Each kernel prepares (ops.h: checks its arguments, and gives the output's
// strides and the merged layout), makes the output, and runs elementwise_cpu (csrc/loops.h: the
// simple loop of elementwise_cpu.h, or the tuned ones) with its op's functor (elementwise.h) for
// the tensors' dtype. float16 and bfloat16 are computed in float (opmath_t) and rounded once when
// stored.
#include <ATen/Dispatch_v2.h>
#include <ATen/EmptyTensor.h>
#include <torch/library.h>

#include "../loops.h"
#include "../ops.h"

namespace extension_cpp {
namespace {

// A new tensor for f(a, b), laid out as torch.mul(a, b) would be, straight
// from the CPU allocator: at::empty_strided would go through the dispatcher
// again, a noticeable part of a small call (Note [Per-call cost]).
at::Tensor new_output(const at::Tensor& a, const Prepared& prepared) {
  return at::detail::empty_strided_cpu(a.sizes(), prepared.out_strides, a.scalar_type());
}

// a, b: same shape, dtype and device (checked). Returns a * b + c, laid out
// as torch.mul(a, b).
at::Tensor mymuladd_cpu(const at::Tensor& a, const at::Tensor& b, double c) {
  const Prepared prepared = prepare("mymuladd", a, b);
  at::Tensor out = new_output(a, prepared);
  const BinaryLayout& layout = prepared.layout;
  AT_DISPATCH_V2(a.scalar_type(), "mymuladd_cpu", AT_WRAP([&] {
                   using T = opmath_t<scalar_t>;
                   elementwise_cpu(out.mutable_data_ptr<scalar_t>(), a.const_data_ptr<scalar_t>(),
                                   b.const_data_ptr<scalar_t>(), layout,
                                   MulAddOp<T>{static_cast<T>(c)});
                 }),
                 AT_EXPAND(AT_FLOATING_TYPES), at::kHalf, at::kBFloat16);
  return out;
}

at::Tensor mymul_cpu(const at::Tensor& a, const at::Tensor& b) {
  const Prepared prepared = prepare("mymul", a, b);
  at::Tensor out = new_output(a, prepared);
  const BinaryLayout& layout = prepared.layout;
  AT_DISPATCH_V2(a.scalar_type(), "mymul_cpu", AT_WRAP([&] {
                   elementwise_cpu(out.mutable_data_ptr<scalar_t>(), a.const_data_ptr<scalar_t>(),
                                   b.const_data_ptr<scalar_t>(), layout,
                                   MulOp<opmath_t<scalar_t>>{});
                 }),
                 AT_EXPAND(AT_FLOATING_TYPES), at::kHalf, at::kBFloat16);
  return out;
}

// out: same shape, dtype and device as a and b, any layout without internal
// overlap; a or b itself, or sharing no memory with them.
void myadd_out_cpu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  const BinaryLayout layout = prepare_out("myadd_out", a, b, out);
  AT_DISPATCH_V2(a.scalar_type(), "myadd_out_cpu", AT_WRAP([&] {
                   elementwise_cpu(out.mutable_data_ptr<scalar_t>(), a.const_data_ptr<scalar_t>(),
                                   b.const_data_ptr<scalar_t>(), layout,
                                   AddOp<opmath_t<scalar_t>>{});
                 }),
                 AT_EXPAND(AT_FLOATING_TYPES), at::kHalf, at::kBFloat16);
}

}  // namespace

TORCH_LIBRARY_IMPL(extension_cpp, CPU, m) {
  m.impl("mymuladd", &mymuladd_cpu);
  m.impl("mymul", &mymul_cpu);
  m.impl("myadd_out", &myadd_out_cpu);
}

}  // namespace extension_cpp
