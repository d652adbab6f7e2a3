"""Two ranks run the ops on DTensors; run by test_dtensor.py as a script.

    python tests/conformance/dtensor_worker.py RESULT.json [--backend gloo|nccl]

Each case: the ops on sharded inputs, the full result compared with the same
expression in torch ops, and the collectives the call made (CommDebugMode).
Rank 0 writes {case: {"correct": bool, "collectives": int, "placements": str}}.
"""

import argparse
import faulthandler
import importlib
import json
import os
import sys
import tempfile

import torch
import torch.distributed as dist

WORLD = 2


def cases(mesh, device, package):
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    pkg = importlib.import_module(package)  # extension_cpp or extension_cpp_stable

    g = torch.Generator().manual_seed(0)
    A, B = (torch.randn(4, 6, generator=g).to(device) for _ in range(2))

    def dt(t, placement):
        return distribute_tensor(t, mesh, [placement])

    def add_out(a, b, out):
        pkg.myadd_out(a, b, out)
        return out

    # Each case: name, its inputs as DTensors, the op, the expected result.
    # The inputs are made before the collectives are counted.
    for p in (Shard(0), Shard(1), Replicate()):
        p_name = repr(p)  # "Shard(dim=0)", "Replicate()"
        a, b, zeros = dt(A, p), dt(B, p), dt(torch.zeros_like(A), p)
        yield (
            f"mymuladd {p_name}",
            (a, b),
            lambda x, y: pkg.mymuladd(x, y, 0.5),
            A * B + 0.5,
        )
        yield f"mymul {p_name}", (a, b), pkg.mymul, A * B
        yield f"myadd_out {p_name}", (a, b, zeros), add_out, A + B
    yield (
        "mymul Shard(0) x Shard(1)",
        (dt(A, Shard(0)), dt(B, Shard(1))),
        pkg.mymul,
        A * B,
    )
    half = DTensor.from_local(A / WORLD, mesh, [Partial()])  # each rank holds half of A
    yield "mymul Partial x Replicate", (half, dt(B, Replicate())), pkg.mymul, A * B
    yield (
        "myadd_out Shard(1) inputs, Shard(0) out",
        (dt(A, Shard(1)), dt(B, Shard(1)), dt(torch.zeros_like(A), Shard(0))),
        add_out,
        A + B,
    )


def run(rank, backend, package, init_file, result_file):
    # Should a rank abort (SIGABRT) or crash, its Python stack goes to stderr,
    # which test_dtensor.py shows when the worker fails.
    faulthandler.enable()
    device = "cuda" if backend == "nccl" else "cpu"
    if device == "cuda":
        torch.cuda.set_device(rank)
    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.debug import CommDebugMode

    mesh = init_device_mesh(device, (WORLD,))
    results = {}
    for name, inputs, op, want in cases(mesh, device, package):
        with CommDebugMode() as comm:
            out = op(*inputs)
        results[name] = {
            "collectives": comm.get_total_counts(),
            "placements": str(tuple(out.placements)),
            "correct": bool(torch.allclose(out.full_tensor(), want)),
        }
    if rank == 0:
        with open(result_file, "w") as f:
            json.dump(results, f, indent=1)
    # Both ranks finish their collectives before either tears gloo down: a
    # rank that destroyed its group while the other was still in one aborted
    # ("terminate called without an active exception") now and then.
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("result")
    parser.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    parser.add_argument("--package", default="extension_cpp", help="the build under test")
    args = parser.parse_args()
    init_file = os.path.join(tempfile.mkdtemp(), "init")
    torch.multiprocessing.spawn(
        run, args=(args.backend, args.package, init_file, args.result), nprocs=WORLD
    )


if __name__ == "__main__":
    sys.exit(main())
