"""What `make mutate` (tools/mutate) mutates, and which tests must catch it.

PYTHON: each file whose every mutation point is tried (``only``: just these
top-level functions, classes and assignments), with the tests that cover it.
PLANTED: hand-written Python bugs, each of which the suite must catch.
CPP: the C++ mutants, one replacement each (``old`` must occur once in its
file), built with the kernel set named; CPP_TESTS: the tests of each file.
pytest stops at the first failure (-x), so each list starts with its
quickest tests. tools/mutate/equivalent.py lists the mutants no test can
kill, with the reason.
"""

C = "tests/conformance/"
ZOO = "harness/tests/"

# The parts of the harness suite that run on the CPU in seconds.
HARNESS_CPU = (C + "test_harness.py", "cpu and not gradgradcheck and not dynamic and not large")

PYTHON = {
    "extension_cpp/_checks.py": {
        "tests": [C + "test_errors.py", C + "test_layout_rule.py", HARNESS_CPU],
    },
    "extension_cpp/_library.py": {
        "tests": [
            C + "test_errors.py",
            C + "test_correctness.py",
            C + "test_autograd.py",
            C + "test_vmap.py",
            C + "test_autodiff_modes.py",
            C + "test_layout_rule.py",
            C + "test_call_path.py",
            HARNESS_CPU,
        ],
    },
    "extension_cpp/_autocast.py": {"tests": [C + "test_autocast.py"]},
    # The harness: its checks must fail on the zoo's bugs and pass on good ops.
    # (the checks the zoo's bugs are about)
    "harness/extension_cpp_testing/checks/base.py": {
        "tests": [ZOO + "test_spec.py", ZOO + "test_zoo.py"],
        "only": ["same_bits", "assert_same_values"],
    },
    "harness/extension_cpp_testing/checks/results.py": {
        "tests": [ZOO + "test_spec.py", ZOO + "test_zoo.py"],
        "only": ["check_results", "check_strides"],
    },
    "harness/extension_cpp_testing/checks/fake.py": {
        "tests": [ZOO + "test_spec.py", ZOO + "test_zoo.py"],
        "only": ["check_fake", "_check_fake_out"],
    },
    "harness/extension_cpp_testing/checks/bad_input.py": {
        "tests": [ZOO + "test_spec.py", ZOO + "test_zoo.py"],
        "only": ["check_internal_assert"],
    },
    "harness/extension_cpp_testing/layouts.py": {
        "tests": [ZOO + "test_spec.py", ZOO + "test_zoo.py"],
        "only": ["_ulps", "TOLERANCES", "ROUNDED_ONCE"],
    },
}

_DTYPE_CHECK = """    torch._check(
        x.dtype == y.dtype,
        lambda: message("same_dtype", **names, x_got=x.dtype, y_got=y.dtype),
    )
"""
_SHAPE_CHECK = """    torch._check(
        x.shape == y.shape,
        lambda: message("shape", **names, x_got=list(x.shape), y_got=list(y.shape)),
    )
"""

# The bugs planted by hand when the suite was first read for holes: each
# must be killed. ``after`` finds the place, ``old`` is replaced by ``new``.
PLANTED = [
    {
        "bug": "mymuladd's fake kernel builds its output from (b, a)",
        "path": "extension_cpp/_library.py",
        "after": "def _mymuladd_fake",
        "old": "elementwise_output(a, b)",
        "new": "elementwise_output(b, a)",
    },
    {
        "bug": "the fake kernels check the shape before the dtype",
        "path": "extension_cpp/_checks.py",
        "after": "def check_same",
        "old": _DTYPE_CHECK + _SHAPE_CHECK,
        "new": _SHAPE_CHECK + _DTYPE_CHECK,
    },
    {
        "bug": "the partial-overlap check compares offsets only",
        "path": "extension_cpp/_checks.py",
        "old": " and out.stride() == t.stride()",
        "new": "",
    },
    {
        "bug": "the harness's 'op modified its input' check disabled",
        "path": "harness/extension_cpp_testing/checks/results.py",
        "old": "if not same_bits(args[i], before[i]):",
        "new": "if False:",
    },
    {
        "bug": "myadd_out's fake kernel checks nothing",
        "path": "extension_cpp/_library.py",
        "after": "def _myadd_out_fake",
        "old": '_checks.check_out("myadd_out", a, b, out)',
        "new": "pass",
    },
]

# test_kernel_paths without its child Pythons (each CPU capability in turn).
PATHS = (C + "test_kernel_paths.py", "not capped")

