"""Interleaved ratios: our ops against PyTorch's, whole calls from Python.

    python -m benchmarks.ratios [--device cpu|cuda] [--out FILE.md]

The ratio targets compare our ops with PyTorch's on one machine.
Timed one after the other, as the pytest-benchmark suite times them, two
identical calls can differ by 10-50% on a shared or small machine, far more
than the differences being judged. Here the candidates take turns instead:
each is timed in batches, they alternate for many rounds, and the fastest
batch of each counts (other processes only ever add time), so every ratio
compares numbers taken milliseconds apart. An A/A control, the native op
timed twice as if it were two candidates, shows how far a ratio strays from
1.0 by chance alone.

* One element (on the CPU, one thread): each way of calling the ops (the
  public function, the OpOverloadPacket ``torch.ops.extension_cpp.mymuladd``,
  its ``.default`` overload) against the PyTorch expressions they replace and
  a plain Python custom op with register_autograd, without and with
  ``requires_grad``, with the per-call targets (with grad: no slower than
  eager ``a * b + c``). On the CPU the clock is the thread's CPU time.
* Every device, N from 1 up: each public function against the single native
  op (addcmul, mul, add with out=), a batch of calls then one
  synchronisation, by the wall clock: what a user pays per call, host and
  device together. On the CPU at 1 thread and at every core; targets: on
  CUDA >= 1.0 at every N, on the CPU >= 1.0 for N >= 2^16. Each cell also
  gives the ratio against the same native op called the way every custom op
  is called from Python, through its ``torch.ops.aten`` overload (a generic,
  boxed binding where ``torch.mul`` has a generated one): that separates
  the kernels from the cost of the binding.

Prints the tables; --out also writes them as Markdown.
"""

import argparse
import datetime
import os
import random
import time

import torch

import extension_cpp

from .ops import ATEN, OPS, cpu_name, native, ours

ops = torch.ops.extension_cpp

# EXTENSION_CPP_BENCH_WARM=1: every measurement is one round of one call. The
# numbers mean nothing, but the run compiles and JITs all that a real one
# would, into Inductor's and Triton's caches on disk: make gpu runs the GPU
# benchmarks so beside its checks, so that afterwards, alone on the GPU,
# they spend their time measuring.
WARM = os.environ.get("EXTENSION_CPP_BENCH_WARM") == "1"


def measure(cases: dict, rounds: int = 40, calls: int = 2000, sync=None, samples=None) -> dict:
    """Fastest per-call microseconds of each case, interleaved over rounds.

    `samples`, a dict with a list for each case, receives every batch's
    per-call time as well (for medians).

    Without `sync`, the clock is the thread's CPU time; with it (a device
    synchronisation run after each batch), the wall clock. Each round takes
    the cases in a new random order (seeded, so runs repeat), and each batch
    starts with one untimed call, so that no case always pays for the state
    one particular case leaves behind (Note [Interleaved timing] in
    docs/design_notes.md).
    """
    if WARM:
        rounds, calls = 1, 1
    clock = time.thread_time_ns if sync is None else time.perf_counter_ns
    for fn in cases.values():
        for _ in range(calls):
            fn()
    best = dict.fromkeys(cases, float("inf"))
    order = list(cases)
    rng = random.Random(0)
    for _ in range(rounds):
        rng.shuffle(order)
        for name in order:
            fn = cases[name]
            fn()
            if sync is not None:
                sync()
            t0 = clock()
            for _ in range(calls):
                fn()
            if sync is not None:
                sync()
            per_call = (clock() - t0) / calls / 1e3
            best[name] = min(best[name], per_call)
            if samples is not None:
                samples[name].append(per_call)
    return best


SWEEP_EXPONENTS = {"cpu": (0, 4, 8, 12, 14, 16, 18, 20, 22), "cuda": (0, 4, 8, 12, 16, 20, 22, 24)}
SWEEP_DTYPES = {
    "cpu": ("float32", "float64", "bfloat16", "float16"),
    "cuda": ("float32", "bfloat16", "float16"),
}
BATCH_SECONDS = 0.002  # a batch at least this long, unless 200 calls are shorter
ROUNDS = 25


def candidates(device: str, dtype: torch.dtype, n: int) -> dict:
    """(op, 'native' | 'torch.ops' | 'ours') -> one call, plus ('control', 'native') for A/A."""
    a = torch.randn(n, dtype=dtype, device=device)
    b = torch.randn(n, dtype=dtype, device=device)
    out = torch.empty_like(a)
    fns = {}
    for op in OPS:
        fns[(op, "native")] = native(op, a, b, out)
        fns[(op, "torch.ops")] = native(op, a, b, out, through_aten=True)
        fns[(op, "ours")] = ours(extension_cpp, op, a, b, out)
    fns[("control", "native")] = lambda: torch.mul(a, b)
    return fns


