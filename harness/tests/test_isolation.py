"""What isolates a crashing kernel: conformance_tests' worker process (a
fresh interpreter that serves every case, started again after a crash),
call_isolated (any other call of a kernel there, at collection time too),
and run_all's forked child, before and after this process has initialised
CUDA. Each test runs its scenario in a Python of its own."""

from __future__ import annotations

import re

import pytest
import torch
from harness_zoo.processes import run_python

# A test module whose kernel aborts on empty input, next to a correct op.
CRASHING = """
import dataclasses
import torch
from extension_cpp_testing import conformance_tests
from harness_zoo import zoo

specs = zoo.load()
test_abort = conformance_tests(
    dataclasses.replace(specs["abort_on_empty_mul"], imports=("harness_zoo.registered",))
)
test_mul = conformance_tests(
    dataclasses.replace(specs["mul"], checks=("results",), layouts=("contiguous", "empty"))
)
"""


@pytest.mark.slow
def test_a_crashing_kernel_fails_its_case_and_the_run_goes_on(tmp_path):
    """Each case that reaches the abort fails, naming SIGABRT, in every check
    that calls the kernel (torch.compile's included); every other case, and
    the next test function's, runs and passes. The crash is one finding,
    whose reproducer a fresh worker writes: it aborts as the case did."""
    module = tmp_path / "test_crashing.py"
    module.write_text(CRASHING)
    folder = tmp_path / "reproducers"
    proc = run_python(
        ["-m", "pytest", "-p", "no:cacheprovider", "-rf", f"--conformance-reproducers={folder}"]
        + [str(module)],
        cwd=tmp_path,
    )
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-3000:]
    failed = set(re.findall(r"FAILED \S+::test_abort\[(\S+)\]", out))
    assert failed == {
        f"abort_on_empty_mul-{check}-cpu-float32-empty"
        for check in ("results", "strides", "fake", "compile")
    }
    assert out.count("died of SIGABRT (signal 6)") >= len(failed)
    assert f"{len(failed)} failed, 12 passed" in out, out[-3000:]
    row = r"\nabort_on_empty_mul +4  crash 4 \[1\] \(compile 1, fake 1, results 1, strides 1\)\n"
    assert re.search(row, out), out[-3000:]
    (script,) = folder.glob("*.py")
    assert script.name == "abort-on-empty-mul--crash.py"
    assert run_python([str(script)], cwd=tmp_path).returncode == -6  # SIGABRT


# run_all from a script, as a user without pytest calls it: the spec lives
# in __main__, where no worker could import it again.
RUN_ALL_CRASHING = """
import warnings
import torch
from extension_cpp_testing import run_all
from harness_zoo import zoo

# run_all must not fall back to this process
warnings.filterwarnings("error", "run_all runs .* in this process")
failures = run_all(zoo.load()["abort_on_empty_mul"])
for check, found in sorted(failures.items()):
    for failure in found:
        print("FAILED", failure.case, failure.what.splitlines()[0])
print("still running")
"""


@pytest.mark.slow
def test_run_all_survives_a_crashing_kernel(tmp_path):
    """run_all runs its cases in a forked child: each case that reaches the
    abort fails, naming SIGABRT, and the script goes on to the end. On a
    machine without a GPU (hidden here where there is one: a process that
    has asked for the GPU count gives a forked child no CUDA, which
    torch.compile's case reaches there; test_run_all_after_cuda_is_initialised
    is that case)."""
    script = tmp_path / "check.py"
    script.write_text(RUN_ALL_CRASHING)
    proc = run_python([str(script)], cwd=tmp_path, env={"CUDA_VISIBLE_DEVICES": ""})
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    failed = dict(re.findall(r"^FAILED (\S+) (.*)$", out, re.M))
    assert set(failed) == {
        f"abort_on_empty_mul-{check}-cpu-float32-empty"
        for check in ("results", "strides", "fake", "compile")
    }, out
    assert all("died of SIGABRT (signal 6)" in what for what in failed.values()), failed
    assert out.rstrip().endswith("still running")


