"""Build extension_cpp: one limited-API extension module, extension_cpp/_C.abi3.so.

Environment variables: see build_options.py (EXTENSION_CPP_CUDA,
TORCH_CUDA_ARCH_LIST, EXTENSION_CPP_KERNELS, EXTENSION_CPP_SANITIZE).
"""

import os

from setuptools import find_packages, setup

# build_options sets CUDA_HOME, so it comes before torch.utils.cpp_extension.
# (pyproject.toml's build backend, setuptools.build_meta:__legacy__, puts this
# folder on sys.path, as `python setup.py` would.)
from build_options import (
    HARNESS,
    NVCC_FLAGS,
    build_ext,
    fast_kernels,
    flags,
    set_cuda_archs,
    use_cuda,
)

# isort: split

import torch  # noqa: E402
from torch.utils.cpp_extension import CppExtension, CUDAExtension  # noqa: E402

ROOT = os.path.dirname(os.path.abspath(__file__))
KERNELS = "fast" if fast_kernels() else "simple"


def sources(folder: str, suffix: str) -> list[str]:
    path = os.path.join("csrc", folder)
    return sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(suffix))


def write_build_info(with_cuda: bool) -> None:
    """Records the torch the module is compiled against; checked at import."""
    with open(os.path.join(ROOT, "extension_cpp", "_build_info.py"), "w") as f:
        f.write('"""Written by setup.py at build time. Do not edit."""\n\n')
        f.write(f"TORCH_VERSION = {torch.__version__!r}\n")
        f.write(f"CUDA_VERSION = {torch.version.cuda if with_cuda else None!r}\n")


def extension():
    with_cuda = use_cuda()
    write_build_info(with_cuda)
    cxx_flags, link_flags = flags(openmp=True)
    files = sources("", ".cpp") + sources("cpu", ".cpp")
    if not with_cuda:
        return CppExtension(
            "extension_cpp._C",
            files,
            extra_compile_args={"cxx": cxx_flags},
            extra_link_args=link_flags,
            py_limited_api=True,
        )
    set_cuda_archs()
    return CUDAExtension(
        "extension_cpp._C",
        files + sources("cuda", ".cu"),
        extra_compile_args={"cxx": cxx_flags, "nvcc": NVCC_FLAGS},
        extra_link_args=link_flags,
        py_limited_api=True,
    )


def torch_requirement() -> str:
    # The classic libtorch ABI is not stable across releases: a build works
    # with the torch release it was compiled against (any local variant).
    return f"torch=={torch.__version__.split('+')[0]}"


setup(
    name="extension_cpp",
    version="0.1.0",
    description="Reference PyTorch custom C++/CUDA operators with fake kernels and autograd",
    packages=find_packages(include=["extension_cpp", "extension_cpp.*"]),
    ext_modules=[extension()],
    install_requires=[torch_requirement(), HARNESS],
    python_requires=">=3.9",
    # Each kernel set compiles in a folder of its own, so switching between
    # them rebuilds nothing that has not changed.
    cmdclass={"build_ext": build_ext(os.path.join(ROOT, "build", f"temp-{KERNELS}"))},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