CPP_TESTS = {
    "csrc/checks.h": [C + "test_errors.py", C + "test_correctness.py"],
    "csrc/input_checks.h": [C + "test_errors.py", C + "test_check_parity.py"],
    "csrc/ops.cpp": [
        C + "test_errors.py",
        C + "test_check_parity.py",
        C + "test_layout_rule.py",
        C + "test_correctness.py",
    ],
    "csrc/elementwise.h": [
        C + "test_layout_rule.py",
        C + "test_correctness.py",
        C + "test_errors.py",
        PATHS,
    ],
    "csrc/cpu/ops_cpu.cpp": [
        C + "test_errors.py",
        C + "test_correctness.py",
        C + "test_layout_rule.py",
    ],
    "csrc/cpu/elementwise_cpu.h": [C + "test_correctness.py", PATHS],
    "csrc/autograd.cpp": [C + "test_autograd.py", C + "test_autodiff_modes.py"],
    "csrc/fast/layout.h": [PATHS, C + "test_correctness.py"],
    "csrc/fast/cpu/elementwise.h": [PATHS, C + "test_correctness.py"],
}


def _m(path, old, new, kernels="simple"):
    return {"path": path, "old": old, "new": new, "kernels": kernels}


CHECKS_H = "csrc/checks.h"
INPUT_CHECKS = "csrc/input_checks.h"
OPS = "csrc/ops.cpp"
EW = "csrc/elementwise.h"
CPU = "csrc/cpu/ops_cpu.cpp"
LOOP = "csrc/cpu/elementwise_cpu.h"
AUTOGRAD = "csrc/autograd.cpp"

