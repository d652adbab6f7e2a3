"""What the ops do inside torch.autocast: their Autocast kernels.

Policy: the inputs meet at the dtype torch.mul(a, b) would return, the
widest of their floating dtypes (autocast's "promote" rule), and the op runs
there. So mymul(a, b) under autocast has the dtype and the value of a * b
under autocast, whether a and b share a dtype or not: an autocast matmul's
bfloat16 output times a float32 parameter runs in float32, as torch.mul
would, instead of failing the kernels' same-dtype check. Nothing is cast
down: like torch.mul, which autocast leaves alone, these ops are memory
bound and gain nothing from a narrower type that costs accuracy. myadd_out
writes into out's dtype, so its inputs are cast to that dtype. Non-floating
inputs pass unchanged, to get the kernels' usual error.

torch.library.register_autocast casts every input to one fixed dtype, which
is not this policy, hence the kernels below, on the AutocastCPU and
AutocastCUDA keys. They cost nothing outside torch.autocast: the dispatcher
skips the Autocast keys there.
"""

import torch

from . import _library


def _cast(t, dtype):
    return t.to(dtype) if t is not None and t.is_floating_point() and t.dtype != dtype else t


def _widest(a, b):
    if a is None or b is None or not (a.is_floating_point() and b.is_floating_point()):
        return None  # no cast: the kernel's checks report it
    return torch.promote_types(a.dtype, b.dtype)


def _kernels(key: torch._C.DispatchKey):
    # As PyTorch's own autocast wrappers: leave this autocast key out of the
    # dispatch below, then call the op with the cast inputs.
    def no_autocast():
        return torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(key))

    def mymuladd(a, b, c):
        with no_autocast():
            dtype = _widest(a, b)
            return _library.mymuladd(_cast(a, dtype), _cast(b, dtype), c)

    def mymul(a, b):
        with no_autocast():
            dtype = _widest(a, b)
            return _library.mymul(_cast(a, dtype), _cast(b, dtype))

    def myadd_out(a, b, out):
        with no_autocast():
            dtype = None if out is None else out.dtype
            _library.myadd_out(_cast(a, dtype), _cast(b, dtype), out)

    return {"mymuladd": mymuladd, "mymul": mymul, "myadd_out": myadd_out}


_lib = torch.library.Library(_library.NAMESPACE, "IMPL")


def register() -> None:
    for key in (torch._C.DispatchKey.AutocastCPU, torch._C.DispatchKey.AutocastCUDA):
        for name, kernel in _kernels(key).items():
            _lib.impl(name, kernel, key.name)
