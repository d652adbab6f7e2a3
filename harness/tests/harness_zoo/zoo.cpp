// The harness zoo: small ops, each with one bug that real extensions have
// shipped, beside correct ones (mul, add_out, muladd, axpy_, quantize).
//
// harness/tests/test_zoo.py runs extension_cpp_testing on each and asserts
// that the check meant for its bug fails, and that the correct ops pass
// everything. The bugs in this file are the kernels' (an int element count,
// a lost sign of zero, a shortcut that turns 0 * inf into 0, an INTERNAL
// ASSERT for a user error, an out= op blind to overlap, a schema without
// (a!), a product rounded before the sum, a contiguous output whatever the
// inputs, a write into an input, an out written as if it were contiguous, an
// in-place update that skips an element, a quantizer two codes off, an abort
// on empty input); zoo.py adds the registration bugs (fake kernels, autograd,
// batching rules). CPU only: the CUDA bugs are in zoo_cuda.cu.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace harness_zoo {
namespace {

// The input checks, in csrc/ops.cpp's words, so that zoo.py's fake kernels
// can use extension_cpp's Python checks (extension_cpp/_checks.py). The zoo
// is built apart from extension_cpp, as someone else's extension would be,
// so it has its own copy of these few lines rather than a header of csrc/.
//
// "torch.float32", as Python prints it; sizes stream as "[3, 4]".
std::string dtype_name(at::ScalarType t) {
  return "torch." + std::string(c10::getDtypeNames(t).first);
}

bool is_float(at::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 || t == at::kFloat || t == at::kDouble;
}

void check_dtype(const std::string& op, const char* name, const at::Tensor& t) {
  TORCH_CHECK(is_float(t.scalar_type()), op, ": expected ", name,
              " to have a floating-point dtype (torch.float16, torch.bfloat16, torch.float32 or "
              "torch.float64), got ",
              dtype_name(t.scalar_type()));
}

// a, b (and out): the same device, dtype and shape.
void check_same(const std::string& op, const char* x_name, const at::Tensor& x, const char* y_name,
                const at::Tensor& y) {
  TORCH_CHECK(x.device() == y.device(), op, ": expected ", x_name, " and ", y_name,
              " to be on the same device, got ", x.device().str(), " and ", y.device().str());
  TORCH_CHECK(x.scalar_type() == y.scalar_type(), op, ": expected ", x_name, " and ", y_name,
              " to have the same dtype, got ", dtype_name(x.scalar_type()), " and ",
              dtype_name(y.scalar_type()));
  TORCH_CHECK(x.sizes() == y.sizes(), op, ": expected ", x_name, " and ", y_name,
              " to have the same shape, got ", x.sizes(), " and ", y.sizes());
}

void check_inputs(const std::string& op, const at::Tensor& a, const at::Tensor& b) {
  check_dtype(op, "a", a);
  check_dtype(op, "b", b);
  check_same(op, "a", a, "b", b);
}

// out[i] = f(a[i], b[i]) for every flat index i of out's shape, any strides.
// count_t counts the elements: int64_t, or int for the int_count_mul bug.
// Each thread finds the multi-index of its first element, then steps it
// like an odometer.
template <typename count_t, typename F>
void for_each_element(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, F f) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "zoo", [&] {
    using opmath_t = at::opmath_type<scalar_t>;
    const count_t n = static_cast<count_t>(out.numel());
    const int64_t dim = out.dim();
    auto* po = out.data_ptr<scalar_t>();
    const auto* pa = a.const_data_ptr<scalar_t>();
    const auto* pb = b.const_data_ptr<scalar_t>();
    const std::vector<int64_t> size = out.sizes().vec(), so = out.strides().vec(),
                               sa = a.strides().vec(), sb = b.strides().vec();
    at::parallel_for(0, n, 1 << 14, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> index(dim);
      int64_t rest = begin, oo = 0, oa = 0, ob = 0;
      for (int64_t d = dim - 1; d >= 0; --d) {
        index[d] = rest % size[d];
        rest /= size[d];
        oo += index[d] * so[d];
        oa += index[d] * sa[d];
        ob += index[d] * sb[d];
      }
      for (count_t i = static_cast<count_t>(begin); i < end; ++i) {
        po[oo] =
            static_cast<scalar_t>(f(static_cast<opmath_t>(pa[oa]), static_cast<opmath_t>(pb[ob])));
        for (int64_t d = dim - 1; d >= 0; --d) {
          oo += so[d];
          oa += sa[d];
          ob += sb[d];
          if (++index[d] < size[d]) {
            break;
          }
          oo -= so[d] * size[d];
          oa -= sa[d] * size[d];
          ob -= sb[d] * size[d];
          index[d] = 0;
        }
      }
    });
  });
}

