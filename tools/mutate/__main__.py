"""make mutate: plants one-line bugs (mutants) in a copy of the product and
checks that the tests covering it fail on each.

Python: every mutation point of the files in tools/mutate/mutants.py's
PYTHON table, found with the ast module (comparison and boolean operators,
arithmetic, constants, `not` and `if` conditions, removed checks and raises,
swapped call arguments), plus the table's hand-written PLANTED bugs. Each
mutant is written into a copy of the package in build/mutate/, and pytest
runs the tests the table names for that file from there, stopping at the
first failure.

C++: tools/mutate/mutants.py's CPP list, each applied to a copy of the
sources, rebuilt CPU-only with the kernel set it names (the copy keeps its
object files, so only what the mutant touches recompiles) and run against
the tests the table names for its file.

A mutant is killed when its tests fail, timed out when they run past the
limit, and survived when they pass; tools/mutate/equivalent.py lists the
mutants that no test can kill, each with the reason, and they are counted
apart. The tree itself is never written: everything happens under
build/mutate/.

    python -m tools.mutate                 # both languages
    python -m tools.mutate --lang py -k ops.py --jobs 2
    python -m tools.mutate --list          # the mutants, without running them
"""

from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import mutants as mutants_table
from .equivalent import EQUIVALENT

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "build" / "mutate"
PY = sys.executable


# -- mutants ------------------------------------------------------------------


@dataclasses.dataclass
class Mutant:
    lang: str  # "py" or "cpp"
    path: str  # relative to the root
    line: int
    old: str  # the changed source, one line
    new: str
    text: str  # the whole mutated file
    tests: list
    kernels: str = "simple"  # cpp: the kernel set it is built with
    planted: str = ""  # the bug it stands for, for the hand-written ones

    @property
    def key(self) -> tuple:
        """What tools/mutate/equivalent.py names a mutant by: stable while
        the line moves."""
        return (self.path, self.old, self.new)

    @property
    def id(self) -> str:
        digest = hashlib.sha1(repr(self.key).encode()).hexdigest()[:8]
        return f"{self.lang}-{digest}"

    def describe(self) -> str:
        tag = f" [planted: {self.planted}]" if self.planted else ""
        kernels = f" ({self.kernels})" if self.lang == "cpp" else ""
        return f"{self.path}:{self.line}{kernels}: {self.old}  ->  {self.new}{tag}"


# Operator swaps: each AST operator class and what replaces it.
_COMPARE = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BINOP = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
}
_BOOLOP = {ast.And: ast.Or, ast.Or: ast.And}


def _expression_mutations(node: ast.AST):
    """The mutated copies of one expression node."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARE:
                m = copy.deepcopy(node)
                m.ops[i] = _COMPARE[type(op)]()
                yield m
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP:
        m = copy.deepcopy(node)
        m.op = _BINOP[type(node.op)]()
        yield m
    elif isinstance(node, ast.BoolOp):
        m = copy.deepcopy(node)
        m.op = _BOOLOP[type(node.op)]()
        yield m
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield node.operand
    elif isinstance(node, ast.Constant) and type(node.value) in (bool, int, float):
        v = node.value
        if isinstance(v, bool):
            yield ast.Constant(not v)
        elif isinstance(v, int):
            yield ast.Constant(v + 1)
        else:
            yield ast.Constant(v * 2 if v else 1.0)
    elif isinstance(node, ast.Call):
        args = node.args
        if len(args) >= 2 and not any(isinstance(a, ast.Starred) for a in args[:2]):
            if ast.dump(args[0]) != ast.dump(args[1]):
                m = copy.deepcopy(node)
                m.args[0], m.args[1] = m.args[1], m.args[0]
                yield m


def _skipped_children(node: ast.AST) -> set:
    """Nodes under `node` not to mutate: annotations, docstrings, f-strings."""
    skip = set()
    for child in ast.walk(node):
        if isinstance(child, (ast.arg, ast.AnnAssign)):
            ann = child.annotation
            if ann is not None:
                skip.update(map(id, ast.walk(ann)))
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.returns:
            skip.update(map(id, ast.walk(child.returns)))
        if isinstance(child, ast.JoinedStr):
            skip.update(map(id, ast.walk(child)))
        if isinstance(child, (ast.FunctionDef, ast.ClassDef, ast.Module)):
            body = child.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                skip.update(map(id, ast.walk(body[0])))
    return skip


def _top_level_name(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.name
    if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id
    return None


def _offsets(source: str) -> list:
    """The character offset of each line's start (line numbers from 1)."""
    starts, total = [0, 0], 0
    for line in source.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _replace(source: str, starts: list, node: ast.AST, text: str) -> str:
    begin = starts[node.lineno] + node.col_offset
    end = starts[node.end_lineno] + node.end_col_offset
    return source[:begin] + text + source[end:]


