// The ops' derivatives, and the Autograd kernels that attach them.
//
// The dispatcher runs an op's Autograd kernel before its backend kernel. Each
// kernel here runs the op below autograd (the CPU or CUDA kernel, or the fake
// kernel under torch.compile) and then attaches its derivatives to the output,
// as PyTorch's own generated kernels do for torch.mul:
//   * reverse mode: a backward node, when an input requires grad;
//   * forward mode: the output's tangent, when an input has one.
// The formulas are written once, below, and serve every mode: backward() and
// torch.autograd.grad to any order, torch.autograd.forward_ad, torch.func
// (grad, vjp, jvp, jacrev, jacfwd, hessian, and vmap of each), and
// torch.compile. A call with nothing to differentiate pays two flag tests.
//
// See Note [A backward node, not torch::autograd::Function].
//
// myadd_out, like PyTorch's out= ops, is not differentiable: an argument that
// requires grad under grad mode, or has a tangent, is an error.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include "checks.h"

// Note [A backward node, not torch::autograd::Function]
// torch::autograd::Function<T> is C++'s counterpart of Python's
// autograd.Function, but it refuses every torch.func transform ("cannot use
// C++ torch::autograd::Function with functorch transforms"), and it has no
// forward mode. A Node subclass attached with set_history is what PyTorch
// generates for each of its own ops (torch/csrc/autograd/generated/): torch.func
// differentiates it level by level, like any ATen op, and the tangent is set
// on the output directly.

namespace extension_cpp {
namespace {

using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

template <typename Signature>
c10::TypedOperatorHandle<Signature> op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

using Binary = at::Tensor(const at::Tensor&, const at::Tensor&);
using BinaryWithScalar = at::Tensor(const at::Tensor&, const at::Tensor&, double);

// mymul through the dispatcher, Autograd kernel included: the derivatives
// below are built from it, so a derivative of any order runs our kernels.
at::Tensor mymul(const at::Tensor& a, const at::Tensor& b) {
  static const auto mymul = op<Binary>("extension_cpp::mymul");
  return mymul.call(a, b);
}

// The keys below autograd (the backend, or FakeTensor / functionalization
// above it): where the Autograd kernels send the op itself.
c10::DispatchKeySet below_autograd(c10::DispatchKeySet ks) {
  return ks & c10::after_autograd_keyset;
}

// Forward-mode AD keeps one tangent per tensor at level 0 (torch.func maps its
// own levels onto it).
constexpr uint64_t kLevel = 0;

// A new Backward node. Autograd owns its nodes through c10::intrusive_ptr
// from torch 2.14 on, through std::shared_ptr with torch::autograd::deleteNode
// (found by argument-dependent lookup, so that only older torch needs it)
// before.
template <typename Backward>
auto make_node() {
  if constexpr (std::is_base_of_v<c10::intrusive_ptr_target, torch::autograd::Node>) {
    return c10::make_intrusive<Backward>();
  } else {
    return std::shared_ptr<Backward>(new Backward(), [](Backward* node) { deleteNode(node); });
  }
}

// A new backward node of type Backward for an op of `inputs`, or null when no
// gradient is recorded (grad mode off, or no input requires grad).
template <typename Backward, typename... Inputs>
auto backward_node(const Inputs&... inputs) {
  if (!torch::autograd::compute_requires_grad(inputs...)) {
    return decltype(make_node<Backward>()){};
  }
  auto node = make_node<Backward>();
  node->set_next_edges(torch::autograd::collect_next_edges(inputs...));
  return node;
}

// `below()` run below autograd, its output given `node` as its grad_fn (if
// any) and `make_tangent()` as its tangent if any of `inputs` has one.
template <typename NodePtr, typename Below, typename MakeTangent, typename... Inputs>
at::Tensor with_derivatives(const NodePtr& node, Below below, MakeTangent make_tangent,
                            const Inputs&... inputs) {
  at::Tensor out;
  {
    const at::AutoDispatchBelowADInplaceOrView guard;
    out = below();
  }
  if (node) {
    torch::autograd::set_history(out, node);
  }
  if ((torch::autograd::isFwGradDefined(inputs) || ...)) {
    out._set_fw_grad(make_tangent(), kLevel, /*is_inplace_op=*/false);
  }
  return out;
}

// A dual tensor's value and tangent, for the tangent formulas.
at::Tensor primal(const at::Tensor& t) { return t._fw_primal(kLevel); }
at::Tensor tangent(const at::Tensor& t) { return t._fw_grad(kLevel); }

// d(a * b + c) = da * b + a * db: the derivatives of mymuladd and of mymul.

// Reverse mode: grad_a = grad * b, grad_b = grad * a. Each needs the other
// factor only, so the node saves b if a requires grad and a if b does.
struct ProductBackward : torch::autograd::TraceableFunction {
  SavedVariable a, b;

  void save(const at::Tensor& a_in, const at::Tensor& b_in) {
    if (should_compute_output(0)) {
      b = SavedVariable(b_in, /*is_output=*/false);
    }
    if (should_compute_output(1)) {
      a = SavedVariable(a_in, /*is_output=*/false);
    }
  }

  variable_list apply(variable_list&& grads) override {
    const at::Tensor& grad = grads[0];
    variable_list result(2);
    if (!grad.defined()) {
      return result;
    }
    if (task_should_compute_output(0)) {
      result[0] = mymul(grad, b.unpack());
    }
    if (task_should_compute_output(1)) {
      result[1] = mymul(grad, a.unpack());
    }
    return result;
  }

  std::string name() const override { return "ProductBackward"; }

  void release_variables() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    a.reset_data();
    b.reset_data();
  }
};

// Forward mode: ta * b + a * tb, where either tangent may be missing.
at::Tensor product_tangent(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor ta = tangent(a), tb = tangent(b);
  at::Tensor result;
  if (ta.defined()) {
    result = mymul(ta, primal(b));
  }
  if (tb.defined()) {
    at::Tensor term = mymul(primal(a), tb);
    result = result.defined() ? result.add(term) : term;
  }
  return result;
}

at::Tensor mymuladd_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b,
                             double c) {
  static const auto mymuladd = op<BinaryWithScalar>("extension_cpp::mymuladd");
  auto node = backward_node<ProductBackward>(a, b);
  if (node) {
    node->save(a, b);
  }
  return with_derivatives(
      node, [&] { return mymuladd.redispatch(below_autograd(ks), a, b, c); },
      [&] { return product_tangent(a, b); }, a, b);
}

at::Tensor mymul_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b) {
  static const auto mymul = op<Binary>("extension_cpp::mymul");
  auto node = backward_node<ProductBackward>(a, b);
  if (node) {
    node->save(a, b);
  }
  return with_derivatives(
      node, [&] { return mymul.redispatch(below_autograd(ks), a, b); },
      [&] { return product_tangent(a, b); }, a, b);
}

bool requires_grad(const at::Tensor& t) { return t.defined() && t.requires_grad(); }

bool has_tangent(const at::Tensor& t) { return torch::autograd::isFwGradDefined(t); }

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