// An empty output laid out as torch.mul(a, b)'s: TensorIterator allocates it
// by PyTorch's rule for elementwise ops (dense inputs keep their layout).
at::Tensor empty_output(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor undefined;
  auto iter = at::TensorIteratorConfig()
                  .add_output(undefined)
                  .add_const_input(a)
                  .add_const_input(b)
                  .build();
  return iter.output();
}

constexpr auto kMul = [](auto x, auto y) { return x * y; };
constexpr auto kAdd = [](auto x, auto y) { return x + y; };

// The correct product: checked inputs, torch.mul's output layout, an int64_t
// element count. op names the op in messages.
at::Tensor checked_mul(const std::string& op, const at::Tensor& a, const at::Tensor& b) {
  check_inputs(op, a, b);
  at::Tensor out = empty_output(a, b);
  for_each_element<int64_t>(out, a, b, kMul);
  return out;
}

// Bug: the dtype is checked with TORCH_INTERNAL_ASSERT, which tells the user
// to report a bug in PyTorch for passing an integer tensor.
at::Tensor internal_assert_mul(const at::Tensor& a, const at::Tensor& b) {
  TORCH_INTERNAL_ASSERT(is_float(a.scalar_type()) && is_float(b.scalar_type()));
  check_same("harness_zoo.internal_assert_mul", "a", a, "b", b);
  at::Tensor out = empty_output(a, b);
  for_each_element<int64_t>(out, a, b, kMul);
  return out;
}

// Bug: `int n = numel()`. Past 2^31 elements n wraps negative and nothing
// is written.
at::Tensor int_count_mul(const at::Tensor& a, const at::Tensor& b) {
  check_inputs("harness_zoo.int_count_mul", a, b);
  at::Tensor out = empty_output(a, b);
  for_each_element<int>(out, a, b, kMul);
  return out;
}

// Bug: the product is added to an accumulator that starts at +0.0, as a
// reduction's would: -0.0 + 0.0 is 0.0, so a negative zero comes out
// positive. Every other value is torch.mul's, so random inputs never show it.
at::Tensor accumulated_mul(const at::Tensor& a, const at::Tensor& b) {
  check_inputs("harness_zoo.accumulated_mul", a, b);
  at::Tensor out = empty_output(a, b);
  for_each_element<int64_t>(out, a, b, [](auto x, auto y) {
    decltype(x * y) acc = 0;
    acc += x * y;
    return acc;
  });
  return out;
}

// Bug: a shortcut for zeros, as a sparsity-aware kernel might take: where
// either input is 0 the product is 0, so 0 * inf and 0 * NaN give 0, not NaN
// (and -1 * 0 gives 0.0, not -0.0).
at::Tensor zero_skip_mul(const at::Tensor& a, const at::Tensor& b) {
  check_inputs("harness_zoo.zero_skip_mul", a, b);
  at::Tensor out = empty_output(a, b);
  for_each_element<int64_t>(
      out, a, b, [](auto x, auto y) { return x == 0 || y == 0 ? decltype(x * y)(0) : x * y; });
  return out;
}

// Bug: every finite, nonzero product one ulp too large (zeros, infinities
// and NaN are right): well within any tolerance, but not the exact result
// the op promises (OpSpec(exact=True)).
at::Tensor ulp_off_mul(const at::Tensor& a, const at::Tensor& b) {
  check_inputs("harness_zoo.ulp_off_mul", a, b);
  at::Tensor out = empty_output(a, b);
  for_each_element<int64_t>(out, a, b, [](auto x, auto y) {
    const auto product = x * y;
    using T = decltype(product);
    if (!std::isfinite(product) || product == 0) {
      return product;
    }
    return std::nextafter(product, std::numeric_limits<T>::infinity());
  });
  return out;
}

// The correct a*b + c: half types computed in float and rounded once.
at::Tensor muladd(const at::Tensor& a, const at::Tensor& b, double c) {
  check_inputs("harness_zoo.muladd", a, b);
  at::Tensor out = empty_output(a, b);
  for_each_element<int64_t>(out, a, b,
                            [c](auto x, auto y) { return x * y + static_cast<decltype(x)>(c); });
  return out;
}

