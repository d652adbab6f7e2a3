"""The ops at the edges of the process: many threads, no memory left, Ctrl-C,
and tensors past 2^31 elements.

The huge-tensor tests need about 4.6 GiB of memory per device and 5 to 15 s
each on two CPU cores, so they run only when asked: `make test` and `make
test-huge` ask (EXTENSION_CPP_HUGE=1); a bare pytest run skips them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import threading

import pytest
import torch
from child_process import start_python

from .cases import PACKAGE, STABLE, devices, pkg, requires_cuda

# ---------------------------------------------------------------------------
# Threads
# ---------------------------------------------------------------------------

N_THREADS = 8


def _worker(index: int, device: str, rounds: int) -> None:
    """One thread's calls: its own shapes and layouts, checked against torch."""
    gen = torch.Generator().manual_seed(index)
    stream = torch.cuda.Stream() if device == "cuda" else None
    with torch.cuda.stream(stream) if stream is not None else _nothing():
        for r in range(rounds):
            n = 1 + (index * 7919 + r * 104729) % 20000  # sizes up to several CPU chunks
            a = torch.randn(n, 3, generator=gen).to(device)
            b = torch.randn(3, n, generator=gen).to(device).t()  # transposed
            out = torch.empty(n, 3, device=device)
            muladd = pkg.mymuladd(a, b, float(index))
            mul = pkg.mymul(a, b)
            pkg.myadd_out(a, b, out)
            torch.testing.assert_close(muladd, a * b + float(index), rtol=1.3e-6, atol=1e-5)
            torch.testing.assert_close(mul, a * b, rtol=0, atol=0)
            torch.testing.assert_close(out, a + b, rtol=0, atol=0)
    if stream is not None:
        stream.synchronize()


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("device", devices())
def test_eight_threads_call_the_ops_at_once(device):
    barrier = threading.Barrier(N_THREADS)
    errors: list[BaseException] = []

    def run(index):
        try:
            barrier.wait()
            _worker(index, device, rounds=25)
        except BaseException as e:  # noqa: BLE001  (reported below, with its thread)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors


# ---------------------------------------------------------------------------
# Out of memory
# ---------------------------------------------------------------------------


@requires_cuda
@pytest.mark.cuda
def test_cuda_out_of_memory_raises_and_the_next_call_works():
    """The output of 2^38 float32 elements (1 TiB) cannot be allocated: the op
    raises torch.OutOfMemoryError, and the process goes on."""
    a = torch.ones((), device="cuda").expand(2**38)  # no memory: stride 0
    # The stable build allocates through the C shim, which turns the
    # OutOfMemoryError into an error code (torch prints its text to stderr):
    # it raises a RuntimeError that says what could not be allocated.
    error, words = (
        (RuntimeError, "could not allocate the output, 274877906944 elements of torch.float32")
        if STABLE
        else (torch.OutOfMemoryError, None)
    )
    for op in (lambda: pkg.mymul(a, a), lambda: pkg.mymuladd(a, a, 1.0)):
        with pytest.raises(error, match=words):
            op()
    x = torch.randn(1000, device="cuda")
    torch.testing.assert_close(pkg.mymul(x, x), x * x, rtol=0, atol=0)
    torch.cuda.synchronize()


# ---------------------------------------------------------------------------
# Ctrl-C
# ---------------------------------------------------------------------------

_INTERRUPTED_CHILD = textwrap.dedent(
    """
    import importlib, signal, sys, time
    import torch

    pkg = importlib.import_module(sys.argv[1])  # the package under test

    # A process started with SIGINT ignored (anything launched with `&` from
    # a script, make matrix under nohup) passes that on, and Python then
    # installs no KeyboardInterrupt handler: put it back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    a = torch.randn(2**24)
    b = torch.randn(2**24)
    print("ready", flush=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # ~20 ms a call: Ctrl-C lands inside one
            pkg.mymuladd(a, b, 1.0)
        print("never interrupted", flush=True)
        sys.exit(3)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    out = torch.empty_like(a)
    pkg.myadd_out(a, b, out)
    assert torch.equal(pkg.mymul(a, b), a * b)
    assert torch.equal(out, a + b)
    print("usable", flush=True)
    """
)


def test_ctrl_c_during_a_long_cpu_op_leaves_the_process_usable():
    child = start_python(
        ["-c", _INTERRUPTED_CHILD, PACKAGE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        threading.Event().wait(1.0)  # let it get into the loop
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, stderr
    assert stdout.split() == ["interrupted", "usable"], (stdout, stderr)


# ---------------------------------------------------------------------------
# Past 2^31 elements
# ---------------------------------------------------------------------------

HUGE = os.environ.get("EXTENSION_CPP_HUGE") == "1"
ROWS, COLS = 2**15 + 1, 2**16  # 2^31 + 2^16 elements: 4 GiB in float16


@pytest.mark.huge
@pytest.mark.skipif(not HUGE, reason="set EXTENSION_CPP_HUGE=1 (make test-huge): 4.5 GiB")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("device", devices())
def test_more_than_2_31_elements(device, dtype):
    """Every element past index 2^31 is written with the right value, by the
    functional op (inputs expanded, so only the output takes memory) and by
    myadd_out in place on a contiguous tensor of that size."""
    row = torch.randn(1, COLS, dtype=dtype, device=device)
    col = torch.randn(ROWS, 1, dtype=dtype, device=device)
    a, b = row.expand(ROWS, COLS), col.expand(ROWS, COLS)
    out = pkg.mymul(a, b)
    assert out.numel() > 2**31
    # The last row starts past 2^31; the last column runs through every row.
    torch.testing.assert_close(out[-1], row[0] * col[-1], rtol=0, atol=0)
    torch.testing.assert_close(out[:, -1], row[0, -1] * col[:, 0], rtol=0, atol=0)
    torch.testing.assert_close(out[2**15 - 1], row[0] * col[2**15 - 1], rtol=0, atol=0)

    ones = torch.ones((), dtype=dtype, device=device).expand(ROWS, COLS)
    pkg.myadd_out(out, ones, out)  # contiguous, in place
    torch.testing.assert_close(out[-1], row[0] * col[-1] + 1, rtol=0, atol=0)
    torch.testing.assert_close(out[:, -1], row[0, -1] * col[:, 0] + 1, rtol=0, atol=0)
