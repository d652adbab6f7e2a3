"""The mutants no test can kill here, each with the reason: `make mutate`
counts them apart from the survivors. A key is (file, the line before, the
line after), as `python scripts/mutate.py --list` prints them."""

EQUIVALENT: dict = {
    (
        "csrc/ops.cpp",
        "TORCH_CHECK(xt.device() == yt.device(),",
        "TORCH_CHECK(true,",
    ): "on a CPU-only machine only a CPU/meta pair differs in device, and it dispatches to the "
    "fake kernel, which checks the device itself; the CUDA device-mismatch tests kill it",
}