def _changed_lines(source: str, mutated: str, node: ast.AST) -> tuple:
    """(old, new): the lines of `node` before and after, each joined into one."""
    old_lines, new_lines = source.splitlines(), mutated.splitlines()
    last = node.end_lineno + len(new_lines) - len(old_lines)
    old = " ".join(s.strip() for s in old_lines[node.lineno - 1 : node.end_lineno])
    new = " ".join(s.strip() for s in new_lines[node.lineno - 1 : last])
    return old, new


def python_mutants(path: str, target: dict) -> list:
    """Every mutant of one Python file: expressions first, then statements."""
    source = (ROOT / path).read_text()
    tree = ast.parse(source)
    starts = _offsets(source)
    only = target.get("only")
    skip_lines = {
        i + 1 for i, line in enumerate(source.splitlines()) if "# pragma: no mutate" in line
    }
    found, seen = [], set()

    def add(node, text):
        mutated = _replace(source, starts, node, text)
        try:
            ast.parse(mutated)
        except SyntaxError:
            return
        old, new = _changed_lines(source, mutated, node)
        if (old, new) in seen or old == new:
            return
        seen.add((old, new))
        found.append(Mutant("py", path, node.lineno, old, new, mutated, target["tests"]))

    for stmt in tree.body:
        name = _top_level_name(stmt)
        if only is not None and name not in only:
            continue
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) or name == "__all__":
            continue
        skip = _skipped_children(stmt)
        for node in ast.walk(stmt):
            if id(node) in skip or getattr(node, "lineno", None) in skip_lines:
                continue
            if isinstance(node, ast.expr) and isinstance(
                getattr(node, "ctx", ast.Load()), ast.Load
            ):
                for m in _expression_mutations(node):
                    add(node, f"({ast.unparse(m)})")
            if isinstance(node, (ast.If, ast.While)):
                add(node.test, f"(not ({ast.unparse(node.test)}))")
            # Statements removed: a raise, or a call made for its effect (a check).
            removable = isinstance(node, ast.Raise) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            )
            if removable:
                add(node, "pass")
    return found


def planted_mutants(planted: list, tests_of) -> list:
    found = []
    for p in planted:
        source = (ROOT / p["path"]).read_text()
        start = source.index(p["after"]) if p.get("after") else 0
        at = source.index(p["old"], start)
        mutated = source[:at] + p["new"] + source[at + len(p["old"]) :]
        line = source.count("\n", 0, at) + 1
        old = " ".join(s.strip() for s in p["old"].splitlines())
        new = " ".join(s.strip() for s in p["new"].splitlines()) or "(removed)"
        found.append(
            Mutant("py", p["path"], line, old, new, mutated, tests_of(p["path"]), planted=p["bug"])
        )
    return found


def cpp_mutants(table: dict, mutants: list) -> list:
    found = []
    for m in mutants:
        source = (ROOT / m["path"]).read_text()
        if source.count(m["old"]) != 1:
            raise SystemExit(
                f"tools/mutate/mutants.py: {m['old']!r} occurs {source.count(m['old'])} times "
                f"in {m['path']}, not once"
            )
        at = source.index(m["old"])
        mutated = source.replace(m["old"], m["new"])
        line = source.count("\n", 0, at) + 1
        tests = m.get("tests") or table[m["path"]]
        found.append(
            Mutant("cpp", m["path"], line, m["old"], m["new"], mutated, tests, m["kernels"])
        )
    return found


# -- running ------------------------------------------------------------------


