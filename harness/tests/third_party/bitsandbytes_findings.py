"""What the harness found in bitsandbytes 0.50.2, each as a reproducer in
plain PyTorch and bitsandbytes: no harness, a few lines, an assert that
states what should hold and fails (on the CPU; ON_THIS_CPU says which need
an AVX512-BF16 CPU, NEEDS_CUDA which need a GPU).

docs/what_the_harness_found.md shows each function (between its markers)
and test_bitsandbytes.py runs each, expecting the assert to fail, so the
page can't keep a finding that bitsandbytes has fixed.
"""

import subprocess
import sys
import textwrap

import bitsandbytes.functional as F
import torch
from bitsandbytes.functional import create_dynamic_map, get_4bit_type, has_avx512bf16
from torch._subclasses.fake_tensor import FakeTensorMode

from .findings_helpers import fake_accepts, kernel_accepts

ops = torch.ops.bitsandbytes
CODE = create_dynamic_map()  # the 8-bit code of the blockwise ops


# [strides]
def fake_kernels_lay_out_a_transposed_input_otherwise():
    x = torch.randn(64, 8).t()  # 8 x 64, stored column by column
    codes = torch.randint(0, 256, (64, 8), dtype=torch.uint8).t()
    calls = {
        "int8_vectorwise_quant": (ops.int8_vectorwise_quant, x, 0.0),
        "quantize_blockwise": (ops.quantize_blockwise, x, CODE, 64),
        "dequantize_blockwise": (ops.dequantize_blockwise, codes, torch.ones(8), CODE, 64, x.dtype),
    }
    differ = {}
    for name, (op, *args) in calls.items():
        with FakeTensorMode() as mode:
            fake = op(*[mode.from_tensor(a) if torch.is_tensor(a) else a for a in args])
        real = op(*args)
        if isinstance(real, tuple):  # (codes, scales): the codes
            real, fake = real[0], fake[0]
        if real.stride() != fake.stride():
            differ[name] = (real.stride(), fake.stride())
    # torch.compile then fails: "expected size 8==8, stride 1==64 at dim=0"
    assert not differ, f"(real, fake) strides: {differ}"


# [strides]


# [zero]
def quantize_blockwise_never_picks_the_codes_nearest_zero():
    x = torch.tensor([0.0, 1e-6, 5e-6] + [1.0] * 61)  # one block of 64
    codes, absmax = ops.quantize_blockwise(x, CODE, 64)
    # The code holds 0, 5.5e-07, 3.25e-06 and 7.75e-06 (of absmax); the CPU
    # kernel gives all three values 2.125e-05, four codes from zero.
    got = CODE[codes[:3].long()].tolist()
    assert got[0] == 0.0, got


# [zero]


# [n-d]
def default_kernels_mishandle_inputs_of_more_than_two_dimensions():
    x = torch.randn(2, 3, 64)  # 6 rows of 64, as a batch of 2
    codes = torch.randint(-127, 128, (2, 3, 64), dtype=torch.int8)
    sums = torch.randint(-(2**20), 2**20, (2, 3, 64), dtype=torch.int32)
    # The fake kernels take them, and give outputs of x's shape; the kernels
    # raise "The size of tensor a (3) must match the size of tensor b (64)",
    quant = kernel_accepts(ops.int8_vectorwise_quant, x, 0.0)
    dequant = kernel_accepts(ops.int8_vectorwise_dequant, codes, torch.rand(6))
    # or return a matrix.
    out = ops.int8_mm_dequant(sums, torch.rand(6), torch.rand(64), torch.float32)
    assert (quant, dequant, out.shape) == (True, True, sums.shape), list(out.shape)


# [n-d]


# [mm-dequant]
def int8_mm_dequant_scales_by_a_mistyped_constant():
    A = torch.tensor([[127 * 127]], dtype=torch.int32)  # a sum of int8 products
    one = torch.ones(1)
    out = ops.int8_mm_dequant(A, one, one, torch.float32)
    # A / (127 * 127) with scales of 1 is 1; the kernel multiplies by 6.200124e-05,
    # where 1 / (127 * 127) is 6.2000124e-05: 1.0000180.
    assert out.item() == 1.0, out.item()