CPP = [
    # The checks' words and conditions.
    _m(
        CHECKS_H,
        "expected {x} and {y} to be on the same device",
        "expected {x} and {y} on one device",
    ),
    _m(CHECKS_H, "to have the same dtype, got", "to have one dtype, got"),
    _m(CHECKS_H, "to have the same shape, got {x_got}", "to have the same shape, got {y_got}"),
    _m(CHECKS_H, "without being the same view of it", "without being the same view"),
    _m(CHECKS_H, 's += (i == 0 ? "" : ", ")', 's += (i == 0 ? "" : ",")'),
    _m(
        CHECKS_H,
        "if (sizes[d] == 0) {\n      return true;",
        "if (sizes[d] == 0) {\n      return false;",
    ),
    _m(
        CHECKS_H,
        "if (sizes[d] > 1) {\n      dims.emplace_back",
        "if (sizes[d] >= 1) {\n      dims.emplace_back",
    ),
    _m(CHECKS_H, "if (stride <= reach) {", "if (stride < reach) {"),
    _m(CHECKS_H, "reach += stride * (size - 1);", "reach += stride * size;"),
    _m(
        INPUT_CHECKS,
        "dtype == c10::ScalarType::Half || dtype == c10::ScalarType::BFloat16 ||",
        "dtype == c10::ScalarType::Half ||",
    ),
    _m(INPUT_CHECKS, '"bits4x2", "bits8",', '"bits4x2", "bits 8",'),
    _m(INPUT_CHECKS, "require<View>(t.defined(),", "require<View>(true,"),
    _m(INPUT_CHECKS, "require<View>(xt.same_device(yt),", "require<View>(true,"),
    _m(INPUT_CHECKS, "require<View>(xt.dtype() == yt.dtype(),", "require<View>(true,"),
    _m(
        INPUT_CHECKS,
        "require<View>(xt.dim() == yt.dim() && same_values(",
        "require<View>(same_values(",
    ),
    _m(INPUT_CHECKS, "same_values(xt.sizes(), yt.sizes(), xt.dim())", "true"),
    _m(INPUT_CHECKS, "a.dim() <= kMaxInputDims", "a.dim() < kMaxInputDims"),
    _m(INPUT_CHECKS, "out.numel() == 0 || input.numel() == 0 ||", "out.numel() == 0 ||"),
    _m(
        INPUT_CHECKS,
        "out.storage_offset() == input.storage_offset() &&",
        "true &&",
    ),
    _m(INPUT_CHECKS, "same_values(out.strides(), input.strides(), out.dim())", "true"),
    _m(INPUT_CHECKS, 'detail::check_no_partial_overlap(op, out, "b", b);', ""),
    _m(
        INPUT_CHECKS,
        'detail::check_dtype(op, "b", b);\n  detail::check_same',
        "detail::check_same",
    ),
    _m(INPUT_CHECKS, 'detail::check_same(op, "out", out, "a", a);', ""),
    # The classic binding's view of a tensor.
    _m(OPS, "return t.storage().is_alias_of(other.t.storage());", "return false;"),
    _m(OPS, "return t.device() == other.t.device();", "return true;"),
    _m(
        OPS,
        "a.strides().data(),\n                             b.strides().data()",
        "b.strides().data(),\n                             a.strides().data()",
    ),
    # The functors.
    _m(EW, "return a * b + c; }", "return a * b - c; }"),
    _m(EW, "return a * b; }", "return a + b; }"),
    _m(EW, "return a + b; }", "return a - b; }"),
    # The merged layout.
    _m(EW, "return strides[0][x] > strides[0][y];", "return strides[0][x] < strides[0][y];"),
    _m(EW, "if (size == 1) {\n      continue;", "if (size == 0) {\n      continue;"),
    _m(
        EW,
        "strides[t][d] == l.strides[t][prev] * l.sizes[prev];",
        "strides[t][d] == l.strides[t][prev];",
    ),
    _m(EW, "if (l.ndim == kMaxDims) {", "if (l.ndim > kMaxDims) {"),
    _m(EW, "if (l.numel == 0) {\n    l.ndim = 1;", "if (l.numel < 0) {\n    l.ndim = 1;"),
    # The output-layout rule.
    _m(EW, "next *= sizes[d] > 1 ? sizes[d] : 1;", "next *= sizes[d];"),
    _m(EW, "out[2] = out[3] * sizes[3];", "out[2] = out[3] * sizes[2];"),
    _m(EW, "same && is_dense(ndim, sizes, a_strides)", "same"),
    _m(EW, "if (s[dim0] == 0 || s[dim1] == 0) {", "if (s[dim0] == 0) {"),
    _m(EW, "return s[dim0] < s[dim1] ? -1 : 1;", "return s[dim0] < s[dim1] ? 1 : -1;"),
    _m(EW, "if (sizes[dim0] > sizes[dim1]) {", "if (sizes[dim0] < sizes[dim1]) {"),
    _m(EW, "} else if (c < 0) {\n        break;", "} else if (c <= 0) {\n        break;"),
    _m(EW, "return sizes[0] < 2 || strides[0] == 1;", "return strides[0] == 1;"),
    _m(
        EW,
        "if (sizes[d] >= 2) {\n      dims[n++] = d;",
        "if (sizes[d] >= 1) {\n      dims[n++] = d;",
    ),
    _m(
        EW,
        "if (sizes[k] == 0) {\n      return true;  // no elements",
        "if (sizes[k] == 0) {\n      return false;  // no elements",
    ),
    # The offsets every loop uses.
    _m(EW, "const int64_t r = i - q * l.sizes[d];", "const int64_t r = i - q;"),
    _m(EW, "o.b += r * l.strides[2][d];", "o.b += r * l.strides[1][d];"),
    # The simple CPU kernels and loop.
    _m(CPU, "MulAddOp<T>{static_cast<T>(c)}", "MulAddOp<T>{static_cast<T>(c + 1)}"),
    _m(
        CPU,
        "b.const_data_ptr<scalar_t>(), layout,\n                                   AddOp",
        "a.const_data_ptr<scalar_t>(), layout,\n                                   AddOp",
    ),
    _m(
        "csrc/ops.cpp",
        "checks::check_out(op, View{a}, View{b}, View{out});\n  return",
        "checks::check_inputs(op, View{a}, View{b});\n  return",
    ),
    _m(
        LOOP,
        "for (int64_t i = begin; i < end; ++i) {",
        "for (int64_t i = begin; i + 1 < end; ++i) {",
    ),
    _m(LOOP, "static_cast<T>(b[o.b])", "static_cast<T>(b[o.a])"),
    # The derivatives.
    _m(AUTOGRAD, "result[1] = mymul(grad, a.unpack());", "result[1] = mymul(grad, b.unpack());"),
    _m(AUTOGRAD, "result = mymul(ta, primal(b));", "result = mymul(ta, primal(a));"),
    _m(AUTOGRAD, "result.defined() ? result.add(term) : term;", "term;"),
    _m(AUTOGRAD, "if (should_compute_output(1)) {\n      a =", "if (false) {\n      a ="),
    _m(AUTOGRAD, "if ((torch::autograd::isFwGradDefined(inputs) || ...))", "if (false)"),
    _m(AUTOGRAD, "torch::autograd::set_history(out, node);", ""),
    # The fast kernels' dispatch.
    _m(
        "csrc/fast/layout.h",
        "l.strides[t][0] != 1 && l.strides[t][1] == 1",
        "l.strides[t][1] == 1",
        "fast",
    ),
    _m(
        "csrc/fast/layout.h",
        "if (l.ndim < 2 || l.strides[0][0] != 1) {",
        "if (l.ndim < 2) {",
        "fast",
    ),
]
CPP += [
    _m(
        "csrc/fast/cpu/elementwise.h",
        "run_fn(out + begin, a + begin, b + begin, end - begin,",
        "run_fn(out + begin, a + begin, b + begin, end - begin - 1,",
        "fast",
    ),
]
