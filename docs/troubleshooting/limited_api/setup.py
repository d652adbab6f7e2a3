"""Builds limited_api/op.cpp as a limited-API (abi3) extension: it cannot compile."""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(
    name="toy",
    ext_modules=[CppExtension("toy._C", ["op.cpp"], py_limited_api=True)],
    cmdclass={"build_ext": BuildExtension},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
