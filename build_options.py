"""Build settings shared by setup.py (the classic package) and stable/setup.py
(the stable-ABI one): when to compile the CUDA kernels, for which
architectures, the C++ flags, and the harness both packages require.

Environment variables:
  EXTENSION_CPP_CUDA    auto (default): compile the CUDA kernels when torch is a
                        CUDA build and the CUDA toolkit is found, GPU or not.
                        1 forces them (an error if impossible), 0 leaves them out.
  TORCH_CUDA_ARCH_LIST  architectures to compile for. Default: the release list
                        below. make test sets 9.0 alone (Hopper) to keep nvcc
                        time down.
  EXTENSION_CPP_KERNELS fast (default): the plain kernels plus the tuned loops
                        of csrc/fast/, which take every layout they can run
                        faster. simple: the plain kernels alone (csrc/cpu/,
                        csrc/cuda/), the code to read and copy; make test runs
                        the conformance suite on this build too.
  EXTENSION_CPP_SANITIZE  a -fsanitize= list for the C++ files, e.g.
                        address,undefined (tools/ci/sanitize.sh, `make sanitize`);
                        never for a release build.
  NVCC_THREADS          nvcc threads per CUDA file, one architecture each
                        (default 4).
"""

import os
import sys

# The CUDA toolkit here may sit behind an `nvcc` wrapper in /usr/local/bin,
# which would make torch guess CUDA_HOME=/usr/local. Point it at the toolkit
# before torch.utils.cpp_extension reads the environment.
if not os.environ.get("CUDA_HOME") and not os.environ.get("CUDA_PATH"):
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        os.environ["CUDA_HOME"] = "/usr/local/cuda"

import torch  # noqa: E402
from torch.utils import cpp_extension  # noqa: E402
from torch.utils.cpp_extension import CUDA_HOME  # noqa: E402

# The conformance harness (harness/, pure Python), which each package
# re-exports as its `testing` module.
HARNESS = "extension-cpp-testing>=0.1"

PY_LIMITED_API = "0x03090000"  # CPython 3.9: the oldest Python the classic wheel supports
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


def fast_kernels() -> bool:
    setting = os.environ.get("EXTENSION_CPP_KERNELS", "fast").strip().lower()
    if setting not in ("fast", "simple"):
        sys.exit(f"EXTENSION_CPP_KERNELS must be fast or simple, got {setting!r}")
    return setting == "fast"


def kernel_macros() -> list[str]:
    """The -D flag that picks the kernels, for the C++ and CUDA compilers alike."""
    return [f"-DEXTENSION_CPP_FAST_KERNELS={int(fast_kernels())}"]


def flags(openmp: bool) -> tuple[list[str], list[str]]:
    """(C++ compile flags, link flags).

    openmp: compile with -fopenmp, for the classic build, whose CPU loop calls
    at::parallel_for: a header template that only runs in parallel when the
    including file is compiled with OpenMP; without this flag the CPU kernels
    run on one thread whatever torch.get_num_threads() says. libgomp.so.1
    resolves to the copy torch has already loaded (keep it out of the wheel:
    auditwheel repair --exclude libgomp.so.1). The stable build reaches the
    same thread pool through a C shim call instead and needs no OpenMP.
    """
    # -g1 after Python's -g: line tables only. A crash's backtrace still names
    # each frame's file and line; full debug info's types and variables, for
    # torch's headers, make the objects much larger and the compile slower
    # (Note [Build time] has the figures).
    cxx_flags = ["-O3", "-g1", *kernel_macros()]
    link_flags = []
    if openmp and sys.platform.startswith("linux"):
        cxx_flags.append("-fopenmp")
        link_flags.append("-fopenmp")
    if sys.platform.startswith("linux"):
        # Keep whatever a static library brings into _C private to it. A
        # compiler that links a static copy of libstdc++ into the extension
        # (one with libstdc++.a but no libstdc++.so) would otherwise export
        # it; the process then mixes that copy with the libstdc++.so.6 torch
        # loaded, and the first integer streamed into a message
        # (TORCH_CHECK(cond, "got ", n)) can crash in a locale facet lookup.
        # With the copy's symbols hidden, the extension uses one runtime
        # throughout; where libstdc++ is a shared library, as on most
        # machines, the flag changes nothing. Both builds need it (Note
        # [Static libstdc++], docs/troubleshooting.md).
        link_flags.append("-Wl,--exclude-libs,ALL")
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
    return cxx_flags, link_flags


# nvcc's flags for either build; --expt-relaxed-constexpr lets device code
# call constexpr host functions, as torch's own CUDA code does. --threads
# compiles a file's architectures side by side: with the release list, one
# CUDA file is most of a wheel's build.
NVCC_FLAGS = ["-O3", "--expt-relaxed-constexpr", *kernel_macros()]
NVCC_FLAGS += ["--threads", os.environ.get("NVCC_THREADS", "4")]


def set_cuda_archs() -> None:
    """The release architecture list, unless TORCH_CUDA_ARCH_LIST names others."""
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", RELEASE_CUDA_ARCHS)


def build_ext(folder: str):
    """torch's BuildExtension, keeping its object files in `folder` between builds.

    setuptools compiles an editable install in a temporary folder, so every
    `pip install -e .` (make build) would recompile everything. With one
    folder per package and kernel set, ninja recompiles only what changed,
    and a wheel built in the tree with the same settings (make test's
    test_wheel.py) reuses the editable build's objects.
    """
    from torch.utils.cpp_extension import BuildExtension

    class BuildExt(BuildExtension):
        def finalize_options(self):
            super().finalize_options()
            self.build_temp = folder

    return BuildExt
