"""Per-call overhead: each op at one element on one CPU thread, against PyTorch.

    python scripts/bench_overhead.py [--out FILE.md]

Times each way of calling the ops (the public function, the OpOverloadPacket
``torch.ops.extension_cpp.mymuladd``, its ``.default`` overload) and the
PyTorch expressions they replace, without and with ``requires_grad``. Calls
are timed in batches, interleaved across the candidates for many rounds, and
the fastest batch counts: other processes only ever add time. The clock is
the calling thread's CPU time (one thread, so nothing runs elsewhere).
Prints the table with the PASS/MISS of the issue-5 targets; --out also
writes it as Markdown.
"""

from __future__ import annotations

import argparse
import datetime
import time

import torch

import extension_cpp

ops = torch.ops.extension_cpp


def measure(cases: dict, rounds: int = 40, calls: int = 2000) -> dict:
    """Fastest per-call microseconds of each case, interleaved over rounds."""
    for fn in cases.values():
        for _ in range(calls):
            fn()
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(rounds):
        for name, fn in cases.items():
            t0 = time.thread_time_ns()
            for _ in range(calls):
                fn()
            best[name] = min(best[name], (time.thread_time_ns() - t0) / calls / 1e3)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(1)
    c = 0.5
    rows, verdicts = [], []

    a, b = torch.randn(1), torch.randn(1)
    out, c0 = torch.empty(1), torch.tensor(c)
    t = measure(
        {
            "torch.addcmul(c0, a, b)": lambda: torch.addcmul(c0, a, b),
            "a * b + c": lambda: a * b + c,
            "extension_cpp.mymuladd(a, b, c)": lambda: extension_cpp.mymuladd(a, b, c),
            "torch.ops.extension_cpp.mymuladd(a, b, c)": lambda: ops.mymuladd(a, b, c),
            "torch.ops.extension_cpp.mymuladd.default(a, b, c)": lambda: ops.mymuladd.default(
                a, b, c
            ),
            "torch.mul(a, b)": lambda: torch.mul(a, b),
            "extension_cpp.mymul(a, b)": lambda: extension_cpp.mymul(a, b),
            "torch.add(a, b, out=out)": lambda: torch.add(a, b, out=out),
            "extension_cpp.myadd_out(a, b, out)": lambda: extension_cpp.myadd_out(a, b, out),
        }
    )
    rows += [("no grad", k, v) for k, v in t.items()]
    ours = t["extension_cpp.mymuladd(a, b, c)"]
    verdicts.append(("mymuladd <= 1.5x addcmul", ours / t["torch.addcmul(c0, a, b)"], 1.5))
    verdicts.append(("mymuladd <= eager a * b + c", ours / t["a * b + c"], 1.0))

    a, b = torch.randn(1, requires_grad=True), torch.randn(1, requires_grad=True)
    t = measure(
        {
            "a * b + c": lambda: a * b + c,
            "extension_cpp.mymuladd(a, b, c)": lambda: extension_cpp.mymuladd(a, b, c),
            "torch.ops.extension_cpp.mymuladd(a, b, c)": lambda: ops.mymuladd(a, b, c),
            "torch.ops.extension_cpp.mymuladd.default(a, b, c)": lambda: ops.mymuladd.default(
                a, b, c
            ),
            "a * b": lambda: a * b,
            "extension_cpp.mymul(a, b)": lambda: extension_cpp.mymul(a, b),
        }
    )
    rows += [("requires_grad", k, v) for k, v in t.items()]
    verdicts.append(
        (
            "grad: mymuladd <= 1.25x eager",
            t["extension_cpp.mymuladd(a, b, c)"] / t["a * b + c"],
            1.25,
        )
    )

    title = (
        f"Per-call overhead, N=1, 1 thread: torch {torch.__version__}, "
        f"{datetime.date.today().isoformat()}"
    )
    lines = [f"# {title}", "", "| grad | call | us per call |", "|---|---|---|"]
    lines += [f"| {g} | `{k}` | {v:.2f} |" for g, k, v in rows]
    lines += ["", "| target | ratio | limit | |", "|---|---|---|---|"]
    lines += [
        f"| {name} | {r:.2f} | <= {lim} | {'PASS' if r <= lim else 'MISS'} |"
        for name, r, lim in verdicts
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
