"""What the harness found in fbgemm-gpu-cpu 1.9.0, each as a reproducer in
plain PyTorch and fbgemm_gpu: no harness, a few lines, an assert that states
what should hold and fails. Those that crash the process run it in a child
process, and say how it ended.

docs/what_the_harness_found.md shows each function (between its markers)
and test_fbgemm.py runs each, expecting the assert to fail, so the page
can't keep a finding that fbgemm has fixed.
"""

import subprocess
import sys
import textwrap

import fbgemm_gpu  # noqa: F401  (registers torch.ops.fbgemm)
import torch

from .findings_helpers import fake_accepts, kernel_accepts

ops = torch.ops.fbgemm


def _run_child(code: str) -> tuple[int, list[str]]:
    """(exit code, the lines it printed) of code run by a fresh Python."""
    command = [sys.executable, "-c", textwrap.dedent(code)]
    proc = subprocess.run(command, capture_output=True, text=True)
    return proc.returncode, (proc.stdout + proc.stderr).strip().splitlines()


# [strides]
def kernels_read_strided_inputs_as_contiguous():
    x = torch.randn(16, 32)
    rows = torch.randn(32, 32)[::2]  # every other row of a matrix: 16 x 32, row stride 64
    fused = ops.FloatToFused8BitRowwiseQuantized(torch.randn(32, 32))[::2]
    csr_seg, values = torch.tensor([0, 2, 5]), torch.randn(20)[::2]  # 10 values, stride 2
    calls = {
        "FloatToFused8BitRowwiseQuantized": (ops.FloatToFused8BitRowwiseQuantized, x.t()),
        "FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf": (
            ops.FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf,
            rows,
            4,
        ),  # fmt: skip
        "Fused8BitRowwiseQuantizedToFloat": (ops.Fused8BitRowwiseQuantizedToFloat, fused),
        "segment_sum_csr": (ops.segment_sum_csr, 2, csr_seg, values),
    }
    differ = []
    for name, (op, *args) in calls.items():
        dense = [a.contiguous() if torch.is_tensor(a) else a for a in args]
        if not torch.equal(op(*args), op(*dense)):
            differ.append(name)
    # Each kernel walks data_ptr() in row-major order whatever the strides: a
    # transposed matrix, or every other row, is read as other values.
    assert differ == [], f"wrong on a strided input: {differ}"


# [strides]


# [permute-raw]
def permute_2D_sparse_data_reads_a_strided_permute_raw():
    status, said = _run_child("""
        import torch, fbgemm_gpu
        far = 1 << 30  # what the memory between permute's elements holds
        permute = torch.tensor([2, far, 0, far, 1, far], dtype=torch.int32)[::2]  # [2, 0, 1]
        lengths = torch.tensor([[1, 2], [0, 1], [2, 1]])
        try:
            torch.ops.fbgemm.permute_2D_sparse_data(permute, lengths, torch.arange(7), None)
        except RuntimeError as e:
            raise SystemExit(f"refused: {e}")
        print("permuted")
        """)  # fmt: skip
    # The lengths kernel reads permute.data_ptr() (not its contiguous copy,
    # which the values kernel reads): feature 2^30's lengths, far past the
    # tensor: SIGSEGV (-11). Permute [2, 0, 1] in any layout must work.
    assert (status, said[-1:]) == (0, ["permuted"]), f"exit {status}: {said[-1:]}"


# [permute-raw]


# [any-dtype]
def float_to_fused_8bit_rowwise_reads_any_dtype_as_float32():
    ids = torch.arange(64).view(2, 32)  # int64
    # The kernel casts data_ptr() to float*: the bytes of an int64 (or a
    # float64, or a float16) tensor are quantized as if they were float32s.
    assert not kernel_accepts(ops.FloatToFused8BitRowwiseQuantized, ids)


# [any-dtype]


# [odd-columns]
def rowwise_8bit_fake_kernels_pad_rows_the_cpu_kernels_do_not():
    x = torch.randn(4, 37)  # 37 columns: no multiple of 4
    fused = ops.FloatToFused8BitRowwiseQuantized(x)  # 37 codes, a float32 scale and bias
    real = (fused.shape[1], ops.Fused8BitRowwiseQuantizedToFloat(fused).shape[1])
    with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
        fake_fused = ops.FloatToFused8BitRowwiseQuantized(mode.from_tensor(x))
        fake_out = ops.Fused8BitRowwiseQuantizedToFloat(mode.from_tensor(fused))
    # The fake kernels (and the CUDA kernels) pad each row's codes to a
    # multiple of 4 before the scale: 48 bytes, and 40 values back, where the
    # CPU kernels give 45 and 37. torch.compile then fails its size assertion.
    fake = (fake_fused.shape[1], fake_out.shape[1])
    assert real == fake, f"(quantized bytes, dequantized values): real {real}, fake {fake}"


# [odd-columns]


