// The words of every error the ops raise, for every binding.
//
// Each message is written once, in kMessages below, with {named} fields.
// The checks of both C++ bindings (input_checks.h) raise them, through
// TORCH_CHECK in the classic build and as std::runtime_error in the
// stable-ABI one, and the fake kernels in Python read the same table from the
// built library (extension_cpp/_checks.py, through csrc/python_module.cpp),
// so an eager call and a torch.compile'd call fail with the same words. Nothing here includes
// ATen or c10, so every binding can include it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace extension_cpp::checks {

struct Message {
  const char* key;
  const char* text;  // {op}, {name}, ...: filled in by format() (or Python's str.format)
};

// In the order the kernels check.
inline constexpr Message kMessages[] = {
    {"none", "{op}: expected {name} to be a Tensor, got None"},
    {"dtype",
     "{op}: expected {name} to have a floating-point dtype (torch.float16, torch.bfloat16, "
     "torch.float32 or torch.float64), got {dtype}"},
    {"device", "{op}: expected {x} and {y} to be on the same device, got {x_got} and {y_got}"},
    {"same_dtype", "{op}: expected {x} and {y} to have the same dtype, got {x_got} and {y_got}"},
    {"shape", "{op}: expected {x} and {y} to have the same shape, got {x_got} and {y_got}"},
    {"rank", "{op}: tensors with more than {max} dimensions are not supported, got {dim}"},
    {"internal_overlap",
     "{op}: expected out to have no internal overlap (each element its own memory location, "
     "unlike an expanded tensor), got strides {strides} for shape {shape}"},
    {"partial_overlap",
     "{op}: out overlaps {name} in memory without being the same view of it; pass an out that "
     "shares no memory with {name}, or {name} itself"},
    {"unmergeable",
     "{op}: tensors with more than {max} non-mergeable dimensions are not supported, got a tensor "
     "of shape {shape} and strides {strides}"},
    // Autograd (csrc/autograd.cpp, and the Python autograd kernels).
    {"out_autograd",
     "{op}: out= operations do not support automatic differentiation, but {name} requires grad; "
     "use a + b, or call {op} under torch.no_grad()"},
    {"out_forward_ad",
     "{op}: out= operations do not support forward-mode automatic differentiation "
     "(torch.func.jvp, torch.autograd.forward_ad), but {name} has a tangent; use a + b instead"},
    {"raw_op_under_func_grad",
     "torch.ops.{namespace}.{op} was called under a torch.func transform that needs its gradient "
     "(grad, vjp, jacrev, hessian or vmap of one of them); call {namespace}.{op} instead, which "
     "supports every torch.func transform"},
    // The stable-ABI build's allocation (stable/csrc/ops.cpp), whose C shim
    // reports only that it failed.
    {"alloc_failed",
     "{op}: could not allocate the output, {numel} elements of {dtype} on {device}; the stable "
     "ABI's C shim passes on only that the allocation failed, and torch printed the reason to "
     "stderr (on a full GPU: CUDA out of memory)"},
    // The kernel for calls no backend takes (csrc/ops.cpp).
    {"no_kernel", "{op}: no kernel for {device} tensors; extension_cpp has CPU and CUDA kernels"},
    {"vmap_out",
     "{op}: under torch.vmap, out must be batched like the inputs (it would receive every "
     "sample's result); vmap over out too, or use a + b"},
};

// The most dimensions an input may have ("rank" above): the layout code
// (elementwise.h) keeps per-dimension arrays of this size on the stack. The
// fake kernels read it from the built library too (_C.MAX_DIMS).
inline constexpr int kMaxInputDims = 64;

using Fields = std::initializer_list<std::pair<std::string_view, std::string_view>>;

// kMessages[key] with each {field} replaced by its value.
inline std::string format(std::string_view key, Fields fields) {
  const Message* message = std::find_if(std::begin(kMessages), std::end(kMessages),
                                        [&](const Message& m) { return key == m.key; });
  if (message == std::end(kMessages)) {
    throw std::logic_error("extension_cpp: no message " + std::string(key) + " (a bug)");
  }
  std::string out;
  for (const char* p = message->text; *p != '\0'; ++p) {
    const char* close = *p == '{' ? std::strchr(p, '}') : nullptr;
    if (close == nullptr) {
      out += *p;
      continue;
    }
    const std::string_view name(p + 1, close - p - 1);
    const auto field =
        std::find_if(fields.begin(), fields.end(), [&](const auto& f) { return f.first == name; });
    if (field == fields.end()) {
      throw std::logic_error("extension_cpp: message " + std::string(key) + " needs {" +
                             std::string(name) + "} (a bug)");
    }
    out += field->second;
    p = close;
  }
  return out;
}

// "[3, 4]", as Python prints list(t.shape).
inline std::string list_str(const int64_t* values, int64_t n) {
  std::string s = "[";
  for (int64_t i = 0; i < n; ++i) {
    s += (i == 0 ? "" : ", ") + std::to_string(values[i]);
  }
  return s + "]";
}

// True when no two elements of a tensor of these sizes and strides can share
// a memory location: with the dimensions sorted by stride, each stride must
// step past everything the smaller ones reach. (This rejects the rare
// interleaved layout that does not overlap either; no tensor PyTorch creates,
// short of as_strided, has one.)
inline bool provably_non_overlapping(int64_t ndim, const int64_t* sizes, const int64_t* strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (int64_t d = 0; d < ndim; ++d) {
    if (sizes[d] == 0) {
      return true;  // no element at all, whatever the strides (an expanded empty tensor)
    }
    if (sizes[d] > 1) {
      dims.emplace_back(strides[d], sizes[d]);
    }
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;  // largest offset reachable with the smaller strides
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) {
      return false;
    }
    reach += stride * (size - 1);
  }
  return true;
}

}  // namespace extension_cpp::checks
