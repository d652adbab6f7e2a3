"""The extension_cpp operators, built against the LibTorch stable ABI.

Importing this package loads ``extension_cpp_stable._C``, which registers
``torch.ops.extension_cpp_stable.{mymuladd, mymul, myadd_out}``: the same
schemas and kernels as the classic ``extension_cpp`` package, bound with
``STABLE_TORCH_LIBRARY`` (stable/csrc/). One build loads on every torch from
2.10 on, so unlike the classic package there is no version to compare at
import.

Its public functions (ops.py) and derivatives (_autograd.py: the Autograd
kernels, in Python, as the stable ABI has no C++ autograd API) are its own.
What the classic package's Python holds for any namespace, stable/setup.py
copies in when it builds: ``_library.py`` (fake kernels, batching rules),
``_checks.py``, ``_autocast.py``, ``_sharding.py`` and ``_dtensor_hook.py``
(they read their op namespace from the package name), so the two packages
cannot drift apart.
"""

import importlib

import torch  # noqa: F401  (loads libtorch, which _C links against)

importlib.import_module("extension_cpp_stable._C")

# The registrations need the library loaded first.
from . import _autocast, _autograd, ops  # noqa: E402
from ._dtensor_hook import register_when_dtensor_loads  # noqa: E402
from .ops import *  # noqa: E402, F403  (the public functions, ops.__all__)

_autograd.register()
_autocast.register()
register_when_dtensor_loads()  # DTensor sharding rules, once DTensor is imported

__all__ = ["ops", *ops.__all__]