# [fake-dtypes]
def fake_kernels_accept_inputs_the_kernels_refuse():
    x, csr_seg = torch.randn(4, 32), torch.tensor([0, 1, 3])
    permute, lengths = torch.tensor([1, 0]), torch.tensor([[1, 2], [0, 1]])  # an int64 permute
    calls = {  # each with one argument of a dtype the kernel refuses, with an error
        "jagged_2d_to_dense": (ops.jagged_2d_to_dense, x[:3].short(), csr_seg, 2),  # int16
        "asynchronous_complete_cumsum": (ops.asynchronous_complete_cumsum, csr_seg.double()),
        "FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf": (
            ops.FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf,
            x.double(),
            4,
        ),  # fmt: skip
        "Fused8BitRowwiseQuantizedToFloat": (ops.Fused8BitRowwiseQuantizedToFloat, x),
        "permute_2D_sparse_data": (ops.permute_2D_sparse_data, permute, lengths, torch.arange(4)),
        "segment_sum_csr": (ops.segment_sum_csr, 2, csr_seg.double(), torch.randn(6)),
        "bounds_check_indices": (
            ops.bounds_check_indices,
            torch.tensor([5.0, 5.0]),  # float rows_per_table
            torch.tensor([0, 1, 2]),
            torch.tensor([0, 1, 2, 3, 3]),
            1,
            torch.zeros(1, dtype=torch.int64),
        ),  # fmt: skip
    }
    refused = [n for n, (op, *args) in calls.items() if not kernel_accepts(op, *args)]
    # The fake kernels in fbgemm_gpu/sparse_ops.py check no dtype: torch.compile
    # traces each call, and the compiled code raises only when the kernel runs.
    compiled_only = [n for n in refused if fake_accepts(calls[n][0], *calls[n][1:])]
    assert compiled_only == [], f"fake kernels accept what the kernels refuse: {compiled_only}"


# [fake-dtypes]


# [silent-derivatives]
def derivatives_come_out_zero_instead_of_an_error():
    csr_seg, values = torch.tensor([0, 1, 3]), torch.randn(6)
    summed = torch.func.grad(lambda v: ops.segment_sum_csr(2, csr_seg, v).sum())(values)
    # segment_sum_csr registers no derivative: torch's fallback warns, then
    # torch.func gives zeros. Each value is in one sum: its derivative is 1.
    lengths, weights = torch.tensor([[1, 2], [0, 1]]), torch.rand(4)
    permute = torch.tensor([1, 0], dtype=torch.int32)
    _, tangent = torch.func.jvp(
        lambda w: ops.permute_2D_sparse_data(permute, lengths, torch.arange(4), w)[2],
        (weights,),
        (torch.ones(4),),
    )  # fmt: skip
    # permute_2D_sparse_data's backward (register_autograd) serves reverse
    # mode only; forward mode gets zeros for the permuted weights' tangent.
    values, grad = torch.randn(3, 2, requires_grad=True), torch.ones(2, 2, 2, requires_grad=True)
    dense = ops.jagged_2d_to_dense(values, csr_seg, 2)  # bags of 1 and 2 rows: all 6 values
    (first,) = torch.autograd.grad(dense, values, grad, create_graph=True)
    (second,) = torch.autograd.grad(first.sum(), grad, allow_unused=True)
    # jagged_2d_to_dense's backward, jagged_to_padded_dense_backward, has no
    # derivative of its own: the fallback warns and gives none (zeros) for
    # the second derivative, which is 1 wherever a value lands: 6 in all.
    second = 0.0 if second is None else second.sum().item()
    got = (summed.tolist(), tangent.tolist(), second)
    assert got == ([1.0] * 6, [1.0] * 4, 6.0), got


# [silent-derivatives]


# [repeating-permute]
def permute_2D_sparse_data_backward_breaks_on_a_repeating_permute():
    status, said = _run_child("""
        import torch, fbgemm_gpu
        permute = torch.tensor([2, 0, 2], dtype=torch.int32)  # feature 2 twice, 1 not at all
        lengths, ids = torch.tensor([[1, 2], [0, 1], [2, 1]]), torch.arange(7)
        weights = torch.rand(7, requires_grad=True)
        _, _, permuted = torch.ops.fbgemm.permute_2D_sparse_data(permute, lengths, ids, weights)
        permuted.sum().backward()
        print(weights.grad.tolist())
        """)  # fmt: skip
    # Each weight's gradient is how often the forward took it: feature 2's
    # twice, feature 1's never. The backward permutes the gradient by
    # invert_permute(permute), which has uninitialised elements for a permute
    # that is no permutation: "returned an invalid gradient", an allocation of
    # a garbage size, or SIGSEGV.
    want = [1.0, 1.0, 1.0, 0.0, 2.0, 2.0, 2.0]
    assert (status, said[-1:]) == (0, [str(want)]), f"exit {status}: {said[-1:]}"


# [repeating-permute]


# [out-schema]
def lengths_range_out_does_not_declare_that_it_writes_output():
    schema = ops.lengths_range_out.default._schema
    output = torch.zeros(3, dtype=torch.int64)
    ops.lengths_range_out(output, torch.tensor([3]))  # writes 0, 1, 2 into output
    # `Tensor output`, not `Tensor(a!) output`: torch.compile and
    # functionalization take the op for a pure function of output.
    assert schema.arguments[0].is_write, str(schema)


