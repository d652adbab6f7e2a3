"""Builds a CUDA extension with an nvcc whose CUDA major version is not torch's."""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="toy",
    ext_modules=[CUDAExtension("toy._C", ["kernel.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