def _env(**extra) -> dict:
    env = dict(os.environ)
    env.update(
        PYTHONDONTWRITEBYTECODE="1",
        # Inductor's graph caches are keyed on the graph, not on our fake
        # kernels: a cached graph would hide a mutant in one. The compiled
        # C++ of a graph is keyed on its code, and stays cached.
        TORCHINDUCTOR_FX_GRAPH_CACHE="0",
        TORCHINDUCTOR_AUTOGRAD_CACHE="0",
        TORCHINDUCTOR_CACHE_DIR=str(WORK / "inductor"),
        OMP_NUM_THREADS="1",
    )
    env.pop("PYTEST_ADDOPTS", None)
    env.update(extra)
    return env


def _pytest_args(tests: list) -> list:
    """pytest's arguments for a test list: each entry a file, or (file, -k
    expression) for part of one."""
    args = ["-x", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT)]
    args += ["-c", str(ROOT / "pyproject.toml"), "-o", "addopts=--strict-markers"]
    files = [t if isinstance(t, str) else t[0] for t in tests]
    if any(not isinstance(t, str) for t in tests):
        # -k matches a test's module name too: each file's expression applies to it alone.
        parts = [
            Path(t).stem if isinstance(t, str) else f"({Path(t[0]).stem} and ({t[1]}))"
            for t in tests
        ]
        args += ["-k", " or ".join(parts)]
    return args + [str(ROOT / f) for f in files]


# A server that imports torch and pytest once, then forks a child per run:
# the child imports the package under test from its copy, so each mutant
# pays for pytest's collection but not for importing torch.
_SERVER = """
import json, os, signal, sys, time, traceback
import torch, pytest
for line in sys.stdin:
    job = json.loads(line)
    log = open(job["log"], "w")
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        os.chdir(job["cwd"])
        sys.path[:0] = job["path"]
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        code = 3
        try:
            code = int(pytest.main(job["args"]))
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    deadline = time.monotonic() + job["timeout"]
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            code = "timeout"
            break
        time.sleep(0.05)
    print(json.dumps(code), flush=True)
"""


class Runner:
    """pytest runs through one fork server (see _SERVER)."""

    def __init__(self, env: dict, log: Path):
        self.log = log
        self.proc = subprocess.Popen(
            [PY, "-c", _SERVER], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def pytest(self, tests: list, cwd: Path, timeout: float, path=()) -> tuple:
        """(outcome, seconds, last lines): pytest on `tests` from cwd, the
        first failure ending it."""
        job = dict(
            cwd=str(cwd),
            path=[str(cwd), *map(str, path)],
            args=_pytest_args(tests),
            timeout=timeout,
            log=str(self.log),
        )
        start = time.monotonic()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        code = json.loads(self.proc.stdout.readline())
        elapsed = time.monotonic() - start
        tail = "\n".join(self.log.read_text(errors="replace").strip().splitlines()[-3:])
        if code == "timeout":
            return "timeout", elapsed, tail
        if code == 0:
            return "survived", elapsed, tail
        if code == 5:  # no test collected: a wrong test list, not a finding
            return "error", elapsed, tail
        # Failed tests (1), or a collection error (2: the package did not import).
        return "killed", elapsed, tail

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


class PythonCopy:
    """A copy of extension_cpp/ (with its built _C) and of the harness, which
    the tests import instead of the tree's: pytest runs from its folder, and
    PYTHONPATH puts its harness first."""

    def __init__(self, n: int):
        self.dir = WORK / f"py-{n}"
        shutil.rmtree(self.dir, ignore_errors=True)
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / "extension_cpp", self.dir / "extension_cpp", ignore=ignore)
        shutil.copytree(ROOT / "harness", self.dir / "harness", ignore=ignore)
        self.runner = Runner(_env(), self.dir / "pytest.log")

    def pytest(self, tests: list, timeout: float) -> tuple:
        return self.runner.pytest(tests, self.dir, timeout, path=[self.dir / "harness"])

    def run(self, m: Mutant, timeout: float) -> tuple:
        target = self.dir / m.path
        original = target.read_text()
        target.write_text(m.text)
        try:
            return self.pytest(m.tests, timeout)
        finally:
            target.write_text(original)


