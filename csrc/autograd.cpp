// Autograd kernels, in C++ on the Autograd dispatch key.
//
// The Python alternative (torch.library.register_autograd) runs a Python
// function on every call, with or without grad, which costs several times
// the op itself at small sizes. Here a call that needs no gradient goes
// straight to the backend kernel.
//
//   mymuladd: d/da = grad * b, d/db = grad * a, both through the mymul op.
//   mymul:    the same formulas, so it is its own derivative's building block
//             and second (and higher) derivatives work.
//   myadd_out: like PyTorch's out= ops, not differentiable: an input that
//             requires grad under grad mode is an error, not a silent detach.
//
// Forward mode (torch.autograd.forward_ad, torch.func.jvp / jacfwd) is handled
// here too: the tangent of a * b (+ c) is ta * b + a * tb, again through mymul.
// Without it, the redispatch below would drop the inputs' tangents and the
// output would silently have none (a zero jvp).
//
// torch.func's reverse-mode transforms (grad, vjp, jacrev, hessian, vmap of
// grad) cannot run a C++ torch::autograd::Function. extension_cpp/ops.py
// routes those calls to a Python autograd.Function with the same formulas;
// a call that reaches this kernel under such a transform anyway (through
// torch.ops directly) gets an error that says where to go instead.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

namespace extension_cpp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Typed handles of the ops, looked up once.
const auto& mymul_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("extension_cpp::mymul", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op;
}

const auto& mymuladd_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("extension_cpp::mymuladd", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double)>();
  return op;
}

const auto& myadd_out_op() {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("extension_cpp::myadd_out", "")
          .typed<void(const at::Tensor&, const at::Tensor&, const at::Tensor&)>();
  return op;
}

// Calls through the whole dispatcher: from backward, so that mymul's own
// autograd records the graph for double backward.
at::Tensor call_mymul(const at::Tensor& a, const at::Tensor& b) { return mymul_op().call(a, b); }

// The keys below autograd (backend, or FakeTensor / functionalization above
// it): the fast path from an Autograd kernel to the kernel it wraps.
c10::DispatchKeySet below_autograd(c10::DispatchKeySet ks) {
  return ks & c10::after_autograd_keyset;
}

// An undefined argument (Python's None) needs no Function node: the kernel
// below names it in its error (issue #13), eager and under FakeTensor alike.
bool needs_grad(const char* op, const at::Tensor& a, const at::Tensor& b) {
  if (!at::GradMode::is_enabled() || !a.defined() || !b.defined() ||
      !(a.requires_grad() || b.requires_grad())) {
    return false;
  }
  // torch.func's grad-tracking transforms hand the kernel wrapped tensors.
  const bool under_func_grad = a.key_set().has(c10::DispatchKey::FuncTorchGradWrapper) ||
                               b.key_set().has(c10::DispatchKey::FuncTorchGradWrapper);
  TORCH_CHECK(!under_func_grad, "torch.ops.extension_cpp.", op,
              " was called under a torch.func transform that needs its gradient (grad, vjp, "
              "jacrev, hessian or vmap of one of them); call extension_cpp.",
              op, " instead, which supports every torch.func transform");
  return true;
}

// Forward-mode AD keeps one tangent per tensor at level 0 (functorch's jvp
// maps its own levels onto it).
constexpr uint64_t kFwLevel = 0;

bool has_tangent(const at::Tensor& t) { return t.defined() && t._fw_grad(kFwLevel).defined(); }

// out = op(a, b) with dual inputs: computes op on the primals (so reverse
// mode still records its graph) and attaches d(a * b) = ta * b + a * tb,
// built from mymul, as the output's tangent.
template <typename Primal>
at::Tensor with_tangent(const at::Tensor& a, const at::Tensor& b, Primal primal) {
  const at::Tensor a_p = a._fw_primal(kFwLevel);
  const at::Tensor b_p = b._fw_primal(kFwLevel);
  const at::Tensor& ta = a._fw_grad(kFwLevel);
  const at::Tensor& tb = b._fw_grad(kFwLevel);
  at::Tensor out = primal(a_p, b_p);
  at::Tensor tangent;
  if (ta.defined()) {
    tangent = call_mymul(ta, b_p);
  }
  if (tb.defined()) {
    at::Tensor term = call_mymul(a_p, tb);
    tangent = tangent.defined() ? tangent.add(term) : term;
  }
  out._set_fw_grad(tangent, kFwLevel, /*is_inplace_op=*/false);
  return out;
}

