// Schemas of the extension_cpp_stable ops, and the checks every backend of
// the stable-ABI build runs.
//
// The same schemas and checks as csrc/ops.cpp, written against
// torch::stable::Tensor, in the same words (checks.h). What differs is only
// how a fact about a tensor is read:
//   * errors are std::runtime_error (torch turns them into RuntimeError with
//     the same text) instead of TORCH_CHECK's c10::Error;
//   * dtypes and devices are printed by this file, as c10's printers are not
//     part of the stable ABI;
//   * "shares memory with" compares storage base addresses, as the stable ABI
//     has no Storage.
// Tags need the stable ABI of torch 2.12 (torch_library_def_with_tags), so
// this build, which targets 2.10, defines its ops without pt2_compliant_tag.
#include "ops.h"

#include <torch/csrc/inductor/aoti_torch/c/shim.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "../checks.h"

namespace extension_cpp::stable {
namespace {

using torch::headeronly::ScalarType;

// Throws the message `message()` builds when `ok` is false; the message is
// built only then.
template <typename Message>
void require(bool ok, const Message& message) {
  if (!ok) {
    throw std::runtime_error(message());
  }
}

// A C shim call that cannot fail for a defined tensor, unless torch has a bug.
void shim(AOTITorchError error, const char* call) {
  if (error != AOTI_TORCH_SUCCESS) {
    throw std::runtime_error(std::string("extension_cpp_stable: ") + call +
                             " failed (a bug: please report it)");
  }
}

// "torch.float32", as Python prints the dtype.
std::string dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Byte:
      return "torch.uint8";
    case ScalarType::Char:
      return "torch.int8";
    case ScalarType::Short:
      return "torch.int16";
    case ScalarType::Int:
      return "torch.int32";
    case ScalarType::Long:
      return "torch.int64";
    case ScalarType::Half:
      return "torch.float16";
    case ScalarType::Float:
      return "torch.float32";
    case ScalarType::Double:
      return "torch.float64";
    case ScalarType::ComplexHalf:
      return "torch.complex32";
    case ScalarType::ComplexFloat:
      return "torch.complex64";
    case ScalarType::ComplexDouble:
      return "torch.complex128";
    case ScalarType::Bool:
      return "torch.bool";
    case ScalarType::BFloat16:
      return "torch.bfloat16";
    case ScalarType::UInt16:
      return "torch.uint16";
    case ScalarType::UInt32:
      return "torch.uint32";
    case ScalarType::UInt64:
      return "torch.uint64";
    case ScalarType::Float8_e5m2:
      return "torch.float8_e5m2";
    case ScalarType::Float8_e4m3fn:
      return "torch.float8_e4m3fn";
    default:
      return "torch.<dtype " + std::to_string(static_cast<int>(t)) + ">";
  }
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

using checks::format;

std::string list_str(torch::headeronly::IntHeaderOnlyArrayRef values) {
  return checks::list_str(values.data(), static_cast<int64_t>(values.size()));
}

bool is_supported_dtype(ScalarType t) {
  return t == ScalarType::Half || t == ScalarType::BFloat16 || t == ScalarType::Float ||
         t == ScalarType::Double;
}

void check_dtype(const char* op, const char* name, const Tensor& t) {
  // Python's None reaches a `Tensor` argument as an undefined tensor.
  require(t.defined(), [&] { return format("none", {{"op", op}, {"name", name}}); });
  const ScalarType dtype = t.scalar_type();
  require(is_supported_dtype(dtype), [&] {
    return format("dtype", {{"op", op}, {"name", name}, {"dtype", dtype_name(dtype)}});
  });
}

// x and y must agree in device, dtype and shape, in that order.
void check_same(const char* op, const char* x, const Tensor& xt, const char* y, const Tensor& yt) {
  require(xt.device() == yt.device(), [&] {
    return format(
        "device",
        {{"op", op}, {"x", x}, {"y", y}, {"x_got", device_name(xt)}, {"y_got", device_name(yt)}});
  });
  require(xt.scalar_type() == yt.scalar_type(), [&] {
    return format("same_dtype", {{"op", op},
                                 {"x", x},
                                 {"y", y},
                                 {"x_got", dtype_name(xt.scalar_type())},
                                 {"y_got", dtype_name(yt.scalar_type())}});
  });
  require(xt.sizes().equals(yt.sizes()), [&] {
    return format("shape", {{"op", op},
                            {"x", x},
                            {"y", y},
                            {"x_got", list_str(xt.sizes())},
                            {"y_got", list_str(yt.sizes())}});
  });
}

// The address where t's storage begins: two tensors share memory only if
// they share a storage, and two live storages never begin at one address.
const char* storage_base(const Tensor& t) {
  return static_cast<const char*>(t.const_data_ptr()) -
         t.storage_offset() * static_cast<int64_t>(t.element_size());
}

// out may be exactly an input (same memory, same strides: every element is
// read before it is written) or share no memory with it.
void check_no_partial_overlap(const char* op, const Tensor& out, const char* name,
                              const Tensor& input) {
  if (out.numel() == 0 || input.numel() == 0 || storage_base(out) != storage_base(input)) {
    return;
  }
  const bool same =
      out.storage_offset() == input.storage_offset() && out.strides().equals(input.strides());
  require(same, [&] { return format("partial_overlap", {{"op", op}, {"name", name}}); });
}

}  // namespace

