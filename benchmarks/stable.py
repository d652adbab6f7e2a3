"""The stable-ABI build against the classic one: same kernels, another binding.

    python -m benchmarks.stable [--device cpu|cuda] [--threads N] [--out FILE.md]

Both packages must be installed (make build does). Each op of
extension_cpp_stable is timed against the same op of extension_cpp,
interleaved with ratios.py's measure (batches of calls taking turns,
fastest batch counts), plus an A/A control: the classic op against itself,
the spread of chance alone. Reported:

* per-call time at N = 1, without and with requires_grad, and under
  torch.inference_mode (which skips the Autograd key, so what is left is
  the dispatcher, the binding and the kernel). The stable build's Autograd
  kernel is Python (stable/extension_cpp_stable/_autograd.py): the
  difference between the two is its cost;
* from N = 2^16 up, the ratio classic / stable twice (as every ratio of
  the benchmarks: the baseline's time over the candidate's, so above 1.0
  the stable build is faster):
  - kernels: what the parity target is about, the same kernels
    behind each binding. On the CPU the calls run under inference_mode, so
    the binding (checks, allocation, the C shim) is in and the Python
    Autograd kernel out. On CUDA a call is host-bound below a few MiB, so
    the calls are captured in a CUDA graph and the replays timed: the
    device time of the kernels alone. Target: >= 0.97 at N >= 2^20;
  - eager: plain calls in grad mode, what a training loop pays, Python
    Autograd kernel included.
On the CPU (meant for one thread) the clock is the thread's CPU time; on
CUDA the wall clock around batches and a synchronisation.
"""

import argparse
import datetime

import extension_cpp_stable
import torch

import extension_cpp

from .ops import OPS, captured, ours
from .ratios import calls_per_batch, emit, measure

BUILDS = {"classic": extension_cpp, "stable": extension_cpp_stable}
# 2^24 on CUDA: past a data-centre GPU's L2 cache (tens of MiB).
EXPONENTS = {"cpu": (16, 20, 22), "cuda": (16, 20, 22, 24)}
DTYPES = ("float32", "bfloat16")


def candidates(op: str, a, b, out) -> dict:
    fns = {build: ours(pkg, op, a, b, out) for build, pkg in BUILDS.items()}
    fns["control"] = ours(extension_cpp, op, a, b, out)  # A/A: classic again
    return fns


GRAPH_CALLS = 20  # calls captured in one CUDA graph


def graphed(fn, pool, count: int = GRAPH_CALLS):
    """A function that replays a CUDA graph of `count` calls of fn.

    Each call's output is dropped at once, so no memory of the graph
    outlives its capture, and the graphs of all candidates can share one
    memory pool: each writes its output to the same block, so that where the
    output lands in the L2 cache is the same for every candidate
    (Note [Shared graph pool], docs/performance.md)."""
    return captured(fn, count, pool).replay


def one_element(rounds: int) -> list:
    lines = [
        "## Per call at N = 1 (thread CPU time, us)",
        "",
        "inference_mode: the same call under torch.inference_mode, which skips the "
        "Autograd key; the stable build's Python Autograd kernel costs the difference.",
        "",
        "| op | requires_grad | classic | stable | stable - classic | A/A "
        "| inference_mode: classic | stable |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for op in OPS:
        for grad in (False, True):
            if grad and op == "myadd_out":
                continue  # out= ops refuse autograd
            a = torch.randn(1, requires_grad=grad)
            b = torch.randn(1)
            fns = candidates(op, a, b, torch.empty(1))
            t = measure(fns, rounds=rounds)
            cells = " | |"  # with requires_grad, inference_mode would change the answer
            if not grad:
                with torch.inference_mode():
                    ti = measure(fns, rounds=rounds)
                cells = f" {ti['classic']:.2f} | {ti['stable']:.2f} |"
            lines.append(
                f"| {op} | {grad} | {t['classic']:.2f} | {t['stable']:.2f} | "
                f"{t['stable'] - t['classic']:+.2f} | {t['control'] / t['classic']:.2f} |{cells}"
            )
    return lines + [""]


def ratios(fns: dict, rounds: int, sync, per_batch: int = 1) -> tuple:
    """({op: classic / stable}, A/A of mymul, classic mymul us) for {op: candidates}."""
    out, control, mul_us = {}, None, None
    for op, cands in fns.items():
        batch = calls_per_batch(cands["classic"], sync or (lambda: None))
        t = measure(cands, rounds=rounds, calls=batch, sync=sync)
        out[op] = t["classic"] / t["stable"]
        if op == "mymul":
            control, mul_us = t["control"] / t["classic"], t["classic"] / per_batch
    return out, control, mul_us


def sweep(device: str, rounds: int) -> list:
    sync = torch.cuda.synchronize if device == "cuda" else None
    clock = "wall clock" if device == "cuda" else "thread CPU time"
    kernels = "CUDA graph replays" if device == "cuda" else "under torch.inference_mode"
    lines = [
        f"## Classic / stable time, {device} (batches of calls, {clock})",
        "",
        "Each cell: classic time / stable time (> 1: the stable build is faster); "
        f"A/A: classic / classic. Kernels: {kernels}; eager: plain calls, grad mode.",
        "",
        "| dtype | N | classic mymul us | kernels: mymuladd | mymul | myadd_out | A/A "
        "| eager: mymuladd | mymul | myadd_out | A/A |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    worst = {"kernels": [], "eager": []}
    for dtype_name in DTYPES:
        for e in EXPONENTS[device]:
            a = torch.randn(2**e, dtype=getattr(torch, dtype_name), device=device)
            b, out = torch.randn_like(a), torch.empty_like(a)
            plain = {op: candidates(op, a, b, out) for op in OPS}
            if device == "cuda":
                pool = torch.cuda.graph_pool_handle()
                graphs = {
                    op: {k: graphed(f, pool) for k, f in c.items()} for op, c in plain.items()
                }
                kern, k_control, mul_us = ratios(graphs, rounds, sync, GRAPH_CALLS)
            else:
                with torch.inference_mode():
                    kern, k_control, mul_us = ratios(plain, rounds, sync)
            eager, e_control, _ = ratios(plain, rounds, sync)
            if e >= 20:
                for kind, r in (("kernels", kern), ("eager", eager)):
                    worst[kind] += [(v, op, dtype_name, e) for op, v in r.items()]
            cells = " | ".join(f"{kern[op]:.3f}" for op in OPS)
            cells += f" | {k_control:.3f} | " + " | ".join(f"{eager[op]:.3f}" for op in OPS)
            lines.append(f"| {dtype_name} | 2^{e} | {mul_us:.1f} | {cells} | {e_control:.3f} |")
    r, op, dtype_name, e = min(worst["kernels"])
    verdict = "PASS" if r >= 0.97 else "MISS"
    re, ope, dte, ee = min(worst["eager"])
    lines += [
        "",
        f"Kernels, target >= 0.97 at N >= 2^20: {verdict}. Worst {r:.3f} "
        f"({op}, {dtype_name}, N=2^{e}). Eager, worst at N >= 2^20: {re:.3f} "
        f"({ope}, {dte}, N=2^{ee}).",
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    where = (
        torch.cuda.get_device_name() if args.device == "cuda" else f"cpu, {args.threads} thread(s)"
    )
    lines = [
        f"# Stable-ABI build against classic: {where}, torch {torch.__version__}, "
        f"{datetime.date.today().isoformat()}",
        "",
    ]
    if args.device == "cpu":
        lines += one_element(args.rounds)
    lines += sweep(args.device, args.rounds)
    emit(lines, args.out)


if __name__ == "__main__":
    main()
