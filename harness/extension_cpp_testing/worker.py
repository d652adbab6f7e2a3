"""Runs the cases of conformance_tests in a worker process, so that a kernel
that crashes (SIGABRT, SIGSEGV, ...) fails its case, naming the signal, and
the run goes on.

Why not a standard tool: pytest-forked forks per test, which a process that
has used CUDA can't do, and pytest-xdist replaces a crashed worker only
under ``-n``. This worker is a fresh interpreter (subprocess, with the
parent's sys.path: CUDA and torch.compile work in it; unlike
multiprocessing's "spawn", it never re-runs the parent's main script),
serves every case of the session over a pipe, and is started again after a
crash.

The worker rebuilds each OpSpec by importing the module that made it (the
test module, as pytest imported it) and taking the spec that module's n-th
call of conformance_tests registered. Each case carries the parent's warning
filters, so it runs as it would in the parent (and seeds its own RNG from
its id: conformance.run_check). Where the spec can't be rebuilt
(conformance_tests called elsewhere than at a module's top level), the case
runs in the parent, as it does with EXTENSION_CPP_TESTING_ISOLATE=0 (to
debug a case in one process).

A memory_unsafe case runs in a child that the worker forks for it, so
that what its kernel damages dies with the child; where a fork can't run
it (a CUDA case, or a process whose CUDA or autograd threads a child can't
use), in a fresh worker of its own.

call_isolated runs one function of a module in the same worker and returns
what it did: a value, an exception, or the signal that ended the process.

run_all has no module to rebuild the spec from (a script's specs live in
its __main__), so run_cases forks: a child process, with the spec already
in its memory, runs the cases one after another and sends each outcome
back; after a crash the next child takes the cases left.
"""

from __future__ import annotations

import atexit
import dataclasses
import faulthandler
import importlib
import json
import os
import pickle
import signal
import subprocess
import sys
import traceback
import warnings

import torch

from . import reproducers
from .case import CRASH_FIX, Case, ConformanceFailure
from .registrations import missing_for_check
from .suite import run_case

# (module name, n) -> the OpSpec that module's n-th conformance_tests call made.
_SPECS: dict[tuple[str, int], object] = {}
_CALLS: dict[str, int] = {}


def isolated() -> bool:
    """Whether cases run in the worker (EXTENSION_CPP_TESTING_ISOLATE=0: no)."""
    return os.environ.get("EXTENSION_CPP_TESTING_ISOLATE", "1") != "0"


