"""bitsandbytes' ops through the harness (bitsandbytes_specs.py), and the
reproducers of what it found (bitsandbytes_findings.py).

Every case passes but those KNOWN lists: each a bug in bitsandbytes that a
reproducer shows without the harness, on the page
docs/what_the_harness_found.md. They are strict expected failures, so a
bitsandbytes that fixes one makes its cases pass and this run fail until
the page and these lists say so. The CUDA cases are listed as a GPU run
showed them (the CUDA kernels are other code).
"""

import pytest
import torch

bitsandbytes = pytest.importorskip(
    "bitsandbytes", reason="bitsandbytes is not installed (make test-deps installs the "
    "release the Makefile pins: pip install --no-deps bitsandbytes==<release>)"
)  # fmt: skip

from extension_cpp_testing import MODES, call_isolated, cases, conformance_tests  # noqa: E402

from . import bitsandbytes_findings as findings  # noqa: E402
from .bitsandbytes_specs import SPECS  # noqa: E402
from .findings_helpers import opcheck_compares_strides, reproducers, reproduces_in_isolation  # noqa: E402

PAGE = "docs/what_the_harness_found.md"
FLOATS = ("float16", "bfloat16", "float32")
OUT_4BIT_LAYOUTS = ["nf4", "fp4", "nf4-odd", "nf4-3-d"]


# What the known failures below depend on that only a call of a kernel
# tells: asked in the harness's worker process, where a kernel that aborts
# (as gemv_4bit does on some CPUs) can't end the collection of every test.
# test_what_collection_asked_the_kernels fails, naming the signal, if one did.
PROBES = {
    # opcheck's share of the findings about strides, by device.
    **{
        f"opcheck_strides_{device}": call_isolated(opcheck_compares_strides, device)
        for device in ("cpu", "cuda")
    },
    "kernels_accept": call_isolated(findings.kernels_accept_what_fake_kernels_refuse),
}
OPCHECK_STRIDES = {
    device: bool(PROBES[f"opcheck_strides_{device}"].value) for device in ("cpu", "cuda")
}
KERNELS_ACCEPT = PROBES["kernels_accept"].value or []


def _known(reproducer, *cases):
    """The cases a bitsandbytes bug explains, where this machine shows it."""
    if not findings.reproduces(reproducer):
        return {}
    return dict.fromkeys(cases, f"bitsandbytes bug: {reproducer.__name__} ({PAGE})")


def _every(name, checks, layouts, dtypes=("float32",), variants=("",), device="cpu"):
    """name's cases of these checks, layouts, dtypes and variants."""
    return [
        f"{name}-{check}-{device}-{dtype}-{layout}{variant}"
        for check in checks
        for layout in layouts
        for dtype in dtypes
        for variant in variants
    ]


def _layout_cases(name, layout, results_dtypes=("float32",), device="cpu"):
    """Every case of name on one layout: results in these dtypes, then
    strides, fake, opcheck (no_grad) and compile in float32."""
    return [
        *_every(name, ["results"], [layout], results_dtypes, device=device),
        *_every(name, ["strides", "fake", "compile"], [layout], device=device),
        f"{name}-opcheck-{device}-float32-{layout}-no_grad",
    ]


def _no_kernel(name, layouts, dtypes):
    """Every CPU case of an op with no CPU kernel that calls the kernel (the
    checks of each dtype run on the first layout; opcheck's only where it
    is "contiguous")."""
    others = [d for d in dtypes if d != "float32"]
    per_dtype_opcheck = _every(name, ["opcheck"], ["contiguous"], others, ["-no_grad"])
    return [
        *_every(name, ["results"], layouts, dtypes),
        f"{name}-results-cpu-float32-{layouts[0]}-out-non-contiguous",
        *_every(name, ["strides", "compile"], layouts),
        *_every(name, ["fake"], layouts),
        *_every(name, ["fake"], [layouts[0]], others),
        *_every(name, ["opcheck"], layouts, variants=("-no_grad",)),
        *(per_dtype_opcheck if "contiguous" in layouts else []),
        f"{name}-dynamic-cpu-float32",
        f"{name}-export-cpu-float32",
    ]


def _bad(name, kind, device="cpu"):
    """Both checks of one kind of bad input, where it crashes the kernel
    (accepted without an error, it fails bad_input alone)."""
    return [f"{name}-bad_input-{device}-{kind}", f"{name}-internal_assert-{device}-{kind}"]


