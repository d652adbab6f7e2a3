"""extension_cpp's ops in Triton: ``torch.ops.extension_triton.{mymuladd, mymul, myadd_out}``.

Importing the package registers the ops (ops.py). They run on CUDA GPUs, and
need torch and Triton at run time, nothing compiled ahead of time.
"""

from .ops import myadd_out, mymul, mymuladd

__all__ = ["mymuladd", "mymul", "myadd_out"]
