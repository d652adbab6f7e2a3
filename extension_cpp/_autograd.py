"""The derivatives csrc/autograd.cpp calls, as kernels of three private ops.

The Autograd kernels in C++ send a call that records a backward to
``extension_cpp::_mymuladd_differentiable`` or ``_mymul_differentiable``, and
ask ``extension_cpp::_product_tangent`` for the tangent of a call in forward
mode (csrc/ops.cpp defines the three). Their kernels, registered here, are
``ops.differentiable`` and ``ops.tangent``, where the derivatives are
written. A call with nothing to differentiate never gets here: it stays in
C++.
"""

import torch

from . import ops

_lib = torch.library.Library(ops._NAMESPACE, "IMPL")


def register() -> None:
    # CompositeImplicitAutograd: the kernel is made of other ops (here an
    # autograd.Function around mymul and mymuladd), so autograd, FakeTensor
    # and torch.compile all see through it.
    _lib.impl(
        "_mymuladd_differentiable",
        lambda a, b, c: ops.differentiable("mymuladd", a, b, c),
        "CompositeImplicitAutograd",
    )
    _lib.impl(
        "_mymul_differentiable",
        lambda a, b: ops.differentiable("mymul", a, b),
        "CompositeImplicitAutograd",
    )
    _lib.impl("_product_tangent", ops.tangent, "CompositeImplicitAutograd")
