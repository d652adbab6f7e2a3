"""What the ops need from Python besides their kernels: the fake kernels
and the batching rules for torch.vmap, registered on the ops of this
package's namespace.

The fake kernels tell the compiler what each op returns without running it,
and must agree with the real kernels exactly: same shape, dtype, device and
strides (those of ``torch.mul(a, b)``), and the same errors for bad input
(_checks.py). The stable-ABI package (extension_cpp_stable) builds this same
file into itself (stable/setup.py), for its ops of the same schemas in its
own namespace: nothing here names a package.
"""

import torch
from torch import Tensor

from . import _checks

# The op namespace: this package's name.
NAMESPACE = __package__
_ops = getattr(torch.ops, NAMESPACE)

# The ops' OpOverloads, looked up once: an attribute walk through torch.ops on
# every call would be a measurable part of a small call (Note [Per-call cost]).
mymuladd = _ops.mymuladd.default
mymul = _ops.mymul.default
myadd_out = _ops.myadd_out.default


# Fake kernels: run by FakeTensor under torch.compile / torch.export instead of
# the real kernels. They check what the real kernels check, in the same words.


@torch.library.register_fake(f"{NAMESPACE}::mymuladd")
def _mymuladd_fake(a: Tensor, b: Tensor, c: float) -> Tensor:
    _checks.check_inputs("mymuladd", a, b)
    return _checks.elementwise_output(a, b)


@torch.library.register_fake(f"{NAMESPACE}::mymul")
def _mymul_fake(a: Tensor, b: Tensor) -> Tensor:
    _checks.check_inputs("mymul", a, b)
    return _checks.elementwise_output(a, b)


@torch.library.register_fake(f"{NAMESPACE}::myadd_out")
def _myadd_out_fake(a: Tensor, b: Tensor, out: Tensor) -> None:
    _checks.check_out("myadd_out", a, b, out)


# Batching rules for torch.vmap: the batch dimension moves to the front of
# each batched argument, unbatched ones are expanded to match (a stride-0
# view, no copy), and one call of the op covers the whole batch.


def _batch_first(info, in_dims, *tensors: Tensor) -> list:
    return [
        t.unsqueeze(0).expand(info.batch_size, *t.shape) if d is None else t.movedim(d, 0)
        for t, d in zip(tensors, in_dims)
    ]


@torch.library.register_vmap(f"{NAMESPACE}::mymuladd")
def _mymuladd_vmap(info, in_dims, a: Tensor, b: Tensor, c: float):
    a, b = _batch_first(info, in_dims[:2], a, b)
    return mymuladd(a, b, c), 0


@torch.library.register_vmap(f"{NAMESPACE}::mymul")
def _mymul_vmap(info, in_dims, a: Tensor, b: Tensor):
    a, b = _batch_first(info, in_dims, a, b)
    return mymul(a, b), 0


@torch.library.register_vmap(f"{NAMESPACE}::myadd_out")
def _myadd_out_vmap(info, in_dims, a: Tensor, b: Tensor, out: Tensor):
    # Each sample writes its own slice of out, so out must carry the batch
    # dimension; an unbatched out would receive every sample's result at once.
    torch._check(in_dims[2] is not None, lambda: _checks.message("vmap_out", op="myadd_out"))
    a, b, out = _batch_first(info, in_dims, a, b, out)
    myadd_out(a, b, out)
    return None, None  # no output, so no output batch dimension
