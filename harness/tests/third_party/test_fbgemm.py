"""fbgemm-gpu-cpu's ops through the harness (fbgemm_specs.py), and the
reproducers of what it found (fbgemm_findings.py).

Every case passes but those KNOWN lists: each a bug in fbgemm that a
reproducer shows without the harness, on the page
docs/what_the_harness_found.md. They are strict expected failures, so an
fbgemm that fixes one makes its cases pass and this run fail until the page
and these lists say so.
"""

import pytest

fbgemm_gpu = pytest.importorskip(
    "fbgemm_gpu", reason="fbgemm-gpu-cpu is not installed (make test-deps installs the "
    "release the Makefile pins: pip install --no-deps fbgemm-gpu-cpu==<release>)"
)  # fmt: skip

from extension_cpp_testing import MODES, cases, conformance_tests, reproducers  # noqa: E402

from . import fbgemm_findings as findings  # noqa: E402
from .fbgemm_specs import SPECS  # noqa: E402
from .findings_helpers import reproduces_in_isolation  # noqa: E402

PAGE = "docs/what_the_harness_found.md"
STRIDED = ("transposed", "step-sliced")


def _known(reproducer, *cases):
    """The cases a fbgemm bug explains."""
    return dict.fromkeys(cases, f"fbgemm bug: {reproducer.__name__} ({PAGE})")


# The findings whose kernels read or write memory they do not own: their
# cases run each in a worker process of its own (conformance_tests'
# memory_unsafe), so a heap they damage can't fail a later, unrelated case.
MEMORY_UNSAFE = (
    findings.permute_2D_sparse_data_reads_a_strided_permute_raw,
    findings.permute_2D_sparse_data_backward_breaks_on_a_repeating_permute,
    findings.float_to_fused_8bit_rowwise_reads_any_dtype_as_float32,
    findings.lengths_range_out_writes_output_as_if_contiguous,
)


def _every(name, checks, layouts, dtypes=("float32",), variants=("",)):
    """name's CPU cases of these checks, layouts, dtypes and variants."""
    return [
        f"{name}-{check}-cpu-{dtype}-{layout}{variant}"
        for check in checks
        for layout in layouts
        for dtype in dtypes
        for variant in variants
    ]


def _bad_dtype(name):
    """An input of a dtype the op does not take, accepted without an error."""
    return [f"{name}-bad_input-cpu-dtype"]


def _silent_autodiff(name, raising=(), dtype="float32"):
    """Every autodiff mode but those that raise, as the op claims none of them."""
    return [f"{name}-autodiff-cpu-{dtype}-{mode}-raises" for mode in MODES if mode not in raising]


KNOWN = {
    **_known(
        findings.kernels_read_strided_inputs_as_contiguous,
        *_every("FloatToFused8BitRowwiseQuantized", ["results"], STRIDED),
        *_every(
            "FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf",
            ["results"],
            STRIDED,
            ("float16", "float32"),
        ),  # fmt: skip
        *_every("Fused8BitRowwiseQuantizedToFloat", ["results"], STRIDED),
        # AOTDispatcher's copy of the transposed input is read otherwise.
        "Fused8BitRowwiseQuantizedToFloat-opcheck-cpu-float32-transposed-no_grad",
        *_every(
            "segment_sum_csr", ["results"], ["step-sliced"], ("float16", "bfloat16", "float32")
        ),
    ),
    **_known(
        findings.permute_2D_sparse_data_reads_a_strided_permute_raw,
        *_every(
            "permute_2D_sparse_data",
            ["results"],
            ["step-sliced-permute"],
            ("float16", "float32", "float64"),
        ),  # fmt: skip
        "permute_2D_sparse_data-gradcheck-cpu-float64-step-sliced-permute",
    ),
    **_known(
        findings.float_to_fused_8bit_rowwise_reads_any_dtype_as_float32,
        *_bad_dtype("FloatToFused8BitRowwiseQuantized"),
    ),
    **_known(
        findings.rowwise_8bit_fake_kernels_pad_rows_the_cpu_kernels_do_not,
        *(
            case
            for op in ("FloatToFused8BitRowwiseQuantized", "Fused8BitRowwiseQuantizedToFloat")
            for case in [
                *_every(op, ["fake", "compile"], ["odd-columns"]),
                f"{op}-opcheck-cpu-float32-odd-columns-no_grad",
            ]
        ),
    ),
    **_known(
        findings.fake_kernels_accept_inputs_the_kernels_refuse,
        *(
            f"{op}-bad_input-cpu-dtype"
            for op in (
                "FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf",
                "Fused8BitRowwiseQuantizedToFloat",
                "permute_2D_sparse_data",
                "segment_sum_csr",
                "bounds_check_indices",
                "jagged_2d_to_dense",
                "asynchronous_complete_cumsum",
            )
        ),
    ),
    **_known(
        findings.derivatives_come_out_zero_instead_of_an_error,
        # No derivative registered: reverse mode raises (autograd's fallback
        # records nothing), torch.func and forward mode give zeros.
        *_silent_autodiff("segment_sum_csr", raising=["reverse"]),
        # Reverse mode registered (register_autograd): forward mode gives zeros.
        *(
            f"permute_2D_sparse_data-autodiff-cpu-float64-{mode}-raises"
            for mode in ("jvp", "jvp-first-only", "jacfwd", "forward_ad", "forward_ad-last-only")
        ),
        # jagged_2d_to_dense's backward has no derivative: zero second derivatives.
        *_every("jagged_2d_to_dense", ["gradgradcheck"], ["contiguous", "transposed"]),
    ),
    **_known(
        findings.permute_2D_sparse_data_backward_breaks_on_a_repeating_permute,
        # Uninitialised memory: SIGSEGV, an allocation of a garbage size, or a
        # gradient of the wrong size, from run to run.
        *_every("permute_2D_sparse_data", ["gradcheck"], ["repeating", "subset"], ["float64"]),
        *_every(
            "permute_2D_sparse_data",
            ["opcheck"],
            ["repeating", "subset"],
            variants=["-requires_grad"],
        ),  # fmt: skip
    ),
    **_known(
        findings.lengths_range_out_does_not_declare_that_it_writes_output,
        *_every(
            "lengths_range_out",
            ["opcheck"],
            ["contiguous", "step-sliced"],
            ["int32"],
            ["-no_grad"],
        ),  # fmt: skip
        "lengths_range_out-opcheck-cpu-int64-contiguous-no_grad",
    ),
    **_known(
        findings.lengths_range_out_has_no_fake_kernel,
        *_every("lengths_range_out", ["fake"], ["contiguous", "step-sliced"], ["int32"]),
        "lengths_range_out-fake-cpu-int64-contiguous",
        *_every("lengths_range_out", ["compile"], ["contiguous", "step-sliced"], ["int32"]),
        "lengths_range_out-dynamic-cpu-int32",
        "lengths_range_out-export-cpu-int32",
    ),
    **_known(
        findings.lengths_range_out_writes_output_as_if_contiguous,
        "lengths_range_out-results-cpu-int32-contiguous-out-non-contiguous",
        # An expanded output: written past its memory, SIGABRT.
        "lengths_range_out-bad_input-cpu-out-internal-overlap",
        "lengths_range_out-internal_assert-cpu-out-internal-overlap",
    ),
    **_known(
        findings.lengths_range_out_takes_an_output_that_overlaps_its_lengths,
        "lengths_range_out-bad_input-cpu-out-overlap",
    ),
    **_known(
        findings.bounds_check_indices_drops_repairs_to_offsets_of_another_dtype,
        *_every("bounds_check_indices", ["results"], ["mixed-offsets"], ("int64", "int32")),
    ),
    **_known(
        findings.jagged_2d_to_dense_takes_offsets_it_cannot_use,
        "jagged_2d_to_dense-bad_input-cpu-value-offsets-that-decrease",
        "jagged_2d_to_dense-bad_input-cpu-value-offsets-past-the-values-rows",
    ),
}

