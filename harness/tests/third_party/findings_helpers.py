"""What the findings' reproducers share (torchvision_findings.py and
bitsandbytes_findings.py): whether an op accepts its arguments, as they
are and on fake tensors."""

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv


# [accepts]
def kernel_accepts(op, *args) -> bool:
    try:
        op(*args)
    except (RuntimeError, ValueError):
        return False
    return True


def fake_accepts(op, *args) -> bool:
    """As torch.compile and torch.export trace op: on fake tensors, its meta kernel."""
    mode = FakeTensorMode(shape_env=ShapeEnv())
    with mode:
        return kernel_accepts(op, *[mode.from_tensor(a) if torch.is_tensor(a) else a for a in args])


# [accepts]