# [mm-dequant]


# [gemv]
def gemv_4bit_computes_something_else_on_an_avx512_bf16_cpu():
    weight = torch.randn(64, 64)
    B, absmax = ops.quantize_4bit(weight, 64, "nf4", torch.uint8)
    A = torch.randn(1, 64)
    got = ops.gemv_4bit(A, B, [64, 64], absmax, get_4bit_type("nf4", device="cpu"), 64)
    want = A @ ops.dequantize_4bit(B, absmax, 64, "nf4", [64, 64], torch.float32).t()
    # The CPU kernel reads B in another layout (bitsandbytes' nn.Linear4bit
    # repacks its weights for it first), where other CPUs use the default kernel.
    assert torch.allclose(got, want, rtol=0.05, atol=0.05), (got - want).abs().max()


# [gemv]


# [gemv-abort]
def gemv_4bit_aborts_the_process_for_8_outputs():
    child = textwrap.dedent("""
        import torch, bitsandbytes.functional as F
        B, absmax = torch.ops.bitsandbytes.quantize_4bit(torch.randn(8, 64), 64, "nf4", torch.uint8)
        torch.ops.bitsandbytes.gemv_4bit(
            torch.randn(1, 64), B, [8, 64], absmax, F.get_4bit_type("nf4", device="cpu"), 64)
        """)  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    # "[bitsandbytes] Unexpected block size 1x8", then SIGABRT: -6
    said = (proc.stdout + proc.stderr).strip().splitlines()
    assert proc.returncode == 0, f"exit {proc.returncode}: {said[-1]}"


# [gemv-abort]


# [int-shape]
def dequantize_4bit_compiles_again_for_every_shape():
    graphs = []
    compiled = torch.compile(
        lambda A, absmax, shape: ops.dequantize_4bit(A, absmax, 64, "nf4", shape, torch.float32),
        backend=lambda graph, inputs: graphs.append(graph) or graph,
        dynamic=True,
    )
    for rows in (2, 4, 8):  # rows x 64 values: rows x 32 bytes, one absmax a row
        compiled(torch.zeros(rows * 32, 1, dtype=torch.uint8), torch.ones(rows), [rows, 64])
    # The schema's `int[] shape` is specialised on its value; a SymInt[] would not be.
    assert len(graphs) == 1, f"{len(graphs)} graphs for 3 shapes"


# [int-shape]


# [out]
def out_overloads_have_no_cpu_kernel():
    codes = torch.randint(0, 256, (64,), dtype=torch.uint8)
    packed = torch.randint(0, 256, (32, 1), dtype=torch.uint8)  # 64 4-bit codes
    absmax, out = torch.ones(1), torch.empty(1, 64)
    # NotImplementedError: Could not run 'bitsandbytes::dequantize_blockwise.out'
    # with arguments from the 'CPU' backend (and dequantize_4bit.out).
    blockwise = kernel_accepts(
        lambda: F.dequantize_blockwise(codes, absmax=absmax, code=CODE, out=out[0], blocksize=64)
    )
    four_bit = kernel_accepts(
        lambda: F.dequantize_4bit(packed, absmax=absmax, out=out, blocksize=64, quant_type="nf4")
    )
    assert (blockwise, four_bit) == (True, True)


# [out]


# [float32-sums]
def int8_linear_matmul_out_sums_in_float32():
    A = torch.full((1, 4099), 127, dtype=torch.int8)  # int8 codes at their largest
    out = torch.empty(1, 1, dtype=torch.int32)
    F.int8_linear_matmul(A, A, out=out)  # the .out kernel: a float32 matmul, then int32
    # (On CUDA both overloads do, where K is not a multiple of 4, as 4099 is.)
    assert out.item() == 127 * 127 * 4099, f"{out.item()} != {127 * 127 * 4099}"


# [float32-sums]


