"""C++/CUDA or Triton: the same ops side by side, measured in one process.

    python -m benchmarks.triton --out FILE.md [--json FILE.json]
        [--cpp-build-seconds S] [--sections contiguous,layouts,...] [--device cuda|cpu]

extension_cpp's ops (C++/CUDA) against extension_triton's
(tutorial/appendix/triton: Triton kernels through torch.library.triton_op),
with PyTorch eager and torch.compile of the same expression beside them.
Every comparison is interleaved (benchmarks/ratios.py's ``measure``: batches of
calls taking turns, the fastest batch of each counts) and carries an A/A
control, ``torch.mul`` timed twice as if it were two candidates: a ratio
inside the A/A spread is a tie. Sections (``--sections``, all by default):

* contiguous: float32, bfloat16 and float16 at 2^16 to 2^28 elements, as a
  fraction of a device copy of the same size (the op moves 3 elements for
  the copy's 2), twice: the kernels alone (CUDA graph replays: device time)
  and whole calls from Python (host and device: what a user pays);
* per-call: one element, the cost of a call with and without requires_grad;
* fusion: ``mymul(a, b).sin()`` under torch.compile: the kernels each
  version launches per call (torch.profiler) and its time, with Inductor's
  epilogue fusion of user Triton kernels on where this torch has it;
* first-call: a fresh process's first call of a Triton op (the JIT compiles
  its kernel) with an empty and with a warm Triton cache, against the C++
  build (``--cpp-build-seconds``: a timed ``pip install -e .`` from a clean tree)
  and the C++ op's first call;
* layouts: every layout of benchmarks/layouts.py at 2^20 and 2^24 elements
  (``--layout-log2``: in L2 and past it), kernels alone, with each op's eager
  form beside the C++ and Triton ones.

Writes the Markdown tables to --out, stamped with the command, the commit
(EXTENSION_CPP_COMMIT where the tree has no .git) and the date, under a
summary of the Triton / C++ ratios and the A/A spread, and every number to
--json. ``--device cpu`` (with TRITON_INTERPRET=1) runs the contiguous, layouts and per-call
sections on the CPU, to try the script without a GPU: its numbers mean
nothing.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

import extension_triton  # the Triton side path, tutorial/appendix/triton, installed
import torch
import triton

import extension_cpp
from tools.docs.render_results import stamp, stamp_line, value_range

from . import ops as perf_cases
from .layouts import layouts, stored_elements
from .ops import OPS, eager, native, ours
from .ratios import calls_per_batch, measure

# In the order they run: should a run be cut short, the longest comes last.
SECTIONS = ("contiguous", "per-call", "fusion", "first-call", "layouts")
DTYPES = ("float32", "bfloat16", "float16")
PACKAGES = {"C++": extension_cpp, "Triton": extension_triton}
ROUNDS = 15
GRAPH_CALLS = 20  # calls of one candidate captured in one CUDA graph
LAYOUT_LOG2 = 24  # past a data-centre GPU's L2 cache
LAYOUT_SIZES = "20,24"  # the layout sweep's sizes: in L2, and past it


def _eager(op: str, a, b, out):
    """The eager expression; for myadd_out, torch.add(out=)."""
    return native(op, a, b, out) if op == "myadd_out" else eager(op, a, b)


def candidates(a, b, compiled: bool, ops=OPS, copy_of=None) -> dict:
    """(op, implementation) -> one call on a, b; ('A/A', 'A'|'B') -> torch.mul
    twice; ('copy', 'copy') -> a copy of `copy_of` if given.

    torch.compile compiles the eager expression of mymuladd and mymul, with
    dynamic sizes (one compile per dtype); myadd_out's eager form is
    torch.add(out=), the native op."""
    out = torch.empty_like(a + b)
    fns = {}
    if copy_of is not None:
        copy_out = torch.empty_like(copy_of)
        fns[("copy", "copy")] = lambda: copy_out.copy_(copy_of)
    for op in ops:
        for name, pkg in PACKAGES.items():
            fns[(op, name)] = ours(pkg, op, a, b, out)
        fns[(op, "eager")] = _eager(op, a, b, out)
        if compiled and op != "myadd_out":
            fn = perf_cases._compiled_fn(op)
            fns[(op, "compile")] = lambda fn=fn: fn(a, b)
    fns[("A/A", "A")] = lambda: torch.mul(a, b)
    fns[("A/A", "B")] = lambda: torch.mul(a, b)
    for fn in fns.values():  # compile and JIT outside the timed region
        fn()
    return fns


def graphed(fns: dict) -> dict:
    """Each call replaced by a replay of a CUDA graph of GRAPH_CALLS calls,
    all graphs in one memory pool (benchmarks/stable.py says why)."""
    pool = torch.cuda.graph_pool_handle()
    return {k: perf_cases.captured(fn, GRAPH_CALLS, pool).replay for k, fn in fns.items()}


def timed(fns: dict, sync, per_replay: int = 1) -> dict:
    """Microseconds per call of each candidate, interleaved, in batches as
    long as a few milliseconds of the slowest."""
    batch = min(calls_per_batch(fn, sync) for fn in fns.values())
    return {k: v / per_replay for k, v in measure(fns, ROUNDS, batch, sync).items()}


def fraction(t: dict, key, copy: float, traffic: float = 1.5) -> float:
    """A candidate's bandwidth over the copy's: it moves `traffic` times the copy's bytes."""
    return copy * traffic / t[key]


