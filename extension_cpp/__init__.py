"""Reference PyTorch custom operators written in C++ and CUDA.

Importing this package loads the compiled library ``extension_cpp._C``, which
registers the ops ``torch.ops.extension_cpp.{mymuladd, mymul, myadd_out}``,
and then the fake kernels in :mod:`extension_cpp.ops`. Use the functions in
:mod:`extension_cpp.ops` (re-exported here) or the ``torch.ops`` entries.
"""

from ._loading import load_library

load_library()

from . import ops  # noqa: E402  (the fake kernels need the library loaded first)
from ._dtensor_hook import register_when_dtensor_loads  # noqa: E402
from .ops import myadd_out, mymul, mymuladd  # noqa: E402

register_when_dtensor_loads()  # DTensor sharding rules, once DTensor is imported

__all__ = ["ops", "mymuladd", "mymul", "myadd_out"]