# [dtypes]
def _refused_dtypes(x, codes, state) -> dict:
    """Calls with one argument of a dtype the op's fake kernel refuses."""
    # 64 outputs: 8 would abort on an AVX512-BF16 CPU (gemv_4bit_aborts_the_process_for_8_outputs).
    weight, absmax = ops.quantize_4bit(torch.randn(64, 64), 64, "nf4", torch.uint8)
    return {
        "quantize_blockwise": (ops.quantize_blockwise, x.long(), CODE, 64),
        "quantize_4bit": (ops.quantize_4bit, x.long(), 64, "nf4", torch.uint8),
        "dequantize_blockwise": (
            ops.dequantize_blockwise,
            x.double(),
            torch.ones(8),
            CODE,
            64,
            torch.float32,
        ),  # fmt: skip
        "int8_vectorwise_dequant": (ops.int8_vectorwise_dequant, x.double(), torch.ones(8)),
        "int8_linear_matmul.out": (
            ops.int8_linear_matmul.out,
            x,
            codes,
            torch.empty(8, 8, dtype=torch.int32),
        ),  # fmt: skip
        "optimizer_update_32bit": (
            ops.optimizer_update_32bit,
            "momentum",
            state[0].long(),
            *state[1:],
            None,
            None,
            0.0,
            0.0,
            0.9,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            1,
            0.1,
            1.0,
            False,
        ),  # fmt: skip
        # On a CPU without AVX512 (int8_linear_matmul) or AVX512-BF16
        # (gemv_4bit), bitsandbytes' default kernels take these.
        "int8_linear_matmul": (ops.int8_linear_matmul, x, codes),
        "gemv_4bit": (
            ops.gemv_4bit,
            x[:1].long(),
            weight,
            [64, 64],
            absmax,
            get_4bit_type("nf4", device="cpu"),
            64,
        ),  # fmt: skip
    }


def kernels_accept_what_fake_kernels_refuse() -> list[str]:
    """The ops whose kernel here takes an argument of a dtype their fake
    kernel refuses (test_bitsandbytes.py's known failures follow it)."""
    x = torch.randn(8, 64)
    codes = torch.randint(-127, 128, (8, 64), dtype=torch.int8)
    state = [torch.randn(8, 64), torch.zeros(8, 64), torch.zeros(8, 64)]
    calls = _refused_dtypes(x, codes, state)
    return [n for n, (op, *args) in calls.items() if kernel_accepts(op, *args)]


def fake_kernels_and_kernels_refuse_different_inputs():
    eager_only = kernels_accept_what_fake_kernels_refuse()
    x = torch.randn(8, 64)
    codes = torch.randint(-127, 128, (8, 64), dtype=torch.int8)
    state = [torch.randn(8, 64), torch.zeros(8, 64), torch.zeros(8, 64)]  # g, p, state1
    # And the other way: an out of one element a row, expanded, which the kernel refuses,
    expanded = torch.empty(8, 1, dtype=torch.int32).expand(8, 8)
    refused = {"int8_linear_matmul.out": (ops.int8_linear_matmul.out, codes, codes, expanded)}
    if torch.cuda.is_available():  # and on CUDA: a float32 input, a bfloat16 momentum, two devices
        refused["int8_vectorwise_quant"] = (ops.int8_vectorwise_quant, x.cuda(), 0.0)
        g, p = (t.bfloat16().cuda() for t in state[:2])
        step = _refused_dtypes(x, codes, state)["optimizer_update_32bit"]  # (op, name, g, p, ...)
        refused["optimizer_update_32bit"] = (*step[:2], g, p, state[2].cuda(), *step[5:])
        refused["int8_vectorwise_dequant"] = (
            ops.int8_vectorwise_dequant,
            codes.cuda(),
            torch.ones(8),
        )
        refused["int8_linear_matmul"] = (ops.int8_linear_matmul, codes.cuda(), codes)
    compiled_only = [
        n for n, (op, *a) in refused.items() if fake_accepts(op, *a) and not kernel_accepts(op, *a)
    ]
    assert (eager_only, compiled_only) == ([], [])


# [dtypes]


# [autodiff]
def derivatives_come_out_zero_instead_of_an_error():
    codes = torch.randint(0, 256, (64,), dtype=torch.uint8)

    def dequantized_sum(absmax):
        return ops.dequantize_blockwise(codes, absmax, CODE, 64, torch.float32).sum()

    # UserWarning: an autograd kernel was not registered to the Autograd key(s) ...
    grad = torch.func.grad(dequantized_sum)(torch.ones(1))
    # The sum is linear in absmax: its derivative is the sum of the codes' values.
    assert grad.item() == CODE[codes.long()].sum().item(), grad


