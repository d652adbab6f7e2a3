"""The tutorial's extension_cpp package: torch.ops.extension_cpp.{mymuladd, mymul, myadd_out}.

Importing ``_C`` loads the compiled library; its static initialisers run
TORCH_LIBRARY and TORCH_LIBRARY_IMPL, which register the ops with PyTorch.
"""

import torch  # noqa: F401  (loads libtorch, which _C links against)

from . import _C, ops  # noqa: F401  (importing _C registers the ops)
from .ops import myadd_out, mymul, mymuladd

__all__ = ["ops", "mymuladd", "mymul", "myadd_out"]
