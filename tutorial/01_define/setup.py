"""Builds extension_cpp._C, the library that registers the tutorial's operators.

    pip install --no-build-isolation --use-pep517 --upgrade --target build/pip -e .

Step 1 compiles the schemas alone: one C++ file, no CUDA yet.
"""

import glob

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(
    name="extension_cpp",
    version="0.1.0",
    packages=["extension_cpp"],
    ext_modules=[
        CppExtension(
            "extension_cpp._C",
            sorted(glob.glob("csrc/*.cpp")),
            extra_compile_args={"cxx": ["-O3"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