def _bad_dtype(name, device="cpu"):
    """An input of a dtype the op does not take, accepted without an error."""
    return [f"{name}-bad_input-{device}-dtype"]


def _silent_autodiff(name, raising=(), device="cpu", dtype="float32"):
    """Every mode but those that raise; the ops take no float64, so the
    cases run in float32 (in float16 where that is all the op takes)."""
    modes = [mode for mode in MODES if mode not in raising]
    return [f"{name}-autodiff-{device}-{dtype}-{mode}-raises" for mode in modes]


def _cuda_side(name):
    """Both checks of a kernel's stream: on a side stream, in a CUDA graph."""
    return [f"{name}-side_stream-cuda-float32", f"{name}-cuda_graph-cuda-float32"]


KNOWN = {
    **_known(
        findings.fake_kernels_lay_out_a_transposed_input_otherwise,
        *_every("int8_vectorwise_quant", ["strides", "fake", "compile"], ["transposed"]),
        *_every("quantize_blockwise", ["fake", "compile"], ["transposed"]),
        *_every("dequantize_blockwise", ["strides", "fake", "compile"], ["transposed"]),
        *(
            f"{op}-opcheck-cpu-float32-transposed-no_grad"
            for op in ("int8_vectorwise_quant", "quantize_blockwise", "dequantize_blockwise")
            if OPCHECK_STRIDES["cpu"]
        ),
        # The CUDA quantize_blockwise makes its input contiguous first.
        *_every("quantize_blockwise", ["fake", "compile"], ["transposed"], device="cuda"),
        *(
            ["quantize_blockwise-opcheck-cuda-float32-transposed-no_grad"]
            if OPCHECK_STRIDES["cuda"]
            else []
        ),
    ),
    **_known(
        findings.quantize_blockwise_never_picks_the_codes_nearest_zero,
        *_every("quantize_blockwise", ["results"], ["contiguous", "transposed", "3-d"], FLOATS),
    ),
    **_known(
        findings.default_kernels_mishandle_inputs_of_more_than_two_dimensions,
        *_layout_cases("int8_vectorwise_quant", "3-d", FLOATS),
        *_layout_cases("int8_vectorwise_dequant", "3-d"),
        *_layout_cases("int8_mm_dequant", "3-d", FLOATS),
        # On CUDA, int8_vectorwise_dequant is the default kernel.
        *_layout_cases("int8_vectorwise_dequant", "3-d", device="cuda"),
    ),
    **_known(
        findings.int8_mm_dequant_scales_by_a_mistyped_constant,
        *_every("int8_mm_dequant", ["results"], ["contiguous", "transposed", "bias"]),
    ),
    **_known(
        findings.gemv_4bit_computes_something_else_on_an_avx512_bf16_cpu,
        *_every("gemv_4bit", ["results"], ["nf4", "fp4"], FLOATS),
        *_bad_dtype("gemv_4bit"),  # its A, of any dtype, made bfloat16
    ),
    **_known(
        findings.gemv_4bit_aborts_the_process_for_8_outputs,
        *_layout_cases("gemv_4bit", "nf4-n8", FLOATS),
    ),
    **_known(
        findings.dequantize_4bit_compiles_again_for_every_shape,
        *(
            f"dequantize_4bit-{check}-{device}-float32"
            for check in ("dynamic", "export")
            for device in ("cpu", "cuda")
        ),
    ),
    **_known(
        findings.out_overloads_have_no_cpu_kernel,
        *_no_kernel("dequantize_blockwise_out", ["contiguous", "transposed", "3-d"], FLOATS),
        "dequantize_blockwise_out-bad_input-cpu-out-internal-overlap",
        *_no_kernel("dequantize_4bit_out", OUT_4BIT_LAYOUTS, FLOATS),
    ),
    **_known(
        findings.int8_linear_matmul_out_sums_in_float32,
        "int8_linear_matmul_out-results-cpu-int8-large-k",
        # The same kernel serves int8_linear_matmul, but where bitsandbytes
        # picks torch._int_mm (torch 2.6 on, on an AVX512 CPU).
        *(
            ["int8_linear_matmul-results-cpu-int8-large-k"]
            if torch.backends.cpu.get_cpu_capability() != "AVX512"
            else []
        ),
        # On CUDA both, where K is not a multiple of 4.
        "int8_linear_matmul-results-cuda-int8-large-k",
        "int8_linear_matmul_out-results-cuda-int8-large-k",
    ),
    **_known(
        findings.fake_kernels_and_kernels_refuse_different_inputs,
        # Where this CPU's kernels are bitsandbytes' default ones (no AVX512,
        # no AVX512-BF16), these take an A their fake kernels refuse too.
        *(
            case
            for name in KERNELS_ACCEPT
            if name in ("int8_linear_matmul", "gemv_4bit")
            for case in _bad_dtype(name)
        ),
        *_bad_dtype("quantize_blockwise"),
        *_bad_dtype("quantize_4bit"),
        *_bad_dtype("dequantize_blockwise"),
        *_bad_dtype("int8_vectorwise_dequant"),
        *_bad_dtype("int8_linear_matmul_out"),
        *_bad_dtype("optimizer_update_32bit"),
        "int8_linear_matmul_out-bad_input-cpu-out-internal-overlap",
        *_bad_dtype("int8_vectorwise_dequant", "cuda"),
        *_bad_dtype("dequantize_blockwise", "cuda"),
        *_bad_dtype("dequantize_blockwise_out", "cuda"),
        # The fake kernels take what the CUDA kernels refuse: two devices, a
        # bfloat16 momentum (its CUDA kernel has no bfloat16).
        "int8_vectorwise_dequant-bad_input-cuda-device",
        "int8_linear_matmul-bad_input-cuda-device",
        "optimizer_update_32bit-results-cuda-bfloat16-momentum",
    ),
    **_known(
        findings.derivatives_come_out_zero_instead_of_an_error,
        # Ops with kernels of their own raise in reverse mode (autograd's
        # fallback records nothing); bitsandbytes' default kernels, made of
        # torch ops, are differentiated through, with a warning.
        *_silent_autodiff("quantize_blockwise", raising=["reverse"]),
        *_silent_autodiff("dequantize_blockwise", raising=["reverse"]),
        *_silent_autodiff("dequantize_4bit", raising=["reverse"]),
        *_silent_autodiff("gemv_4bit", raising=["reverse"]),
        *_silent_autodiff("quantize_4bit"),
        *_silent_autodiff("int8_mm_dequant"),
        *_silent_autodiff("int8_vectorwise_dequant"),
        # An optional output (no outlier columns) has no batching rule.
        *_silent_autodiff("int8_vectorwise_quant", raising=["vmap-grad"]),
        # The CUDA kernels write through data_ptr(): reverse mode finds no
        # graph and raises; int8_vectorwise_dequant is the default kernel.
        *(
            case
            for op in (
                "quantize_blockwise",
                "dequantize_blockwise",
                "dequantize_4bit",
                "gemv_4bit",
                "quantize_4bit",
                "int8_mm_dequant",
            )
            for case in _silent_autodiff(op, raising=["reverse"], device="cuda")
        ),  # fmt: skip
        *_silent_autodiff("int8_vectorwise_dequant", device="cuda"),
        *_silent_autodiff(
            "int8_vectorwise_quant",
            raising=["reverse", "vmap-grad"],
            device="cuda",
            dtype="float16",
        ),  # fmt: skip
    ),
    # -- on CUDA only --
    **_known(
        findings.dequantize_4bit_out_fake_kernel_refuses_every_out,
        # (On the CPU, which has no kernel for it, out_overloads_have_no_cpu_kernel.)
        *_every("dequantize_4bit_out", ["fake", "compile"], OUT_4BIT_LAYOUTS, device="cuda"),
        *_every("dequantize_4bit_out", ["fake"], ["nf4"], ["float16", "bfloat16"], device="cuda"),
        *_every(
            "dequantize_4bit_out",
            ["opcheck"],
            OUT_4BIT_LAYOUTS,
            variants=["-no_grad"],
            device="cuda",
        ),  # fmt: skip
        "dequantize_4bit_out-dynamic-cuda-float32",
        "dequantize_4bit_out-export-cuda-float32",
    ),
    **_known(
        findings.cuda_kernels_run_on_the_legacy_default_stream,
        *_cuda_side("quantize_blockwise"),
        *_cuda_side("quantize_4bit"),
        *_cuda_side("optimizer_update_32bit"),
    ),
    **_known(
        findings.cuda_kernels_take_strided_tensors_as_contiguous,
        "int8_vectorwise_quant-results-cuda-float16-transposed",
        *_every("int8_mm_dequant", ["results"], ["transposed"], FLOATS, device="cuda"),
        *_every("dequantize_blockwise", ["results"], ["transposed"], FLOATS, device="cuda"),
        *_every("dequantize_blockwise_out", ["results"], ["transposed"], FLOATS, device="cuda"),
        "int8_linear_matmul-results-cuda-int8-transposed",
        "int8_linear_matmul_out-results-cuda-int8-transposed",
        # An out in another layout, or expanded (written past its memory).
        "int8_linear_matmul_out-results-cuda-int8-contiguous-out-non-contiguous",
        "dequantize_blockwise_out-results-cuda-float32-contiguous-out-non-contiguous",
        "dequantize_4bit_out-results-cuda-float32-nf4-out-non-contiguous",
        *(
            f"{op}-bad_input-cuda-out-internal-overlap"
            for op in ("int8_linear_matmul_out", "dequantize_blockwise_out", "dequantize_4bit_out")
        ),
    ),
    **_known(
        findings.cuda_kernels_read_a_cpu_tensor_without_a_check,
        *(
            case
            for op in (
                "quantize_blockwise",
                "dequantize_blockwise",
                "dequantize_blockwise_out",
                "dequantize_4bit",
                "dequantize_4bit_out",
                "gemv_4bit",
                "int8_mm_dequant",
                "int8_linear_matmul_out",
                "optimizer_update_32bit",
            )
            for case in _bad(op, "device", "cuda")
        ),  # fmt: skip
    ),
    **_known(
        findings.int8_mm_dequant_computes_in_float16_on_cuda,
        *_every("int8_mm_dequant", ["results"], ["contiguous", "3-d", "bias"], device="cuda"),
    ),
    **_known(
        findings.quantize_4bit_on_cuda_raises_unbound_local_error_for_float64,
        "quantize_4bit-bad_input-cuda-dtype",
        "gemv_4bit-bad_input-cuda-dtype",
    ),
    **_known(
        findings.momentum_drops_weight_decay_in_float16_on_cuda,
        "optimizer_update_32bit-results-cuda-float16-momentum",
    ),
}


