"""docs/check_your_op.md, run: the harness on a C++ op, as PyTorch's docs teach one.

``mycpp::muladd`` is a TORCH_LIBRARY op with a CPU kernel, built with
torch.utils.cpp_extension.load_inline, and given its fake kernel, backward and
batching rule in Python (register_fake, register_autograd, register_vmap). The
fake kernel raises the TORCH_CHECKs' exact words: C++ prints a dtype by c10's
name ("Long"), which extension_cpp_testing.scalar_type_name gives in Python.
The page includes this file (literalinclude), so what it shows is what
`make test` runs.
"""

# [cpp-op]
import re
from pathlib import Path

import torch
from torch import Tensor
from torch.utils.cpp_extension import load_inline

from extension_cpp_testing import FORWARD_MODES, OpSpec, conformance_tests, scalar_type_name

SOURCE = r"""
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch/library.h>

// a * b + c. a, b: Float or Double, one shape, on the CPU, in any layout;
// the result is contiguous.
at::Tensor muladd_cpu(const at::Tensor& a, const at::Tensor& b, double c) {
  TORCH_CHECK(a.scalar_type() == at::kFloat || a.scalar_type() == at::kDouble,
              "muladd: expected a to be Float or Double, got ", a.scalar_type());
  TORCH_CHECK(b.scalar_type() == a.scalar_type(), "muladd: expected b to be ",
              a.scalar_type(), " as a is, got ", b.scalar_type());
  TORCH_CHECK(a.sizes() == b.sizes(), "muladd: expected a and b to have the same shape, got ",
              a.sizes(), " and ", b.sizes());
  at::Tensor a_contig = a.contiguous();
  at::Tensor b_contig = b.contiguous();
  at::Tensor result = at::empty(a.sizes(), a.options());
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "muladd", [&] {
    const scalar_t* a_ptr = a_contig.const_data_ptr<scalar_t>();
    const scalar_t* b_ptr = b_contig.const_data_ptr<scalar_t>();
    scalar_t* result_ptr = result.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < result.numel(); i++) {
      result_ptr[i] = a_ptr[i] * b_ptr[i] + static_cast<scalar_t>(c);
    }
  });
  return result;
}

TORCH_LIBRARY(mycpp, m) {
  m.def("muladd(Tensor a, Tensor b, float c) -> Tensor");
}

TORCH_LIBRARY_IMPL(mycpp, CPU, m) {
  m.impl("muladd", &muladd_cpu);
}
"""

# One build per torch release (a build for another would not load), into
# build/ at the top of the project whose tests/ holds this file. ninja builds
# it once, and again only when SOURCE changes.
NAME = "mycpp_torch" + re.sub(r"\W", "_", torch.__version__)
BUILD = Path(__file__).resolve().parents[1] / "build" / NAME
BUILD.mkdir(parents=True, exist_ok=True)
load_inline(
    NAME,
    cpp_sources=SOURCE,
    is_python_module=False,  # registers the op; no Python module to import
    no_implicit_headers=True,  # SOURCE includes what it needs: a quicker build
    build_directory=str(BUILD),
)


def _check(a: Tensor, b: Tensor) -> None:
    # The TORCH_CHECKs above, in their order and words: c10's dtype names.
    torch._check(
        a.dtype in (torch.float32, torch.float64),
        lambda: f"muladd: expected a to be Float or Double, got {scalar_type_name(a.dtype)}",
    )
    torch._check(
        b.dtype == a.dtype,
        lambda: (
            f"muladd: expected b to be {scalar_type_name(a.dtype)} as a is, "
            f"got {scalar_type_name(b.dtype)}"
        ),
    )
    torch._check(
        a.shape == b.shape,
        lambda: (
            "muladd: expected a and b to have the same shape, "
            f"got {list(a.shape)} and {list(b.shape)}"
        ),
    )


@torch.library.register_fake("mycpp::muladd")
def _(a, b, c):
    _check(a, b)
    return torch.empty(a.shape, dtype=a.dtype, device=a.device)


def _setup_context(ctx, inputs, output) -> None:
    a, b, _ = inputs
    ctx.save_for_backward(a, b)


def _backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    return grad * b, grad * a, None  # no gradient for c


# Reverse mode only: register_autograd gives forward mode no derivative and no error.
torch.library.register_autograd("mycpp::muladd", _backward, setup_context=_setup_context)


@torch.library.register_vmap("mycpp::muladd")
def _(info, in_dims, a, b, c):
    # The batch dimension first in both (an unbatched input expanded: no copy),
    # then one call for the whole batch.
    a, b = (
        t.movedim(d, 0) if d is not None else t.expand(info.batch_size, *t.shape)
        for t, d in zip((a, b), in_dims[:2])
    )
    return torch.ops.mycpp.muladd(a, b, c), 0


# [cpp-op]


# [cpp-spec]
MULADD = OpSpec(
    torch.ops.mycpp.muladd.default,
    # The kernel returns a contiguous result, whatever the inputs' layout.
    reference=lambda a, b, c: (a * b + c).contiguous(),
    extra_args=(1.25,),
    dtypes=(torch.float32, torch.float64),  # the kernel's AT_DISPATCH_FLOATING_TYPES
    devices=("cpu",),  # a CPU kernel only
    # A few layouts keep the run short; the kernel reads every one through contiguous().
    layouts=("contiguous", "transposed", "mixed", "expanded", "empty", "0-dim"),
    autodiff=("reverse",),
    silent_modes=FORWARD_MODES,
)

test_muladd = conformance_tests(MULADD)
# [cpp-spec]
