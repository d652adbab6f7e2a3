"""The CUDA kernels' memory instructions, read from the PTX: no GPU needed.

A kernel can be right and still leave bandwidth on the table: passing a
vector from global memory to the compute function by reference once made
nvcc split each 16-byte load into eight 2-byte loads for float16 and
bfloat16, at a large cost in speed and with every correctness test green
(Note [16-byte accesses] in docs/design_notes.md). This compiles
csrc/cuda/ops_cuda.cu with the fast kernels (csrc/fast/cuda/) to PTX for
sm_90 with the CUDA toolkit that builds the extension, and checks that each
vectorised contiguous kernel moves whole 16-byte vectors: one load per input
and one store, besides the scalar tail; that each narrow kernel stores a
thread's 16 bytes of output at once; that the 2-byte tiles in 32-bit
offsets move 16 bytes an access; and that the 2-byte broadcast kernel loads
a broadcast row once for the rows a thread takes. Skips where there is no
nvcc or torch is a CPU-only build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
import torch
from torch.utils import cpp_extension

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _nvcc() -> str | None:
    """nvcc as setup.py finds it: $CUDA_HOME, else /usr/local/cuda, else PATH."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    candidate = os.path.join(home, "bin", "nvcc")
    return candidate if os.path.exists(candidate) else shutil.which("nvcc")


def _torch_includes() -> list[str]:
    try:  # torch >= 2.9
        return cpp_extension.include_paths(device_type="cuda")
    except TypeError:
        return cpp_extension.include_paths(cuda=True)


@pytest.fixture(scope="session")  # one nvcc run, however the tests are ordered
def ptx(tmp_path_factory) -> str:
    nvcc = _nvcc()
    if nvcc is None or torch.version.cuda is None:
        pytest.skip("needs nvcc and a CUDA build of torch")
    out = tmp_path_factory.mktemp("ptx") / "ops_cuda.ptx"
    cmd = [nvcc, "-O3", "-std=c++20", "-arch=sm_90", "-ptx", *cpp_extension.COMMON_NVCC_FLAGS]
    cmd += ["-DEXTENSION_CPP_FAST_KERNELS=1"]
    cmd += [f"-I{p}" for p in _torch_includes()]
    cmd += [os.path.join(ROOT, "csrc", "cuda", "ops_cuda.cu"), "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out.read_text()


def _entries(ptx: str) -> dict[str, str]:
    """Mangled name -> body of each kernel entry."""
    # ".entry name(" for a kernel with internal linkage, ".visible .entry
    # name(" for one with external linkage (the kernels in
    # csrc/fast/cuda/vectorized.cuh, which both builds include).
    entries = re.split(r"\n(?:\.visible\s+)?\.entry ", ptx)[1:]
    return {entry.split("(", 1)[0]: entry for entry in entries}


def _contiguous_kernels(ptx: str) -> dict[str, tuple[int, str]]:
    """Mangled name -> (elements per vector, body) of each contiguous_kernel entry."""
    kernels = {}
    for name, entry in _entries(ptx).items():
        match = re.search(r"contiguous_kernelI.*?Li(\d+)E", name)
        if match:
            kernels[name] = (int(match.group(1)), entry)
    return kernels


def _vector_accesses(body: str, op: str) -> list[int]:
    """Byte widths of the vector loads (op='ld') or stores (op='st') to global memory."""
    pattern = rf"\b{op}\.global(?:\.nc)?(?:\.L1::\w+)?\.v(\d)\.[a-z](\d+)"
    return [int(n) * int(bits) // 8 for n, bits in re.findall(pattern, body)]


def test_every_dtype_and_op_has_a_vectorised_kernel(ptx):
    vectorised = [n for n, (vec, _) in _contiguous_kernels(ptx).items() if vec > 1]
    # 4 dtypes x 3 functors (mymuladd, mymul, myadd_out).
    assert len(vectorised) == 12, sorted(vectorised)


def test_vectorised_kernels_move_whole_16_byte_vectors(ptx):
    for name, (vec, body) in _contiguous_kernels(ptx).items():
        if vec == 1:
            continue
        assert _vector_accesses(body, "ld") == [16, 16], name  # one vector of a, one of b
        assert _vector_accesses(body, "st") == [16], name  # one vector of out


def test_narrow_kernels_move_16_bytes_of_output_at_once(ptx):
    """narrow_kernel (Note [CUDA narrow transposes]) stores each thread's 16
    bytes of output in one instruction and reads the input laid out as the
    output in one more; split into pieces, it would lose what it is for."""
    kernels = {n: body for n, body in _entries(ptx).items() if "narrow_kernel" in n}
    # 3 functors x (float16, bfloat16: 3 depths; float32: 2) x which input is transposed.
    assert len(kernels) == 3 * (3 + 3 + 2) * 2, sorted(kernels)
    for name, body in kernels.items():
        assert _vector_accesses(body, "st") == [16], name
        assert _vector_accesses(body, "ld").count(16) == 1, name


def test_tiles32_kernels_move_16_bytes_and_read_columns_with_ldmatrix(ptx):
    """tiles32_kernel (Note [CUDA tiles]) moves each operand 16 bytes at a
    time and reads a staged input's columns back with one ldmatrix; element
    by element, either would cost it the speed it exists for."""
    kernels = {n: body for n, body in _entries(ptx).items() if "tiles32_kernel" in n}
    # 3 functors x (float16, bfloat16) x (a, b or both staged).
    assert len(kernels) == 3 * 2 * 3, sorted(kernels)
    for name, body in kernels.items():
        assert _vector_accesses(body, "ld") == [16, 16], name  # one vector of a, one of b
        assert _vector_accesses(body, "st") == [16], name
        assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in body, name


def test_broadcast_kernels_load_a_broadcast_row_once(ptx):
    """broadcast_kernel (Note [CUDA broadcasts]) moves each dense row 16 bytes
    at a time, one store a row it takes, and with two rows a thread loads a
    broadcast row's vector once for both; a broadcast column's element is
    one 2-byte load a row."""
    kernels = {n: body for n, body in _entries(ptx).items() if "broadcast_kernel" in n}
    # 3 functors x (float16, bfloat16) x (a or b broadcast) x (row or column) x (1 or 2 rows).
    assert len(kernels) == 3 * 2 * 2 * 2 * 2, sorted(kernels)
    for name, body in kernels.items():
        rows = int(re.search(r"broadcast_kernelI.*?Li(\d)E", name).group(1))
        scalar_loads = len(re.findall(r"\bld\.global(?:\.nc)?(?:\.L1::\w+)?\.[bu]16\b", body))
        assert _vector_accesses(body, "st") == [16] * rows, name
        if scalar_loads:  # a broadcast column: its element, then the dense rows
            assert scalar_loads == rows, name
            assert _vector_accesses(body, "ld") == [16] * rows, name
        else:  # a broadcast row: its vector once, then the dense rows
            assert _vector_accesses(body, "ld") == [16] * (rows + 1), name