def calls_per_batch(fn, sync) -> int:
    for _ in range(3):
        fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    return int(min(max(BATCH_SECONDS / max(time.perf_counter() - t0, 1e-7), 1), 200))


def sweep(device: str, threads: int) -> list:
    """Rows (dtype, N, native mul us, {op: native/ours}, {op: torch.ops native/ours}, A/A)."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    torch.set_num_threads(threads)
    rows = []
    for dtype_name in SWEEP_DTYPES[device]:
        for e in SWEEP_EXPONENTS[device]:
            fns = candidates(device, getattr(torch, dtype_name), 2**e)
            calls = calls_per_batch(fns[("mymul", "native")], sync)
            t = measure(fns, rounds=ROUNDS, calls=calls, sync=sync)
            ratios = {op: t[(op, "native")] / t[(op, "ours")] for op in OPS}
            same_path = {op: t[(op, "torch.ops")] / t[(op, "ours")] for op in OPS}
            control = t[("control", "native")] / t[("mymul", "native")]
            rows.append((dtype_name, 2**e, t[("mymul", "native")], ratios, same_path, control))
        print(f"  {device}, {threads} thread(s), {dtype_name}: done", flush=True)
    torch.set_num_threads(1)
    return rows


def _exp(n: int) -> str:
    return f"2^{n.bit_length() - 1}"


def sweep_lines(device: str, threads: int, rows: list) -> list:
    where = device if device == "cuda" else f"cpu, {threads} thread{'s' if threads > 1 else ''}"
    lines = [
        f"## Whole call against the native op: {where}",
        "",
        "Batches of calls then one synchronisation, interleaved, fastest of "
        f"{ROUNDS} rounds. Each cell is native time / our time (> 1: ours is "
        "faster), then in brackets the same for the native op called through "
        "`torch.ops.aten` (`addcmul.default`, `mul.Tensor`, `add.out`), as "
        "every custom op is called; A/A is `torch.mul` against itself, the "
        "spread of chance alone.",
        "",
        "| dtype | N | `torch.mul` us | mymuladd | mymul | myadd_out | A/A |",
        "|---|---|---|---|---|---|---|",
    ]
    for dtype, n, mul_us, ratios, same_path, control in rows:
        cells = " | ".join(f"{ratios[op]:.2f} ({same_path[op]:.2f})" for op in OPS)
        lines.append(f"| {dtype} | {_exp(n)} | {mul_us:.2f} | {cells} | {control:.2f} |")
    smallest = 1 if device == "cuda" else 2**16
    judged = [r for r in rows if r[1] >= smallest]
    worst = min((r[3][op], op, r[0], r[1]) for r in judged for op in OPS)
    worst_path = min((r[4][op], op, r[0], r[1]) for r in judged for op in OPS)
    controls = [r[5] for r in judged]
    verdict = "PASS" if worst[0] >= 1.0 else "MISS"
    lines += [
        "",
        f"Target >= 1.0 for N >= {_exp(smallest)}: {verdict}. Worst ratio {worst[0]:.2f} "
        f"({worst[1]}, {worst[2]}, N={_exp(worst[3])}); against the native ops "
        f"through `torch.ops.aten`, worst {worst_path[0]:.2f} ({worst_path[1]}, "
        f"{worst_path[2]}, N={_exp(worst_path[3])}); A/A ratios over the same cells "
        f"{min(controls):.2f} to {max(controls):.2f}.",
        "",
    ]
    return lines


def emit(lines: list, out) -> None:
    """Prints the report, and writes it to `out` as Markdown if given."""
    text = "\n".join(lines)
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.device == "cuda":
        where, thread_counts = torch.cuda.get_device_name(), [1]
    else:
        cores = os.cpu_count() or 1
        where, thread_counts = f"{cpu_name()}, {cores} cores", sorted({1, cores})
    today = datetime.date.today().isoformat()
    lines = [f"# Interleaved ratios: {where}, torch {torch.__version__}, {today}", ""]
    lines += one_element_lines(args.device)
    for threads in thread_counts:
        lines += sweep_lines(args.device, threads, sweep(args.device, threads))
    emit(lines, args.out)


def _python_custom_op():
    """a * b + c as a plain Python custom op with register_autograd: what
    PyTorch's custom-op guide builds first, the per-call baseline of a
    derivative registered from Python."""
    name = "bench_ratios::muladd"
    if torch._C._dispatch_has_kernel(name):
        return torch.ops.bench_ratios.muladd.default

    @torch.library.custom_op(name, mutates_args=())
    def muladd(a: torch.Tensor, b: torch.Tensor, c: float) -> torch.Tensor:
        return a * b + c

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b, grad * a, None

    muladd.register_autograd(
        backward, setup_context=lambda ctx, inputs, output: ctx.save_for_backward(*inputs[:2])
    )
    return torch.ops.bench_ratios.muladd.default


def one_element_lines(device: str) -> list:
    """The N=1 table: every way of calling, with and without grad, and the targets.

    On the CPU the clock is the thread's CPU time; on CUDA the wall clock, a
    batch of calls then one synchronisation (the host's cost per call, since
    one element's kernel is shorter than its launch). "again" rows time the
    same expression a second time: the A/A control.
    """
    c = 0.5
    sync = torch.cuda.synchronize if device == "cuda" else None
    rows, verdicts = [], []
    python_op = _python_custom_op()
    kw = dict(device=device)

    a, b = torch.randn(1, **kw), torch.randn(1, **kw)
    out, c0 = torch.empty(1, **kw), torch.tensor(c, **kw)
    t = measure(
        {
            "torch.addcmul(c0, a, b)": lambda: torch.addcmul(c0, a, b),
            "torch.addcmul(c0, a, b) again": lambda: torch.addcmul(c0, a, b),
            "a * b + c": lambda: a * b + c,
            "extension_cpp.mymuladd(a, b, c)": lambda: extension_cpp.mymuladd(a, b, c),
            "torch.ops.extension_cpp.mymuladd(a, b, c)": lambda: ops.mymuladd(a, b, c),
            "torch.ops.extension_cpp.mymuladd.default(a, b, c)": lambda: ops.mymuladd.default(
                a, b, c
            ),
            "torch.ops.aten.addcmul.default(c0, a, b)": lambda: ATEN["mymuladd"](c0, a, b),
            "Python custom op (register_autograd)": lambda: python_op(a, b, c),
            "torch.mul(a, b)": lambda: torch.mul(a, b),
            "torch.ops.aten.mul.Tensor(a, b)": lambda: ATEN["mymul"](a, b),
            "extension_cpp.mymul(a, b)": lambda: extension_cpp.mymul(a, b),
            "torch.add(a, b, out=out)": lambda: torch.add(a, b, out=out),
            "torch.ops.aten.add.out(a, b, out=out)": lambda: ATEN["myadd_out"](a, b, out=out),
            "extension_cpp.myadd_out(a, b, out)": lambda: extension_cpp.myadd_out(a, b, out),
        },
        sync=sync,
    )
    rows += [("no grad", k, v) for k, v in t.items()]
    ours = t["extension_cpp.mymuladd(a, b, c)"]
    addcmul = t["torch.addcmul(c0, a, b)"]
    control = t["torch.addcmul(c0, a, b) again"] / addcmul
    # Each target: the other's time over ours, at least `floor` (1.0: ours is no slower).
    verdicts.append(("no grad: addcmul / mymuladd", addcmul / ours, 0.67, control))
    verdicts.append(("no grad: eager a * b + c / mymuladd", t["a * b + c"] / ours, 1.0, control))

    a = torch.randn(1, requires_grad=True, **kw)
    b = torch.randn(1, requires_grad=True, **kw)
    t = measure(
        {
            "a * b + c": lambda: a * b + c,
            "a * b + c again": lambda: a * b + c,
            "torch.addcmul(c0, a, b)": lambda: torch.addcmul(c0, a, b),
            "extension_cpp.mymuladd(a, b, c)": lambda: extension_cpp.mymuladd(a, b, c),
            "torch.ops.extension_cpp.mymuladd(a, b, c)": lambda: ops.mymuladd(a, b, c),
            "torch.ops.extension_cpp.mymuladd.default(a, b, c)": lambda: ops.mymuladd.default(
                a, b, c
            ),
            "Python custom op (register_autograd)": lambda: python_op(a, b, c),
            "a * b": lambda: a * b,
            "extension_cpp.mymul(a, b)": lambda: extension_cpp.mymul(a, b),
        },
        sync=sync,
    )
    rows += [("requires_grad", k, v) for k, v in t.items()]
    eager = t["a * b + c"]
    control = t["a * b + c again"] / eager
    verdicts.append(
        (
            "grad: eager a * b + c / mymuladd",
            eager / t["extension_cpp.mymuladd(a, b, c)"],
            1.0,
            control,
        )
    )

    clock = "the thread's CPU time" if device == "cpu" else "the wall clock, one sync a batch"
    where = "one thread" if device == "cpu" else "CUDA"
    lines = [
        f"## One element, {where}",
        "",
        f"Fastest batch of each call, interleaved, by {clock}. A ratio is the other's time "
        "over ours (above 1.0 ours is faster); A/A is the same expression timed twice.",
        "",
        "| grad | call | us per call |",
        "|---|---|---|",
    ]
    lines += [f"| {g} | `{k}` | {v:.2f} |" for g, k, v in rows]
    lines += ["", "| target | ratio | at least | A/A | |", "|---|---|---|---|---|"]
    lines += [
        f"| {name} | {r:.2f} | {floor} | {aa:.2f} | {'PASS' if r >= floor else 'MISS'} |"
        for name, r, floor, aa in verdicts
    ]
    return lines + [""]


if __name__ == "__main__":
    main()