void check_inputs(const char* op, const Tensor& a, const Tensor& b) {
  check_dtype(op, "a", a);
  check_dtype(op, "b", b);
  check_same(op, "a", a, "b", b);
  require(a.dim() <= kMaxInputDims, [&] {
    return format(
        "rank",
        {{"op", op}, {"max", std::to_string(kMaxInputDims)}, {"dim", std::to_string(a.dim())}});
  });
}

void check_out(const char* op, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_inputs(op, a, b);
  check_dtype(op, "out", out);
  check_same(op, "out", out, "a", a);
  require(
      checks::provably_non_overlapping(out.dim(), out.sizes().data(), out.strides().data()), [&] {
        return format(
            "internal_overlap",
            {{"op", op}, {"strides", list_str(out.strides())}, {"shape", list_str(out.sizes())}});
      });
  check_no_partial_overlap(op, out, "a", a);
  check_no_partial_overlap(op, out, "b", b);
}

BinaryLayout merged_layout(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  const int64_t* strides[3] = {out.strides().data(), a.strides().data(), b.strides().data()};
  BinaryLayout layout;
  const bool ok = make_binary_layout(static_cast<int>(a.dim()), a.sizes().data(), strides, &layout);
  require(ok, [&] {
    return format("unmergeable", {{"op", op},
                                  {"max", std::to_string(kMaxDims)},
                                  {"shape", list_str(a.sizes())},
                                  {"strides", list_str(a.strides())}});
  });
  return layout;
}

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
  require(aoti_torch_empty_strided(like.dim(), like.sizes().data(), strides, dtype, device_type,
                                   device_index, &handle) == AOTI_TORCH_SUCCESS,
          [&] {
            return format("alloc_failed", {{"op", op},
                                           {"numel", std::to_string(like.numel())},
                                           {"dtype", dtype_name(like.scalar_type())},
                                           {"device", device_name(like)}});
          });
  return Tensor(handle);
}

}  // namespace

Tensor new_output(const char* op, const Tensor& a, const Tensor& b) {
  // The strides torch.mul(a, b) would have; the fake kernel returns exactly these.
  int64_t strides[kMaxInputDims];
  elementwise_output_strides(static_cast<int>(a.dim()), a.sizes().data(), a.strides().data(),
                             b.strides().data(), strides);
  return empty_strided_like(op, a, strides);
}

STABLE_TORCH_LIBRARY(extension_cpp_stable, m) {
  m.def("mymuladd(Tensor a, Tensor b, float c) -> Tensor");
  m.def("mymul(Tensor a, Tensor b) -> Tensor");
  m.def("myadd_out(Tensor a, Tensor b, Tensor(a!) out) -> ()");
}

}  // namespace extension_cpp::stable
