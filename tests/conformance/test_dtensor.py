"""DTensor: the ops on sharded tensors, with PyTorch's own distributed engine.

Two ranks (dtensor_worker.py) run every op on DTensors: identically sharded
(Shard(0), Shard(1)) or replicated inputs run shard-locally with no
collective; differently sharded inputs are redistributed, and the result is
still right; myadd_out's out keeps its own placement. CPU with gloo here, and
NCCL on two GPUs where there are two.
"""

import json
import os

import pytest
import torch
from child_process import run_python

from .cases import PACKAGE, requires_two_gpus

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dtensor_worker.py")

pytestmark = pytest.mark.skipif(not torch.distributed.is_available(), reason="no torch.distributed")

BACKENDS = [
    "gloo",
    pytest.param("nccl", marks=[requires_two_gpus, pytest.mark.cuda]),
]


@pytest.fixture(scope="module", params=BACKENDS)
def results(request, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("dtensor") / "results.json"
    command = [WORKER, str(out), "--backend", request.param, "--package", PACKAGE]
    run = run_python(command, timeout=300)
    if run.returncode != 0 and TEARDOWN_ABORT in run.stderr:
        # gloo's threads, at a rank's exit, now and then (1 run in 3 of the
        # stable build's suite here on 2026-11-25, after the barrier in
        # dtensor_worker.py; "<no Python frame>" in the dump). One more run;
        # a second abort, or any other failure, fails the test.
        run = run_python(command, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(out.read_text())


TEARDOWN_ABORT = "terminate called without an active exception"


LOCAL = [
    f"{op} {p}"
    for p in ("Shard(dim=0)", "Shard(dim=1)", "Replicate()")
    for op in ("mymuladd", "mymul", "myadd_out")
]


@pytest.mark.slow
def test_every_case_is_correct(results):
    wrong = [name for name, r in results.items() if not r["correct"]]
    assert not wrong, wrong


@pytest.mark.slow
@pytest.mark.parametrize("case", LOCAL)
def test_alike_sharded_inputs_run_shard_locally(results, case):
    assert results[case]["collectives"] == 0
    placement = case.split(" ", 1)[1]
    if not case.startswith("myadd_out"):
        assert results[case]["placements"] == f"({placement},)"


@pytest.mark.slow
def test_differently_sharded_inputs_are_redistributed(results):
    r = results["mymul Shard(0) x Shard(1)"]
    assert r["collectives"] >= 1
    assert r["correct"]


@pytest.mark.slow
def test_partial_times_replicate_stays_partial(results):
    r = results["mymul Partial x Replicate"]
    assert r["placements"] == "(Partial(sum),)"
    assert r["collectives"] == 0


@pytest.mark.slow
def test_myadd_out_keeps_outs_placement(results):
    r = results["myadd_out Shard(1) inputs, Shard(0) out"]
    assert r["correct"], "the sum went to a redistributed copy of out"
    assert r["placements"] == "(Shard(dim=0),)"


@pytest.mark.parametrize(
    "order",
    [
        f"import {PACKAGE}\nimport torch.distributed.tensor",
        f"import torch.distributed.tensor\nimport {PACKAGE}",
    ],
    ids=["package-first", "dtensor-first"],
)
def test_rules_registered_whatever_the_import_order(order):
    code = order + (
        "\nimport sys\nfrom torch.distributed.tensor import DTensor\n"
        "funcs = DTensor._op_dispatcher.sharding_propagator.op_strategy_funcs\n"
        f"print(sorted(str(k) for k in funcs if '{PACKAGE}.' in str(k)))\n"
    )
    run = run_python(["-c", code])
    assert run.returncode == 0, run.stderr
    assert f"{PACKAGE}.myadd_out.default" in run.stdout
    assert f"{PACKAGE}.mymul.default" in run.stdout
    assert f"{PACKAGE}.mymuladd.default" in run.stdout


def test_import_does_not_load_dtensor():
    code = f"import sys, {PACKAGE}\nprint('torch.distributed.tensor' in sys.modules)"
    run = run_python(["-c", code])
    assert run.stdout.strip() == "False", run.stderr
