"""A fake kernel whose strides disagree with the real kernel's.

The real kernel always returns a contiguous tensor; the fake returns
empty_like(x), which keeps x's strides. For a transposed x the compiled code
is planned for strides (1, 3) and gets (4, 1).
"""

import torch


@torch.library.custom_op("toy::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return (x * 2).contiguous()  # real kernel: always contiguous


@scale.register_fake
def _(x):
    return torch.empty_like(x)  # wrong: keeps x's strides; x.new_empty(x.shape) is right


@torch.compile(fullgraph=True)
def f(x):
    return scale(x) + 1


x = torch.randn(4, 3).t()  # strides (1, 3)
f(x)