# One op whose kernel warns, one whose failure shows its random inputs,
# drawn after the test seeds the RNG.
WORKER_STATE = """
import dataclasses
import warnings
import pytest
import torch
from extension_cpp_testing import OpSpec, conformance_tests
from harness_zoo import zoo

@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)
    torch.rand(3)  # a draw after seeding: the state, not the seed, decides what comes next

@torch.library.custom_op("worker_state::warning_mul", mutates_args=())
def warning_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    warnings.warn("warning_mul: a warning from the kernel")
    return a * b

warning_mul.register_fake(lambda a, b: torch.empty_like(a))
test_warning = conformance_tests(
    OpSpec(
        torch.ops.worker_state.warning_mul.default,
        reference=torch.mul,
        checks=("results",),
        layouts=("contiguous",),
        dtypes=(torch.float32,),
        devices=("cpu",),
    )
)
test_quantize = conformance_tests(
    dataclasses.replace(zoo.load()["two_codes_off_quantize"], checks=("results",))
)
"""


@pytest.mark.slow
def test_cases_in_the_worker_see_the_tests_warning_filters_and_rng(tmp_path):
    """The same failures, word for word, in the worker and in pytest's
    process: the kernel's warning turned into an error by -W (that one alone: another
    plugin's UserWarning must not end the child's session), and the quantizer's
    codes, which the seeded RNG draws."""
    module = tmp_path / "test_worker_state.py"
    module.write_text(WORKER_STATE)
    reports = {}
    for isolate in ("1", "0"):
        proc = run_python(
            ["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-W"]
            + ["error:warning_mul:UserWarning", "-q", str(module)],
            cwd=tmp_path,
            env={"EXTENSION_CPP_TESTING_ISOLATE": isolate},
        )
        assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
        found = re.findall(r"E +extension_cpp_testing\S+: (.*)", proc.stdout)
        reports[isolate] = sorted(set(found))
    assert reports["1"] == reports["0"]
    assert any("UserWarning: warning_mul: a warning from the kernel" in r for r in reports["1"])
    assert any("codes differ from the reference's" in r for r in reports["1"])


