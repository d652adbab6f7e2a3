"""The Triton side path (tutorial/appendix/triton) through the harness.

extension_triton's ops get every check test_harness.py runs on the C++ ops,
from the same references, exactness and tolerances (cases.OPS), on every
layout of extension_cpp.testing.LAYOUTS: the Triton kernels claim them all.
They run on CUDA only, so without a GPU every case skips, except under
Triton's interpreter (TRITON_INTERPRET=1), which runs the kernels on the CPU:
test_tutorial_appendix.py runs this file so, selecting the checks that run
the kernels in eager mode (under the interpreter ``wrap_triton`` returns the
kernel itself, so a fake tensor would reach it). After the harness, what is
specific to these ops.
"""

import pytest
import torch
from conformance.cases import HAS_CUDA, OPS, classic_only, testing

pytest.importorskip("triton")
# tutorial/appendix/triton, on sys.path through pyproject.toml's pytest `pythonpath`
import extension_triton  # noqa: E402
from extension_triton.ops import INTERPRETED  # noqa: E402

pytestmark = classic_only("the Triton package does not depend on the build under test")

DEVICE = "cpu" if INTERPRETED else "cuda"
runs_kernels = pytest.mark.skipif(
    not (HAS_CUDA or INTERPRETED), reason="needs a CUDA GPU (or TRITON_INTERPRET=1)"
)


def _spec(op):
    return testing.OpSpec(
        getattr(extension_triton, op.name),
        name=op.name,
        reference=lambda a, b, *args: op.reference(a, b),
        extra_args=op.args,
        out=op.out,
        exact=set(op.exact_dtypes) == set(testing.DTYPES),
        devices=(DEVICE,),
        # Every autodiff mode (the default), forward mode included: the public
        # functions add the jvp that register_autograd can't give (ops.py).
        huge=True,
    )


SPECS = {name: _spec(op) for name, op in OPS.items()}
test_mymuladd = testing.conformance_tests(SPECS["mymuladd"])
test_mymul = testing.conformance_tests(SPECS["mymul"])
test_myadd_out = testing.conformance_tests(SPECS["myadd_out"])


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True)


@runs_kernels
@pytest.mark.parametrize("mode", ["eager", pytest.param("compiled", marks=pytest.mark.cuda)])
def test_c_keeps_float64_precision(mode):
    """c reaches the kernel as a float64 (Triton's default for a Python float
    is float32, which would move 0.1 by 1.5e-9)."""
    a = torch.randn(1000, dtype=torch.float64, device=DEVICE)
    b = torch.randn(1000, dtype=torch.float64, device=DEVICE)

    def muladd(a, b):
        return extension_triton.mymuladd(a, b, 0.1)

    got = (muladd if mode == "eager" else _compiled(muladd))(a, b)
    torch.testing.assert_close(got, a * b + 0.1, rtol=1e-15, atol=1e-15)


@runs_kernels
@pytest.mark.parametrize("mode", ["eager", pytest.param("compiled", marks=pytest.mark.cuda)])
def test_five_dimensions_that_do_not_merge_are_refused(mode):
    """The one layout limit: four dimensions after merging, in the C++ ops' words."""
    a = torch.randn(2, 3, 4, 5, 6, device=DEVICE)
    b = torch.randn(6, 5, 4, 3, 2, device=DEVICE).permute(4, 3, 2, 1, 0)
    fn = extension_triton.mymul if mode == "eager" else _compiled(extension_triton.mymul)
    with pytest.raises(RuntimeError) as error:
        fn(a, b)
    assert (
        "mymul: tensors with more than 4 non-mergeable dimensions are not supported, got a "
        "tensor of shape [2, 3, 4, 5, 6] and strides [360, 120, 30, 6, 1]" in str(error.value)
    )
    # Four of them run: the same inputs with one dimension of size 1.
    torch.testing.assert_close(fn(a[:1], b[:1]), a[:1] * b[:1])
