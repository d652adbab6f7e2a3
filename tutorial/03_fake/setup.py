"""Builds extension_cpp._C, the library that registers the tutorial's operators.

    pip install --no-build-isolation --use-pep517 --upgrade --target build/pip -e .

(the checkpoint's README says why these flags).

The CUDA kernels are compiled when torch is a CUDA build and the CUDA toolkit
is found (a GPU is not needed to compile them); EXTENSION_CPP_CUDA=0 leaves
them out. TORCH_CUDA_ARCH_LIST picks the GPU architectures (e.g. "9.0").
"""

import glob
import os

from setuptools import setup

# The CUDA toolkit may sit behind an `nvcc` wrapper in /usr/local/bin, which
# makes torch guess CUDA_HOME=/usr/local, and the link then fails with
# "cannot find -lcudart". Point torch at the toolkit before it reads the
# environment (the reference's setup.py does the same).
if not os.environ.get("CUDA_HOME") and not os.environ.get("CUDA_PATH"):
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        os.environ["CUDA_HOME"] = "/usr/local/cuda"

import torch  # noqa: E402
from torch.utils.cpp_extension import (  # noqa: E402
    CUDA_HOME,
    BuildExtension,
    CppExtension,
    CUDAExtension,
)

with_cuda = (
    os.environ.get("EXTENSION_CPP_CUDA", "1") != "0"
    and torch.version.cuda is not None
    and CUDA_HOME is not None
)
sources = sorted(glob.glob("csrc/*.cpp")) + (sorted(glob.glob("csrc/*.cu")) if with_cuda else [])
Extension = CUDAExtension if with_cuda else CppExtension

setup(
    name="extension_cpp",
    version="0.1.0",
    packages=["extension_cpp"],
    ext_modules=[
        Extension(
            "extension_cpp._C",
            sources,
            extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3"]},
            # Keeps a static copy of the C++ runtime, where the toolchain links
            # one in, private to _C (docs: "A segfault instead of the error
            # message"); no effect where libstdc++ is a shared library.
            extra_link_args=["-Wl,--exclude-libs,ALL"],
            # One build for every CPython >= 3.9: _C uses only the limited API
            # (csrc/python_module.cpp), so the file is named _C.abi3.so.
            py_limited_api=True,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
