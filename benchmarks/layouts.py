"""Layout sweep: our ops against PyTorch eager and torch.compile, every layout.

    python -m benchmarks.layouts [--device cpu|cuda] [--threads 1,2] [--layouts WORDS]
        [--dtypes float32,...] [--log2 N] [--out FILE.md]

Real models feed elementwise ops channels_last activations, transposed
weights, slices and broadcasts, not only contiguous tensors. For each such
layout, dtype and op, this times ours, the PyTorch eager expression and the
same expression under torch.compile, interleaved (benchmarks/ratios.py's
`measure`: batches of calls, alternating, fastest of many rounds), with an
A/A control; a row whose control strays from 1.0 is measured again. Each
ratio is the other's time over ours (> 1: ours is faster); the target is
>= 1.0 against the fastest of eager and compile. On CUDA it also gives our
bandwidth as a fraction of a device copy of the same size (bytes read plus
written), the roofline: >= 0.97 for the dense permuted layouts, >= 0.85 for
the rest.
"""

import argparse
import datetime
import math
import os
import warnings

import torch

import extension_cpp

from .ops import OPS, cpu_name, native, ours
from .ratios import measure

# Elements per operand by default: 2^20 on the CPU, 2^24 on a GPU (past its
# L2 cache). --log2 picks another size, 2^14 (the channels_last shape's
# smallest) and up.
SIZE_LOG2 = {"cpu": 20, "cuda": 24}
DTYPES = ("float32", "bfloat16", "float16")
# Layouts whose inputs are dense in one order: the output keeps that order,
# and the op should run at copy speed.
DENSE_PERMUTED = ("contiguous", "transposed", "channels_last", "channels_last_3d")
# Rounds of each row's interleaved batches. A CPU batch is a few hundred
# microseconds, short beside a shared machine's bursts, so the CPU takes more.
ROUNDS = {"cpu": 100, "cuda": 15}
# A row whose A/A control lands outside this band was disturbed unevenly:
# it is measured again, up to RETRIES times, and the try whose control is
# nearest 1.0 kept (Note [Interleaved timing]).
AA_BAND = (0.95, 1.05)
RETRIES = 4


