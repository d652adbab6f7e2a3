// The Autograd kernels of the ops: the fast path for calls with nothing to
// differentiate.
//
// The dispatcher runs these first for every call. A call that records no
// gradient and carries no forward-mode tangent (inference, or inputs that do
// not require grad) goes straight to the backend kernel below autograd,
// without leaving C++. The derivatives are written once, in Python
// (extension_cpp/ops.py), and reached through three private ops whose
// kernels extension_cpp/_autograd.py registers:
//   * a call that records a backward goes to _mymuladd_differentiable or
//     _mymul_differentiable: the autograd.Function ops._Product;
//   * a call with a tangent (torch.autograd.forward_ad, torch.func.jvp) runs
//     on the primals here, and its output gets the tangent
//     _product_tangent computes (ops.tangent).
// torch.library.register_autograd would run Python on every call, with or
// without grad; this runs it only when there is something to differentiate.
//
// myadd_out, like PyTorch's out= ops, is not differentiable: an argument
// that requires grad under grad mode, or has a tangent, is an error.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <torch/library.h>

#include "checks.h"

namespace extension_cpp {
namespace {

template <typename Signature>
c10::TypedOperatorHandle<Signature> op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

using Binary = at::Tensor(const at::Tensor&, const at::Tensor&);
using BinaryWithScalar = at::Tensor(const at::Tensor&, const at::Tensor&, double);

// Forward-mode AD keeps one tangent per tensor at level 0 (torch.func's jvp
// maps its own levels onto it).
bool has_tangent(const at::Tensor& t) { return t.defined() && t._fw_grad(/*level=*/0).defined(); }

bool requires_grad(const at::Tensor& t) { return t.defined() && t.requires_grad(); }

// Nothing to differentiate: no gradient to record, no tangent to carry. An
// undefined argument (Python's None) goes on to the kernel below, which
// names it in its error.
bool nothing_to_differentiate(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined()) {
    return true;
  }
  return !(at::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad())) &&
         !has_tangent(a) && !has_tangent(b);
}

// The keys below autograd (the backend, or FakeTensor / functionalization
// above it): where a call with nothing to differentiate goes.
c10::DispatchKeySet below_autograd(c10::DispatchKeySet ks) {
  return ks & c10::after_autograd_keyset;
}

// primal(a, b) on the inputs' primals, its output carrying the tangent
// _product_tangent gives for theirs. primal goes through autograd again, so a
// gradient is still recorded where one is needed.
template <typename Primal>
at::Tensor with_tangent(const at::Tensor& a, const at::Tensor& b, Primal primal) {
  static const auto tangent =
      op<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                    const std::optional<at::Tensor>&)>("extension_cpp::_product_tangent");
  const at::Tensor a_p = a._fw_primal(/*level=*/0), b_p = b._fw_primal(/*level=*/0);
  const at::Tensor& ta = a._fw_grad(/*level=*/0);
  const at::Tensor& tb = b._fw_grad(/*level=*/0);
  at::Tensor out = primal(a_p, b_p);
  auto given = [](const at::Tensor& t) {
    return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
  };
  out._set_fw_grad(tangent.call(a_p, b_p, given(ta), given(tb)), /*level=*/0,
                   /*is_inplace_op=*/false);
  return out;
}

at::Tensor mymuladd_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b,
                             double c) {
  if (nothing_to_differentiate(a, b)) {
    static const auto mymuladd = op<BinaryWithScalar>("extension_cpp::mymuladd");
    const at::AutoDispatchBelowADInplaceOrView guard;
    return mymuladd.redispatch(below_autograd(ks), a, b, c);
  }
  if (has_tangent(a) || has_tangent(b)) {
    return with_tangent(a, b, [&](const at::Tensor& x, const at::Tensor& y) {
      return mymuladd_autograd(ks, x, y, c);
    });
  }
  static const auto differentiable =
      op<BinaryWithScalar>("extension_cpp::_mymuladd_differentiable");
  return differentiable.call(a, b, c);
}

at::Tensor mymul_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b) {
  if (nothing_to_differentiate(a, b)) {
    static const auto mymul = op<Binary>("extension_cpp::mymul");
    const at::AutoDispatchBelowADInplaceOrView guard;
    return mymul.redispatch(below_autograd(ks), a, b);
  }
  if (has_tangent(a) || has_tangent(b)) {
    return with_tangent(
        a, b, [&](const at::Tensor& x, const at::Tensor& y) { return mymul_autograd(ks, x, y); });
  }
  static const auto differentiable = op<Binary>("extension_cpp::_mymul_differentiable");
  return differentiable.call(a, b);
}

void myadd_out_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b,
                        const at::Tensor& out) {
  if (at::GradMode::is_enabled()) {
    const char* culprit = requires_grad(a)     ? "a"
                          : requires_grad(b)   ? "b"
                          : requires_grad(out) ? "out"
                                               : nullptr;
    TORCH_CHECK(culprit == nullptr,
                checks::format("out_autograd", {{"op", "myadd_out"}, {"name", culprit}}));
  }
  // Forward mode likewise: a result written into out without a tangent
  // would be a silently zero derivative.
  const char* dual = has_tangent(a)     ? "a"
                     : has_tangent(b)   ? "b"
                     : has_tangent(out) ? "out"
                                        : nullptr;
  TORCH_CHECK(dual == nullptr,
              checks::format("out_forward_ad", {{"op", "myadd_out"}, {"name", dual}}));
  {
    static const auto myadd_out = op<void(const at::Tensor&, const at::Tensor&, const at::Tensor&)>(
        "extension_cpp::myadd_out");
    const at::AutoDispatchBelowADInplaceOrView guard;
    myadd_out.redispatch(below_autograd(ks), a, b, out);
  }
  // out changed in place: autograd must notice if it was saved for a backward.
  torch::autograd::increment_version(out);
}

}  // namespace

TORCH_LIBRARY_IMPL(extension_cpp, Autograd, m) {
  m.impl("mymuladd", &mymuladd_autograd);
  m.impl("mymul", &mymul_autograd);
  m.impl("myadd_out", &myadd_out_autograd);
}

}  // namespace extension_cpp
