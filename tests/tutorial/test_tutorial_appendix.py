"""The tutorial's side paths: a JIT build, pybind11, autograd.Function vs
register_autograd, and the ops in Triton.

Each test builds (or imports) the appendix code from tutorial/appendix and
shows concretely what the reader is told: the JIT build works without a
setup.py; torch.compile cannot trace a pybind11 function but traces the
TORCH_LIBRARY op; the op whose backward lives only in an autograd.Function
wrapper fails the checks that the registered op passes; the Triton ops speak
the C++ ops' words, refuse the CPU, ship as one pure-Python wheel, and pass
the harness's results check on every layout in Triton's interpreter
(tests/tutorial/test_triton.py runs every check on a GPU).
"""

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
import torch
from child_process import run_python
from conformance.cases import classic_only, testing
from torch.autograd.gradcheck import GradcheckError
from torch.testing._internal.optests import OpCheckError

pytestmark = classic_only(
    "the tutorial does not depend on the build under test; the classic run covers it"
)

REPO = Path(__file__).resolve().parents[2]
APPENDIX = REPO / "tutorial" / "appendix"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def tools_on_path(monkeypatch):
    """ninja and the compilers that pip put next to this interpreter."""
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])


@pytest.mark.slow
@pytest.mark.usefixtures("tools_on_path")
def test_jit_build(tmp_path_factory):
    jit = _load(APPENDIX / "jit" / "jit.py", "tutorial_appendix_jit")
    mymuladd = jit.load_op(str(tmp_path_factory.mktemp("jit_build")))
    a, b = torch.randn(5, 3), torch.randn(5, 3)
    torch.testing.assert_close(mymuladd(a.t(), b.t(), 0.5), a.t() * b.t() + 0.5)
    with pytest.raises(RuntimeError, match="mymuladd: expected a and b to have the same shape"):
        mymuladd(a, torch.randn(3), 0.5)


@pytest.fixture(scope="session")  # built once, however the tests are ordered
def muladd_numpy(tmp_path_factory):
    """Builds tutorial/appendix/pybind11 with its own setup.py, outside the source tree."""
    out = tmp_path_factory.mktemp("pybind11_build")
    subprocess.run(
        [
            sys.executable,
            "setup.py",
            "-q",
            "build_ext",
            "--build-lib",
            str(out),
            "--build-temp",
            str(out / "tmp"),
        ],
        cwd=APPENDIX / "pybind11",
        check=True,
        capture_output=True,
    )
    (library,) = out.glob("muladd_numpy*.so")
    return _load(library, "muladd_numpy")


@pytest.mark.slow
def test_pybind11_breaks_torch_compile(muladd_numpy):
    import extension_cpp

    def through_numpy(a, b):
        return torch.from_numpy(muladd_numpy.muladd(a.numpy(), b.numpy(), 1.0))

    a, b = torch.randn(3, 4), torch.randn(3, 4)
    torch.testing.assert_close(through_numpy(a, b), a * b + 1.0)  # eager: fine
    # Dynamo warns, then (fullgraph=True forbids graph breaks) raises.
    with (
        pytest.warns(UserWarning, match="Dynamo does not know how to trace the builtin"),
        pytest.raises(torch._dynamo.exc.Unsupported, match="Attempted to call function marked"),
    ):
        torch.compile(through_numpy, fullgraph=True)(a, b)
    # The TORCH_LIBRARY op with a fake kernel compiles into one graph.
    compiled = torch.compile(lambda a, b: extension_cpp.mymuladd(a, b, 1.0), fullgraph=True)
    torch.testing.assert_close(compiled(a, b), a * b + 1.0)


# Session scope: a shuffled run (pytest-randomly) leaves this module and
# comes back, and a module-scoped fixture would then run the file a second
# time, which a namespace's second TORCH_LIBRARY (Library "DEF") refuses.
@pytest.fixture(scope="session")
def autograd_variants():
    return _load(APPENDIX / "autograd_function" / "muladd_autograd.py", "tutorial_muladd_autograd")


def _inputs():
    a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    return a, b, 1.5


# opcheck's test_aot_dispatch_dynamic reads .grad of non-leaf tensors it makes
# itself; the warning is PyTorch's, not the op's.
_OPCHECK_GRAD_WARNING = "ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning"


@pytest.mark.filterwarnings(_OPCHECK_GRAD_WARNING)
def test_registered_autograd_passes_opcheck(autograd_variants):
    op = torch.ops.tutorial_fn.muladd_registered.default
    result = torch.library.opcheck(op, _inputs())
    assert set(result.values()) == {"SUCCESS"}, result
    # Gradients reach every caller of the op, even one that knows only torch.ops.
    assert torch.autograd.gradcheck(op, _inputs())
    assert torch.autograd.gradcheck(autograd_variants.muladd_registered, _inputs())


