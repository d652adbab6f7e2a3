"""The op library uses the C++ runtime torch uses, and never exports its own.

On our GPU machine, extensions were linked with a static copy of libstdc++
and exported it: the process then mixed that copy with the libstdc++.so.6
torch had loaded, and the first integer streamed into a TORCH_CHECK message
crashed the process (docs/troubleshooting.md).
Both builds link with -Wl,--exclude-libs,ALL (build_options.flags()), so a
copy, where there is one, stays private. The stable build's errors are
std::runtime_error messages built with std::to_string, not streams, but its
library is C++ all the same: the same tests run on the package under test.
"""

import shutil
import subprocess

import pytest
import torch

from .cases import devices, pkg

# Functions that only libstdc++ itself defines: an explicit instantiation
# (std::ostream::_M_insert<long>, which streaming an int64_t calls) and
# locale internals.
RUNTIME_ONLY = ("_ZNSo9_M_insertIlEERSoT_", "_ZNSt6locale7classicEv", "_ZNSt8ios_base4InitC1Ev")


def _dynamic_symbols(path: str) -> set:
    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) is not installed")
    out = subprocess.run(
        ["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def test_op_library_exports_no_copy_of_the_cxx_runtime():
    library = pkg._C.__file__
    exported = sorted(set(RUNTIME_ONLY) & _dynamic_symbols(library))
    assert not exported, (
        f"{library} exports libstdc++'s own functions {exported}: it carries a copy of the C++ "
        "runtime that can mix with torch's at run time; link with -Wl,--exclude-libs,ALL "
        "(build_options.py)"
    )


@pytest.mark.parametrize("device", devices())
def test_streamed_integers_in_messages(device):
    # TORCH_CHECK(cond, ..., a.sizes(), ...) streams each size into a
    # std::ostringstream: the call that used to crash.
    a = torch.ones(3, device=device)
    b = torch.ones(4, device=device)
    with pytest.raises(RuntimeError, match=r"got \[3\] and \[4\]"):
        pkg.mymul(a, b)
    out = torch.empty(1, 3, device=device).expand(4, 3)
    with pytest.raises(RuntimeError, match=r"got strides \[0, 1\] for shape \[4, 3\]"):
        pkg.myadd_out(torch.ones(4, 3, device=device), torch.ones(4, 3, device=device), out)
