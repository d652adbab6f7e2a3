// Autocast kernels: what the ops do inside torch.autocast.
//
// Policy: the inputs meet at the dtype torch.mul(a, b) would return, the
// widest of their floating dtypes (autocast's "promote" rule), and the op runs
// there. So mymul(a, b) under autocast has the dtype and the value of a * b
// under autocast, whether a and b share a dtype or not: an autocast matmul's
// bfloat16 output times a float32 parameter runs in float32, as torch.mul
// would, instead of failing the kernels' same-dtype check. Nothing is cast
// down: like torch.mul, which autocast leaves alone, these ops are memory
// bound and gain nothing from a narrower type that costs accuracy.
// myadd_out writes into out's dtype, so its inputs are cast to that dtype.
// Non-floating inputs are passed on unchanged, to get the usual clear error.
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/ScalarType.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

namespace extension_cpp {
namespace {

at::Tensor cast_to(const at::Tensor& t, at::ScalarType dtype) {
  return t.is_floating_point() && t.scalar_type() != dtype ? t.to(dtype) : t;
}

at::ScalarType widest(const at::Tensor& a, const at::Tensor& b) {
  if (!a.is_floating_point() || !b.is_floating_point()) {
    return a.scalar_type();  // no cast: the kernel's dtype check reports it
  }
  return c10::promoteTypes(a.scalar_type(), b.scalar_type());
}

template <typename Signature>
c10::TypedOperatorHandle<Signature> op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

// Each kernel leaves autocast's key out of the dispatch below it, as
// PyTorch's own autocast wrappers do, then calls the op with the cast inputs.
template <c10::DispatchKey kAutocastKey>
struct AutocastKernels {
  static at::Tensor mymuladd(const at::Tensor& a, const at::Tensor& b, double c) {
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(kAutocastKey);
    static const auto handle =
        op<at::Tensor(const at::Tensor&, const at::Tensor&, double)>("extension_cpp::mymuladd");
    const at::ScalarType dtype = widest(a, b);
    return handle.call(cast_to(a, dtype), cast_to(b, dtype), c);
  }
  static at::Tensor mymul(const at::Tensor& a, const at::Tensor& b) {
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(kAutocastKey);
    static const auto handle =
        op<at::Tensor(const at::Tensor&, const at::Tensor&)>("extension_cpp::mymul");
    const at::ScalarType dtype = widest(a, b);
    return handle.call(cast_to(a, dtype), cast_to(b, dtype));
  }
  static void myadd_out(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(kAutocastKey);
    static const auto handle = op<void(const at::Tensor&, const at::Tensor&, const at::Tensor&)>(
        "extension_cpp::myadd_out");
    handle.call(cast_to(a, out.scalar_type()), cast_to(b, out.scalar_type()), out);
  }
};

template <c10::DispatchKey kAutocastKey>
void register_autocast(torch::Library& m) {
  using K = AutocastKernels<kAutocastKey>;
  m.impl("mymuladd", &K::mymuladd);
  m.impl("mymul", &K::mymul);
  m.impl("myadd_out", &K::myadd_out);
}

}  // namespace

TORCH_LIBRARY_IMPL(extension_cpp, AutocastCPU, m) {
  register_autocast<c10::DispatchKey::AutocastCPU>(m);
}

TORCH_LIBRARY_IMPL(extension_cpp, AutocastCUDA, m) {
  register_autocast<c10::DispatchKey::AutocastCUDA>(m);
}

}  // namespace extension_cpp