def aa(t: dict) -> float:
    return t[("A/A", "A")] / t[("A/A", "B")]


# -- contiguous ---------------------------------------------------------------


def contiguous(device: str, sync, exponents) -> tuple:
    rows = []
    for dtype_name in DTYPES:
        dtype = getattr(torch, dtype_name)
        for e in exponents:
            a = torch.randn(2**e, device=device).to(dtype)
            b = torch.randn(2**e, device=device).to(dtype)
            fns = candidates(a, b, compiled=True, copy_of=a)
            row = {"dtype": dtype_name, "log2": e}
            row["call_us"] = timed(fns, sync)
            if device == "cuda":
                row["kernel_us"] = timed(graphed(fns), sync, GRAPH_CALLS)
            rows.append(row)
            print(f"  contiguous {dtype_name} 2^{e}: done", flush=True)
    return rows, contiguous_lines(rows)


def contiguous_lines(rows: list) -> list:
    lines = ["## Contiguous tensors: fraction of a device copy's bandwidth", ""]
    for metric, title in (
        ("kernel_us", "Kernels alone (CUDA graph replays: device time)"),
        ("call_us", "Whole calls from Python (host and device)"),
    ):
        if metric not in rows[0]:
            continue
        lines += [
            f"### {title}",
            "",
            "Each op's C++, Triton, eager and torch.compile forms (myadd_out's eager: "
            "`torch.add(out=)`, no compiled form), each one's bandwidth over a device "
            "copy's of the same size, counting 3 elements moved for the copy's 2 (1.00: "
            "copy speed). A/A: `torch.mul` over itself.",
            "",
            "| dtype | N | mymuladd: C++ | Triton | eager | compile | mymul: C++ | Triton "
            "| eager | compile | myadd_out: C++ | Triton | eager | A/A |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            t = row[metric]
            copy = t[("copy", "copy")]
            shown = " | ".join(
                f"{fraction(t, (op, impl), copy):.2f}"
                for op in OPS
                for impl in ("C++", "Triton", "eager", "compile")
                if (op, impl) in t
            )
            lines.append(f"| {row['dtype']} | 2^{row['log2']} | {shown} | {aa(t):.2f} |")
        lines.append("")
    return lines


# -- layouts ------------------------------------------------------------------


def layout_sweep(device: str, sync, exponents) -> tuple:
    # torch.compile, dynamic in N, recompiles for each new arrangement of
    # strides: about 80 graphs over the sweep. Past Dynamo's limit it would
    # fall back to eager unannounced; here it raises instead.
    with torch._dynamo.config.patch(recompile_limit=256, fail_on_recompile_limit_hit=True):
        return _layout_sweep(device, sync, exponents)


def _layout_sweep(device: str, sync, exponents) -> tuple:
    rows = []
    for n_log2 in exponents:
        for dtype_name in DTYPES:
            dtype = getattr(torch, dtype_name)
            dense = torch.randn(2**n_log2, device=device).to(dtype)
            for name, make in layouts(n_log2).items():
                a, b = make(dtype=dtype, device=device)
                fns = candidates(a, b, compiled=True, copy_of=dense)
                # The bytes this layout moves over a copy's (benchmarks/layouts.py).
                traffic = (a.numel() + stored_elements(a) + stored_elements(b)) / (2 * a.numel())
                t = timed(graphed(fns), sync, GRAPH_CALLS) if device == "cuda" else timed(fns, sync)
                rows.append(
                    {
                        "log2": n_log2,
                        "dtype": dtype_name,
                        "layout": name,
                        "us": t,
                        "traffic": traffic,
                    }
                )
                summary = " ".join(
                    f"{op} C++ {fraction(t, (op, 'C++'), t[('copy', 'copy')], traffic):.2f} "
                    f"Triton {fraction(t, (op, 'Triton'), t[('copy', 'copy')], traffic):.2f}"
                    for op in OPS
                )
                print(f"  layouts 2^{n_log2} {dtype_name} {name}: {summary}", flush=True)
    lines = []
    for n_log2 in exponents:
        lines += layout_lines([r for r in rows if r["log2"] == n_log2], n_log2, device)
    return rows, lines


IMPLEMENTATIONS = ("C++", "Triton", "eager", "compile")
# (op, implementation) of each column of a layout table: myadd_out has no
# compiled form.
LAYOUT_COLUMNS = tuple(
    (op, impl) for op in OPS for impl in IMPLEMENTATIONS if (op, impl) != ("myadd_out", "compile")
)


def layout_lines(rows: list, n_log2: int, device: str) -> list:
    how = "kernels alone (CUDA graph replays)" if device == "cuda" else "whole calls"
    header = " | ".join(f"{op}: {impl}" if impl == "C++" else impl for op, impl in LAYOUT_COLUMNS)
    lines = [
        f"## Layouts: 2^{n_log2} elements, {how}",
        "",
        "Each op's C++, Triton, eager and torch.compile bandwidth over a device copy's, counting "
        "the bytes each layout must move (a broadcast input's stored elements once; myadd_out's "
        "eager: `torch.add(out=)`, no compiled form). A/A: `torch.mul` over itself.",
        "",
        f"| dtype | layout | {header} | A/A |",
        "|---|---|" + "---|" * (len(LAYOUT_COLUMNS) + 1),
    ]
    for row in rows:
        t, copy = row["us"], row["us"][("copy", "copy")]
        shown = " | ".join(
            f"{fraction(t, key, copy, row['traffic']):.2f}" for key in LAYOUT_COLUMNS
        )
        lines.append(f"| {row['dtype']} | {row['layout']} | {shown} | {aa(t):.2f} |")
    return lines + [""]


# -- per call -----------------------------------------------------------------


def per_call(device: str, sync) -> tuple:
    rows = {}
    for grad in (False, True):
        a = torch.randn(1, device=device, requires_grad=grad)
        b = torch.randn(1, device=device, requires_grad=grad)
        # out= ops take no input that requires grad.
        fns = candidates(a, b, compiled=False, ops=OPS[:2] if grad else OPS)
        rows["requires_grad" if grad else "no grad"] = timed(fns, sync)
        print(f"  per call, requires_grad={grad}: done", flush=True)
    return rows, per_call_lines(rows)


def per_call_lines(rows: dict) -> list:
    lines = [
        "## One element: microseconds per call",
        "",
        "Batches of calls, then one synchronisation: host time, as the device's is a few "
        "microseconds. myadd_out takes no input that requires grad.",
        "",
        "| grad | op | C++ | Triton | eager | Triton / C++ | A/A |",
        "|---|---|---|---|---|---|---|",
    ]
    for grad, t in rows.items():
        for op in OPS:
            if (op, "C++") not in t:
                continue
            cpp, tri = t[(op, "C++")], t[(op, "Triton")]
            lines.append(
                f"| {grad} | {op} | {cpp:.1f} | {tri:.1f} | {t[(op, 'eager')]:.1f} "
                f"| {tri / cpp:.2f} | {aa(t):.2f} |"
            )
    return lines + [""]


# -- first call ---------------------------------------------------------------

# A fresh process: torch and CUDA up, then the package imported and its ops
# called on contiguous CUDA tensors, first mymul in float32 alone, then every
# op in every dtype (the kernels a contiguous model needs).
FIRST_CALL = """
import json, sys, time
import torch
torch.randn(1, device="cuda"); torch.cuda.synchronize()
t0 = time.perf_counter()
if sys.argv[1] == "Triton":
    import extension_triton as pkg
else:
    import extension_cpp as pkg
t1 = time.perf_counter()
x = torch.randn(2**20, device="cuda")
pkg.mymul(x, x); torch.cuda.synchronize()
t2 = time.perf_counter()
pkg.mymul(x, x); torch.cuda.synchronize()
t3 = time.perf_counter()
for dtype in (torch.float32, torch.bfloat16, torch.float16):
    y = x.to(dtype)
    pkg.mymuladd(y, y, 0.5); pkg.mymul(y, y); pkg.myadd_out(y, y, torch.empty_like(y))
torch.cuda.synchronize()
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_call_s": t2 - t1, "second_call_s": t3 - t2,
                  "all_ops_and_dtypes_s": t4 - t3}))
"""


def _first_call(which: str, env: dict) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", FIRST_CALL, which],
        capture_output=True,
        text=True,
        # extension_triton from where this process found it
        env={**env, "PYTHONPATH": os.path.dirname(extension_triton.__path__[0])},
        cwd=tempfile.gettempdir(),  # not the source tree: import the installed extension_cpp
    )
    if run.returncode != 0:
        raise RuntimeError(f"the {which} first-call process failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def first_call(cpp_build_seconds) -> tuple:
    results = {"cpp_build_s": cpp_build_seconds}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRITON_CACHE_DIR=cache)
        results["Triton, empty cache"] = _first_call("Triton", env)
        results["Triton, warm cache"] = _first_call("Triton", env)
    results["C++"] = _first_call("C++", dict(os.environ))
    print("  first call: done", flush=True)
    return results, first_call_lines(results)


