"""The stable-ABI build uses nothing outside the LibTorch stable ABI.

A library built against the stable ABI may call torch only through its C
shim (``aoti_torch_*``, ``torch_*``: plain C symbols whose meaning torch keeps
across releases) and header-only code it compiled in. Any reference to a
mangled libtorch, c10 or ATen C++ symbol ties it to one torch release again,
which is exactly what the stable build exists to avoid: it would load on
the torch it was built with and fail (or worse) on the next. So this reads
the dynamic symbol table of the built ``_C`` module, as the dynamic linker
will, and lists any such reference.
"""

import re
import shutil
import subprocess

import pytest

from .cases import STABLE, pkg

pytestmark = pytest.mark.skipif(
    not STABLE, reason="classic build: it uses the libtorch C++ ABI on purpose"
)

# A C++ name in one of torch's own namespaces, as c++filt prints it:
# "c10::Error::Error(...)", "vtable for at::Tensor", "torch::autograd::...".
# \b keeps "std::format::" and the like out.
TORCH_CXX = re.compile(r"\b(c10|at|torch|caffe2|aten)::")


def undefined_symbols(library: str) -> list[str]:
    """The symbols the library needs from elsewhere, demangled."""
    nm = subprocess.run(
        ["nm", "-D", "--undefined-only", "--demangle", library],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    # Each line: "                 U name[@version]"
    return [line.split(None, 1)[1] for line in nm.splitlines() if line.strip()]


def torch_cxx_symbols(symbols: list[str]) -> list[str]:
    return [s for s in symbols if TORCH_CXX.search(s)]


@pytest.fixture(scope="module")
def symbols() -> list[str]:
    if shutil.which("nm") is None:
        pytest.skip("needs nm (binutils)")
    return undefined_symbols(pkg._C.__file__)


def test_no_libtorch_cxx_symbols(symbols):
    assert torch_cxx_symbols(symbols) == []


def test_torch_is_reached_through_the_c_shim(symbols):
    """The library does call torch, through the C shim: this test reads the
    right file, and the one above had something to look at."""
    shim = [s for s in symbols if s.startswith(("aoti_torch_", "torch_"))]
    assert "aoti_torch_empty_strided" in shim
    assert any(s.startswith("torch_library_impl") for s in shim), shim


@pytest.mark.parametrize(
    ("symbol", "flagged"),
    [
        ("c10::Error::Error(c10::SourceLocation, std::string)", True),
        ("vtable for at::Tensor", True),
        ("torch::autograd::Node::name() const", True),
        ("at::_ops::mul_Tensor::call(at::Tensor const&, at::Tensor const&)", True),
        ("aoti_torch_empty_strided", False),
        ("std::runtime_error::runtime_error(std::string const&)@GLIBCXX_3.4.21", False),
        ("std::__format::__formatter_str<char>::format", False),
    ],
)
def test_the_check_tells_libtorch_from_the_rest(symbol, flagged):
    assert bool(torch_cxx_symbols([symbol])) == flagged
