"""Build extension_cpp: one limited-API extension module, extension_cpp/_C.abi3.so.

Environment variables:
  EXTENSION_CPP_CUDA    auto (default): compile the CUDA kernels when torch is a
                        CUDA build and the CUDA toolkit is found, GPU or not.
                        1 forces them (an error if impossible), 0 leaves them out.
  TORCH_CUDA_ARCH_LIST  architectures to compile for. Default: the release list
                        below. The test path sets 9.0 alone (H100/H200) to keep
                        nvcc time down.
  EXTENSION_CPP_SANITIZE  a -fsanitize= list for the C++ files, e.g.
                        address,undefined (scripts/sanitize.sh, `make sanitize`);
                        never for a release build.
"""

import os
import sys

from setuptools import find_packages, setup

# The CUDA toolkit here may sit behind an `nvcc` wrapper in /usr/local/bin,
# which would make torch guess CUDA_HOME=/usr/local. Point it at the toolkit
# before torch.utils.cpp_extension reads the environment.
if not os.environ.get("CUDA_HOME") and not os.environ.get("CUDA_PATH"):
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        os.environ["CUDA_HOME"] = "/usr/local/cuda"

import torch  # noqa: E402
from torch.utils import cpp_extension  # noqa: E402
from torch.utils.cpp_extension import (  # noqa: E402
    CUDA_HOME,
    BuildExtension,
    CppExtension,
    CUDAExtension,
)

ROOT = os.path.dirname(os.path.abspath(__file__))
PY_LIMITED_API = "0x03090000"  # CPython 3.9: the oldest Python the wheel supports
RELEASE_CUDA_ARCHS = "7.5;8.0;8.6;8.9;9.0;10.0;12.0+PTX"


def use_cuda() -> bool:
    setting = os.environ.get("EXTENSION_CPP_CUDA", "auto").strip().lower()
    possible = torch.version.cuda is not None and CUDA_HOME is not None
    if setting in ("1", "on", "true", "yes"):
        if not possible:
            sys.exit(
                "EXTENSION_CPP_CUDA=1, but CUDA kernels cannot be built: "
                f"torch.version.cuda={torch.version.cuda!r}, CUDA_HOME={CUDA_HOME!r}"
            )
        return True
    if setting in ("0", "off", "false", "no"):
        return False
    if setting != "auto":
        sys.exit(f"EXTENSION_CPP_CUDA must be auto, 1 or 0, got {setting!r}")
    return possible


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
    cxx_flags = ["-O3"]
    link_flags = []
    if sys.platform.startswith("linux"):
        # at::parallel_for is a header template that only runs in parallel
        # when the including file is compiled with OpenMP; without this flag
        # the CPU kernels run on one thread whatever torch.get_num_threads()
        # says. libgomp.so.1 resolves to the copy torch has already loaded
        # (keep it out of the wheel: auditwheel repair --exclude libgomp.so.1).
        cxx_flags.append("-fopenmp")
        link_flags.append("-fopenmp")
    # Recent torch defines Py_LIMITED_API itself for py_limited_api builds
    # (to 3.10); older releases leave it to us. csrc/python_module.cpp, the
    # only file that includes Python.h, pins it to 3.9 either way.
    if not hasattr(cpp_extension, "min_supported_cpython"):
        cxx_flags.append(f"-DPy_LIMITED_API={PY_LIMITED_API}")
    sanitize = os.environ.get("EXTENSION_CPP_SANITIZE", "").strip()
    if sanitize:
        # -O1 and frame pointers: readable stacks in the reports. Every UB kind
        # is fatal, so a report cannot scroll past unnoticed.
        cxx_flags[0] = "-O1"
        cxx_flags += [f"-fsanitize={sanitize}", "-fno-sanitize-recover=all"]
        cxx_flags += ["-fno-omit-frame-pointer", "-g"]
        link_flags.append(f"-fsanitize={sanitize}")
    files = sources("", ".cpp") + sources("cpu", ".cpp")
    if sys.platform.startswith("linux"):
        # Keep whatever a static library brings into _C private to it. On our
        # GPU machine the compiler in $CXX (a GCC 13.3 with libstdc++.a but no
        # libstdc++.so) linked a static copy of libstdc++ into every extension,
        # which exported it; the process then mixed that copy with the
        # libstdc++.so.6 torch had loaded, and the first integer streamed into
        # a message (TORCH_CHECK(cond, "got ", n)) crashed in a locale facet
        # lookup. With the copy's symbols hidden, the extension uses one
        # runtime throughout. Where libstdc++ is linked as a shared library, as
        # on most machines, the flag changes nothing. scripts/ostream_probe.py
        # shows it; docs/troubleshooting.md explains.
        link_flags.append("-Wl,--exclude-libs,ALL")
    if not with_cuda:
        return CppExtension(
            "extension_cpp._C",
            files,
            extra_compile_args={"cxx": cxx_flags},
            extra_link_args=link_flags,
            py_limited_api=True,
        )
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", RELEASE_CUDA_ARCHS)
    return CUDAExtension(
        "extension_cpp._C",
        files + sources("cuda", ".cu"),
        extra_compile_args={"cxx": cxx_flags, "nvcc": ["-O3", "--expt-relaxed-constexpr"]},
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
    install_requires=[torch_requirement()],
    python_requires=">=3.9",
    cmdclass={"build_ext": BuildExtension},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
