"""Registers the DTensor sharding rules (_sharding.py) once DTensor is loaded.

Importing torch.distributed.tensor takes a noticeable part of a second
(``python -X importtime`` shows it), so ``import extension_cpp`` does not
import it. If a program has already imported it,
the rules are registered at once; otherwise a one-shot import hook registers
them right after the program imports it. Either way a DTensor never meets an
op without its rules.
"""

import importlib.abc
import importlib.util
import sys

import torch

_DTENSOR = "torch.distributed.tensor"


class _AfterDTensorImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the real loader of torch.distributed.tensor
    so that our rules are registered right after that module has run."""

    def find_spec(self, name, path=None, target=None):
        if name != _DTENSOR:
            return None
        sys.meta_path.remove(self)  # one shot; the real finders do the finding
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            importlib.import_module(f"{__package__}._sharding")

        spec.loader.exec_module = exec_module
        return spec


def register_when_dtensor_loads() -> None:
    if not torch.distributed.is_available():
        return  # a torch build without torch.distributed has no DTensor
    if _DTENSOR in sys.modules:
        importlib.import_module(f"{__package__}._sharding")
    else:
        sys.meta_path.insert(0, _AfterDTensorImport())