def register(spec) -> tuple[str, int] | None:
    """The key under which the worker finds spec: the module whose top level
    is running (the test module being imported) and how many specs it
    registered before. None where no module is being imported."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    if frame is None:
        return None
    module = frame.f_globals.get("__name__")
    if not module or module == "__main__" or module not in sys.modules:
        return None
    key = (module, _CALLS.get(module, 0))
    _CALLS[module] = key[1] + 1
    _SPECS[key] = spec
    return key


class _Unavailable(Exception):
    """The worker could not rebuild the spec: the case runs in the parent."""


class _Worker:
    """The worker process and the two pipes to it (requests, answers)."""

    # Runs in the worker: the parent's sys.path first, then serve.
    BOOT = (
        "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
        "from extension_cpp_testing.worker import serve; serve(int(sys.argv[2]), int(sys.argv[3]))"
    )

    def __init__(self):
        requests_read, requests_write = os.pipe()
        answers_read, answers_write = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-c", self.BOOT, json.dumps(sys.path)]
            + [str(requests_read), str(answers_write)],
            pass_fds=(requests_read, answers_write),
        )
        os.close(requests_read)
        os.close(answers_write)
        self.requests = os.fdopen(requests_write, "wb")
        self.answers = os.fdopen(answers_read, "rb")

    def run(self, key: tuple[str, int], name: str, case: Case, alone: bool = False):
        """("passed" | "failed" | "error" | "unavailable", detail, usable), or
        ("crashed", exit code, False) when the process died running the case;
        usable is False where the case left CUDA unusable in the worker.
        alone: in a child the worker forks, or ("unforkable", why, True)."""
        return self._ask(("alone" if alone else "case", key, name, case))

    def call(self, target: tuple[str, str], args: tuple, kwargs: dict):
        """("returned" | "raised", value or exception, usable), or ("crashed",
        exit code, False) when the process died in the call."""
        return self._ask(("call", target, args, kwargs))

    def _ask(self, request: tuple):
        try:
            pickle.dump((*request, _parent_state()), self.requests)
            self.requests.flush()
            return pickle.load(self.answers)
        except (EOFError, BrokenPipeError):
            return "crashed", self.process.wait(), False

    def close(self) -> None:
        for pipe in (self.requests, self.answers):
            try:
                pipe.close()
            except OSError:
                pass  # the worker is gone: nothing left to flush
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


_worker: _Worker | None = None
_unavailable: set[str] = set()


def run_isolated(spec, key: tuple[str, int] | None, case: Case, alone: bool = False) -> None:
    """Runs spec's case in the worker (or here, where it can't run there);
    raises what the case raises, or a ConformanceFailure naming the signal
    that ended the process running it.

    ``alone``: the case's kernel may write memory it does not own, so no
    later case runs in the process it ran in (the damage would show there,
    and be blamed on that case). A CPU case runs in a child that the warm
    worker forks (no second interpreter to start); a CUDA case, or one that
    no fork can run, in a fresh worker that is given up after it."""
    __tracebackhide__ = True  # a failure shows its check, case and fix, not our frames
    if key is None or key[0] in _unavailable or not isolated():
        run_case(spec, case)
        return
    forked = alone and not case.uses_cuda
    if forked:  # the damage dies with the child
        outcome, detail, usable = _started_worker().run(key, spec.name, case, alone=True)
    fresh = alone and (not forked or outcome == "unforkable")
    if fresh:
        _retire_worker()
    if not forked or fresh:
        outcome, detail, usable = _started_worker().run(key, spec.name, case)
    if not usable or fresh:  # the next case starts another worker
        _retire_worker()
    if outcome == "passed":
        return
    if outcome == "failed":
        raise detail
    if outcome == "unavailable":
        _unavailable.add(key[0])
        run_case(spec, case)
        return
    if outcome == "error":
        raise RuntimeError(f"the case raised in the worker process:\n{detail}")
    failure = ConformanceFailure(case.check, case.id, _death(detail), _crash_fix(case, spec))
    if reproducers.wanted():
        # Written by a fresh worker: drawing the case's samples may call the
        # kernel. A crash there too leaves the finding without one.
        call_isolated(_write_reproducer, key, spec.name, case, failure)
    raise failure


def _write_reproducer(key: tuple[str, int], name: str, case: Case, failure) -> None:
    """In the worker: the reproducer of a case that crashed the worker before."""
    reproducers.maybe_write(_spec(key, name), case, failure)


def _death(code: int | None, running: str = "the case") -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "a signal"
        return (
            f"the process running {running} died of {name} (signal {-code}): the kernel "
            "crashed; what it printed is in the captured stderr"
        )
    return f"the process running {running} exited with code {code} without finishing"


def _crash_fix(case: Case, spec=None) -> str:
    """A crash's fix: a registration the op lacks, where the case's check
    needs it (an op with no fake kernel crashes there because FakeTensor
    runs the real kernel on inputs without data), else CRASH_FIX."""
    overload = spec.resolved_overload() if spec is not None else None
    lacking = missing_for_check(overload, case.check) if overload is not None else None
    return lacking.fix if lacking is not None else CRASH_FIX


def _started_worker() -> _Worker:
    global _worker
    if _worker is None:
        _worker = _Worker()
    return _worker


@atexit.register
def _retire_worker() -> None:
    global _worker
    if _worker is not None:
        _worker.close()
        _worker = None


# -- a function in the worker --------------------------------------------------


class WorkerDied(RuntimeError):
    """The process running an isolated call ended before the call returned."""


@dataclasses.dataclass
class IsolatedCall:
    """What ``fn(*args, **kwargs)`` did in the worker process: returned
    ``value``, raised ``error``, or ended the process (``error`` is then a
    WorkerDied naming the signal)."""

    name: str
    value: object = None
    error: BaseException | None = None

    @property
    def crashed(self) -> bool:
        return isinstance(self.error, WorkerDied)

    def result(self):
        """The value; raises what the call raised, or WorkerDied."""
        if self.error is not None:
            raise self.error
        return self.value


# (module, qualified name, pickled arguments) -> what the call did, in this
# process; in the worker, the calls its parent made (sent with each request).
_calls: dict[tuple, IsolatedCall] = {}
_in_worker = False


def call_isolated(fn, *args, **kwargs) -> IsolatedCall:
    """Calls ``fn(*args, **kwargs)`` in the worker process, where a kernel
    that aborts ends that process, not this one. ``.result()`` of the answer
    gives the value or raises what the call raised (WorkerDied, naming the
    signal, for a crash). For what a test module computes at import, and for
    reproducers. fn must be a module's top-level function, in a module that
    makes no isolated call when imported; each call is made once a process.
    """
    target = (fn.__module__, fn.__qualname__)
    if "<" in fn.__qualname__ or fn.__module__ == "__main__":
        raise ValueError(f"call_isolated: {fn.__qualname__} is not a module's top-level function")
    key = (*target, pickle.dumps((args, kwargs)))
    if key in _calls:
        return _calls[key]
    name = f"{fn.__qualname__}()"
    if _in_worker or not isolated():
        made = _call_here(name, fn, args, kwargs)
    else:
        outcome, detail, usable = _started_worker().call(target, args, kwargs)
        if not usable:
            _retire_worker()
        if outcome == "returned":
            made = IsolatedCall(name, value=detail)
        elif outcome == "raised":
            made = IsolatedCall(name, error=detail)
        else:
            made = IsolatedCall(name, error=WorkerDied(_death(detail, running=name)))
    _calls[key] = made
    return made


def _call_here(name: str, fn, args, kwargs) -> IsolatedCall:
    try:
        return IsolatedCall(name, value=fn(*args, **kwargs))
    except Exception as e:  # noqa: BLE001  (returned to the caller, as from the worker)
        return IsolatedCall(name, error=e)


def _parent_state() -> dict:
    """What a case inherits from the test that runs it: the warning filters,
    as pytest set them for the test, and the isolated calls made so far
    (a test module the worker imports gets their answers, not a second call)."""
    calls = {key: made for key, made in _calls.items() if _picklable(made)}
    return {"filters": [f for f in warnings.filters if _picklable(f)], "calls": calls}


def _picklable(x) -> bool:
    try:
        pickle.dumps(x)
    except Exception:  # noqa: BLE001  (a filter that can't travel stays behind)
        return False
    return True


# -- in the worker ------------------------------------------------------------


def serve(requests_fd: int, answers_fd: int) -> None:
    """The worker's loop: a case in, its outcome out, until the parent closes
    the pipe."""
    global _in_worker
    _in_worker = True
    faulthandler.enable()  # a crash prints the Python stack of the case
    requests, answers = os.fdopen(requests_fd, "rb"), os.fdopen(answers_fd, "wb")
    while True:
        try:
            kind, *request, state = pickle.load(requests)
        except EOFError:
            return
        _calls.update(state["calls"])
        _set_warning_filters(state["filters"])
        if kind == "call":
            outcome, detail = _call(*request)
            broken = _cuda_error(None)
            pickle.dump((outcome, detail, broken is None), answers)
            answers.flush()
            if broken is not None:
                return
            continue
        key, name, case = request
        try:
            outcome, detail = (_run_alone if kind == "alone" else _run)(key, name, case)
        except BaseException:  # noqa: BLE001  (sent back to the test that asked)
            outcome, detail = "error", traceback.format_exc()
        # A device-side assert or an illegal address leaves CUDA unusable in
        # this process: the case fails, and the next one gets a new worker.
        broken = _cuda_error(case)
        if broken is not None and outcome == "passed":
            what = f"the case left CUDA unusable in its process: {broken}"
            detail = ConformanceFailure(case.check, case.id, what, _crash_fix(case))
            outcome = "failed"
        pickle.dump((outcome, detail, broken is None), answers)
        answers.flush()
        if broken is not None:
            return


def _run(key, name, case) -> tuple:
    try:
        spec = _spec(key, name)
    except _Unavailable as e:
        return "unavailable", str(e)
    try:
        run_case(spec, case)
    except ConformanceFailure as e:
        return "failed", e
    return "passed", None


def _run_alone(key, name, case) -> tuple:
    """_run's outcome, from a child forked for the case; ("unforkable", why)
    where a child can't run it."""
    try:
        spec = _spec(key, name)
    except _Unavailable as e:
        return "unavailable", str(e)
    ((_, failure, limit),) = _in_children(spec, [case])
    if limit is not None:
        return "unforkable", limit
    return ("passed", None) if failure is None else ("failed", failure)


