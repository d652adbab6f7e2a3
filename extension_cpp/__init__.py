"""Reference PyTorch custom operators written in C++ and CUDA.

Importing this package loads the compiled library ``extension_cpp._C``, which
registers the ops ``torch.ops.extension_cpp.{mymuladd, mymul, myadd_out}``
with their kernels and derivatives, and then what Python adds to them: the
fake kernels and vmap rules (:mod:`extension_cpp.ops`), the Autocast kernels
and the DTensor sharding rules. Use the functions in :mod:`extension_cpp.ops` (re-exported
here) or the ``torch.ops`` entries.
"""

from ._loading import load_library

load_library()

# The registrations need the library loaded first.
from . import _autocast, ops  # noqa: E402
from ._dtensor_hook import register_when_dtensor_loads  # noqa: E402
from .ops import *  # noqa: E402, F403  (the public functions, ops.__all__)

_autocast.register()
register_when_dtensor_loads()  # DTensor sharding rules, once DTensor is imported

__all__ = ["ops", *ops.__all__]