// Shared by both ops: out = a * b (+ c), so grad_a = grad * b, grad_b = grad * a.
// Saves b only if a needs a gradient, and a only if b does.
void save_factors(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b) {
  ctx->save_for_backward(
      {a.requires_grad() ? b : at::Tensor(), b.requires_grad() ? a : at::Tensor()});
}

variable_list product_backward(AutogradContext* ctx, const at::Tensor& grad) {
  const variable_list saved = ctx->get_saved_variables();
  const at::Tensor& b = saved[0];
  const at::Tensor& a = saved[1];
  at::Tensor grad_a, grad_b;
  if (ctx->needs_input_grad(0)) {
    grad_a = call_mymul(grad, b);
  }
  if (ctx->needs_input_grad(1)) {
    grad_b = call_mymul(grad, a);
  }
  return {grad_a, grad_b};
}

struct MulAddFunction : public torch::autograd::Function<MulAddFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b,
                            double c) {
    save_factors(ctx, a, b);
    const at::AutoDispatchBelowADInplaceOrView guard;
    return mymuladd_op().call(a, b, c);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    variable_list g = product_backward(ctx, grads[0]);
    g.emplace_back();  // c is a float: no gradient
    return g;
  }
};

struct MulFunction : public torch::autograd::Function<MulFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b) {
    save_factors(ctx, a, b);
    const at::AutoDispatchBelowADInplaceOrView guard;
    return mymul_op().call(a, b);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return product_backward(ctx, grads[0]);
  }
};

// With no gradient to record, each kernel redispatches straight to the keys
// below autograd: no Function node, no second trip through the dispatcher.
at::Tensor mymuladd_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b,
                             double c) {
  if (has_tangent(a) || has_tangent(b)) {
    return with_tangent(a, b, [&](const at::Tensor& x, const at::Tensor& y) {
      return mymuladd_autograd(ks, x, y, c);
    });
  }
  if (!needs_grad("mymuladd", a, b)) {
    const at::AutoDispatchBelowADInplaceOrView guard;
    return mymuladd_op().redispatch(below_autograd(ks), a, b, c);
  }
  return MulAddFunction::apply(a, b, c);
}

at::Tensor mymul_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b) {
  if (has_tangent(a) || has_tangent(b)) {
    return with_tangent(
        a, b, [&](const at::Tensor& x, const at::Tensor& y) { return mymul_autograd(ks, x, y); });
  }
  if (!needs_grad("mymul", a, b)) {
    const at::AutoDispatchBelowADInplaceOrView guard;
    return mymul_op().redispatch(below_autograd(ks), a, b);
  }
  return MulFunction::apply(a, b);
}

void myadd_out_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b,
                        const at::Tensor& out) {
  if (at::GradMode::is_enabled()) {
    const char* culprit = a.requires_grad()     ? "a"
                          : b.requires_grad()   ? "b"
                          : out.requires_grad() ? "out"
                                                : nullptr;
    TORCH_CHECK(culprit == nullptr,
                "myadd_out: out= operations do not support automatic "
                "differentiation, but ",
                culprit,
                " requires grad; use a + b, or call myadd_out "
                "under torch.no_grad()");
  }
  // Forward mode likewise: writing a tangent-free result into out would be a
  // silently zero derivative.
  const char* dual = has_tangent(a)     ? "a"
                     : has_tangent(b)   ? "b"
                     : has_tangent(out) ? "out"
                                        : nullptr;
  TORCH_CHECK(dual == nullptr,
              "myadd_out: out= operations do not support forward-mode automatic "
              "differentiation (torch.func.jvp, torch.autograd.forward_ad), but ",
              dual, " has a tangent; use a + b instead");
  {
    const at::AutoDispatchBelowADInplaceOrView guard;
    myadd_out_op().redispatch(below_autograd(ks), a, b, out);
  }
  torch::autograd::increment_version(out);
}

}  // namespace

TORCH_LIBRARY_IMPL(extension_cpp, Autograd, m) {
  m.impl("mymuladd", &mymuladd_autograd);
  m.impl("mymul", &mymul_autograd);
  m.impl("myadd_out", &myadd_out_autograd);
}

}  // namespace extension_cpp