def first_call_lines(r: dict) -> list:
    build = r["cpp_build_s"]
    lines = [
        "## Build and first call",
        "",
        "C++: `pip install --no-build-isolation --no-deps -e .` from a clean tree"
        + (f" took **{build:.0f} s**" if build is not None else " (not timed in this run)")
        + ", once per torch release. Triton: no build; a fresh process compiles each "
        "kernel it launches on its first call (Triton's JIT) and keeps it in Triton's "
        "cache on disk (`~/.triton/cache`, `TRITON_CACHE_DIR`), which a warm cache skips.",
        "",
        "| package, fresh process | import s | first mymul (float32) s | second s "
        "| then all 3 ops x 3 dtypes s |",
        "|---|---|---|---|---|",
    ]
    for name in ("C++", "Triton, empty cache", "Triton, warm cache"):
        x = r[name]
        lines.append(
            f"| {name} | {x['import_s']:.2f} | {x['first_call_s']:.3f} | "
            f"{x['second_call_s']:.5f} | {x['all_ops_and_dtypes_s']:.3f} |"
        )
    return lines + [""]


# -- fusion -------------------------------------------------------------------


def _fusion_config() -> str:
    """The Inductor setting that fuses pointwise epilogues into user Triton kernels, if any."""
    name = "epilogue_fusion_user_defined_triton_kernel"
    return name if hasattr(torch._inductor.config, name) else ""