def _call(target: tuple[str, str], args: tuple, kwargs: dict) -> tuple:
    """("returned", value) or ("raised", the exception), as they can travel."""
    module, qualname = target
    try:
        fn = importlib.import_module(module)
        for part in qualname.split("."):
            fn = getattr(fn, part)
        value = fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001  (sent back to the caller)
        return "raised", e if _picklable(e) else RuntimeError(traceback.format_exc())
    if not _picklable(value):
        return "raised", TypeError(f"{qualname} returned a {type(value).__name__}: not picklable")
    return "returned", value


def _cuda_error(case: Case | None) -> str | None:
    """The error CUDA raises now in this process, if the case (or a call,
    None) used it."""
    if case is not None and not case.uses_cuda:
        return None
    if not torch.cuda.is_initialized():
        return None
    try:
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001  (the error is what is reported)
        return str(e).strip().splitlines()[0]
    return None


# The filters last set from the parent's.
_filters: list | None = None


def _set_warning_filters(filters) -> None:
    """The parent's filters, through the public API (which tells the modules'
    warning registries that the filters changed), where they changed."""
    global _filters
    if filters == _filters:
        return
    _filters = filters
    warnings.resetwarnings()
    for action, message, category, module, lineno in reversed(filters):
        # A compiled pattern, its text, or None for any.
        message = getattr(message, "pattern", message) or ""
        module = getattr(module, "pattern", module) or ""
        warnings.filterwarnings(action, message, category, module, lineno)


