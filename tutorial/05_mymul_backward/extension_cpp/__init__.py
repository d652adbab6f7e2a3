"""The tutorial's extension_cpp package: torch.ops.extension_cpp.{mymuladd, mymul, myadd_out}.

Importing ``_C`` loads the compiled library; its static initialisers run
TORCH_LIBRARY and TORCH_LIBRARY_IMPL, which register the ops with PyTorch.
"""

import importlib.machinery
import os

import torch  # noqa: F401  (loads libtorch, which _C links against)

# Load this checkpoint's own _C and nothing else. Without this check an
# unbuilt checkpoint would not fail: `from . import _C` would find another
# extension_cpp's library (the reference's editable install provides one)
# and run its kernels instead of these.
_HERE = os.path.dirname(os.path.abspath(__file__))
if not any(
    os.path.exists(os.path.join(_HERE, "_C" + suffix))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES
):
    raise ImportError(
        f"{_HERE} has no compiled _C: build this checkpoint first "
        "(in its folder: pip install --no-build-isolation --use-pep517 --upgrade "
        "--target build/pip -e .)"
    )

from . import _C, ops  # noqa: E402, F401  (importing _C registers the ops)
from .ops import myadd_out, mymul, mymuladd  # noqa: E402

__all__ = ["ops", "mymuladd", "mymul", "myadd_out"]