class CppCopy:
    """A copy of the sources built CPU-only with one kernel set, in place.

    The object files are kept: after a clean build their folder is saved,
    and after each mutant the source and that folder are put back as they
    were (modification times included), so ninja rebuilds only what the next
    mutant touches."""

    FILES = ("setup.py", "build_options.py", "pyproject.toml")

    def __init__(self, kernels: str):
        self.kernels = kernels
        self.dir = WORK / f"cpp-{kernels}"
        self.dir.mkdir(parents=True, exist_ok=True)
        for f in self.FILES:
            shutil.copy2(ROOT / f, self.dir / f)
        for d in ("csrc", "extension_cpp"):
            shutil.rmtree(self.dir / d, ignore_errors=True)
            ignore = shutil.ignore_patterns("__pycache__", "*.so", "_build_info.py")
            shutil.copytree(ROOT / d, self.dir / d, ignore=ignore)
        self.objects = self.dir / "build" / f"temp-{kernels}"
        self.saved = self.dir / "build" / "clean-objects"
        self.env = _env(
            EXTENSION_CPP_CUDA="0",
            EXTENSION_CPP_KERNELS=kernels,
            EXTENSION_CPP_EXPECT_KERNELS=kernels,
            MAX_JOBS=os.environ.get("MAX_JOBS", "2"),
        )
        self.runner = Runner(self.env, self.dir / "pytest.log")

    def pytest(self, tests: list, timeout: float) -> tuple:
        return self.runner.pytest(tests, self.dir, timeout)

    def build(self) -> tuple:
        cmd = [PY, "setup.py", "-q", "build_ext", "--inplace", "--force"]
        start = time.monotonic()
        proc = subprocess.run(cmd, cwd=self.dir, env=self.env, capture_output=True, text=True)
        return proc.returncode == 0, time.monotonic() - start, proc.stdout + proc.stderr

    def clean_build(self) -> None:
        ok, seconds, log = self.build()
        if not ok:
            raise SystemExit(f"the unmutated copy does not build ({self.kernels}):\n{log[-3000:]}")
        shutil.rmtree(self.saved, ignore_errors=True)
        shutil.copytree(self.objects, self.saved)
        print(f"  clean {self.kernels} build: {seconds:.0f} s", flush=True)

    def run(self, m: Mutant, timeout: float) -> tuple:
        target = self.dir / m.path
        original, stat = target.read_text(), target.stat()
        target.write_text(m.text)
        try:
            ok, build_seconds, log = self.build()
            if not ok:
                lines = [line for line in log.splitlines() if "error" in line][:2]
                return "build-failed", build_seconds, "\n".join(lines)
            outcome, seconds, tail = self.pytest(m.tests, timeout)
            return outcome, build_seconds + seconds, tail
        finally:
            target.write_text(original)
            os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            shutil.rmtree(self.objects)
            shutil.copytree(self.saved, self.objects)

    def finish(self) -> None:
        """Leaves the copy built from the unmutated sources."""
        self.build()


# -- the campaign -------------------------------------------------------------


def collect(args, table) -> dict:
    tests_of = lambda path: table.PYTHON[path]["tests"]  # noqa: E731
    mutants = {"py": [], "cpp": []}
    if args.lang in ("py", "all"):
        for path, target in table.PYTHON.items():
            mutants["py"] += python_mutants(path, target)
        mutants["py"] += planted_mutants(table.PLANTED, tests_of)
    if args.lang in ("cpp", "all"):
        mutants["cpp"] = cpp_mutants(table.CPP_TESTS, table.CPP)
    for lang in mutants:
        mutants[lang] = [m for m in mutants[lang] if not args.k or args.k in m.describe()]
    return mutants