# [autodiff]


# [4bit-out-fake]
def dequantize_4bit_out_fake_kernel_refuses_every_out():
    packed, absmax = torch.zeros(32, 1, dtype=torch.uint8), torch.ones(1)  # 64 4-bit codes
    out = torch.empty(1, 64)
    # "Expected out.shape == [1, 64], got torch.Size([1, 64])": the schema's
    # int[] comes as a list, which no torch.Size equals.
    assert fake_accepts(ops.dequantize_4bit.out, packed, absmax, 64, "nf4", [1, 64], out.dtype, out)


# [4bit-out-fake]


# On a GPU.


# [cuda-stream]
def cuda_kernels_run_on_the_legacy_default_stream():
    x, code = torch.randn(64 * 1024, device="cuda"), CODE.cuda()
    want, _ = ops.quantize_blockwise(x, code, 64)
    y = torch.zeros_like(x)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # work queued on a side stream, as a pipeline does:
        torch.cuda._sleep(400_000_000)  # the stream is busy for a while (~0.2 s),
        y.copy_(x)  # then writes the input,
        got, _ = ops.quantize_blockwise(y, code, 64)  # then quantizes it
    side.synchronize()
    # quantize_blockwise, quantize_4bit and optimizer_update_32bit launch with
    # <<<grid, block>>> alone: on the legacy default stream, during the sleep,
    # on zeros (and a CUDA graph captures nothing).
    assert torch.equal(got, want), "quantize_blockwise did not wait for its stream"


# [cuda-stream]


# [cuda-strides]
def cuda_kernels_take_strided_tensors_as_contiguous():
    sums = torch.randint(-(2**20), 2**20, (64, 8), dtype=torch.int32, device="cuda").t()
    row_stats, col_stats = torch.rand(8, device="cuda"), torch.rand(64, device="cuda")
    got = ops.int8_mm_dequant(sums, row_stats, col_stats, torch.float16)  # 8 x 64, column by column
    want = ops.int8_mm_dequant(sums.contiguous(), row_stats, col_stats, torch.float16)
    # The kernels walk data_ptr() in row-major order whatever the strides: a
    # transposed input, or a non-contiguous out (an expanded one is written
    # past its memory, without an error).
    assert torch.equal(got, want), f"{(got != want).sum()} of {got.numel()} differ"


# [cuda-strides]


# [cuda-devices]
def cuda_kernels_read_a_cpu_tensor_without_a_check():
    child = textwrap.dedent("""
        import torch, bitsandbytes.functional as F
        A, absmax = torch.zeros(64, dtype=torch.uint8, device="cuda"), torch.ones(1, device="cuda")
        code = F.create_dynamic_map()  # on the CPU
        try:
            torch.ops.bitsandbytes.dequantize_blockwise(A, absmax, code, 64, torch.float32)
        except RuntimeError as e:
            raise SystemExit(f"refused: {e}")
        torch.cuda.synchronize()
        """)  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    # The kernel reads the CPU address: "CUDA error: an illegal memory access
    # was encountered", at the next synchronisation.
    said = [line for line in proc.stderr.splitlines() if "refused" in line or "CUDA error" in line]
    last = (said or [f"exit {proc.returncode}, and no error"])[-1]
    assert "refused" in last, last


# [cuda-devices]


# [mm-dequant-float16]
def int8_mm_dequant_computes_in_float16_on_cuda():
    A = torch.tensor([[2**20]], dtype=torch.int32, device="cuda")  # a sum of int8 products
    scale = torch.full((1,), 127.0, device="cuda")  # the scales cancel its 1 / (127 * 127)
    out = ops.int8_mm_dequant(A, scale, scale, torch.float32)
    # The kernel writes float16, then converts: 2^20 is past float16's 65504.
    assert abs(out.item() / 2**20 - 1) < 1e-3, out.item()


# [mm-dequant-float16]