# Each spec's case ids. Every KNOWN case must be one of them
# (conformance_tests checks only those it is given).
IDS = {name: {case.id for case in cases(spec)} for name, spec in SPECS.items()}
if unknown := set(KNOWN).difference(*IDS.values()):
    raise ValueError(f"KNOWN names no case: {sorted(unknown)}")


def _tests(name):
    """The tests of SPECS[name], with the KNOWN cases among them."""
    known = {case: why for case, why in KNOWN.items() if case in IDS[name]}
    return conformance_tests(SPECS[name], known_failures=known)


test_int8_vectorwise_quant = _tests("int8_vectorwise_quant")
test_int8_vectorwise_quant_cuda = _tests("int8_vectorwise_quant.cuda")
test_int8_vectorwise_dequant = _tests("int8_vectorwise_dequant")
test_int8_mm_dequant = _tests("int8_mm_dequant")
test_int8_linear_matmul = _tests("int8_linear_matmul")
test_int8_linear_matmul_out = _tests("int8_linear_matmul.out")
test_quantize_blockwise = _tests("quantize_blockwise")
test_dequantize_blockwise = _tests("dequantize_blockwise")
test_dequantize_blockwise_out = _tests("dequantize_blockwise.out")
test_quantize_4bit = _tests("quantize_4bit")
test_dequantize_4bit = _tests("dequantize_4bit")
test_dequantize_4bit_out = _tests("dequantize_4bit.out")
test_gemv_4bit = _tests("gemv_4bit")
test_optimizer_update_32bit = _tests("optimizer_update_32bit")


def test_what_collection_asked_the_kernels():
    """Each probe above returned (a crash or an error would leave KNOWN short)."""
    for made in PROBES.values():
        made.result()


# The warning that comes with the zero derivatives (torch's autograd
# fallback): the finding is that there is no error.
@pytest.mark.filterwarnings("ignore:.*an autograd kernel was not registered:UserWarning")
@pytest.mark.parametrize("reproducer", reproducers(findings), ids=lambda f: f.__name__)
def test_each_finding_reproduces_without_the_harness(reproducer):
    """Each reproducer's assert fails where this machine shows the bug (run
    in the harness's worker: on some CPUs a bitsandbytes kernel aborts)."""
    if reproducer in findings.NEEDS_CUDA and not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")  # (marked cuda: make gpu runs it)
    reproduces_in_isolation(reproducer, findings.reproduces(reproducer))