def _spec(key: tuple[str, int], name: str):
    if key not in _SPECS:
        try:
            importlib.import_module(key[0])
        except BaseException as e:  # noqa: BLE001  (pytest's Skipped is a BaseException)
            raise _Unavailable(f"importing {key[0]}: {type(e).__name__}: {e}") from None
    spec = _SPECS.get(key)
    if spec is None or spec.name != name:
        raise _Unavailable(f"{key[0]} did not make the spec of {name} at call {key[1]}")
    return spec


# -- run_all: a forked child ---------------------------------------------------


def run_cases(spec, cases):
    """Yields (case, what it raised: None, or a ConformanceFailure) for each
    case: the CPU cases first, then the CUDA cases.

    The CPU cases run in a forked child process: a case that kills the child
    fails, naming the signal, and a new child runs the rest. A case the
    child can't run because it is a fork (see FORK_LIMITS) is handed back and
    runs here, after one warning that says why; so do all of them where a
    fork can't serve at all (EXTENSION_CPP_TESTING_ISOLATE=0, no os.fork, or
    autograd's threads started here, which a child can't use). The CUDA
    cases run here: PyTorch gives a forked child no CUDA, and run_all's spec
    (made in a script, perhaps) can't be rebuilt in a fresh interpreter.
    They come last, so that their autograd threads don't leave the CPU
    cases without a fork."""
    yield from _run_forked(spec, [case for case in cases if not case.uses_cuda])
    for case in cases:
        if case.uses_cuda:
            yield case, _outcome(spec, case)


# What PyTorch refuses a forked child (its errors' words), and why that
# matters here: a case that meets one is handed back to the parent.
FORK_LIMITS = {
    "Cannot re-initialize CUDA in forked subprocess": (
        "this process has used CUDA (asking for the GPU count is enough), which a forked child "
        "then can't, and these cases reach it (torch.compile asks about the GPU even for CPU "
        "tensors)"
    ),
    "autograd's threading in combination with fork-based multiprocessing": (
        "autograd's threads run in this process, and a forked child can't use autograd"
    ),
}


def _run_forked(spec, cases):
    handed_back: dict[str, list] = {}  # why -> the cases a child could not run
    for case, failure, limit in _in_children(spec, cases):
        if limit is None:
            yield case, failure
        else:
            handed_back.setdefault(limit, []).append(case)
    for why, here in handed_back.items():
        if isolated():
            warnings.warn(
                f"run_all runs {len(here)} of {spec.name}'s cases in this process, where a "
                f"crashing kernel ends the run: {why}",
                stacklevel=3,
            )
        for case in here:
            yield case, _outcome(spec, case)