def _kernels_per_call(fn) -> list:
    """Names of the device kernels one call launches."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def fusion(device: str, sync) -> tuple:
    a = torch.randn(2**LAYOUT_LOG2, device=device)
    b = torch.randn(2**LAYOUT_LOG2, device=device)
    torch._dynamo.reset()
    variants = {
        "C++": lambda a, b: extension_cpp.mymul(a, b).sin(),
        "Triton": lambda a, b: extension_triton.mymul(a, b).sin(),
        "torch": lambda a, b: (a * b).sin(),
    }
    fns = {}
    for name, f in variants.items():
        compiled = torch.compile(f, fullgraph=True)
        fns[name] = lambda compiled=compiled: compiled(a, b)
    config = _fusion_config()
    if config:
        # A function of its own: Dynamo keeps compiled graphs per code object.
        compiled = torch.compile(lambda a, b: extension_triton.mymul(a, b).sin(), fullgraph=True)
        with torch._inductor.config.patch({config: True}):
            compiled(a, b)  # compiled with the setting on
        fns["Triton, epilogue fusion"] = lambda: compiled(a, b)
    for f in fns.values():
        torch.testing.assert_close(f(), (a * b).sin())
    kernels = {name: _kernels_per_call(f) for name, f in fns.items()}
    fns[("A/A", "A")] = lambda: torch.mul(a, b)
    fns[("A/A", "B")] = lambda: torch.mul(a, b)
    t = timed(fns, sync)
    print("  fusion: done", flush=True)
    result = {"kernels": kernels, "us": t, "config": config}
    return result, fusion_lines(result)


def fusion_lines(r: dict) -> list:
    t = r["us"]
    lines = [
        f"## torch.compile of `mymul(a, b).sin()`, float32, 2^{LAYOUT_LOG2} elements",
        "",
        "Kernels launched per call (torch.profiler) and whole-call time; C++ / this = "
        "the C++ version's time over this one's (> 1: faster than C++). torch: "
        "`(a * b).sin()`, which Inductor generates as one kernel."
        + (
            f" 'epilogue fusion': compiled with `torch._inductor.config.{r['config']} = True`."
            if r["config"]
            else " This torch has no setting that fuses epilogues into user Triton kernels."
        ),
        "",
        "| compiled | kernels per call | us | C++ / this |",
        "|---|---|---|---|",
    ]
    for name, kernels in r["kernels"].items():
        lines.append(
            f"| {name} | {len(kernels)}: {', '.join(f'`{k[:48]}`' for k in kernels)} "
            f"| {t[name]:.1f} | {t['C++'] / t[name]:.2f} |"
        )
    return lines + ["", f"A/A: {aa(t):.2f}.", ""]


# -- summary ------------------------------------------------------------------


def summary_lines(data: dict) -> list:
    """A few lines read off the sections below (those that ran): Triton time
    over C++ time (> 1: C++ is faster) unless a line says otherwise,
    and the spread of every A/A control."""
    lines, controls = [], []
    rows = data.get("contiguous")
    if isinstance(rows, list):
        metric = "kernel_us" if "kernel_us" in rows[0] else "call_us"
        how = "kernels alone" if metric == "kernel_us" else "whole calls"
        big = [r[metric] for r in rows if r["log2"] >= LAYOUT_LOG2]
        ratios = [t[(op, "Triton")] / t[(op, "C++")] for t in big for op in OPS]
        if ratios:
            lines.append(
                f"- contiguous, 2^{LAYOUT_LOG2} elements and more, {how}: {value_range(ratios)}"
            )
        smallest = rows[0]["log2"]
        calls = [r["call_us"] for r in rows if r["log2"] == smallest]
        ratios = [t[(op, "Triton")] / t[(op, "C++")] for t in calls for op in OPS]
        lines.append(f"- contiguous, 2^{smallest} elements, whole calls: {value_range(ratios)}")
        controls += [aa(r[m]) for r in rows for m in ("kernel_us", "call_us") if m in r]
    rows = data.get("layouts")
    if isinstance(rows, list):
        for n_log2 in sorted({r["log2"] for r in rows}):
            at = [r for r in rows if r["log2"] == n_log2]
            ratios = [
                (r["us"][(op, "Triton")] / r["us"][(op, "C++")], op, r) for r in at for op in OPS
            ]
            # The fastest of Triton, eager and compile over C++.
            best = [
                min(v for k, v in r["us"].items() if k[0] == op and k[1] != "C++")
                / r["us"][(op, "C++")]
                for r in at
                for op in OPS
            ]
            low = min(ratios, key=lambda x: x[0])
            lines.append(
                f"- every layout at 2^{n_log2} elements: {value_range(x[0] for x in ratios)} "
                f"(lowest: {low[1]}, {low[2]['layout']}, {low[2]['dtype']}); the fastest of "
                f"Triton, eager and torch.compile: {value_range(best)}"
            )
        controls += [aa(r["us"]) for r in rows]
    calls = data.get("per-call")
    if isinstance(calls, dict) and "no grad" in calls:
        cells = [
            f"{grad}: {t[('mymul', 'C++')]:.1f} us (C++) and {t[('mymul', 'Triton')]:.1f} us "
            "(Triton)"
            for grad, t in calls.items()
        ]
        lines.append("- one element, a call of mymul: " + "; ".join(cells))
        controls += [aa(t) for t in calls.values()]
    first = data.get("first-call")
    if isinstance(first, dict) and "C++" in first:
        build = first["cpp_build_s"]
        lines.append(
            "- first mymul in a fresh process: "
            f"{first['Triton, empty cache']['first_call_s']:.2f} s for Triton with an empty "
            f"cache, {first['Triton, warm cache']['first_call_s']:.2f} s with a warm one, "
            f"{first['C++']['first_call_s']:.3f} s for C++"
            + (f", after a {build:.0f} s build" if build is not None else "")
        )
    fused = data.get("fusion")
    if isinstance(fused, dict) and "kernels" in fused:
        t = fused["us"]
        counts = ", ".join(f"{k} {len(v)}" for k, v in fused["kernels"].items())
        lines.append(
            f"- `mymul(a, b).sin()` under torch.compile: {t['Triton'] / t['C++']:.2f}; "
            f"kernels per call: {counts}"
        )
        controls.append(aa(t))
    if not lines:
        return []
    if controls:
        lines.append(
            f"- A/A controls (`torch.mul` over itself), all sections: {value_range(controls)}"
        )
    return [
        "## Summary",
        "",
        "Triton time over C++ time (> 1: C++ is faster), read off the sections below:",
        "",
        *lines,
        "",
    ]


# -- main ---------------------------------------------------------------------


def _jsonable(x):
    if isinstance(x, dict):
        return {" / ".join(k) if isinstance(k, tuple) else k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_jsonable(v) for v in x]
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="Markdown file to write")
    parser.add_argument("--json", help="JSON file for every number")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--cpp-build-seconds", type=float)
    parser.add_argument(
        "--log2", default="16,18,20,22,24,26,28", help="contiguous sizes, as exponents of 2"
    )
    parser.add_argument(
        "--layout-log2", default=LAYOUT_SIZES, help="layout sweep sizes, as exponents of 2"
    )
    args = parser.parse_args()
    sections = args.sections.split(",")
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        parser.error(f"--sections: expected some of {', '.join(SECTIONS)}, got {unknown}")
    if args.device == "cpu" and {"first-call", "fusion"} & set(sections):
        parser.error("--device cpu: the first-call and fusion sections need a GPU")
    warnings.filterwarnings("ignore", category=UserWarning)  # Inductor's TF32 advice
    torch.set_num_threads(1)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    where = torch.cuda.get_device_name() if args.device == "cuda" else perf_cases.cpu_name()
    # The options that change what is measured (not where it is written).
    shown = {"--sections": args.sections, "--log2": args.log2, "--layout-log2": args.layout_log2}
    command = "python -m benchmarks.triton " + " ".join(f"{k} {v}" for k, v in shown.items())
    started = time.time()
    record = stamp(command)
    head = [
        f"# C++/CUDA against Triton: {where}, torch {torch.__version__}, Triton "
        f"{triton.__version__}",
        "",
        f"{stamp_line(record)}.",
        "",
    ]
    lines = []
    data = {"device": where, "torch": torch.__version__, "triton": triton.__version__, **record}
    steps = {
        "contiguous": lambda: contiguous(args.device, sync, [int(e) for e in args.log2.split(",")]),
        "layouts": lambda: layout_sweep(
            args.device, sync, [int(e) for e in args.layout_log2.split(",")]
        ),
        "per-call": lambda: per_call(args.device, sync),
        "first-call": lambda: first_call(args.cpp_build_seconds),
        "fusion": lambda: fusion(args.device, sync),
    }
    failed = []
    for name in SECTIONS:
        if name not in sections:
            continue
        print(f"{name} ... (at {time.time() - started:.0f} s)", flush=True)
        try:
            data[name], section = steps[name]()
        except Exception:  # noqa: BLE001  (reported in the tables; the next section runs)
            failed.append(name)
            error = traceback.format_exc()
            print(error, flush=True)
            data[name] = {"error": error}
            section = [f"## {name}: failed", "", "```text", error.strip()[-2000:], "```", ""]
        lines += section
        # What is done so far, should a later section fail or run out of time.
        with open(args.out, "w") as f:
            f.write("\n".join(head + summary_lines(data) + lines))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(_jsonable(data), f, indent=1)
    print(f"done in {time.time() - started:.0f} s; wrote {args.out}", flush=True)
    if failed:
        sys.exit(f"sections that failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
