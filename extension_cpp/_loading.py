"""Loads ``extension_cpp._C``, refusing a torch it was not built for.

The module uses the classic libtorch C++ ABI, which changes between torch
releases. Loading it into another release fails with an undefined-symbol
error (or worse, loads and misbehaves), so the versions are compared first
and a mismatch is reported in words.
"""

import importlib

import torch


def _release(version: str) -> str:
    """'2.14.1+cu130' -> '2.14.1'."""
    return version.split("+")[0]


def load_library() -> None:
    try:
        from . import _build_info
    except ImportError as e:
        raise ImportError(
            "extension_cpp is not built: run `pip install --no-build-isolation -e .` "
            "(or `make build`) in the repository first"
        ) from e
    built, running = _build_info.TORCH_VERSION, torch.__version__
    if _release(built) != _release(running):
        raise ImportError(
            f"extension_cpp was built against torch {built} but torch {running} is installed. "
            f"The torch C++ ABI changes between releases: install torch=={_release(built)}, "
            "or rebuild extension_cpp against this torch "
            "(pip install --no-build-isolation --force-reinstall --no-deps .)"
        )
    if _build_info.CUDA_VERSION is not None and torch.version.cuda is None:
        raise ImportError(
            f"extension_cpp was built with CUDA {_build_info.CUDA_VERSION} kernels, "
            f"but torch {running} is a CPU-only build: install a CUDA build of torch "
            "or rebuild with EXTENSION_CPP_CUDA=0"
        )
    importlib.import_module("extension_cpp._C")
