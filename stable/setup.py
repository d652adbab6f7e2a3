"""Build extension_cpp_stable: the extension_cpp ops against the LibTorch stable ABI.

One limited-API module, extension_cpp_stable/_C.abi3.so, compiled from
csrc/stable/ (the binding) and the classic build's kernels (csrc/cpu/,
csrc/cuda/elementwise_cuda.cuh, csrc/elementwise.h), with
TORCH_TARGET_VERSION pinning torch 2.10 as the oldest release it loads on.
The wheel is cp310-abi3 (torch 2.10 needs CPython 3.10) and requires
torch>=2.10: build it once, against any torch from 2.10 on, and it runs on
every later release.

    pip install --no-build-isolation stable/      # or -e stable/ for development

Environment variables: EXTENSION_CPP_CUDA, TORCH_CUDA_ARCH_LIST and
EXTENSION_CPP_SANITIZE, as for the classic build (build_options.py).
"""

import os
import sys

from setuptools import find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

# build_options sets CUDA_HOME, so it comes before torch.utils.cpp_extension.
from build_options import HARNESS, NVCC_FLAGS, flags, set_cuda_archs, use_cuda  # noqa: E402

# isort: split

from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension  # noqa: E402

# The oldest torch whose stable ABI this build may use: 2.10. Headers then
# hide (or refuse) everything newer, and every c10/ATen header.
TORCH_TARGET_VERSION = "0x020A000000000000"
OLDEST_TORCH = "2.10"


def csrc(*parts: str) -> str:
    return os.path.join(ROOT, "csrc", *parts)


def extension():
    cxx_flags, link_flags = flags(openmp=False)
    target = f"-DTORCH_TARGET_VERSION={TORCH_TARGET_VERSION}"
    cxx_flags.append(target)
    files = [csrc("python_module.cpp"), csrc("stable", "ops.cpp"), csrc("stable", "ops_cpu.cpp")]
    if not use_cuda():
        return CppExtension(
            "extension_cpp_stable._C",
            files,
            extra_compile_args={"cxx": cxx_flags},
            extra_link_args=link_flags,
            py_limited_api=True,
        )
    # The classic build's CUDA kernels (csrc/cuda/elementwise_cuda.cuh) with
    # a stable-ABI launcher. USE_CUDA makes the C shim declare its CUDA calls
    # (the current stream).
    set_cuda_archs()
    cxx_flags.append("-DUSE_CUDA")
    return CUDAExtension(
        "extension_cpp_stable._C",
        [*files, csrc("stable", "ops_cuda.cu")],
        extra_compile_args={
            "cxx": cxx_flags,
            "nvcc": [*NVCC_FLAGS, target, "-DUSE_CUDA"],
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
    install_requires=[f"torch>={OLDEST_TORCH}", HARNESS],
    python_requires=">=3.10",
    cmdclass={"build_ext": BuildExtension},
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
