"""Build extension_cpp_stable: the extension_cpp ops against the LibTorch stable ABI.

One limited-API module, extension_cpp_stable/_C.abi3.so, compiled from
stable/csrc/ (the binding) and the classic build's kernels and checks
(csrc/cpu/, csrc/cuda/, csrc/fast/, csrc/elementwise.h, csrc/input_checks.h,
found on the include path), with
TORCH_TARGET_VERSION pinning torch 2.10 as the oldest release it loads on.
The wheel is cp310-abi3 (torch 2.10 needs CPython 3.10) and requires
torch>=2.10: build it once, against any torch from 2.10 on, and it runs on
every later release.

    pip install --no-build-isolation stable/      # or -e stable/ for development

Its public functions (extension_cpp_stable/ops.py) and derivatives
(_autograd.py) are its own; what the classic package's Python holds for any
namespace (the fake kernels, batching rules, checks, Autocast and DTensor
rules) the build_py step copies in: SHARED_MODULES from extension_cpp/ into
extension_cpp_stable/ (git ignores the copies), so there is one source to
edit and nothing to keep in step by hand. Reading this
file (a metadata query, say) writes nothing.

Environment variables: EXTENSION_CPP_CUDA, TORCH_CUDA_ARCH_LIST,
EXTENSION_CPP_KERNELS and EXTENSION_CPP_SANITIZE, as for the classic build
(build_options.py).
"""

import importlib.util
import os

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _load_build_options():
    """../build_options.py, the classic build's settings, loaded from its file:
    it lies outside this project's folder, so it is not importable by name."""
    spec = importlib.util.spec_from_file_location(
        "build_options", os.path.join(ROOT, "build_options.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# build_options sets CUDA_HOME, so it comes before torch.utils.cpp_extension.
build_options = _load_build_options()

# isort: split

from torch.utils.cpp_extension import CppExtension, CUDAExtension  # noqa: E402

# The oldest torch whose stable ABI this build may use: 2.10. Headers then
# hide (or refuse) everything newer, and every c10/ATen header.
TORCH_TARGET_VERSION = "0x020A000000000000"
OLDEST_TORCH = "2.10"


# The classic package's modules that serve both packages: each reads its op
# namespace from the package it is imported in. Its public functions are
# this package's own (extension_cpp_stable/ops.py: the torch.func path).
SHARED_MODULES = ["_library.py", "_checks.py", "_autocast.py", "_sharding.py", "_dtensor_hook.py"]


def csrc(*parts: str) -> str:
    """This build's own C++ (stable/csrc/)."""
    return os.path.join(HERE, "csrc", *parts)


# The classic build's kernels and checks, which this build's C++ includes.
SHARED_CSRC = os.path.join(ROOT, "csrc")


class build_py_with_shared_modules(build_py):
    """build_py, after copying SHARED_MODULES into the package's source folder
    (where an editable install imports them too)."""

    def run(self):
        for name in SHARED_MODULES:
            with open(os.path.join(ROOT, "extension_cpp", name)) as f:
                text = f.read()
            with open(os.path.join(HERE, "extension_cpp_stable", name), "w") as f:
                f.write(f"# Copied from extension_cpp/{name} by stable/setup.py: edit that file.\n")
                f.write(text)
        super().run()


def extension():
    cxx_flags, link_flags = build_options.flags(openmp=False)
    target = f"-DTORCH_TARGET_VERSION={TORCH_TARGET_VERSION}"
    cxx_flags.append(target)
    files = [os.path.join(SHARED_CSRC, "python_module.cpp"), csrc("ops.cpp"), csrc("ops_cpu.cpp")]
    if not build_options.use_cuda():
        return CppExtension(
            "extension_cpp_stable._C",
            files,
            include_dirs=[SHARED_CSRC],
            extra_compile_args={"cxx": cxx_flags},
            extra_link_args=link_flags,
            py_limited_api=True,
        )
    # The classic build's CUDA kernels (csrc/loops.cuh: csrc/cuda/ and
    # csrc/fast/cuda/) with a stable-ABI launcher. USE_CUDA makes the C shim declare its CUDA calls
    # (the current stream).
    build_options.set_cuda_archs()
    cxx_flags.append("-DUSE_CUDA")
    return CUDAExtension(
        "extension_cpp_stable._C",
        [*files, csrc("ops_cuda.cu")],
        include_dirs=[SHARED_CSRC],
        extra_compile_args={
            "cxx": cxx_flags,
            "nvcc": [*build_options.NVCC_FLAGS, target, "-DUSE_CUDA"],
        },
        extra_link_args=link_flags,
        py_limited_api=True,
    )


setup(
    name="extension_cpp_stable",
    version="0.1.0",
    description="The extension_cpp operators built against the LibTorch stable ABI (torch>=2.10)",
    packages=find_packages(include=["extension_cpp_stable", "extension_cpp_stable.*"]),
    ext_modules=[extension()],
    install_requires=[f"torch>={OLDEST_TORCH}", build_options.HARNESS],
    python_requires=">=3.10",
    cmdclass={
        "build_ext": build_options.build_ext(os.path.join(HERE, "build", "temp")),
        "build_py": build_py_with_shared_modules,
    },
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
