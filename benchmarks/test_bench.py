"""Bandwidth benchmarks of the ops against PyTorch, with pytest-benchmark.

Each test times one implementation (see ops.py) of one op at one size,
checks its result first, and records in ``extra_info`` what the report needs:
bytes moved, calls per round, GB/s, and the fraction of the device's copy
bandwidth measured in the same run. Nothing here asserts on time: the
targets are checked by benchmarks/report.py from the JSON
(``make bench``), never by a test.

By default (``pytest tests``) this is a smoke run: tiny sizes, few rounds,
no torch.compile, a few seconds. ``EXTENSION_CPP_BENCH=full`` (set by
python -m benchmarks) runs the sizes of the report. Other knobs, comma lists:

    EXTENSION_CPP_BENCH_DEVICES   cpu,cuda (default: cpu, plus cuda if present)
    EXTENSION_CPP_BENCH_THREADS   CPU thread counts (default: torch's current)
    EXTENSION_CPP_BENCH_DTYPES    dtypes (default: all four on CPU; float32,
                                  bfloat16, float16 on CUDA)
    EXTENSION_CPP_BENCH_COMPILE   1 to include torch.compile (default: full only)
"""

from __future__ import annotations

import itertools
import os
import time

import pytest
import torch

from . import ops as cases

FULL = os.environ.get("EXTENSION_CPP_BENCH", "quick") == "full"
HAS_CUDA = torch.cuda.is_available()

if FULL:
    SIZES = {"cpu": [2**k for k in range(10, 25, 2)], "cuda": [2**k for k in range(12, 29, 2)]}
    ROUNDS = {"cpu": 15, "cuda": 10}
    ROUND_SECONDS = {"cpu": 0.01, "cuda": 0.003}
else:
    SIZES = {"cpu": [2**10], "cuda": [2**20]}
    ROUNDS = {"cpu": 3, "cuda": 3}
    ROUND_SECONDS = {"cpu": 0.0005, "cuda": 0.0005}

WITH_COMPILE = os.environ.get("EXTENSION_CPP_BENCH_COMPILE", "1" if FULL else "0") == "1"
DEVICES = cases.env_list("EXTENSION_CPP_BENCH_DEVICES", "cpu,cuda" if HAS_CUDA else "cpu")
THREADS = [int(t) for t in cases.env_list("EXTENSION_CPP_BENCH_THREADS", "0")]  # 0: as is
DEFAULT_DTYPES = {"cpu": "float32,bfloat16,float16,float64", "cuda": "float32,bfloat16,float16"}

TOLERANCES = {
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=8e-3, atol=8e-3),
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
}


def _params():
    """(device, threads, dtype, op, impl, metric, n) for every benchmark.

    The implementations of one op at one size come last in the nesting, so
    pytest runs them back to back: the ratios the report takes between them
    then compare measurements minutes apart at most, not a whole run apart.
    """
    for device in DEVICES:
        marks = [pytest.mark.cuda] if device == "cuda" else []
        if device == "cuda" and not HAS_CUDA:
            marks.append(pytest.mark.skip(reason="needs a CUDA GPU"))
        threads = THREADS if device == "cpu" else [0]
        metrics = ["kernel", "call"] if device == "cuda" else ["call"]
        dtypes = cases.env_list("EXTENSION_CPP_BENCH_DTYPES", DEFAULT_DTYPES[device])
        for t, dtype, metric, n, op, impl in itertools.product(
            threads, dtypes, metrics, SIZES[device], cases.OPS, cases.IMPLS
        ):
            if impl == "compile" and not WITH_COMPILE:
                continue
            if impl == "copy" and op != cases.OPS[0]:
                continue  # one copy per (dtype, size) is enough
            where = device if t == 0 else f"{device}-{t}t"
            yield pytest.param(
                device,
                t,
                getattr(torch, dtype),
                op,
                impl,
                metric,
                n,
                marks=marks,
                id=f"{where}-{dtype}-{op}-{impl}-{metric}-{n}",
            )