// Bug: the product is rounded to the dtype before c is added, so a half
// type result is rounded twice (one ulp off for about one element in five).
at::Tensor double_rounded_muladd(const at::Tensor& a, const at::Tensor& b, double c) {
  check_inputs("harness_zoo.double_rounded_muladd", a, b);
  at::Tensor product = empty_output(a, b);
  for_each_element<int64_t>(product, a, b, kMul);  // rounded to the dtype: the bug
  at::Tensor out = empty_output(a, b);
  for_each_element<int64_t>(out, product, product,
                            [c](auto x, auto) { return x + static_cast<decltype(x)>(c); });
  return out;
}

// Bug: the output is always contiguous, where torch.mul keeps the inputs'
// layout (transposed in, transposed out); its fake kernel agrees with it.
at::Tensor contiguous_mul(const at::Tensor& a, const at::Tensor& b) {
  check_inputs("harness_zoo.contiguous_mul", a, b);
  at::Tensor out = at::empty(a.sizes(), a.options());
  for_each_element<int64_t>(out, a, b, kMul);
  return out;
}

// Bug: the product is written into a as well (a scratch buffer saved), which
// the schema does not say: a caller's tensor changes under it.
at::Tensor mutating_mul(const at::Tensor& a, const at::Tensor& b) {
  check_inputs("harness_zoo.mutating_mul", a, b);
  at::Tensor out = empty_output(a, b);
  for_each_element<int64_t>(out, a, b, kMul);
  a.copy_(out);
  return out;
}

// out shares memory with x without being exactly x (same offset and strides).
bool partially_overlaps(const at::Tensor& out, const at::Tensor& x) {
  return out.numel() > 0 && x.numel() > 0 && out.is_alias_of(x) &&
         !(out.storage_offset() == x.storage_offset() && out.strides() == x.strides());
}

// The correct out= checks: out may be a or b exactly, or share no memory with
// them. check_overlap=false is the overlap_add_out bug.
void check_out(const std::string& op, const at::Tensor& a, const at::Tensor& b,
               const at::Tensor& out, bool check_overlap = true) {
  check_inputs(op, a, b);
  check_dtype(op, "out", out);
  check_same(op, "out", out, "a", a);
  if (!check_overlap) {
    return;
  }
  TORCH_CHECK(at::has_internal_overlap(out) != at::MemOverlap::Yes, op,
              ": expected out to have no internal overlap (each element its own memory "
              "location, unlike an expanded tensor), got strides ",
              out.strides(), " for shape ", out.sizes());
  for (const auto& [name, x] : {std::pair<const char*, const at::Tensor&>{"a", a}, {"b", b}}) {
    TORCH_CHECK(!partially_overlaps(out, x), op, ": out overlaps ", name,
                " in memory without being the same view of it; pass an out that shares no "
                "memory with ",
                name, ", or ", name, " itself");
  }
}

void add_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  check_out("harness_zoo.add_out", a, b, out);
  for_each_element<int64_t>(out, a, b, kAdd);
}

// Bug: no overlap checks. An out that overlaps an input is written while the
// input is still being read, and an expanded out gets one of several sums.
void overlap_add_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  check_out("harness_zoo.overlap_add_out", a, b, out, /*check_overlap=*/false);
  for_each_element<int64_t>(out, a, b, kAdd);
}

// Bug: the sums are computed into a contiguous buffer and copied byte for
// byte into out's memory, as if out were contiguous: a transposed out gets
// them in the wrong places, a strided one only in its first half.
void contiguous_out_add_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  check_out("harness_zoo.contiguous_out_add_out", a, b, out);
  at::Tensor sums = at::empty(out.sizes(), out.options());
  for_each_element<int64_t>(sums, a, b, kAdd);
  std::memcpy(out.data_ptr(), sums.const_data_ptr(), sums.nbytes());
}

// Bug: the kernel writes out, but the schema says `Tensor out`, not
// `Tensor(a!) out`: the compiler may reorder, drop or reuse the write.
void unmarked_add_out(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  check_out("harness_zoo.unmarked_add_out", a, b, out);
  for_each_element<int64_t>(out, a, b, kAdd);
}

// The last element of t, as a 0-dim view (t itself if 0-dim).
at::Tensor last_element(const at::Tensor& t) {
  at::Tensor v = t;
  while (v.dim() > 0) {
    v = v.select(0, v.size(0) - 1);
  }
  return v;
}

// y += alpha * x in place, element by element: an optimizer-style update of
// its first argument. skip_last is the off_by_one_axpy_ bug: the last
// element keeps its old value, as a loop that stops one short leaves it.
void axpy_impl(const std::string& op, at::Tensor& y, const at::Tensor& x, double alpha,
               bool skip_last) {
  check_inputs(op, y, x);
  TORCH_CHECK(at::has_internal_overlap(y) != at::MemOverlap::Yes, op,
              ": expected y to have no internal overlap, got strides ", y.strides(), " for shape ",
              y.sizes());
  const bool skip = skip_last && y.numel() > 0;
  const at::Tensor old_last = skip ? last_element(y).clone() : at::Tensor();
  for_each_element<int64_t>(
      y, y, x, [alpha](auto a, auto b) { return a + static_cast<decltype(a)>(alpha) * b; });
  if (skip) {
    last_element(y).copy_(old_last);
  }
}