def _in_children(spec, cases):
    """Yields (case, failure, None) for each case a forked child ran (after a
    crash, the next child takes the cases left), or (case, None, why) for
    one no child could run (a FORK_LIMITS entry, or why there is no fork)."""
    pending = list(cases)
    reason = _no_fork_reason() if pending else None
    while pending and reason is None:
        sys.stdout.flush()
        sys.stderr.flush()
        read, write = os.pipe()
        with warnings.catch_warnings():
            # Python 3.12 on warns that a fork of a process with threads
            # (CUDA's, OpenMP's) may deadlock in the child; this child runs
            # the cases on one thread and ends with os._exit.
            threads = r"This process .* is multi-threaded"
            warnings.filterwarnings("ignore", threads, DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read)
            _serve_forked(spec, pending, os.fdopen(write, "wb"))
        os.close(write)
        with os.fdopen(read, "rb") as answers:
            reason = pickle.load(answers)  # None: the child can run the cases
            while pending and reason is None:
                case = pending[0]
                try:
                    failure, limit, broken = pickle.load(answers)
                except EOFError:  # the child died running case
                    _, status = os.waitpid(pid, 0)
                    pid = None
                    code = (
                        -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                    )
                    failure = ConformanceFailure(
                        case.check, case.id, _death(code), _crash_fix(case, spec)
                    )
                    limit, broken = None, True
                pending.pop(0)
                yield case, failure, limit
                if broken:
                    break
        if pid is not None:
            os.waitpid(pid, 0)
    for case in pending:
        yield case, None, reason


def _fork_limit(error: BaseException | None) -> str | None:
    """Why the child could not run a case (a FORK_LIMITS entry), where the
    error, or one it comes from, is PyTorch refusing a forked child."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        for words, why in FORK_LIMITS.items():
            if words in str(error):
                return f"{why} (torch: {words})"
        error = error.__cause__ or error.__context__
    return None


def _no_fork_reason() -> str | None:
    if not isolated():
        return "EXTENSION_CPP_TESTING_ISOLATE=0"
    if not hasattr(os, "fork"):
        return "this platform has no fork"
    return None


def _autograd_unusable() -> str | None:
    """Why autograd can't run in this forked child, if it can't: PyTorch
    refuses to run a backward in a child forked after the parent started
    autograd's threads (a torch.compile'd backward does)."""
    x = torch.zeros(1, requires_grad=True)
    try:
        x.sum().backward()
    except RuntimeError as e:
        return _fork_limit(e) or str(e)
    return None


def _outcome(spec, case: Case):
    try:
        run_case(spec, case)
    except ConformanceFailure as e:
        return e
    return None


def _serve_forked(spec, cases, answers) -> None:
    """In the forked child: each case's outcome, and whether the case left
    CUDA unusable (then this child stops, and the next takes the rest).

    One intra-op thread: an OpenMP runtime (GNU's, in torch's Linux wheels)
    that the parent has used hangs at the child's first parallel region, so
    the kernels run on one CPU thread here (conformance_tests' worker, a
    fresh interpreter, has them all)."""
    torch.set_num_threads(1)
    faulthandler.enable()
    status = 0
    try:
        unusable = _autograd_unusable()
        pickle.dump(unusable, answers)
        answers.flush()
        for case in cases if unusable is None else ():
            try:
                failure = _outcome(spec, case)
            except BaseException:  # noqa: BLE001  (sent back as the case's failure)
                what = f"the case raised inside the harness:\n{traceback.format_exc()}"
                failure = ConformanceFailure(case.check, case.id, what, "report it to the harness")
            broken = _cuda_error(case)
            if broken is not None and failure is None:
                what = f"the case left CUDA unusable in its process: {broken}"
                failure = ConformanceFailure(case.check, case.id, what, _crash_fix(case, spec))
            limit = _fork_limit(failure)
            pickle.dump((None if limit else failure, limit, broken is not None), answers)
            answers.flush()
            if broken is not None:
                break
    except BaseException:  # noqa: BLE001  (the parent sees the pipe close)
        status = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
