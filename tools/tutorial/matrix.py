"""The tutorial's stage x check matrix: what each checkpoint should pass, in one place.

Every cell is either PASS or a Fail holding a distinctive part of the error
the check raises at that stage (matched as a substring) and a short reason
for the printed table. walk.py prints the matrix, tests/tutorial/
test_tutorial.py asserts it both ways: an expected pass must pass, an expected
failure must fail with that message, and an unexpected pass is a failure.
CUDA cells are declared like the others and reported as "skip (no GPU)"
where there is no GPU.

STEP_FILES says which files each step may touch; the test checks that every
other file is byte-identical to the previous checkpoint's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fail:
    match: str  # a distinctive part of the error message
    reason: str  # a few words for the table


PASS = "pass"

STAGES = ["01_define", "02_impl", "03_fake", "04_autograd", "05_mymul_backward", "06_stable_abi"]
REFERENCE = "reference"  # the installed extension_cpp package (csrc/ at the repo root)

# (key, column title, what it runs); order is the table's column order.
CHECKS = [
    ("eager_cpu", "eager CPU", "all three ops on CPU vs. torch, contiguous and transposed"),
    ("eager_cuda", "eager CUDA", "all three ops on CUDA vs. torch, on a side stream"),
    ("test_schema", "schema", "opcheck test_schema"),
    ("test_faketensor", "fake", "opcheck test_faketensor"),
    ("test_autograd_registration", "autograd reg", "opcheck test_autograd_registration"),
    ("test_aot_dispatch_dynamic", "aot dynamic", "opcheck test_aot_dispatch_dynamic"),
    ("compile", "compile", "torch.compile(fullgraph=True) of the three ops vs. eager"),
    ("gradcheck", "gradcheck", "gradcheck and gradgradcheck of mymuladd and mymul, float64"),
    ("backward_mymul", "bwd mymul", "mymuladd's backward dispatches extension_cpp::mymul"),
    (
        "other_torch",
        "other torch",
        "loads on a torch other than the one it was built with and runs the three ops on CPU "
        "(a CPU-only build of the same sources where that torch is CPU-only and the checkpoint "
        "has CUDA kernels); its library needs no libtorch C++ symbol (nm), so later releases "
        "load it too",
    ),
]
CHECK_KEYS = [key for key, _, _ in CHECKS]
CUDA_CHECKS = {"eager_cuda"}
# Checks that need something the machine may lack, and skip, saying what:
# a GPU, or a second torch release (tools/tutorial/buildcache.py, other_torch_python).
MAY_SKIP = CUDA_CHECKS | {"other_torch"}

_NO_CPU = Fail(
    "Could not run 'extension_cpp::mymuladd' with arguments from the 'CPU' backend",
    "no CPU kernel",
)
_NO_CUDA = Fail(
    "Could not run 'extension_cpp::mymuladd' with arguments from the 'CUDA' backend",
    "no CUDA kernel",
)
_NO_FAKE = Fail(
    "attempted to run this operator with Meta tensors, but there was no fake impl or Meta "
    "kernel registered",
    "no fake kernel",
)
_NO_AUTOGRAD = Fail(
    "an autograd kernel was not registered to the Autograd key(s) but we are trying to "
    "backprop through it",
    "no autograd formula",
)
_BWD_TORCH_MUL = Fail("aten.mul.Tensor, aten.mul.Tensor", "backward calls torch.mul")
# Steps 2 to 5 use the classic libtorch C++ API. Built against torch 2.14 they
# happen to load on 2.13, but their library needs libtorch C++ symbols, which
# change between releases: nothing promises the next one has them.
_OTHER_TORCH = Fail("libtorch C++ symbols", "needs libtorch C++ symbols")

# Note test_autograd_registration at steps 2 and 3: it passes. It catches an
# autograd formula registered in the wrong place (inside a CPU/CUDA kernel),
# and an op with no formula at all returns outputs that do not require grad,
# which it accepts. gradcheck is the column that proves gradients exist.
EXPECTED: dict[str, dict[str, str | Fail]] = {
    "01_define": {
        "eager_cpu": _NO_CPU,
        "eager_cuda": _NO_CUDA,
        "test_schema": _NO_CPU,
        "test_faketensor": _NO_FAKE,
        "test_autograd_registration": _NO_CPU,
        "test_aot_dispatch_dynamic": _NO_CPU,
        "compile": _NO_FAKE,
        "gradcheck": _NO_CPU,
        "backward_mymul": _NO_CPU,
        # It loads (it registers schemas only, with symbols torch 2.13 happens
        # to share), then has no kernel to run.
        "other_torch": _NO_CPU,
    },
    "02_impl": {
        "eager_cpu": PASS,
        "eager_cuda": PASS,
        "test_schema": PASS,
        "test_faketensor": _NO_FAKE,
        "test_autograd_registration": PASS,
        "test_aot_dispatch_dynamic": _NO_FAKE,
        "compile": _NO_FAKE,
        "gradcheck": _NO_AUTOGRAD,
        "backward_mymul": _NO_AUTOGRAD,
        "other_torch": _OTHER_TORCH,
    },
    "03_fake": {
        "eager_cpu": PASS,
        "eager_cuda": PASS,
        "test_schema": PASS,
        "test_faketensor": PASS,
        "test_autograd_registration": PASS,
        "test_aot_dispatch_dynamic": _NO_AUTOGRAD,
        "compile": PASS,
        "gradcheck": _NO_AUTOGRAD,
        "backward_mymul": _NO_AUTOGRAD,
        "other_torch": _OTHER_TORCH,
    },
    "04_autograd": {
        **dict.fromkeys(CHECK_KEYS, PASS),
        "backward_mymul": _BWD_TORCH_MUL,
        "other_torch": _OTHER_TORCH,
    },
    "05_mymul_backward": {**dict.fromkeys(CHECK_KEYS, PASS), "other_torch": _OTHER_TORCH},
    "06_stable_abi": dict.fromkeys(CHECK_KEYS, PASS),
    # The reference package (classic ABI) refuses another torch at import, in words.
    REFERENCE: {
        **dict.fromkeys(CHECK_KEYS, PASS),
        "other_torch": Fail("extension_cpp was built against torch", "refuses another torch"),
    },
}

# Files (relative to the checkpoint) that step N may add or change relative
# to step N-1; README.md changes at every step. Every other file must be
# byte-identical. ONLY_ADDS: files whose diff may only add lines.
# ONLY_LINES_MATCHING: files whose changed lines must all match the regex.
STEP_FILES: dict[str, set[str]] = {
    "02_impl": {
        "setup.py",
        "csrc/checks.h",
        "csrc/muladd.cpp",
        "csrc/muladd_cuda.cu",
        "csrc/python_module.cpp",
        "extension_cpp/__init__.py",
    },
    "03_fake": {"extension_cpp/ops.py"},
    "04_autograd": {"extension_cpp/ops.py"},
    "05_mymul_backward": {"extension_cpp/ops.py"},
    "06_stable_abi": {
        "setup.py",
        "csrc/checks.h",
        "csrc/muladd.cpp",
        "csrc/muladd_cuda.cu",
        "extension_cpp/__init__.py",
    },
}
ONLY_ADDS: dict[str, set[str]] = {
    "03_fake": {"extension_cpp/ops.py"},
    "04_autograd": {"extension_cpp/ops.py"},
}
ONLY_LINES_MATCHING: dict[str, dict[str, str]] = {
    "05_mymul_backward": {
        "extension_cpp/ops.py": r"^ +grad_[ab] = (torch\.mul|mymul)\(grad, [ab]\)$"
    },
}


def expected(stage: str, check: str) -> str | Fail:
    return EXPECTED[stage][check]
