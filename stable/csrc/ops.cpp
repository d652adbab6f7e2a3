// Schemas of the extension_cpp_stable ops, the checks every backend of the
// stable-ABI build runs, and the kernel for calls no backend takes.
//
// The same schemas as csrc/ops.cpp, and the same checks (input_checks.h), run
// on torch::stable::Tensor. What differs is only how a fact about a tensor is
// read, which View below says:
//   * errors are std::runtime_error (torch turns them into RuntimeError with
//     the same text) instead of TORCH_CHECK's c10::Error;
//   * the dtype is read through the C shim, which reports every dtype
//     (torch::stable::Tensor::scalar_type() refuses those the stable ABI does
//     not list), and devices are printed here, as c10's printers are not part
//     of the stable ABI;
//   * "shares memory with" compares storage base addresses, as the stable ABI
//     has no Storage.
// Tags need the stable ABI of torch 2.12 (torch_library_def_with_tags), so
// this build, which targets 2.10, defines its ops without pt2_compliant_tag.
#include "ops.h"

#include <torch/csrc/inductor/aoti_torch/c/shim.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "input_checks.h"

namespace extension_cpp::stable {
namespace {

using checks::dtype_name;
using checks::format;
using torch::headeronly::ScalarType;

// A C shim call that cannot fail for a defined tensor, unless torch has a bug.
void shim(AOTITorchError error, const char* call) {
  if (error != AOTI_TORCH_SUCCESS) {
    throw std::runtime_error(std::string("extension_cpp_stable: ") + call +
                             " failed (a bug: please report it)");
  }
}

// The shim's dtype code, which is the c10::ScalarType value.
ScalarType dtype_of(const Tensor& t) {
  int32_t code = 0;
  shim(aoti_torch_get_dtype(t.get(), &code), "aoti_torch_get_dtype");
  return static_cast<ScalarType>(code);
}

// "cpu", "cuda:0", as Python prints the device.
std::string device_name(const Tensor& t) {
  const torch::stable::Device device = t.device();
  std::string name = device.is_cuda() ? "cuda" : device.is_cpu() ? "cpu" : "device";
  if (device.has_index() && !device.is_cpu()) {
    name += ":" + std::to_string(device.index());
  }
  return name;
}

// The address where t's storage begins: two tensors share memory only if
// they share a storage, and two live storages never begin at one address.
const char* storage_base(const Tensor& t) {
  return static_cast<const char*>(t.const_data_ptr()) -
         t.storage_offset() * static_cast<int64_t>(t.element_size());
}

// torch::stable::Tensor as the checks read it (input_checks.h).
struct View {
  const Tensor& t;

  bool defined() const { return t.defined(); }
  ScalarType dtype() const { return dtype_of(t); }
  bool same_device(const View& other) const { return t.device() == other.t.device(); }
  std::string device_name() const { return stable::device_name(t); }
  int64_t dim() const { return t.dim(); }
  int64_t numel() const { return t.numel(); }
  int64_t storage_offset() const { return t.storage_offset(); }
  const int64_t* sizes() const { return t.sizes().data(); }
  const int64_t* strides() const { return t.strides().data(); }
  bool same_storage(const View& other) const { return storage_base(t) == storage_base(other.t); }
  [[noreturn]] static void fail(const std::string& message) { throw std::runtime_error(message); }
};

}  // namespace

namespace {

// A new tensor of like's sizes, dtype and device with the given strides,
// straight from the C shim (no trip through the dispatcher). The shim turns
// a failed allocation into an error code: the exception behind it (on a full
// GPU, torch.OutOfMemoryError) is printed to stderr by torch, not passed on,
// so the error raised here says what could not be allocated and where the
// reason went.
Tensor empty_strided_like(const char* op, const Tensor& like, const int64_t* strides) {
  int32_t dtype = 0, device_type = 0, device_index = 0;
  shim(aoti_torch_get_dtype(like.get(), &dtype), "aoti_torch_get_dtype");
  shim(aoti_torch_get_device_type(like.get(), &device_type), "aoti_torch_get_device_type");
  shim(aoti_torch_get_device_index(like.get(), &device_index), "aoti_torch_get_device_index");
  AtenTensorHandle handle = nullptr;
  if (aoti_torch_empty_strided(like.dim(), like.sizes().data(), strides, dtype, device_type,
                               device_index, &handle) != AOTI_TORCH_SUCCESS) {
    throw std::runtime_error(format("alloc_failed", {{"op", op},
                                                     {"numel", std::to_string(like.numel())},
                                                     {"dtype", dtype_name(dtype_of(like))},
                                                     {"device", device_name(like)}}));
  }
  return Tensor(handle);
}

}  // namespace

Prepared prepare(const char* op, const Tensor& a, const Tensor& b) {
  checks::check_inputs(op, View{a}, View{b});
  // The strides torch.mul(a, b) would have; the fake kernel returns exactly these.
  int64_t strides[kMaxInputDims];
  elementwise_output_strides(static_cast<int>(a.dim()), a.sizes().data(), a.strides().data(),
                             b.strides().data(), strides);
  return {empty_strided_like(op, a, strides), checks::merged_layout(op, strides, View{a}, View{b})};
}

BinaryLayout prepare_out(const char* op, const Tensor& a, const Tensor& b, const Tensor& out) {
  checks::check_out(op, View{a}, View{b}, View{out});
  return checks::merged_layout(op, out.strides().data(), View{a}, View{b});
}

namespace {

// The calls no backend takes (Note [Calls no backend takes], csrc/ops.cpp):
// no tensor at all, or tensors on a device without kernels here.
[[noreturn]] void no_kernel(const char* op, const Tensor& a) {
  throw std::runtime_error(format("no_kernel", {{"op", op}, {"device", device_name(a)}}));
}

Tensor mymuladd_elsewhere(const Tensor& a, const Tensor& b, double) {
  checks::check_inputs("mymuladd", View{a}, View{b});
  no_kernel("mymuladd", a);
}

Tensor mymul_elsewhere(const Tensor& a, const Tensor& b) {
  checks::check_inputs("mymul", View{a}, View{b});
  no_kernel("mymul", a);
}

void myadd_out_elsewhere(const Tensor& a, const Tensor& b, const Tensor& out) {
  checks::check_out("myadd_out", View{a}, View{b}, View{out});
  no_kernel("myadd_out", a);
}

}  // namespace

STABLE_TORCH_LIBRARY(extension_cpp_stable, m) {
  m.def("mymuladd(Tensor a, Tensor b, float c) -> Tensor");
  m.def("mymul(Tensor a, Tensor b) -> Tensor");
  m.def("myadd_out(Tensor a, Tensor b, Tensor(a!) out) -> ()");
}

STABLE_TORCH_LIBRARY_IMPL(extension_cpp_stable, CompositeExplicitAutograd, m) {
  m.impl("mymuladd", TORCH_BOX(&mymuladd_elsewhere));
  m.impl("mymul", TORCH_BOX(&mymul_elsewhere));
  m.impl("myadd_out", TORCH_BOX(&myadd_out_elsewhere));
}

}  // namespace extension_cpp::stable
