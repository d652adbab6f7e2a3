"""Exports a small model that uses extension_cpp's ops and compiles it with
AOTInductor into one package, for runner.cpp to run from C++.

    python examples/aoti_runner/export_model.py OUT_DIR [--device cpu|cuda]
        [--ops extension_cpp|extension_triton]

Writes OUT_DIR/model.pt2, OUT_DIR/input.bin and OUT_DIR/expected.bin (raw
float32: the input, and the eager model's result), and checks that the
package loaded back in Python gives the eager result.

``--ops extension_triton`` builds the model from the same ops written in
Triton (tutorial/appendix/triton, installed or on PYTHONPATH; CUDA only).
AOTInductor compiles their Triton kernels into the package, so the runner
then loads no library of ops.
"""

import argparse
import importlib
import os

import torch

import extension_cpp

ROWS, COLS = 8, 16


class Model(torch.nn.Module):
    """A Linear, then our ops (of the package ``ops``), then a reduction."""

    def __init__(self, ops=extension_cpp):
        super().__init__()
        self.ops = ops
        self.linear = torch.nn.Linear(COLS, COLS)

    def forward(self, x):
        y = self.linear(x)
        z = self.ops.mymuladd(y, x, 0.5)
        return self.ops.mymul(z, y).sum(dim=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument(
        "--ops", default="extension_cpp", choices=["extension_cpp", "extension_triton"]
    )
    args = parser.parse_args()
    if args.ops == "extension_triton" and args.device != "cuda":
        parser.error("--ops extension_triton: the Triton kernels run on CUDA only")
    os.makedirs(args.out_dir, exist_ok=True)

    torch.manual_seed(0)
    model = Model(importlib.import_module(args.ops)).to(args.device).eval()
    x = torch.randn(ROWS, COLS, device=args.device)
    with torch.no_grad():
        expected = model(x)
        program = torch.export.export(model, (x,))
        path = torch._inductor.aoti_compile_and_package(
            program, package_path=os.path.join(args.out_dir, "model.pt2")
        )
        from_python = torch._inductor.aoti_load_package(path)(x)
    torch.testing.assert_close(from_python, expected)
    targets = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert {f"{args.ops}.mymuladd.default", f"{args.ops}.mymul.default"} <= targets, targets

    x.cpu().numpy().tofile(os.path.join(args.out_dir, "input.bin"))
    expected.cpu().numpy().tofile(os.path.join(args.out_dir, "expected.bin"))
    print(f"wrote {path}; the package run from Python equals eager ({ROWS} values)")


if __name__ == "__main__":
    main()
