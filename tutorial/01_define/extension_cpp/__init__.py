"""The tutorial's extension_cpp package: torch.ops.extension_cpp.{mymuladd, mymul, myadd_out}.

``_C`` is a plain shared library here, not yet a Python module (step 2 makes
it one): torch.ops.load_library opens it, and its static initialiser runs
TORCH_LIBRARY, which registers the ops' schemas with PyTorch.
"""

import glob
import os

import torch

_libraries = glob.glob(os.path.join(os.path.dirname(__file__), "_C*.so"))
if not _libraries:
    raise ImportError(
        f"{os.path.dirname(os.path.abspath(__file__))} has no compiled _C: build this checkpoint "
        "first (in its folder: pip install --no-build-isolation --use-pep517 --upgrade "
        "--target build/pip -e .)"
    )
torch.ops.load_library(_libraries[0])

from . import ops  # noqa: E402
from .ops import myadd_out, mymul, mymuladd  # noqa: E402

__all__ = ["ops", "mymuladd", "mymul", "myadd_out"]
