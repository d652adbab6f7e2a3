"""The mutants no test can kill here, each with the reason: `make mutate`
counts them apart from the survivors. A key is (file, the line before, the
line after), as `python tools/mutate --list` prints them."""

EQUIVALENT: dict = {
    (
        "csrc/input_checks.h",
        "require<View>(xt.same_device(yt),",
        "require<View>(true,",
    ): "on a CPU-only machine only a CPU/meta pair differs in device, and it dispatches to the "
    "fake kernel, which checks the device itself; the CUDA device-mismatch tests kill it",
    (
        "csrc/ops.cpp",
        "return t.device() == other.t.device();",
        "return true;",
    ): "as the device check above: only a GPU run has two devices that reach the kernel",
    (
        "csrc/input_checks.h",
        "out.numel() == 0 || input.numel() == 0 ||",
        "out.numel() == 0 ||",
    ): "the shape checks run first: out has the inputs' shape, so an empty input means an "
    "empty out, which the first test already lets through",
    # a * b and a * b + c are the same numbers with a and b swapped: one
    # rounding of the same product (float multiplication commutes, and so does
    # the fused multiply-add's).
    (
        "extension_cpp/_library.py",
        "return mymuladd(a, b, c), 0",
        "return (mymuladd(b, a, c)), 0",
    ): "the batching rule's call: both inputs are already batched alike, and the op commutes",
    (
        "extension_cpp/_library.py",
        "return mymul(a, b), 0",
        "return (mymul(b, a)), 0",
    ): "the batching rule's call: both inputs are already batched alike, and the op commutes",
    (
        "extension_cpp/_library.py",
        "a, b = _batch_first(info, in_dims[:2], a, b)",
        "a, b = _batch_first(info, in_dims[:(3)], a, b)",
    ): "_batch_first pairs in_dims with the two tensors given; a third entry (c's) is never read",
    (
        "extension_cpp/_checks.py",
        "if out.numel() == 0 or t.numel() == 0 or not torch._C._is_alias_of(out, t):",
        "if out.numel() == 0 or t.numel() == 0 or not (torch._C._is_alias_of(t, out)):",
    ): "sharing a storage is symmetric",
    (
        "extension_cpp/_autocast.py",
        "return torch.promote_types(a.dtype, b.dtype)",
        "return (torch.promote_types(b.dtype, a.dtype))",
    ): "type promotion is symmetric",
    (
        "extension_cpp/_autocast.py",
        "dtype = _widest(a, b)",
        "dtype = (_widest(b, a))",
    ): "type promotion is symmetric",
    (
        "extension_cpp/_autocast.py",
        "if a is None or b is None or not (a.is_floating_point() and b.is_floating_point()):",
        "if a is None or b is None or not ((a.is_floating_point() or b.is_floating_point())):",
    ): "_cast touches floating-point inputs only, so a non-floating input still reaches the "
    "kernel's dtype check unchanged, whichever dtype is chosen",
    # The harness's bit comparison: same_bits(x, y) views both tensors as
    # integers of x's width, and the callers pass two tensors of one dtype.
    (
        "harness/extension_cpp_testing/checks/base.py",
        "return torch.equal(x, y)",
        "return (torch.equal(y, x))",
    ): "torch.equal is symmetric",
    (
        "harness/extension_cpp_testing/checks/base.py",
        "return torch.equal(x.view(bits), y.view(bits))",
        "return (torch.equal(y.view(bits), x.view(bits)))",
    ): "torch.equal is symmetric",
    (
        "harness/extension_cpp_testing/checks/results.py",
        "if not same_bits(args[i], before[i]):",
        "if not (same_bits(before[i], args[i])):",
    ): "before[i] is a clone of args[i], so both have one dtype, and equal bits are symmetric",
    # Layout code that chooses how to walk, not what is computed.
    (
        "csrc/elementwise.h",
        "if (sizes[d] >= 2) {\n      dims[n++] = d;",
        "if (sizes[d] >= 1) {\n      dims[n++] = d;",
    ): "is_dense: dense_in_order skips size-1 dimensions, and the stable sort keeps the "
    "others in the same order whether or not size-1 ones are among them",
    (
        "csrc/fast/layout.h",
        "l.strides[t][0] != 1 && l.strides[t][1] == 1",
        "l.strides[t][1] == 1",
    ): "an input with stride 1 in both of the layout's first two dimensions overlaps itself; "
    "the tiled loops read any strides, so taking them for it changes the loop, not the "
    "values (test_kernel_paths' overlapping-window case passes either way)",
    (
        "csrc/elementwise.h",
        "if (l.numel == 0) {\n    l.ndim = 1;",
        "if (l.numel < 0) {\n    l.ndim = 1;",
    ): "the simple kernels run no loop over an empty layout (parallel_for over 0 elements, the "
    "CUDA launcher's early return), so its dimensions are never read; the reset to one empty "
    "run is for the fast paths' choice of loop",
    (
        "csrc/elementwise.h",
        "return sizes[0] < 2 || strides[0] == 1;",
        "return strides[0] == 1;",
    ): "unreachable: a 1-D tensor of size 0 or 1 is contiguous, and elementwise_output_strides "
    "returns before it calls is_dense when both inputs are",
}
