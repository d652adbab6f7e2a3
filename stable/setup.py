"""Build extension_cpp_stable: the extension_cpp ops against the LibTorch stable ABI.

One limited-API module, extension_cpp_stable/_C.abi3.so, compiled from
csrc/stable/ (the binding) and the classic build's kernels (csrc/cpu/,
csrc/cuda/, csrc/fast/, csrc/elementwise.h), with
TORCH_TARGET_VERSION pinning torch 2.10 as the oldest release it loads on.
The wheel is cp310-abi3 (torch 2.10 needs CPython 3.10) and requires
torch>=2.10: build it once, against any torch from 2.10 on, and it runs on
every later release.

    pip install --no-build-isolation stable/      # or -e stable/ for development

Its Python is the classic package's: SHARED_MODULES are copied from
extension_cpp/ into extension_cpp_stable/ at every build (git ignores the
copies), so there is one source to edit and nothing to keep in step by hand.

Environment variables: EXTENSION_CPP_CUDA, TORCH_CUDA_ARCH_LIST,
EXTENSION_CPP_KERNELS and EXTENSION_CPP_SANITIZE, as for the classic build
(build_options.py).
"""

import os
import sys

from setuptools import find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

# build_options sets CUDA_HOME, so it comes before torch.utils.cpp_extension.
from build_options import (  # noqa: E402
    HARNESS,
    NVCC_FLAGS,
    build_ext,
    flags,
    set_cuda_archs,
    use_cuda,
)

# isort: split

from torch.utils.cpp_extension import CppExtension, CUDAExtension  # noqa: E402

# The oldest torch whose stable ABI this build may use: 2.10. Headers then
# hide (or refuse) everything newer, and every c10/ATen header.
TORCH_TARGET_VERSION = "0x020A000000000000"
OLDEST_TORCH = "2.10"


# The classic package's modules that serve both packages: each reads its op
# namespace from the package it is imported in.
SHARED_MODULES = ["ops.py", "_checks.py", "_autocast.py", "_sharding.py", "_dtensor_hook.py"]


def csrc(*parts: str) -> str:
    return os.path.join(ROOT, "csrc", *parts)


def copy_shared_modules() -> None:
    for name in SHARED_MODULES:
        with open(os.path.join(ROOT, "extension_cpp", name)) as f:
            text = f.read()
        with open(os.path.join(HERE, "extension_cpp_stable", name), "w") as f:
            f.write(f"# Copied from extension_cpp/{name} by stable/setup.py: edit that file.\n")
            f.write(text)


copy_shared_modules()


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
    # The classic build's CUDA kernels (csrc/loops.cuh: csrc/cuda/ and
    # csrc/fast/cuda/) with a stable-ABI launcher. USE_CUDA makes the C shim declare its CUDA calls
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
    cmdclass={"build_ext": build_ext(os.path.join(HERE, "build", "temp"))},
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