# [cuda-dispatch]
def quantize_4bit_on_cuda_raises_unbound_local_error_for_float64():
    x = torch.randn(64, dtype=torch.float64, device="cuda")
    try:
        ops.quantize_4bit(x, 64, "nf4", torch.uint8)
        error = None
    except Exception as e:  # noqa: BLE001  (which error is the finding)
        error = e
    # No branch for other dtypes (gemv_4bit's neither): "cannot access local variable 'fn'".
    assert isinstance(error, RuntimeError), repr(error)


# [cuda-dispatch]


# [momentum-float16]
def momentum_drops_weight_decay_in_float16_on_cuda():
    g, p = torch.ones(64, dtype=torch.float16), torch.full((64,), 0.01, dtype=torch.float16)
    state1 = torch.zeros(64, device="cuda")
    decay = 0.01  # momentum's first step: state1 = g + decay * p, in float32
    want = 1 + decay * p[0].item()
    ops.optimizer_update_32bit(
        "momentum", g.cuda(), p.cuda(), state1, None, None, 0.0, 0.0, 0.9, 0.0, 0.0, 0.0, 0.0,
        decay, 1, 0.1, 1.0, False,
    )  # fmt: skip
    # The kernel stores g + decay * p in g's float16 first, where 1.0001 is 1.0.
    assert abs(state1[0].item() - want) < 1e-6, f"{state1[0].item()}, not {want}"


# [momentum-float16]


# [gemv-rows]
def gemv_4bit_reads_only_the_first_row_on_cuda():
    B, absmax = ops.quantize_4bit(torch.randn(64, 64, device="cuda"), 64, "nf4", torch.uint8)
    weight = ops.dequantize_4bit(B, absmax, 64, "nf4", [64, 64], torch.float32)
    A = torch.randn(2, 64, device="cuda")  # two rows, as the fake and CPU kernels take
    got = ops.gemv_4bit(A, B, [64, 64], absmax, get_4bit_type("nf4", device="cuda"), 64)
    # Row 1 is whatever the output's memory held (a check for one row is commented out).
    assert torch.allclose(got, A @ weight.t(), atol=1e-4), (got - A @ weight.t()).abs().amax(1)


# [gemv-rows]


# Every reproducer, in the page's order.
FINDINGS = [
    fake_kernels_lay_out_a_transposed_input_otherwise,
    quantize_blockwise_never_picks_the_codes_nearest_zero,
    default_kernels_mishandle_inputs_of_more_than_two_dimensions,
    int8_mm_dequant_scales_by_a_mistyped_constant,
    gemv_4bit_computes_something_else_on_an_avx512_bf16_cpu,
    gemv_4bit_aborts_the_process_for_8_outputs,
    dequantize_4bit_compiles_again_for_every_shape,
    out_overloads_have_no_cpu_kernel,
    int8_linear_matmul_out_sums_in_float32,
    fake_kernels_and_kernels_refuse_different_inputs,
    derivatives_come_out_zero_instead_of_an_error,
    dequantize_4bit_out_fake_kernel_refuses_every_out,
    cuda_kernels_run_on_the_legacy_default_stream,
    cuda_kernels_take_strided_tensors_as_contiguous,
    cuda_kernels_read_a_cpu_tensor_without_a_check,
    int8_mm_dequant_computes_in_float16_on_cuda,
    quantize_4bit_on_cuda_raises_unbound_local_error_for_float64,
    momentum_drops_weight_decay_in_float16_on_cuda,
    gemv_4bit_reads_only_the_first_row_on_cuda,
]
# The reproducers that need a GPU.
NEEDS_CUDA = set(FINDINGS[FINDINGS.index(cuda_kernels_run_on_the_legacy_default_stream) :])
# The findings a CPU shows only with AVX512-BF16 (bitsandbytes then picks its
# own gemv_4bit kernel).
ON_THIS_CPU = {
    gemv_4bit_computes_something_else_on_an_avx512_bf16_cpu: has_avx512bf16(),
    gemv_4bit_aborts_the_process_for_8_outputs: has_avx512bf16(),
}


def reproduces(finding) -> bool:
    """Whether the finding shows on this machine."""
    return ON_THIS_CPU.get(finding, True)
