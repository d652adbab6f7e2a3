"""The census on the libraries the harness is proven on: from the dispatcher
alone it lists every op their specs check with what each lacks, which is
what the specs' failures are told to fix; and its starter spec file
collects and runs (each case skipped until its samples are written)."""

import importlib

import pytest
from harness_zoo.processes import run_python

from extension_cpp_testing.census import report
from extension_cpp_testing.registrations import CAUSES, NO_AUTOGRAD_FIX, missing, registrations

NO_AUTOGRAD = CAUSES[NO_AUTOGRAD_FIX]

# namespace -> (the module that registers its ops, this folder's specs module)
LIBRARIES = {
    "torchvision": ("torchvision", "torchvision_specs"),
    "bitsandbytes": ("bitsandbytes", "bitsandbytes_specs"),
    "fbgemm": ("fbgemm_gpu", "fbgemm_specs"),
}


@pytest.mark.parametrize("namespace", LIBRARIES)
def test_the_census_lists_what_each_specd_op_lacks(namespace):
    module, specs = LIBRARIES[namespace]
    pytest.importorskip(module)
    specs = importlib.import_module(f"{__package__}.{specs}").SPECS
    blocks, head = {}, None
    for line in report(namespace).splitlines():  # a schema, then its indented lines
        head = head if line.startswith(" ") else line
        blocks[head] = f"{blocks.get(head, '')}{line}\n"
    for spec in specs.values():
        overload = spec.resolved_overload()
        if overload is None:
            continue
        block = blocks[str(overload._schema)]
        for lacking in missing(registrations(overload)):
            assert lacking.cause in block, block
        if not spec.differentiable and "no autograd kernel" in block:
            # The census sees no dtypes: it says when autograd is needed at all.
            assert "no autograd kernel (autograd, if an output is floating-point" in block


@pytest.mark.parametrize("namespace", LIBRARIES)
def test_the_starter_spec_collects_and_runs(namespace, tmp_path):
    module, specs = LIBRARIES[namespace]
    pytest.importorskip(module)
    # fbgemm has some 260 ops: its spec file for the ops its specs check.
    names = importlib.import_module(f"{__package__}.{specs}").SPECS
    ops = "|".join(
        s.resolved_overload()._opname for s in names.values() if s.resolved_overload() is not None
    )
    starter = tmp_path / f"test_{namespace}_starter.py"
    census = run_python(
        ["-m", "extension_cpp_testing", "census", namespace, "--import", module]
        + ["--ops", ops, "--spec", str(starter)]
    )
    assert census.returncode == 0, census.stderr[-3000:]
    run = run_python(
        ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", str(starter)],
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    # An op without an autograd kernel: the declaration to make, if its outputs are integer.
    text = starter.read_text()
    for spec in names.values():
        overload = spec.resolved_overload()
        if overload is None:
            continue
        if NO_AUTOGRAD not in {m.cause for m in missing(registrations(overload))}:
            continue
        line = f"torch.ops.{namespace}.{overload._opname}.{overload._overloadname},"
        block = text[text.index(line) :].split("\n\n")[0]
        assert "# differentiable=False,  # no autograd kernel" in block, block
    summary = run.stdout.strip().splitlines()[-1]
    assert " skipped" in summary, summary
    assert "passed" not in summary, summary
    assert "failed" not in summary, summary