# [out-schema]


# [out-fake]
def lengths_range_out_has_no_fake_kernel():
    output, lengths = torch.empty(3, dtype=torch.int64), torch.tensor([3])
    # lengths_range has one (sparse_ops.py); lengths_range_out none, so
    # torch.compile and torch.export raise UnsupportedOperatorException.
    assert fake_accepts(ops.lengths_range_out, output, lengths)


# [out-fake]


# [out-strides]
def lengths_range_out_writes_output_as_if_contiguous():
    lengths = torch.tensor([3, 2])
    every_other = torch.zeros(10, dtype=torch.int64)[::2]  # 5 elements, stride 2
    ops.lengths_range_out(every_other, lengths)
    strided = every_other.tolist()  # 0, 1, 2, 0, 1 written into 0, gap, 1, gap, 2
    status, said = _run_child("""
        import torch, fbgemm_gpu
        output = torch.empty(1, dtype=torch.int64).expand(65536)  # 8 bytes of memory
        try:
            torch.ops.fbgemm.lengths_range_out(output, torch.full((64,), 1024))
        except RuntimeError as e:
            raise SystemExit(f"refused: {e}")
        """)  # fmt: skip
    # resize_ keeps an output that has the right size, whatever its strides,
    # and the kernel writes from data_ptr() as if it were contiguous: a
    # strided output gets its values in the gaps; an expanded one of 8 bytes
    # gets 65536 values, and the process dies of the heap it corrupted
    # (SIGSEGV or SIGABRT, at once or at exit).
    expanded = said[-1] if said else "nothing printed"
    got = (strided, expanded.startswith("refused") or f"exit {status}: {expanded}")
    assert got == ([0, 1, 2, 0, 1], True), got


# [out-strides]


# [out-overlap]
def lengths_range_out_takes_an_output_that_overlaps_its_lengths():
    memory = torch.tensor([3, 2, 0, 0, 0, 0])
    lengths, output = memory[:2], memory[1:]  # output starts at the second length
    # No overlap check (torch's out= ops raise "some elements of the input
    # tensor and the written-to tensor refer to a single memory location"):
    # its first 0 overwrites the length 2, and output ends [.., 0, 0], not
    # the ranges of [3, 2], [0, 1, 2, 0, 1].
    assert not kernel_accepts(ops.lengths_range_out, output, lengths), memory.tolist()


# [out-overlap]


# [mixed-offsets]
def bounds_check_indices_drops_repairs_to_offsets_of_another_dtype():
    indices = torch.tensor([0, 1, 2])
    offsets = torch.tensor([0, 1, 2, 3, 5], dtype=torch.int32)  # the last is past the indices
    ignore = 2  # BoundsCheckMode.IGNORE: repair, quietly
    rows_per_table, warning = torch.tensor([5, 5]), torch.zeros(1, dtype=torch.int64)
    ops.bounds_check_indices(rows_per_table, indices, offsets, ignore, warning)
    # The kernel converts offsets to indices' dtype, into a copy, and repairs
    # the copy: the caller's offsets still end at 5, past the 3 indices.
    assert offsets[-1] == indices.numel(), offsets.tolist()


# [mixed-offsets]


# [jagged-offsets]
def jagged_2d_to_dense_takes_offsets_it_cannot_use():
    values = torch.randn(6, 2)
    taken = []
    for what, offsets in {
        "decreasing": torch.tensor([0, 4, 3, 6]),
        "past the values": torch.tensor([0, 2, 4, 10]),  # bag 2 ends 4 rows past the 6
    }.items():
        try:
            ops.jagged_2d_to_dense(values, offsets, 4)
        except RuntimeError:
            continue
        taken.append(what)
    # No check that the offsets rise and stay inside the values: a bag whose
    # end is before its start comes out empty, and the last bag above reads
    # the memory past the values' 6 rows into its last 2 rows.
    assert taken == [], f"offsets taken without an error: {taken}"


# [jagged-offsets]


# Every reproducer, in the page's order.
FINDINGS = [
    kernels_read_strided_inputs_as_contiguous,
    permute_2D_sparse_data_reads_a_strided_permute_raw,
    float_to_fused_8bit_rowwise_reads_any_dtype_as_float32,
    rowwise_8bit_fake_kernels_pad_rows_the_cpu_kernels_do_not,
    fake_kernels_accept_inputs_the_kernels_refuse,
    derivatives_come_out_zero_instead_of_an_error,
    permute_2D_sparse_data_backward_breaks_on_a_repeating_permute,
    lengths_range_out_does_not_declare_that_it_writes_output,
    lengths_range_out_has_no_fake_kernel,
    lengths_range_out_writes_output_as_if_contiguous,
    lengths_range_out_takes_an_output_that_overlaps_its_lengths,
    bounds_check_indices_drops_repairs_to_offsets_of_another_dtype,
    jagged_2d_to_dense_takes_offsets_it_cannot_use,
]