void axpy_(at::Tensor& y, const at::Tensor& x, double alpha) {
  axpy_impl("harness_zoo.axpy_", y, x, alpha, /*skip_last=*/false);
}

void off_by_one_axpy_(at::Tensor& y, const at::Tensor& x, double alpha) {
  axpy_impl("harness_zoo.off_by_one_axpy_", y, x, alpha, /*skip_last=*/true);
}

// int8 codes of x / scale, clamped to [-127, high]. The rounding is C's
// (ties away from zero), where torch.round rounds ties to even: a reference
// in torch ops is one code off on ties, which integer_tolerance allows.
at::Tensor quantize_impl(const std::string& op, const at::Tensor& x, double scale, float high) {
  TORCH_CHECK(x.scalar_type() == at::kFloat, op, ": expected x to have dtype torch.float32, got ",
              dtype_name(x.scalar_type()));
  const at::Tensor xc = x.contiguous();
  at::Tensor codes = at::empty(xc.sizes(), xc.options().dtype(at::kChar));
  const float* px = xc.const_data_ptr<float>();
  int8_t* pc = codes.data_ptr<int8_t>();
  const float inverse = static_cast<float>(1.0 / scale);
  for (int64_t i = 0; i < xc.numel(); ++i) {
    pc[i] = static_cast<int8_t>(std::clamp(std::round(px[i] * inverse), -127.0f, high));
  }
  // Laid out as x, as torch's elementwise ops lay out their output.
  return at::empty_like(x, x.options().dtype(at::kChar)).copy_(codes);
}

at::Tensor quantize(const at::Tensor& x, double scale) {
  return quantize_impl("harness_zoo.quantize", x, scale, 127.0f);
}

// Bug: the upper clamp is 125, a typo for 127: the largest values come out
// up to two codes low.
at::Tensor two_codes_off_quantize(const at::Tensor& x, double scale) {
  return quantize_impl("harness_zoo.two_codes_off_quantize", x, scale, 125.0f);
}

// Bug: the kernel assumes at least one element, and aborts the process on
// an empty input instead of returning an empty output.
at::Tensor abort_on_empty_mul(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() == 0) {
    std::abort();
  }
  return checked_mul("harness_zoo.abort_on_empty_mul", a, b);
}

// mul's kernel, registered the legacy way (below): no backend, no fake kernel.
at::Tensor catch_all_mul(const at::Tensor& a, const at::Tensor& b) {
  return checked_mul("harness_zoo.catch_all_mul", a, b);
}

}  // namespace

