"""Runs every check of the tutorial matrix against one extension_cpp and prints a JSON report.

    PYTHONPATH=tutorial/03_fake python tools/tutorial/checks.py \
        --expect-package tutorial/03_fake/extension_cpp
    python tools/tutorial/checks.py --reference      # the installed extension_cpp

Run it in a fresh interpreter per checkpoint: they all define the
extension_cpp namespace, which a process can load once. Each check reports
"pass", "fail" with the error (type and message), or "skip" with a reason.
Warnings are errors, as in the test suite.
Nothing here reads a checkpoint's source: it calls the ops and watches what
PyTorch does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import traceback
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_ops = None  # torch.ops.extension_cpp, once the package under test is imported


def _samples(device: str, requires_grad: bool):
    """(op, args) pairs covering the three ops: contiguous and transposed inputs."""
    g = torch.Generator().manual_seed(0)

    def rand(*shape, transpose=False):
        t = torch.randn(*shape, generator=g).to(device)
        if transpose:
            t = t.t()
        return t.requires_grad_(requires_grad)

    out = []
    for transpose in (False, True):
        a, b = rand(3, 5, transpose=transpose), rand(3, 5, transpose=transpose)
        out.append((_ops.mymuladd.default, (a, b, 1.5)))
        out.append((_ops.mymul.default, (a, b)))
    a, b = torch.randn(3, 5, generator=g).to(device), torch.randn(3, 5, generator=g).to(device)
    out.append((_ops.myadd_out.default, (a, b, torch.empty(3, 5, device=device))))
    return out


def _eager(device: str) -> None:
    if device == "cuda" and not torch.cuda.is_available():
        raise _Skip("no GPU")
    stream = torch.cuda.Stream() if device == "cuda" else None
    g = torch.Generator().manual_seed(1)
    for dtype in (torch.float32, torch.float64):
        for shape, transpose in (((7, 9), False), ((7, 9), True), ((0,), False), ((), False)):
            a = torch.randn(shape, generator=g, dtype=dtype).to(device)
            b = torch.randn(shape, generator=g, dtype=dtype).to(device)
            if transpose:
                a, b = a.t(), b.t()
            if stream is not None:
                stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream) if stream is not None else _nullcontext():
                got_muladd = _ops.mymuladd(a, b, 0.5)
                got_mul = _ops.mymul(a, b)
                out = torch.empty(a.shape, dtype=dtype, device=device)
                _ops.myadd_out(a, b, out)
                inplace = a.clone(memory_format=torch.contiguous_format)
                _ops.myadd_out(inplace, b, inplace)
            if stream is not None:
                stream.synchronize()
            torch.testing.assert_close(got_muladd, a * b + 0.5)
            torch.testing.assert_close(got_mul, a * b)
            torch.testing.assert_close(out, a + b)
            torch.testing.assert_close(inplace, a + b)
            # The checkpoints return contiguous tensors; the reference package
            # lays the output out as torch.mul does. Either is dense and what
            # the package's fake kernel promises; anything else is a bug.
            allowed = (a.new_empty(a.shape).stride(), torch.mul(a, b).stride())
            if got_muladd.stride() not in allowed:
                raise AssertionError(
                    f"mymuladd returned strides {got_muladd.stride()}, neither contiguous "
                    f"nor torch.mul's {allowed[1]}"
                )


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Skip(Exception):
    pass


def _opcheck(test_util: str) -> None:
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        for requires_grad in (False, True):
            for op, args in _samples(device, requires_grad):
                if requires_grad and op is _ops.myadd_out.default:
                    continue  # out= ops do not support autograd, like PyTorch's own
                torch.library.opcheck(op, args, test_utils=(test_util,))


def _compile() -> None:
    def f(a, b):
        x = _ops.mymuladd(a, b, 1.5)
        y = _ops.mymul(x, b)
        out = torch.empty_like(y)
        _ops.myadd_out(y, a, out)
        return out

    compiled = torch.compile(f, fullgraph=True)
    g = torch.Generator().manual_seed(2)
    for transpose in (False, True):
        a, b = torch.randn(6, 4, generator=g), torch.randn(6, 4, generator=g)
        if transpose:
            a, b = a.t(), b.t()
        torch.testing.assert_close(compiled(a, b), (a * b + 1.5) * b + a)


def _gradcheck() -> None:
    g = torch.Generator().manual_seed(3)
    a = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    for fn, args in ((_ops.mymuladd, (a, b, 0.5)), (_ops.mymul, (a, b))):
        torch.autograd.gradcheck(fn, args)
        torch.autograd.gradgradcheck(fn, args)


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def _backward_mymul() -> None:
    a = torch.randn(4, 3, requires_grad=True)
    b = torch.randn(4, 3, requires_grad=True)
    out = _ops.mymuladd(a, b, 0.5)
    recorder = _Recorder()
    with recorder:
        out.backward(torch.ones_like(out))
    if "extension_cpp.mymul.default" not in recorder.ops:
        raise AssertionError(
            f"backward dispatched {', '.join(recorder.ops)}; no extension_cpp.mymul among them"
        )


# Run by another torch's Python (PYTHONPATH: the folder holding extension_cpp;
# argv: this torch's version): import the package there and run the three ops on CPU.
_OTHER_TORCH_PROGRAM = """
import sys
import torch
if torch.__version__ == sys.argv[1]:
    sys.exit(f"the other Python has this torch ({torch.__version__}) too")