@pytest.fixture
def threads(request):
    """Sets torch's CPU thread count for one test and restores it."""
    before = torch.get_num_threads()
    wanted = request.param
    if wanted:
        torch.set_num_threads(wanted)
    yield torch.get_num_threads()
    torch.set_num_threads(before)


_copy_gbps: dict = {}


def copy_gbps(device: str, dtype: torch.dtype, n: int, metric: str) -> float:
    """The device copy's GB/s at this size, measured once per run like the ops."""
    key = (device, torch.get_num_threads(), dtype, n, metric)
    if key not in _copy_gbps:
        case = cases.make_case(cases.OPS[0], "copy", n, dtype, device)
        calls = cases.calls_per_round(case, device, ROUND_SECONDS[device])
        run = cases.make_round(case, device, metric, calls)
        for _ in range(2):
            run()
        best = min(_timed(run) for _ in range(ROUNDS[device]))
        _copy_gbps[key] = cases.bytes_moved("copy", n, dtype) * calls / best / 1e9
    return _copy_gbps[key]


def _timed(run) -> float:
    t0 = time.perf_counter()
    run()
    return time.perf_counter() - t0


@pytest.mark.parametrize(
    ("device", "threads", "dtype", "op", "impl", "metric", "n"),
    list(_params()),
    indirect=["threads"],
)
def test_bandwidth(benchmark, device, threads, dtype, op, impl, metric, n):
    case = cases.make_case(op, impl, n, dtype, device)
    torch.testing.assert_close(
        case.fn().double(), case.reference(), **TOLERANCES[dtype], check_dtype=False
    )
    calls = cases.calls_per_round(case, device, ROUND_SECONDS[device])
    run = cases.make_round(case, device, metric, calls)
    name = torch.cuda.get_device_name() if device == "cuda" else cases.cpu_name()
    benchmark.group = f"{device}-{cases.dtype_id(dtype)}-{op}-{metric}-{n}"
    benchmark.extra_info.update(
        device=device,
        device_name=name,
        threads=threads if device == "cpu" else None,
        dtype=cases.dtype_id(dtype),
        op=op,
        impl=impl,
        metric=metric,
        n=n,
        bytes_per_call=cases.bytes_moved(impl, n, dtype),
        calls_per_round=calls,
        torch_version=torch.__version__,
        load_1min=os.getloadavg()[0],  # other work on the machine skews the timing
    )
    benchmark.pedantic(run, rounds=ROUNDS[device], warmup_rounds=2, iterations=1)
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable: ran once, nothing timed
        return
    seconds = stats.stats.min / calls
    gbps = cases.bytes_moved(impl, n, dtype) / seconds / 1e9
    copy = copy_gbps(device, dtype, n, metric) if impl != "copy" else gbps
    benchmark.extra_info.update(
        seconds_per_call=seconds,
        gbps=gbps,
        copy_gbps=copy,
        fraction_of_copy=gbps / copy,
    )


def test_compiled_candidate_follows_the_thread_count():
    """torch.compile's candidate is made anew at each CPU thread count.

    Inductor writes the thread count into the CPU code it generates; a
    candidate compiled at 1 thread and timed at 16 would time one thread.
    The test leaves the thread count, Inductor's setting and the cache of
    candidates as it found them.
    """
    threads, setting = torch.get_num_threads(), torch._inductor.config.cpp.threads
    kept = dict(cases._compiled)
    try:
        torch.set_num_threads(1)
        one = cases._compiled_fn("mymul")
        assert cases._compiled_fn("mymul") is one  # one compile per op and count
        torch.set_num_threads(2)
        two = cases._compiled_fn("mymul")
        assert two is not one
        assert torch._inductor.config.cpp.threads == 2
    finally:
        torch.set_num_threads(threads)
        torch._inductor.config.cpp.threads = setting
        cases._compiled.clear()
        cases._compiled.update(kept)
