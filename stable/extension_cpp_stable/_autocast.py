"""Autocast kernels of the stable-ABI ops, registered from Python.

The classic package's csrc/autocast.cpp, for a build whose C++ side may not
use the dispatcher's C++ API: the same policy on the same dispatch keys
(AutocastCPU, AutocastCUDA). The inputs meet at the dtype torch.mul(a, b)
would return, the widest of their floating dtypes, and the op runs there;
nothing is cast down. myadd_out's inputs are cast to out's dtype.
Non-floating inputs pass unchanged, to get the kernels' usual error.

torch.library.register_autocast casts every input to one fixed dtype, which
is not this policy, hence the kernels below. They run only inside
torch.autocast: outside it the dispatcher skips the Autocast keys.
"""

import torch

from . import ops

_NAMESPACE = ops._NAMESPACE


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
            return ops._mymuladd(_cast(a, dtype), _cast(b, dtype), c)

    def mymul(a, b):
        with no_autocast():
            dtype = _widest(a, b)
            return ops._mymul(_cast(a, dtype), _cast(b, dtype))

    def myadd_out(a, b, out):
        with no_autocast():
            dtype = None if out is None else out.dtype
            ops._myadd_out(_cast(a, dtype), _cast(b, dtype), out)

    return {"mymuladd": mymuladd, "mymul": mymul, "myadd_out": myadd_out}


_lib = torch.library.Library(_NAMESPACE, "IMPL")


def register() -> None:
    for key in (torch._C.DispatchKey.AutocastCPU, torch._C.DispatchKey.AutocastCUDA):
        for name, kernel in _kernels(key).items():
            _lib.impl(name, kernel, key.name)