def report(lang: str, results: list, equivalent: dict) -> dict:
    counts = {"killed": 0, "survived": 0, "timeout": 0, "equivalent": 0, "other": 0}
    survivors = []
    for m, outcome in results:
        if outcome == "survived" and m.key in equivalent:
            outcome = "equivalent"
        counts[outcome if outcome in counts else "other"] += 1
        if outcome == "survived":
            survivors.append(m)
    judged = counts["killed"] + counts["survived"] + counts["timeout"]
    score = 100.0 * (counts["killed"] + counts["timeout"]) / judged if judged else 100.0
    name = {"py": "Python", "cpp": "C++"}[lang]
    print(
        f"{name}: {len(results)} mutants: {counts['killed']} killed, {counts['survived']} "
        f"survived, {counts['timeout']} timed out, {counts['equivalent']} equivalent, "
        f"{counts['other']} not run (build or collection error): {score:.1f}% killed"
    )
    for m in survivors:
        print(f"  survived: {m.describe()}")
    return {"counts": counts, "score": score, "survivors": [m.describe() for m in survivors]}


def _all_tests(mutants: list) -> list:
    """Every test list's entries, once each."""
    return list(dict.fromkeys(t for m in mutants for t in m.tests))


def run_lang(lang: str, mutants: list, args, equivalent: dict) -> list:
    if not mutants:
        return []
    print(f"==> {len(mutants)} {'Python' if lang == 'py' else 'C++'} mutants", flush=True)
    results, done = [], [0]

    def show(m, outcome, seconds, tail):
        done[0] += 1
        note = " (equivalent)" if outcome == "survived" and m.key in equivalent else ""
        print(
            f"[{done[0]}/{len(mutants)}] {outcome:9} {seconds:5.0f}s  {m.describe()}{note}",
            flush=True,
        )
        if outcome in ("error", "build-failed") or (args.verbose and tail):
            print("    " + tail.replace("\n", "\n    "), flush=True)
        results.append((m, outcome))

    if lang == "py":
        copies = [PythonCopy(n) for n in range(args.jobs)]
        outcome, seconds, tail = copies[0].pytest(_all_tests(mutants), 3600)
        if outcome != "survived":
            raise SystemExit(f"the tests fail on the unmutated copy:\n{tail}")
        print(f"  unmutated: the tests pass ({seconds:.0f} s)", flush=True)
        free = list(copies)

        def job(m):
            c = free.pop()
            try:
                show(m, *c.run(m, args.timeout))
            finally:
                free.append(c)

        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(job, mutants))
        for c in copies:
            c.runner.close()
        return results
    for kernels in ("simple", "fast"):
        todo = [m for m in mutants if m.kernels == kernels]
        if not todo:
            continue
        c = CppCopy(kernels)
        c.clean_build()
        outcome, seconds, tail = c.pytest(_all_tests(todo), 3600)
        if outcome != "survived":
            raise SystemExit(f"the tests fail on the unmutated {kernels} build:\n{tail}")
        print(f"  unmutated {kernels}: the tests pass ({seconds:.0f} s)", flush=True)
        for m in todo:
            show(m, *c.run(m, args.timeout))
        c.finish()
        c.runner.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", choices=("py", "cpp", "all"), default="all")
    parser.add_argument("-k", default="", help="only the mutants whose description has this")
    parser.add_argument("--jobs", type=int, default=2, help="Python mutants run at once")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per mutant's tests")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument(
        "--survivors", action="store_true", help="only the last run's survivors, again"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show pytest's last lines")
    args = parser.parse_args()
    table = mutants_table
    equivalent = EQUIVALENT
    mutants = collect(args, table)
    if args.survivors:
        for lang in mutants:
            last = WORK / f"summary-{lang}.json"
            left = set(json.loads(last.read_text())["survivors"]) if last.exists() else set()
            mutants[lang] = [m for m in mutants[lang] if m.describe() in left]
    if args.list:
        for lang in mutants:
            for m in mutants[lang]:
                note = "  (equivalent)" if m.key in equivalent else ""
                print(f"{m.id}  {m.describe()}{note}")
        return 0
    WORK.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    results = {lang: run_lang(lang, mutants[lang], args, equivalent) for lang in mutants}
    print(f"==> make mutate: {(time.monotonic() - start) / 60:.1f} min")
    summary = {lang: report(lang, results[lang], equivalent) for lang in results if results[lang]}
    for lang, s in summary.items():
        (WORK / f"summary-{lang}.json").write_text(json.dumps(s, indent=1))
    return 0 if all(not s["survivors"] for s in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
