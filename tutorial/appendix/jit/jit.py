"""Compiles and loads muladd_jit.cpp at run time with torch.utils.cpp_extension.load.

    python tutorial/appendix/jit/jit.py [BUILD_DIR]

No setup.py and no install: the first call compiles (tens of seconds), later
calls with unchanged sources reuse the build in BUILD_DIR (by default
torch's cache, ~/.cache/torch_extensions). Handy while writing a kernel;
ship it with a setup.py (the numbered checkpoints) once it works.
"""

import os
import sys

import torch
from torch.utils.cpp_extension import load

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "muladd_jit.cpp")


def load_op(build_directory=None):
    """Builds (or reuses) the library and returns torch.ops.tutorial_jit.mymuladd."""
    if build_directory is not None:
        os.makedirs(build_directory, exist_ok=True)
    # is_python_module=False: the result is a plain library, loaded with
    # torch.ops.load_library; its TORCH_LIBRARY block registers the op.
    load(
        name="tutorial_jit",
        sources=[SOURCE],
        extra_cflags=["-O2"],
        # As the checkpoints' setup.py: a static C++ runtime stays private.
        extra_ldflags=["-Wl,--exclude-libs,ALL"],
        is_python_module=False,
        build_directory=build_directory,
        verbose=False,
    )
    return torch.ops.tutorial_jit.mymuladd.default


if __name__ == "__main__":
    mymuladd = load_op(sys.argv[1] if len(sys.argv) > 1 else None)
    a, b = torch.randn(4), torch.randn(4)
    torch.testing.assert_close(mymuladd(a, b, 1.0), a * b + 1.0)
    print("tutorial_jit::mymuladd matches a * b + 1")
