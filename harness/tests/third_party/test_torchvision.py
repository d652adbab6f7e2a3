"""torchvision's six C++/CUDA ops through the harness (torchvision_specs.py),
and the reproducers of what it found (torchvision_findings.py).

Every case passes but those KNOWN lists: each a bug in torchvision that a
reproducer shows without the harness, on the page
docs/what_the_harness_found.md. They are strict expected
failures, so a torchvision that fixes one makes its case pass and this run
fail until the page and torchvision_findings.FIXED_IN say which release
fixed it.
"""

import pytest
import torch

torchvision = pytest.importorskip(
    "torchvision", reason="torchvision is not installed (make test installs the release "
    "built for this torch: pip install --no-deps torchvision)"
)  # fmt: skip
if not torchvision.extension._has_ops():
    pytest.skip(
        f"torchvision {torchvision.__version__}'s C++ ops did not load on torch "
        f"{torch.__version__}: install the torchvision built for this torch",
        allow_module_level=True,
    )

from extension_cpp_testing import FORWARD_MODES, conformance_tests  # noqa: E402

from . import torchvision_findings as findings  # noqa: E402
from .findings_helpers import reproducers, reproduces_in_isolation  # noqa: E402
from .torchvision_specs import SPECS  # noqa: E402

# torchvision's nms meta kernel calls a deprecated name for
# torch.library.get_ctx().new_dynamic_size(); the warning is torchvision's to
# fix, and says nothing about the op's correctness.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`create_unbacked_symint` is deprecated:FutureWarning"
)

PAGE = "docs/what_the_harness_found.md"


def _known(reproducer, *cases):
    """The cases a torchvision bug explains, where the installed torchvision has it."""
    if not findings.reproduces(reproducer):
        return {}
    reason = f"torchvision bug: {reproducer.__name__} ({PAGE})"
    return dict.fromkeys(cases, reason)


DEVICES = ("cpu", "cuda")

KNOWN = {
    # torchvision's CPU and CUDA kernels share these bugs (the CUDA cases are
    # listed only where the GPU run showed them).
    **_known(
        findings.ps_roi_pool_leaves_out_the_last_row_and_column,
        *(
            f"ps_roi_pool-results-{device}-{dtype}-{layout}"
            for device in DEVICES
            for dtype in ("float32", "float64")
            for layout in ("contiguous", "transposed", "channels-last")
        ),
    ),
    **_known(
        findings.ps_roi_pool_backward_is_not_its_forwards_derivative,
        *(
            f"ps_roi_pool-{check}-{device}-float64-{variant}"
            for device in DEVICES
            for check, variant in (
                ("gradcheck", "contiguous"),
                ("gradcheck", "transposed"),
                ("gradcheck", "channels-last"),
                ("autodiff", "reverse"),
            )
        ),
    ),
    **_known(
        findings.roi_pool_reads_rois_of_the_wrong_shape,
        "roi_pool-bad_input-cpu-shape",
    ),
    **_known(
        findings.nms_fake_kernel_accepts_integer_boxes,
        *(f"nms-bad_input-{device}-dtype" for device in DEVICES),
    ),
    **_known(
        findings.deform_conv2d_does_not_check_the_bias,
        *(f"deform_conv2d-bad_input-{device}-shape" for device in DEVICES),
    ),
    **_known(
        findings.deform_conv2d_fake_kernel_accepts_integer_input,
        *(f"deform_conv2d-bad_input-{device}-dtype" for device in DEVICES),
    ),
    **_known(
        findings.forward_mode_gives_no_tangent_and_no_error,
        *(
            f"{op}-autodiff-{device}-float64-{mode}-raises"
            for op in ("roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool", "deform_conv2d")
            for device in DEVICES
            for mode in FORWARD_MODES
        ),
    ),
    **_known(
        findings.nms_fake_kernel_accepts_boxes_and_scores_on_two_devices,
        "nms-bad_input-cuda-device",
    ),
    **_known(
        findings.deform_conv2d_does_not_run_on_the_current_stream,
        "deform_conv2d-cuda_graph-cuda-float32",
        "deform_conv2d-side_stream-cuda-float32",
    ),
    **_known(
        findings.ps_roi_align_cannot_be_captured_in_a_cuda_graph,
        "ps_roi_align-cuda_graph-cuda-float32",
    ),
}


def _tests(name):
    known = {case: why for case, why in KNOWN.items() if case.startswith(f"{name}-")}
    return conformance_tests(SPECS[name], known_failures=known)


test_roi_align = _tests("roi_align")
test_roi_pool = _tests("roi_pool")
test_ps_roi_align = _tests("ps_roi_align")
test_ps_roi_pool = _tests("ps_roi_pool")
test_nms = _tests("nms")
test_deform_conv2d = _tests("deform_conv2d")


@pytest.mark.parametrize("reproducer", reproducers(findings), ids=lambda f: f.__name__)
def test_each_finding_reproduces_without_the_harness(reproducer):
    """Each reproducer's assert fails, up to the torchvision release that
    fixed it (run in the harness's worker, as every kernel call of a test)."""
    if reproducer in findings.NEEDS_CUDA and not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")  # (marked cuda: make gpu runs it)
    reproduces_in_isolation(reproducer, findings.reproduces(reproducer))