import extension_cpp
ops = torch.ops.extension_cpp
a, b = torch.randn(4, 3), torch.randn(4, 3)
torch.testing.assert_close(ops.mymuladd(a, b, 0.5), a * b + 0.5)
torch.testing.assert_close(ops.mymul(a, b), a * b)
out = torch.empty_like(a)
ops.myadd_out(a, b, out)
torch.testing.assert_close(out, a + b)
print(torch.__version__)
"""


# A demangled C++ name in one of libtorch's namespaces ("c10::Error::Error(...)",
# "vtable for at::Tensor").
_LIBTORCH_CXX = re.compile(r"\b(c10|at|torch|caffe2)::")


def _libtorch_cxx_symbols(library: str) -> list[str]:
    """The libtorch C++ symbols the library needs at load time."""
    nm = ["nm", "-D", "--undefined-only", "--demangle", library]
    listing = subprocess.run(nm, capture_output=True, text=True, check=True).stdout
    return [line.split(None, 1)[1] for line in listing.splitlines() if _LIBTORCH_CXX.search(line)]


# A torch CUDA library the package links, missing from a CPU-only torch.
_CUDA_LIBRARY_MISSING = re.compile(
    r"lib(c10_cuda|torch_cuda|cudart)[\w.]*: cannot open shared object"
)


def _other_torch() -> None:
    """The package, built against this torch, imported and run by another
    torch release (tools/tutorial/buildcache.py prepares that Python); and its
    library needs no libtorch C++ symbol. A classic build can load on a
    neighbouring release by luck (steps 2 to 5 do on torch 2.13), but each such
    symbol may be gone from the next one; a stable-ABI build has none."""
    python = os.environ.get("TUTORIAL_OTHER_PYTHON")
    if not python:
        raise _Skip(os.environ.get("TUTORIAL_OTHER_PYTHON_MISSING", "no second torch"))
    import extension_cpp

    # The checkpoint itself, or (TUTORIAL_OTHER_FOLDER, where the second torch
    # is CPU-only and this build links torch's CUDA libraries) a CPU-only build
    # of the same sources. The nm test below reads this build's own library.
    folder = os.environ.get("TUTORIAL_OTHER_FOLDER") or os.path.dirname(
        os.path.dirname(os.path.realpath(extension_cpp.__file__))
    )
    # `python -c` puts its working directory first on sys.path, ahead of
    # PYTHONPATH: run it in the folder, or another extension_cpp found there wins.
    env = {**os.environ, "PYTHONPATH": folder}
    proc = subprocess.run(
        [python, "-c", _OTHER_TORCH_PROGRAM, torch.__version__],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=300,
    )
    if proc.returncode != 0:
        # The exception as the reader would see it: the traceback's
        # "SomeError: message" line (the message may run on below it).
        lines = proc.stderr.strip().splitlines()
        raised = [line for line in lines if re.match(r"^[\w.]+(Error|Exception): ", line)]
        what = raised[-1] if raised else f"exit status {proc.returncode}"
        if _CUDA_LIBRARY_MISSING.search(what):
            # Built with CUDA kernels, run by a CPU-only torch: no torch
            # library the package links is there, whatever its ABI.
            raise _Skip(
                "the checkpoint has CUDA kernels and the second torch has no CUDA "
                f"libraries ({what}); set TUTORIAL_OTHER_TORCH to a CUDA build of "
                "another release"
            )
        raise RuntimeError(f"under another torch: {what}")
    symbols = _libtorch_cxx_symbols(extension_cpp._C.__file__)
    if symbols:
        raise RuntimeError(
            f"it ran under torch {proc.stdout.strip()}, but its library needs "
            f"{len(symbols)} libtorch C++ symbols (such as {symbols[0]}), any of which a "
            "later torch may not have"
        )


CHECK_FUNCTIONS = {
    "eager_cpu": lambda: _eager("cpu"),
    "eager_cuda": lambda: _eager("cuda"),
    "test_schema": lambda: _opcheck("test_schema"),
    "test_faketensor": lambda: _opcheck("test_faketensor"),
    "test_autograd_registration": lambda: _opcheck("test_autograd_registration"),
    "test_aot_dispatch_dynamic": lambda: _opcheck("test_aot_dispatch_dynamic"),
    "compile": _compile,
    "gradcheck": _gradcheck,
    "backward_mymul": _backward_mymul,
    "other_torch": _other_torch,
}


def _error_text(e: BaseException) -> str:
    """The error and its causes, as the reader sees them in a traceback."""
    parts = []
    while e is not None:
        parts.append(f"{type(e).__module__}.{type(e).__qualname__}: {e}")
        e = e.__cause__ or e.__context__
    return "\n  caused by: ".join(parts)


def main() -> None:
    global _ops
    parser = argparse.ArgumentParser(description=__doc__)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--expect-package", help="the checkpoint's extension_cpp folder")
    which.add_argument(
        "--reference", action="store_true", help="expect the installed package, not a checkpoint"
    )
    args = parser.parse_args()

    import extension_cpp

    found = os.path.realpath(os.path.dirname(extension_cpp.__file__))
    if args.reference:
        tutorial = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "tutorial")
        tutorial = os.path.realpath(tutorial)
        if found.startswith(tutorial + os.sep):
            sys.exit(f"imported a tutorial checkpoint ({found}), expected the installed package")
    elif found != os.path.realpath(args.expect_package):
        sys.exit(f"imported extension_cpp from {found}, expected {args.expect_package}")
    _ops = torch.ops.extension_cpp

    results = {}
    for key, check in CHECK_FUNCTIONS.items():
        torch.manual_seed(0)
        start = time.perf_counter()
        with warnings.catch_warnings():
            # As in the test suite: a warning is a failure. The one that matters
            # here is PyTorch's "an autograd kernel was not registered to the
            # Autograd key(s) but we are trying to backprop through it", which
            # comes with silently wrong (zero) gradients.
            warnings.simplefilter("error")
            # opcheck's test_aot_dispatch_dynamic reads .grad of the non-leaf
            # tensors it makes itself: PyTorch's warning, not the op's.
            warnings.filterwarnings(
                "ignore", "The .grad attribute of a Tensor that is not a leaf", UserWarning
            )
            # torch 2.11 warns from its own import of torch.utils.mkldnn when
            # inductor loads: PyTorch's warning, not the op's.
            warnings.filterwarnings(
                "ignore", "`torch.jit.script_method` is deprecated", DeprecationWarning
            )
            try:
                check()
                result = {"status": "pass"}
            except _Skip as e:
                result = {"status": "skip", "error": str(e)}
            except Exception as e:  # noqa: BLE001  (every failure is a result)
                result = {"status": "fail", "error": _error_text(e)}
                if os.environ.get("TUTORIAL_CHECKS_TRACEBACK"):
                    traceback.print_exc()
        result["seconds"] = round(time.perf_counter() - start, 2)
        results[key] = result
    print(json.dumps({"package": found, "cuda": torch.cuda.is_available(), "checks": results}))


if __name__ == "__main__":
    main()
