"""Builds extension_cpp._C, the library that registers the tutorial's operators.

    python setup.py build_ext --inplace    # or: pip install --no-build-isolation .

The CUDA kernels are compiled when torch is a CUDA build and the CUDA toolkit
is found (a GPU is not needed to compile them); EXTENSION_CPP_CUDA=0 leaves
them out. TORCH_CUDA_ARCH_LIST picks the GPU architectures (e.g. "9.0").
"""

import glob
import os

import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

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
            # One build for every CPython >= 3.9: _C uses only the limited API
            # (csrc/python_module.cpp), so the file is named _C.abi3.so.
            py_limited_api=True,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