TORCH_LIBRARY(harness_zoo, m) {
  m.def("mul(Tensor a, Tensor b) -> Tensor");
  m.def("add_out(Tensor a, Tensor b, Tensor(a!) out) -> ()");
  // mul's kernel under another name; zoo.py registers their buggy fake or
  // autograd kernels (or none).
  m.def("fake_strides_mul(Tensor a, Tensor b) -> Tensor");
  m.def("unchecked_fake_mul(Tensor a, Tensor b) -> Tensor");
  m.def("no_autograd_mul(Tensor a, Tensor b) -> Tensor");
  m.def("wrong_sign_mul(Tensor a, Tensor b) -> Tensor");
  m.def("internal_assert_mul(Tensor a, Tensor b) -> Tensor");
  m.def("int_count_mul(Tensor a, Tensor b) -> Tensor");
  m.def("accumulated_mul(Tensor a, Tensor b) -> Tensor");
  m.def("zero_skip_mul(Tensor a, Tensor b) -> Tensor");
  m.def("ulp_off_mul(Tensor a, Tensor b) -> Tensor");
  m.def("overlap_add_out(Tensor a, Tensor b, Tensor(a!) out) -> ()");
  m.def("unmarked_add_out(Tensor a, Tensor b, Tensor out) -> ()");
  m.def("muladd(Tensor a, Tensor b, float c) -> Tensor");
  m.def("double_rounded_muladd(Tensor a, Tensor b, float c) -> Tensor");
  m.def("contiguous_mul(Tensor a, Tensor b) -> Tensor");
  m.def("mutating_mul(Tensor a, Tensor b) -> Tensor");
  m.def("contiguous_out_add_out(Tensor a, Tensor b, Tensor(a!) out) -> ()");
  // mul's kernel, with a fake kernel that returns float32 whatever the
  // dtype, with a fake kernel that reads a size as a Python int, with no
  // fake kernel at all, and with no batching rule (zoo.py).
  m.def("float32_fake_mul(Tensor a, Tensor b) -> Tensor");
  m.def("int_size_fake_mul(Tensor a, Tensor b) -> Tensor");
  m.def("no_fake_mul(Tensor a, Tensor b) -> Tensor");
  m.def("no_vmap_mul(Tensor a, Tensor b) -> Tensor");
  // add_out's kernel, with a fake kernel that returns a new tensor.
  m.def("returning_fake_add_out(Tensor a, Tensor b, Tensor(a!) out) -> ()");
  // In place: y is read and written (an optimizer's update).
  m.def("axpy_(Tensor(a!) y, Tensor x, float alpha) -> ()");
  m.def("off_by_one_axpy_(Tensor(a!) y, Tensor x, float alpha) -> ()");
  // Quantizers: int8 codes.
  m.def("quantize(Tensor x, float scale) -> Tensor");
  m.def("two_codes_off_quantize(Tensor x, float scale) -> Tensor");
  m.def("abort_on_empty_mul(Tensor a, Tensor b) -> Tensor");
  // Bug: the kernel is given with the schema, without a dispatch key, so the
  // dispatcher files it as CompositeImplicitAutograd, a catch-all that
  // FakeTensor, vmap and autograd call as if it were made of other ops.
  m.def("catch_all_mul(Tensor a, Tensor b) -> Tensor", &catch_all_mul);
  // mul's kernel, with autograd registrations of their own (zoo.py): one
  // through torch.library.register_autograd, one with a forward-mode
  // derivative 1e-4 off.
  m.def("register_autograd_mul(Tensor a, Tensor b) -> Tensor");
  m.def("jvp_off_mul(Tensor a, Tensor b) -> Tensor");
  // jvp_mul: jvp_off_mul's correct twin.
  m.def("jvp_mul(Tensor a, Tensor b) -> Tensor");
  // CUDA only (zoo_cuda.cu, built where there is a GPU).
  m.def("default_stream_mul(Tensor a, Tensor b) -> Tensor");
  m.def("device_synced_mul(Tensor a, Tensor b) -> Tensor");
}

// The ops whose bug is not in the kernel share the correct one, under their own name.
#define ZOO_MUL(name)                                          \
  m.impl(#name, [](const at::Tensor& a, const at::Tensor& b) { \
    return checked_mul("harness_zoo." #name, a, b);            \
  })

TORCH_LIBRARY_IMPL(harness_zoo, CPU, m) {
  ZOO_MUL(mul);
  ZOO_MUL(fake_strides_mul);
  ZOO_MUL(unchecked_fake_mul);
  ZOO_MUL(no_autograd_mul);
  ZOO_MUL(wrong_sign_mul);
  m.impl("internal_assert_mul", &internal_assert_mul);
  m.impl("int_count_mul", &int_count_mul);
  m.impl("accumulated_mul", &accumulated_mul);
  m.impl("zero_skip_mul", &zero_skip_mul);
  m.impl("ulp_off_mul", &ulp_off_mul);
  m.impl("add_out", &add_out);
  m.impl("overlap_add_out", &overlap_add_out);
  m.impl("unmarked_add_out", &unmarked_add_out);
  ZOO_MUL(float32_fake_mul);
  ZOO_MUL(int_size_fake_mul);
  ZOO_MUL(no_fake_mul);
  ZOO_MUL(no_vmap_mul);
  m.impl("muladd", &muladd);
  m.impl("double_rounded_muladd", &double_rounded_muladd);
  m.impl("contiguous_mul", &contiguous_mul);
  m.impl("mutating_mul", &mutating_mul);
  m.impl("contiguous_out_add_out", &contiguous_out_add_out);
  m.impl("axpy_", &axpy_);
  m.impl("off_by_one_axpy_", &off_by_one_axpy_);
  m.impl("quantize", &quantize);
  m.impl("two_codes_off_quantize", &two_codes_off_quantize);
  m.impl("abort_on_empty_mul", &abort_on_empty_mul);
  ZOO_MUL(register_autograd_mul);
  ZOO_MUL(jvp_off_mul);
  ZOO_MUL(jvp_mul);
  m.impl("returning_fake_add_out", [](const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
    check_out("harness_zoo.returning_fake_add_out", a, b, out);
    for_each_element<int64_t>(out, a, b, kAdd);
  });
}

}  // namespace harness_zoo
