"""Builds muladd_numpy, the plain pybind11 binding (needs `pip install pybind11 numpy`).

python setup.py build_ext --inplace
"""

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

setup(
    name="muladd_numpy",
    version="0.1.0",
    ext_modules=[Pybind11Extension("muladd_numpy", ["muladd_numpy.cpp"], cxx_std=17)],
    cmdclass={"build_ext": build_ext},
)
