"""torch.library.opcheck with every test utility, on every layout.

opcheck checks the registration: schema (mutation and aliasing as declared),
fake kernel against the real one (shapes, dtypes, strides), the autograd
registration, and AOT dispatch, static and dynamic. It does not check the
gradient's math: test_autograd.py does that.
"""

import pytest
import torch

from .cases import DTYPES, LAYOUTS, OPS, devices, dtype_id, make_inputs

ALL_TEST_UTILS = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_aot_dispatch_static",
    "test_aot_dispatch_dynamic",
)


def run_opcheck(op_name, a, b):
    op = OPS[op_name]
    result = torch.library.opcheck(op.overload, op.args(a, b), test_utils=ALL_TEST_UTILS)
    assert result == {name: "SUCCESS" for name in ALL_TEST_UTILS}


@pytest.mark.parametrize("requires_grad", [False, True], ids=["no_grad", "requires_grad"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", ["mymuladd", "mymul"])
def test_opcheck_functional(op_name, device, layout, requires_grad):
    run_opcheck(op_name, *make_inputs(layout, device=device, requires_grad=requires_grad))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("op_name", OPS)
def test_opcheck_dtypes(op_name, device, dtype):
    run_opcheck(op_name, *make_inputs("contiguous", dtype, device))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("device", devices())
def test_opcheck_myadd_out(device, layout):
    # Not differentiable (like PyTorch's out= ops): checked without requires_grad;
    # test_autograd.py checks the error raised with it.
    run_opcheck("myadd_out", *make_inputs(layout, device=device))