def layouts(n_log2: int) -> dict:
    """Layout name -> factory(dtype, device) of (a, b), each of 2^n_log2 elements."""
    r = 2 ** (n_log2 // 2)
    c = 2**n_log2 // r

    def rand(*shape, **kw):
        return torch.randn(*shape, **kw)

    cl_shape = (2 ** (n_log2 - 14), 64, 16, 16)  # N, C, H, W
    cl3d_shape = (2 ** (n_log2 - 14), 32, 8, 8, 8)  # N, C, D, H, W
    return {
        "contiguous": lambda **kw: (rand(r, c, **kw), rand(r, c, **kw)),
        "transposed": lambda **kw: (rand(c, r, **kw).t(), rand(c, r, **kw).t()),
        "channels_last": lambda **kw: tuple(
            rand(*cl_shape, **kw).to(memory_format=torch.channels_last) for _ in range(2)
        ),
        "channels_last_3d": lambda **kw: tuple(
            rand(*cl3d_shape, **kw).to(memory_format=torch.channels_last_3d) for _ in range(2)
        ),
        "broadcast row": lambda **kw: (rand(1, c, **kw).expand(r, c), rand(r, c, **kw)),
        "broadcast column": lambda **kw: (rand(r, c, **kw), rand(r, 1, **kw).expand(r, c)),
        "row-sliced [:, 1:]": lambda **kw: (
            rand(r, c + 1, **kw)[:, 1:],
            rand(r, c + 1, **kw)[:, 1:],
        ),
        "step-sliced [:, ::2]": lambda **kw: (
            rand(r, 2 * c, **kw)[:, ::2],
            rand(r, 2 * c, **kw)[:, ::2],
        ),
        "offset 1-D [1:]": lambda **kw: (
            rand(r * c + 1, **kw)[1:],
            rand(r * c + 1, **kw)[1:],
        ),
        "one transposed": lambda **kw: (rand(r, c, **kw), rand(c, r, **kw).t()),
        # The same with sizes that are not multiples of 16 or 32 (1000 x 1048
        # at 2^20), so that tiles and register blocks have edges.
        "one transposed, uneven": lambda **kw: (
            rand(r - 24, c + 24, **kw),
            rand(c + 24, r - 24, **kw).t(),
        ),
        "permuted 3-D": lambda **kw: (
            rand(r, c // 4, 4, **kw).permute(2, 0, 1),
            rand(4, r, c // 4, **kw),
        ),
    }


def _eager_muladd(a, b):
    return a * b + 0.5


def _eager_mul(a, b):
    return a * b


def candidates(a, b, compiled: bool = True) -> dict:
    """(op, implementation) -> one call; without the torch.compile ones if not `compiled`."""
    out = torch.empty_like(a + b)
    fns = {(op, "ours"): ours(extension_cpp, op, a, b, out) for op in OPS}
    fns[("mymuladd", "eager")] = lambda: _eager_muladd(a, b)
    fns[("mymuladd", "addcmul")] = native("mymuladd", a, b, out)
    fns[("mymul", "eager")] = native("mymul", a, b, out)
    fns[("myadd_out", "eager")] = native("myadd_out", a, b, out)
    fns[("control", "eager")] = lambda: torch.mul(a, b)
    if compiled:
        compiled_muladd = torch.compile(_eager_muladd, fullgraph=True, dynamic=False)
        compiled_mul = torch.compile(_eager_mul, fullgraph=True, dynamic=False)
        fns[("mymuladd", "compile")] = lambda: compiled_muladd(a, b)
        fns[("mymul", "compile")] = lambda: compiled_mul(a, b)
    for fn in fns.values():  # compile (and check) outside the timed region
        fn()
    return fns


def stored_elements(x: torch.Tensor) -> int:
    """Distinct elements x reads: its size, less the dimensions it repeats (stride 0)."""
    return math.prod(n for n, s in zip(x.shape, x.stride()) if s != 0)


def copy_us(n: int, dtype, device: str, sync) -> float:
    """A device copy of n elements: the bandwidth our ops are held against."""
    src = torch.randn(n, device=device).to(dtype)
    dst = torch.empty_like(src)
    return measure({"copy": lambda: dst.copy_(src)}, rounds=25, calls=20, sync=sync)["copy"]


def sweep(device: str, threads: int, only, dtypes, n_log2: int) -> list:
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    torch.set_num_threads(threads)
    # Inductor writes the thread count into the CPU kernels it generates, and
    # torch 2.11's compile cache does not key on it: naming the count in
    # Inductor's config puts it in the key, so each thread count times a
    # kernel compiled for it (Note [Compile per thread count],
    # docs/design_notes.md).
    torch._inductor.config.cpp.threads = threads if device == "cpu" else -1
    # Batches as long as 3 CPU calls (10 GPU calls) of the default size.
    calls = (10 if device == "cuda" else 3) * 2 ** max(0, SIZE_LOG2[device] - n_log2)
    rows = []
    for dtype_name in dtypes:
        dtype = getattr(torch, dtype_name)
        copy = copy_us(2**n_log2, dtype, device, sync)  # of one size: scaled per layout below
        for name, make in layouts(n_log2).items():
            if only and not any(word in name for word in only):
                continue
            torch._dynamo.reset()
            a, b = make(dtype=dtype, device=device)
            fns = candidates(a, b)
            t, tries = measure_row(fns, ROUNDS[device], calls, sync)
            # A copy of 2^n elements reads and writes 2 * 2^n; the op writes
            # 2^n and reads each input element once (a broadcast input's
            # stored elements only), so it moves `traffic` times the copy's.
            traffic = (a.numel() + stored_elements(a) + stored_elements(b)) / (2 * a.numel())
            rows.append((dtype_name, name, t, copy * traffic))
            # Progress, and the figures so far should the run be cut short.
            ratios = " ".join(f"{op} {best_ratio(t, op):.2f}" for op in OPS)
            roof = ""
            if device == "cuda":
                roof = f" (mymul {copy * traffic / t[('mymul', 'ours')]:.2f} copy)"
            again = f" [{tries} tries]" if tries > 1 else ""
            print(f"    {dtype_name} {name}: {ratios}{roof}{again}", flush=True)
        print(f"  {device}, {threads} thread(s), {dtype_name}: done", flush=True)
    torch.set_num_threads(1)
    return rows


def control(t: dict) -> float:
    """The A/A ratio: torch.mul timed as the control over the same call as mymul's eager."""
    return t[("control", "eager")] / t[("mymul", "eager")]


def measure_row(fns: dict, rounds: int, calls: int, sync) -> tuple[dict, int]:
    """One row's times, measured again while its A/A control is outside AA_BAND
    (up to RETRIES times): the try whose control is nearest 1.0, and the tries made."""
    tries = []
    for _ in range(1 + RETRIES):
        tries.append(measure(fns, rounds=rounds, calls=calls, sync=sync))
        if AA_BAND[0] <= control(tries[-1]) <= AA_BAND[1]:
            break
    return min(tries, key=lambda t: abs(math.log(control(t)))), len(tries)


def best_ratio(t: dict, op: str) -> float:
    """The fastest PyTorch implementation of `op` over ours (> 1: ours is faster)."""
    others = [v for k, v in t.items() if k[0] == op and k[1] != "ours"]
    return min(others) / t[(op, "ours")]


def table(device: str, threads: int, rows: list, n_log2: int) -> list:
    where = device if device == "cuda" else f"cpu, {threads} thread{'s' if threads > 1 else ''}"
    lines = [
        f"## Layouts: {where}, 2^{n_log2} elements",
        "",
        "Each op cell: the fastest PyTorch time (eager, addcmul or compile) over ours, then in "
        "brackets eager over ours and compile over ours"
        + ("; then ours as a fraction of a device copy's bandwidth." if device == "cuda" else ".")
        + " A/A: `torch.mul` against itself.",
        "",
        "| dtype | layout | ours us (mymul) | mymuladd | mymul | myadd_out | A/A |",
        "|---|---|---|---|---|---|---|",
    ]
    worst = []
    for dtype, name, t, copy in rows:
        cells = []
        for op in OPS:
            ours = t[(op, "ours")]
            others = {k[1]: v for k, v in t.items() if k[0] == op and k[1] != "ours"}
            best = best_ratio(t, op)
            detail = f"{others['eager'] / ours:.2f}"
            if "compile" in others:
                detail += f" / {others['compile'] / ours:.2f}"
            roof = f", {copy / ours:.2f} copy" if device == "cuda" else ""
            cells.append(f"**{best:.2f}** ({detail}{roof})")
            worst.append((best, op, dtype, name))
        lines.append(
            f"| {dtype} | {name} | {t[('mymul', 'ours')]:.1f} | {' | '.join(cells)} "
            f"| {control(t):.2f} |"
        )
    misses = sorted(w for w in worst if w[0] < 1.0)
    lines += [
        "",
        f"Cells below 1.0 against the fastest PyTorch implementation: {len(misses)} of "
        f"{len(worst)}"
        + (
            "; worst: " + ", ".join(f"{r:.2f} ({op}, {dt}, {ly})" for r, op, dt, ly in misses[:5])
            if misses
            else ""
        )
        + ".",
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", default=None, help="comma-separated CPU thread counts")
    parser.add_argument("--layouts", help="comma-separated words: only layouts whose name has one")
    parser.add_argument(
        "--dtypes", default=",".join(DTYPES), help="comma-separated, of " + ", ".join(DTYPES)
    )
    parser.add_argument("--log2", type=int, help="elements per operand, as 2^N (N >= 14)")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.log2 is not None and args.log2 < 14:
        parser.error(f"--log2: expected 14 or more, got {args.log2}")
    n_log2 = args.log2 or SIZE_LOG2[args.device]
    dtypes = args.dtypes.split(",")
    unknown = sorted(set(dtypes) - set(DTYPES))
    if unknown:
        parser.error(f"--dtypes: expected some of {', '.join(DTYPES)}, got {', '.join(unknown)}")
    only = args.layouts.split(",") if args.layouts else None
    warnings.filterwarnings("ignore", category=UserWarning)  # inductor's TF32 advice etc.
    if args.device == "cuda":
        where, thread_counts = torch.cuda.get_device_name(), [1]
    else:
        cores = os.cpu_count() or 1
        where = f"{cpu_name()}, {cores} cores"
        thread_counts = (
            [int(x) for x in args.threads.split(",")] if args.threads else sorted({1, cores})
        )
    today = datetime.date.today().isoformat()
    lines = [f"# Layout sweep: {where}, torch {torch.__version__}, {today}", ""]
    for threads in thread_counts:
        lines += table(
            args.device, threads, sweep(args.device, threads, only, dtypes, n_log2), n_log2
        )
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