# The same bug where what the kernel reads is garbage: opcheck's copy of the
# strided permute holds uninitialised memory between its elements (torch's
# clone_input), which the kernel reads. Mostly a SIGSEGV; where the garbage
# happens to be a valid index the case passes, so these are not strict.
BY_CHANCE = _known(
    findings.permute_2D_sparse_data_reads_a_strided_permute_raw,
    *_every(
        "permute_2D_sparse_data",
        ["opcheck"],
        ["step-sliced-permute"],
        variants=("-no_grad", "-requires_grad"),
    ),
)

# Each spec's case ids. Every KNOWN case must be one of them
# (conformance_tests checks only those it is given).
IDS = {name: {case.id for case in cases(spec)} for name, spec in SPECS.items()}
if unknown := set(KNOWN).union(BY_CHANCE).difference(*IDS.values()):
    raise ValueError(f"KNOWN and BY_CHANCE name no case: {sorted(unknown)}")


def _tests(name):
    """The tests of SPECS[name], with the KNOWN and BY_CHANCE cases among them."""
    known = {case: why for case, why in KNOWN.items() if case in IDS[name]}
    chance = {case: why for case, why in BY_CHANCE.items() if case in IDS[name]}
    unsafe = {f"fbgemm bug: {finding.__name__} ({PAGE})" for finding in MEMORY_UNSAFE}
    alone = [case for case, why in {**known, **chance}.items() if why in unsafe]
    return conformance_tests(
        SPECS[name], known_failures=known, nondeterministic_failures=chance, memory_unsafe=alone
    )


test_float_to_fused_8bit_rowwise = _tests("FloatToFused8BitRowwiseQuantized")
test_float_or_half_to_fused_nbit_rowwise = _tests("FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf")
test_fused_8bit_rowwise_to_float = _tests("Fused8BitRowwiseQuantizedToFloat")
test_jagged_2d_to_dense = _tests("jagged_2d_to_dense")
test_permute_2D_sparse_data = _tests("permute_2D_sparse_data")
test_segment_sum_csr = _tests("segment_sum_csr")
test_asynchronous_complete_cumsum = _tests("asynchronous_complete_cumsum")
test_lengths_range_out = _tests("lengths_range_out")
test_bounds_check_indices = _tests("bounds_check_indices")


# The warning that comes with the zero derivatives (torch's autograd
# fallback): the finding is that there is no error.
@pytest.mark.filterwarnings("ignore:.*an autograd kernel was not registered:UserWarning")
@pytest.mark.parametrize("reproducer", findings.FINDINGS, ids=lambda f: f.__name__)
def test_each_finding_reproduces_without_the_harness(reproducer):
    """Each reproducer's assert fails: the bug is still there (run in the
    harness's worker: some of these kernels read memory they do not own)."""
    reproduces_in_isolation(reproducer, shows=True)


def test_a_reproducer_imports_the_package_that_loaded_the_ops():
    """fbgemm's kernels are C++, loaded by fbgemm_gpu (torch.ops.load_library):
    no Python file registered them and no package is named fbgemm, so a
    finding's reproducer imports fbgemm_gpu."""
    assert reproducers.imports_for(SPECS["jagged_2d_to_dense"], "fbgemm") == ["fbgemm_gpu"]