def test_a_script_that_starts_pytest_runs_once(tmp_path):
    """The worker is a fresh interpreter that imports the test module, never
    the script that started pytest (multiprocessing's spawn would re-run a
    script without a __main__ guard, pytest and all)."""
    (tmp_path / "test_mul.py").write_text(
        "import torch\n"
        "from extension_cpp_testing import OpSpec, conformance_tests\n"
        "test_mul = conformance_tests(OpSpec(torch.ops.aten.mul.Tensor, reference=torch.mul,\n"
        "    checks=('results',), layouts=('contiguous',), dtypes=(torch.float32,),\n"
        "    devices=('cpu',)))\n"
    )
    (tmp_path / "run.py").write_text(
        "import sys, pytest\n"
        "print('the script started')\n"
        "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'test_mul.py']))\n"
    )
    proc = run_python(["run.py"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("the script started") == 1, proc.stdout[-3000:]
    assert "1 passed" in proc.stdout


# One op leaves its process wrong (as a kernel that writes memory it does
# not own leaves the heap), the next fails in a process so left. Each
# kernel records the process it ran in.
DAMAGING = """
import os
import torch
from extension_cpp_testing import OpSpec, cases, conformance_tests

DAMAGED = []

def record(line):
    with open("processes.txt", "a") as f:
        f.write(line + "\\n")

@torch.library.custom_op("damage::damaging_mul", mutates_args=())
def damaging_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    record(f"damaging_mul {os.getppid()}")
    DAMAGED.append(True)
    return a * b

@torch.library.custom_op("damage::careful_mul", mutates_args=())
def careful_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    record(f"careful_mul {os.getpid()}")
    if DAMAGED:
        raise RuntimeError("careful_mul ran in a damaged process")
    return a * b

for op in (damaging_mul, careful_mul):
    op.register_fake(lambda a, b: torch.empty_like(a))
only = dict(reference=torch.mul, checks=("results",), layouts=("contiguous",),
            dtypes=(torch.float32,), devices=("cpu",))
damaging = OpSpec(torch.ops.damage.damaging_mul.default, **only)
test_damaging = conformance_tests(damaging, memory_unsafe=[c.id for c in cases(damaging)])
test_careful = conformance_tests(OpSpec(torch.ops.damage.careful_mul.default, **only))
"""


@pytest.mark.slow
def test_a_memory_unsafe_case_leaves_no_damage_behind(tmp_path):
    """A memory_unsafe case runs in a child the worker forks: what its kernel
    damages dies with the child, so the next case, in the worker itself,
    passes; and no second interpreter is started for it. (GPU hidden: a CPU
    machine's case; where a fork can't serve, a fresh worker does.)"""
    module = tmp_path / "test_damaging.py"
    module.write_text(DAMAGING)
    proc = run_python(
        ["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-rf", str(module)],
        cwd=tmp_path,
        env={"CUDA_VISIBLE_DEVICES": ""},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "2 passed" in proc.stdout, proc.stdout[-3000:]
    ran = dict(line.split() for line in (tmp_path / "processes.txt").read_text().splitlines())
    assert ran["damaging_mul"] == ran["careful_mul"], "the damaging case's parent is the worker"


# The parent uses CUDA first; one op then breaks CUDA in its process.
CUDA_WORKER = """
import torch
from extension_cpp_testing import OpSpec, conformance_tests

torch.zeros(1, device="cuda")

@torch.library.custom_op("cuda_worker::out_of_bounds_mul", mutates_args=())
def out_of_bounds_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # Reads past the end of a: a device-side assert, after which CUDA is
    # unusable in the process.
    past_the_end = torch.full(a.shape, a.numel(), dtype=torch.long, device=a.device)
    return a.flatten()[past_the_end] * b

out_of_bounds_mul.register_fake(lambda a, b: torch.empty_like(a))
only = dict(reference=torch.mul, exact=True, checks=("results",), layouts=("contiguous",),
            dtypes=(torch.float32,), devices=("cuda",))
test_broken = conformance_tests(OpSpec(torch.ops.cuda_worker.out_of_bounds_mul.default, **only))
test_mul = conformance_tests(OpSpec(torch.ops.aten.mul.Tensor, **only))
"""


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.slow
def test_cuda_cases_run_in_the_worker_and_a_broken_context_is_left_behind(tmp_path):
    """A parent that has used CUDA (which a forked child could not) runs its
    CUDA cases in the spawned worker; a case that leaves CUDA unusable fails,
    and the next case gets a fresh worker and passes."""
    module = tmp_path / "test_cuda_worker.py"
    module.write_text(CUDA_WORKER)
    proc = run_python(
        ["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-rf", str(module)],
        cwd=tmp_path,
    )
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-3000:]
    assert "2 failed, 2 passed" in out, out[-3000:]
    assert not re.findall(r"FAILED \S+::test_mul", out)


# A test module that asks an aborting op for something while it is
# collected, next to a call that returns and a test that needs neither.
COLLECTION_PROBE = """
import os
import torch

@torch.library.custom_op("collection_probe::abort", mutates_args=())
def abort(x: torch.Tensor) -> torch.Tensor:
    os.abort()

def calls_the_aborting_op():
    return torch.ops.collection_probe.abort(torch.ones(1)).tolist()

def sums():
    return torch.ones(2).sum().item()
"""
COLLECTED = """
import collection_probe
from extension_cpp_testing import call_isolated

ABORTED = call_isolated(collection_probe.calls_the_aborting_op)
SUMMED = call_isolated(collection_probe.sums)

def test_needs_the_aborted_call():
    assert ABORTED.crashed and not SUMMED.crashed
    ABORTED.result()

def test_needs_the_sum():
    assert SUMMED.result() == 2.0

def test_needs_neither():
    pass
"""


@pytest.mark.slow
def test_an_op_that_aborts_at_collection_fails_the_test_that_needs_it(tmp_path):
    """The abort ends the worker, not pytest: collection finishes, the test
    that needs the call fails naming SIGABRT, and the others pass (the sum
    in a worker started again)."""
    (tmp_path / "collection_probe.py").write_text(COLLECTION_PROBE)
    (tmp_path / "test_collected.py").write_text(COLLECTED)
    proc = run_python(
        ["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-rf", "test_collected.py"],
        cwd=tmp_path,
    )
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-3000:]
    assert re.findall(r"FAILED \S+::(\w+)", out) == ["test_needs_the_aborted_call"], out[-3000:]
    assert "the process running calls_the_aborting_op() died of SIGABRT" in out
    assert "1 failed, 2 passed" in out, out[-3000:]


# run_all from a script after the script has initialised CUDA: a forked
# child can't use CUDA then. An aborting kernel's cases must still fail
# alone, and a correct op's compile case must pass.
RUN_ALL_AFTER_CUDA = """
import dataclasses
import warnings
import torch
from extension_cpp_testing import run_all
from harness_zoo import zoo

specs = zoo.load()
torch.zeros(1, device="cuda")
assert torch.cuda.is_initialized()
cpu = dict(devices=("cpu",), layouts=("contiguous", "empty"))
aborting = dataclasses.replace(specs["abort_on_empty_mul"], checks=("results", "strides"), **cpu)
compiled = dataclasses.replace(specs["mul"], checks=("compile",), **cpu)
for name, spec in (("aborting", aborting), ("compiled", compiled)):
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        failures = run_all(spec)
    for found in failures.values():
        for failure in found:
            print(name, "FAILED", failure.case, failure.what.splitlines()[0])
    for warning in said:  # run_all's own, and Python's about its fork
        if "run_all" in str(warning.message) or "fork" in str(warning.message):
            print(name, "WARNING", str(warning.message).replace("\\n", " "))
print("still running")
"""


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.slow
def test_run_all_after_cuda_is_initialised(tmp_path):
    """The aborting kernel's empty-input cases fail naming SIGABRT, in the
    forked child, without a warning; the correct op's compile case passes,
    in the child or, where the child can't reach CUDA, here after a
    one-line warning saying so; the script goes on to the end."""
    script = tmp_path / "check.py"
    script.write_text(RUN_ALL_AFTER_CUDA)
    proc = run_python([str(script)], cwd=tmp_path)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    failed = dict(re.findall(r"^aborting FAILED (\S+) (.*)$", out, re.M))
    assert set(failed) == {
        f"abort_on_empty_mul-{c}-cpu-float32-empty" for c in ("results", "strides")
    }
    assert all("died of SIGABRT (signal 6)" in what for what in failed.values()), failed
    assert "aborting WARNING" not in out, out
    assert "compiled FAILED" not in out, out
    for warning in re.findall(r"^compiled WARNING (.*)$", out, re.M):
        assert "this process has used CUDA" in warning, warning
    assert out.rstrip().endswith("still running")


# An op that, in a forked child, meets PyTorch's refusal of CUDA there (as
# torch.compile does on a GPU machine once the parent has initialised CUDA),
# in its words; in the parent it multiplies.
FORK_REFUSED = """
import os
import warnings
import torch
from extension_cpp_testing import OpSpec, run_all

PARENT = os.getpid()

@torch.library.custom_op("fork_refused::mul", mutates_args=())
def mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if os.getpid() != PARENT:
        raise RuntimeError(
            "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
            "you must use the 'spawn' start method"
        )
    return a * b

mul.register_fake(lambda a, b: torch.empty_like(a))
spec = OpSpec(torch.ops.fork_refused.mul.default, reference=torch.mul, checks=("results",),
              layouts=("contiguous", "transposed"), dtypes=(torch.float32,), devices=("cpu",))
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    failures = run_all(spec)
print("failures", sorted(failures))
for warning in said:  # run_all's own, and Python's about its fork
    if "run_all" in str(warning.message) or "fork" in str(warning.message):
        print("WARNING", warning.message)
"""


def test_run_all_hands_back_what_a_fork_may_not_do(tmp_path):
    """A case that meets what PyTorch refuses a forked child is no failure:
    it runs in run_all's process, after one warning that says why."""
    script = tmp_path / "check.py"
    script.write_text(FORK_REFUSED)
    proc = run_python([str(script)], cwd=tmp_path)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "failures []" in out, out
    warnings = re.findall(r"^WARNING (.*)$", out, re.M)
    assert len(warnings) == 1, out
    assert warnings[0].startswith("run_all runs 2 of mul's cases in this process"), warnings
    assert "this process has used CUDA" in warnings[0], warnings