@pytest.mark.filterwarnings(_OPCHECK_GRAD_WARNING)
def test_autograd_function_wrapper_lacks_what_opcheck_needs(autograd_variants):
    # The wrapper itself gives correct gradients ...
    assert torch.autograd.gradcheck(autograd_variants.muladd_function, _inputs())
    # ... but opcheck takes ops, and the wrapper is not one,
    with pytest.raises(ValueError, match="op must be instance of torch._ops.OpOverload"):
        torch.library.opcheck(autograd_variants.muladd_function, _inputs())
    # and the op under it has no backward of its own: opcheck's compiled
    # forward+backward fails on it (PyTorch's warning, an error here),
    op = torch.ops.tutorial_fn.muladd_plain.default
    with pytest.raises(OpCheckError, match="an autograd kernel was not registered"):
        torch.library.opcheck(op, _inputs(), test_utils=("test_aot_dispatch_dynamic",))
    # and a caller that reaches the op through torch.ops (torch.export, C++,
    # another library) gets zero gradients.
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", "tutorial_fn::muladd_plain: an autograd kernel was not registered"
        )
        with pytest.raises(GradcheckError, match="Jacobian mismatch"):
            torch.autograd.gradcheck(op, _inputs())


# Triton: the same ops through torch.library.triton_op (tests/tutorial/test_triton.py
# runs the harness on them, on a GPU).


@pytest.fixture(scope="session")
def extension_triton():
    pytest.importorskip("triton")
    return importlib.import_module("extension_triton")  # pytest's `pythonpath` has its folder


def test_triton_words_are_the_cpp_words(extension_triton):
    import extension_cpp

    words = extension_triton._checks.MESSAGES
    shared = {key: text for key, text in words.items() if key != "cuda"}
    assert shared == {key: extension_cpp._C.MESSAGES[key] for key in shared}


def test_triton_package_is_one_pure_python_wheel(tmp_path):
    """What a user ships: one wheel for every Python and torch, nothing compiled."""
    source = tmp_path / "source"  # built outside the source tree
    shutil.copytree(APPENDIX / "triton", source, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path / "dist"), str(source)],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").iterdir()
    assert wheel.name == "extension_triton-0.1.0-py3-none-any.whl"
    files = zipfile.ZipFile(wheel).namelist()
    assert "extension_triton/kernels.py" in files
    assert not [f for f in files if f.endswith((".so", ".pyd", ".dll"))], files


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_triton_ops_refuse_cpu_tensors(extension_triton, mode):
    if extension_triton.ops.INTERPRETED:
        pytest.skip("Triton's interpreter runs the kernels on CPU tensors")
    fn = extension_triton.mymul
    if mode == "compiled":
        torch._dynamo.reset()
        fn = torch.compile(fn, fullgraph=True)
    expected = "mymul: expected a to be on a CUDA device (the Triton kernels run on GPUs only)"
    with pytest.raises(RuntimeError, match=re.escape(f"{expected}, got cpu")):
        fn(torch.randn(3), torch.randn(3))


# The harness cases of test_triton.py that the interpreter runs in a few
# seconds: results and output strides on every layout in float32, results in
# float16 and float64 on one layout of the tiled kernel, the vmap rules, and
# every autodiff mode (forward mode comes from the public functions, not from
# register_autograd: a regression there is silent zeros). The interpreter
# computes in NumPy, so not the -specials cases (NumPy's warnings on NaN and
# infinities are errors here) nor bfloat16 (the interpreter rounds float32 to
# bfloat16 toward zero; a GPU, like the reference, rounds to nearest).
INTERPRETED_CHECKS = (
    "(strides or vmap or autodiff or results and (float32 or -mixed-b-first))"
    " and not (specials or bfloat16)"
)


def _wrap_triton_takes_interpreted_kernels() -> bool:
    """pytorch/pytorch#185597: before it, wrap_triton refused the interpreter's kernels."""
    from triton.runtime.interpreter import InterpretedFunction

    try:
        torch.library.wrap_triton(InterpretedFunction(_wrap_triton_takes_interpreted_kernels))
    except RuntimeError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.usefixtures("extension_triton")
def test_triton_kernels_in_the_interpreter():
    if not _wrap_triton_takes_interpreted_kernels():
        pytest.skip(f"torch {torch.__version__}'s wrap_triton refuses the interpreter's kernels")
    run = run_python(
        [
            "-m", "pytest", str(REPO / "tests" / "tutorial" / "test_triton.py"),
            "--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"),
            "-p", "no:cacheprovider", "-q", "-rA", "-k", INTERPRETED_CHECKS,
        ],
        env={"TRITON_INTERPRET": "1"},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # Every case selected ran (none skipped): at least results and strides on
    # every layout for each of the three ops, and each autodiff mode of the two
    # differentiable ones.
    summary = run.stdout.strip().splitlines()[-1]
    assert "skipped" not in summary, summary
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    assert passed >= 3 * 2 * len(testing.LAYOUTS) + 2 * len(testing.MODES), summary
    ran = set(re.findall(r"^PASSED \S+\[(\S+)\]$", run.stdout, re.M))
    modes = {
        f"{op}-autodiff-cpu-float64-{mode}"
        for op in ("mymul", "mymuladd")
        for mode in testing.MODES
    }
    assert modes <= ran, sorted(modes - ran)
