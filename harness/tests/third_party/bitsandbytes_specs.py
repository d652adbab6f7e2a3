"""bitsandbytes' ops described to the harness: an OpSpec each, with a
reference written in plain torch ops from bitsandbytes' documented semantics
(its _ops.py schemas and fake kernels, functional.py's docstrings, and the
pure-PyTorch kernels of backends/default/ops.py), and samples that build
valid inputs.

The int8 family (int8_vectorwise_quant and _dequant, int8_linear_matmul and
its .out, int8_mm_dequant), the blockwise family (quantize_blockwise,
dequantize_blockwise and its .out), the 4-bit family (quantize_4bit,
dequantize_4bit and its .out, gemv_4bit) and one optimizer step
(optimizer_update_32bit). Layout names are labels that each samples()
reads: "transposed" stores a matrix column by column, "3-d" adds a leading
dimension, "nf4" and "fp4" pick the 4-bit code. ``dtype`` is the dtype of
the op's floating-point input, or of its output where it has none (a
dequantizer's ``dtype`` argument). Each declaration that relaxes a default
says why next to it; docs (what_the_harness_found.md) lists what still
fails and why.
"""

from __future__ import annotations

import math

import torch
from bitsandbytes.functional import create_dynamic_map, get_4bit_type

from extension_cpp_testing import OpSpec

ops = torch.ops.bitsandbytes

DEVICES = ("cpu", "cuda")
FLOATS = (torch.float16, torch.bfloat16, torch.float32)
MATRIX = ("contiguous", "transposed", "3-d")
COLS = 64  # columns of every matrix: whole blocks of 64, and even for 4-bit packing
BLOCK = 64  # the blocksize of the blockwise and 4-bit ops
# bitsandbytes registers no derivative for any of these ops: no mode is claimed.
NO_AUTODIFF = dict(autodiff=())


def _matrix(layout: str, rows: int, make, cols: int = COLS) -> torch.Tensor:
    """make(shape) laid out as the label says: rows x cols, column by column
    ("transposed"), or 2 x rows x cols ("3-d")."""
    if "transposed" in layout:
        return make((cols, rows)).t()
    if "3-d" in layout:
        return make((2, rows, cols))
    return make((rows, cols))


def _values(shape, dtype, device) -> torch.Tensor:
    """Normal values, every 16th exactly 0.0 (as activations after a ReLU and
    padding hold): a quantizer must keep a zero zero."""
    x = torch.randn(shape, dtype=dtype, device=device)
    return x.masked_fill(torch.arange(x.numel(), device=device).view(shape) % 16 == 5, 0.0)


def _codes(shape, dtype=torch.int8, device="cpu") -> torch.Tensor:
    info = torch.iinfo(dtype)
    low = max(info.min, -127)
    return torch.randint(low, min(info.max, 127) + 1, shape, dtype=dtype, device=device)


def _like_fake(t: torch.Tensor, dtype) -> torch.Tensor:
    """An empty tensor laid out as the fake kernels lay out an output like t
    (torch.empty_like: a transposed t gives a transposed output)."""
    return torch.empty_like(t, dtype=dtype)


# -- int8 ---------------------------------------------------------------------


def int8_vectorwise_quant_reference(A, threshold):
    """Each row (the last dimension) scaled to [-127, 127] by its largest
    magnitude: (codes, the largest magnitudes, no outlier columns)."""
    row_max = A.abs().amax(dim=-1, keepdim=True).double()
    codes = torch.round(A.double() * (127.0 / row_max)).to(torch.int8)
    return codes.contiguous(), row_max.reshape(-1).float(), None


def int8_vectorwise_quant_samples(layout, dtype, device, rows):
    A = _matrix(layout, rows, lambda s: _values(s, dtype, device))
    return [A, 0.0]


def int8_vectorwise_dequant_reference(A, stats):
    value = A.double() * stats.double().view(*A.shape[:-1], 1) / 127
    return _like_fake(A, torch.float32).copy_(value)


def int8_vectorwise_dequant_samples(layout, dtype, device, rows):
    A = _matrix(layout, rows, lambda s: _codes(s, device=device))
    stats = torch.rand(A.numel() // COLS, device=device) + 0.5
    return [A, stats]


def int8_mm_dequant_reference(A, row_stats, col_stats, dtype, bias):
    """A (int32 sums of int8 products) times both scales over 127 * 127, plus bias."""
    scale = row_stats.double().view(*A.shape[:-1], 1) * col_stats.double() / (127 * 127)
    value = A.double() * scale
    if bias is not None:
        value = value + bias.double()
    return _like_fake(A, dtype).copy_(value)


def int8_mm_dequant_samples(layout, dtype, device, rows):
    A = _matrix(layout, rows, lambda s: torch.randint(-(2**20), 2**20, s, dtype=torch.int32))
    A = A.to(device)
    row_stats = torch.rand(A.numel() // COLS, device=device) + 0.5
    col_stats = torch.rand(COLS, device=device) + 0.5
    bias = torch.randn(COLS, dtype=dtype, device=device) if "bias" in layout else None
    return [A, row_stats, col_stats, dtype, bias]


def int8_linear_matmul_reference(A, B):
    """Sums of int8 products, exact in float64 (below 2^53), which every
    device multiplies (no int64 matmul on CUDA)."""
    return (A.double() @ B.double().t()).to(torch.int32)


# Sums past 2^24 (the float32 mantissa): every code at its largest, 4099 of them.
LARGE_K = 4099


def int8_linear_matmul_samples(layout, dtype, device, rows):
    """A [rows, K] (or 2 x rows x K) and B [11, K]; "large-k": codes of 127
    and -127 over K = 4099, whose sums no float32 holds exactly."""
    if layout == "large-k":
        A = torch.full((rows, LARGE_K), 127, dtype=torch.int8, device=device)
        B = torch.full((11, LARGE_K), 127, dtype=torch.int8, device=device)
        B[::2] = -127
        return [A, B]
    A = _matrix(layout, rows, lambda s: _codes(s, device=device))
    return [A, _codes((11, COLS), device=device)]


def int8_linear_matmul_out_samples(layout, dtype, device, rows):
    A, B = int8_linear_matmul_samples(layout, dtype, device, rows)
    out = torch.empty((*A.shape[:-1], B.shape[0]), dtype=torch.int32, device=device)
    return [A, B, out]


# -- blockwise ----------------------------------------------------------------

DYNAMIC_MAP = create_dynamic_map()


def _blocks(A: torch.Tensor, blocksize: int) -> torch.Tensor:
    """The block of each element of A, in A's logical (row-major) order."""
    return torch.arange(A.numel(), device=A.device) // blocksize


def _block_absmax(flat: torch.Tensor, blocksize: int) -> torch.Tensor:
    """The largest magnitude of each block of flat, the last one partial
    (padded with zeros, which no magnitude is below)."""
    padded = flat.new_zeros(-(flat.numel() // -blocksize) * blocksize)
    padded[: flat.numel()] = flat.abs()
    return padded.view(-1, blocksize).amax(dim=1)


def quantize_blockwise_reference(A, code, blocksize):
    """Blocks of blocksize elements (in row-major order, the last one
    partial): each element scaled by its block's largest magnitude, then the
    index of the nearest value of code. (uint8 indices, largest magnitudes)"""
    flat = A.reshape(-1).double()
    blocks = _blocks(A, blocksize)
    absmax = _block_absmax(flat, blocksize)
    scaled = (flat / absmax[blocks]).clamp(-1, 1)
    nearest = (scaled[:, None] - code.double()).abs().argmin(dim=1)
    return nearest.to(torch.uint8).reshape(A.shape).contiguous(), absmax.float()


def quantize_blockwise_samples(layout, dtype, device, rows):
    A = _matrix(layout, rows, lambda s: _values(s, dtype, device), cols=37)
    return [A, DYNAMIC_MAP.to(device), BLOCK]


def dequantize_blockwise_reference(A, absmax, code, blocksize, dtype):
    value = code.double()[A.reshape(-1).long()] * absmax.double()[_blocks(A, blocksize)]
    return _like_fake(A, dtype).copy_(value.reshape(A.shape))


def dequantize_blockwise_samples(layout, dtype, device, rows):
    A = _matrix(layout, rows, lambda s: _codes(s, torch.uint8, device), cols=37)
    absmax = torch.rand(math.ceil(A.numel() / BLOCK), device=device) + 0.5
    return [A, absmax, DYNAMIC_MAP.to(device), BLOCK, dtype]


def dequantize_blockwise_out_samples(layout, dtype, device, rows):
    args = dequantize_blockwise_samples(layout, dtype, device, rows)
    return [*args, torch.empty_like(args[0], dtype=dtype)]


# -- 4-bit --------------------------------------------------------------------


def _code_4bit(layout: str, device) -> tuple[str, torch.Tensor]:
    quant_type = "fp4" if "fp4" in layout else "nf4"
    return quant_type, get_4bit_type(quant_type, device=device)


def quantize_4bit_reference(A, blocksize, quant_type, quant_storage):
    """Blocks as quantize_blockwise's, each element scaled by its block's
    largest magnitude (in float32, as the kernels compute) and given the
    index of the nearest of the 16 values of the code (the lower of two at a
    tie); two indices a byte, the first in the high four bits. (bytes as a
    column, largest magnitudes)"""
    code = get_4bit_type(quant_type, device=A.device)
    flat = A.reshape(-1).float()
    blocks = _blocks(A, blocksize)
    absmax = _block_absmax(flat, blocksize)
    scaled = (flat * (1.0 / absmax)[blocks]).clamp(-1, 1)
    # Stable: fp4's code holds 0 twice (indices 0 and 8), and zero takes the first.
    order = code.argsort(stable=True)
    midpoints = (code[order[:-1]] + code[order[1:]]) / 2
    index = order[torch.bucketize(scaled, midpoints)]
    if quant_type == "fp4" and A.device.type == "cuda":
        # fp4's code holds 0.0 (index 0) and -0.0 (index 8). The nearest-code
        # rule above, as the CPU kernel, gives a value that rounds to zero
        # index 0 if it is negative or zero, 8 if positive; the CUDA kernel
        # takes the sign bit from the input (x < 0): 8 if negative, 0 if not.
        # All dequantize to zero.
        zero = (index == 0) | (index == 8)
        index = torch.where(zero & (scaled < 0), 8, torch.where(zero, 0, index))
    if index.numel() % 2:
        index = torch.cat([index, index.new_zeros(1)])
    packed = (index[0::2] << 4 | index[1::2]).to(torch.uint8)
    return packed.view(quant_storage).reshape(-1, 1), absmax


def quantize_4bit_samples(layout, dtype, device, rows):
    A = _matrix(layout, rows, lambda s: _values(s, dtype, device))
    quant_type, _ = _code_4bit(layout, device)
    return [A, BLOCK, quant_type, torch.uint8]


def dequantize_4bit_reference(A, absmax, blocksize, quant_type, shape, dtype):
    code = get_4bit_type(quant_type, device=A.device).double()
    packed = A.view(torch.uint8).reshape(-1).long()
    index = torch.stack([packed >> 4, packed & 0xF], dim=1).reshape(-1)[: math.prod(shape)]
    value = code[index] * absmax.double()[torch.arange(index.numel(), device=A.device) // blocksize]
    return value.reshape(shape).to(dtype)


def dequantize_4bit_samples(layout, dtype, device, rows):
    """Packed codes for a rows x 64 matrix (2 x rows x 64 for "3-d"; rows x
    63, an odd width, for "odd"), one largest magnitude per block."""
    quant_type, _ = _code_4bit(layout, device)
    shape = [2, rows, COLS] if "3-d" in layout else [rows, COLS - 1 if "odd" in layout else COLS]
    n = math.prod(shape)
    A = torch.randint(0, 256, ((n + 1) // 2, 1), dtype=torch.uint8, device=device)
    absmax = torch.rand(math.ceil(n / BLOCK), device=device) + 0.5
    return [A, absmax, BLOCK, quant_type, shape, dtype]


def dequantize_4bit_out_samples(layout, dtype, device, rows):
    args = dequantize_4bit_samples(layout, dtype, device, rows)
    return [*args, torch.empty(args[4], dtype=dtype, device=device)]


def gemv_4bit_reference(A, B, shapeB, absmax, code, blocksize):
    """A times the transpose of the weight that B, absmax and code stand for
    (dequantize_4bit's), as bitsandbytes' default kernel defines it."""
    quant_type = "fp4" if code[1] > 0 else "nf4"
    weight = dequantize_4bit_reference(B, absmax, blocksize, quant_type, shapeB, torch.float64)
    return (A.double() @ weight.t()).to(A.dtype)


# gemv_4bit's weights: 64 output features ("n8": 8, fewer than the 32 a
# block of bitsandbytes' AVX512-BF16 kernel holds), times one vector of 64,
# as bitsandbytes calls it (its CUDA kernel reads only A's first row: see
# gemv_4bit_reads_only_the_first_row_on_cuda); rows is not used.
def gemv_4bit_samples(layout, dtype, device, rows):
    quant_type, code = _code_4bit(layout, device)
    n = 8 if "n8" in layout else COLS
    weight = torch.randn(n, COLS, dtype=dtype, device=device)
    B, absmax = quantize_4bit_reference(weight, BLOCK, quant_type, torch.uint8)
    A = torch.randn(1, COLS, dtype=dtype, device=device)
    return [A, B, [n, COLS], absmax, code, BLOCK]


# -- an optimizer step --------------------------------------------------------

# (beta1, beta2, beta3, alpha, eps, weight_decay, step, lr, gnorm_scale)
ADAM = (0.9, 0.999, 0.0, 0.0, 1e-8, 0.01, 3, 1e-3, 1.0)


def optimizer_update_32bit_reference(
    name, g, p, state1, state2, unorm_vec, max_unorm, param_norm, beta1, beta2, beta3, alpha,
    eps, weight_decay, step, lr, gnorm_scale, skip_zeros,
):  # fmt: skip
    """One step of Adam ("adam": decoupled weight decay, bias-corrected
    moments) or SGD with momentum ("momentum": L2 weight decay), computed in
    float64; p, state1 and state2 are updated in place, as the op does."""
    grad = g.double() * gnorm_scale
    param = p.double()
    if name == "adam":
        m = state1.double() * beta1 + (1 - beta1) * grad
        v = state2.double() * beta2 + (1 - beta2) * grad * grad
        correction1, correction2 = 1 - beta1**step, math.sqrt(1 - beta2**step)
        param = param * (1 - lr * weight_decay)
        param = param - lr * correction2 / correction1 * m / (v.sqrt() + eps * correction2)
        state2.copy_(v)
    else:
        grad = grad + weight_decay * param
        m = grad if step == 1 else state1.double() * beta1 + grad
        param = param - lr * m
    state1.copy_(m)
    p.copy_(param)


def optimizer_update_32bit_samples(layout, dtype, device, rows):
    """A rows x 64 parameter (64 x rows, column by column, for "transposed"),
    its gradient in its dtype, and float32 state: Adam's two moments, or
    momentum's one."""
    name = "momentum" if "momentum" in layout else "adam"

    def like(make):
        return _matrix(layout, rows, lambda s: make(s).to(device))

    g = like(lambda s: torch.randn(s, dtype=dtype))
    p = like(lambda s: torch.randn(s, dtype=dtype))
    state1 = like(lambda s: torch.randn(s) * 0.1)
    state2 = like(lambda s: torch.rand(s) * 0.01) if name == "adam" else None
    return [name, g, p, state1, state2, None, 0.0, 0.0, *ADAM, False]


# -- the specs ----------------------------------------------------------------

# What every bitsandbytes op here declares, each for the reason given.
COMMON = dict(
    devices=DEVICES,
    # bitsandbytes' fake kernels check the inputs in their own words (and
    # check less than the kernels, or more): they must still raise.
    same_error_words=False,
    # bitsandbytes registers no batching rule for its ops.
    skip={"vmap": "bitsandbytes registers no batching rule (torch.library.register_vmap)"},
    **NO_AUTODIFF,
)
# The out= ops: an expanded out, and inputs on two devices. bitsandbytes'
# .out ops do not say they refuse an out that shares memory with an input
# (torch's own out= ops do): not checked.
OUT_BAD_INPUTS = ("dtype", "device", "out-internal-overlap")
# dequantize_4bit's packed codes may be stored in any dtype (quantize_4bit's
# quant_storage), so no dtype of A is wrong: inputs on two devices only.
PACKED_BAD_INPUTS = ("device",)
# A matrix product of 64 terms in the input's dtype: rounded 64 times where
# the reference (float64) rounds once. Half an ulp of a sum of K = 64 terms
# per step bounds it well below these.
MATMUL_TOLERANCES = {
    torch.float16: dict(rtol=2e-2, atol=2e-2),
    torch.bfloat16: dict(rtol=1e-1, atol=1e-1),
    torch.float32: dict(rtol=1e-5, atol=1e-5),
}

INT8_VECTORWISE_QUANT = dict(
    reference=int8_vectorwise_quant_reference,
    samples=int8_vectorwise_quant_samples,
    layouts=MATRIX,
    # The kernels scale in float32 and round; the reference is exact. A
    # value within float32's error of a half code rounds either way.
    integer_tolerance=dict(codes=1, fraction=0.01),
    # On the CPU any real dtype quantizes (an integer tensor too): no dtype
    # to refuse; and one tensor, so none on another device.
    bad_inputs=(),
    **{**COMMON, "devices": ("cpu",)},
)

SPECS = {
    "int8_vectorwise_quant": OpSpec(
        ops.int8_vectorwise_quant.default, dtypes=FLOATS, **INT8_VECTORWISE_QUANT
    ),
    # The CUDA kernel quantizes float16 only (LLM.int8()'s dtype), and says
    # so for any other: its cases run in float16.
    "int8_vectorwise_quant.cuda": OpSpec(
        ops.int8_vectorwise_quant.default,
        dtypes=(torch.float16,),
        **{**INT8_VECTORWISE_QUANT, "devices": ("cuda",)},
    ),
    "int8_vectorwise_dequant": OpSpec(
        ops.int8_vectorwise_dequant.default,
        reference=int8_vectorwise_dequant_reference,
        samples=int8_vectorwise_dequant_samples,
        layouts=MATRIX,
        dtypes=(torch.float32,),  # the output's: int8 codes in, float32 out
        **COMMON,
    ),
    "int8_mm_dequant": OpSpec(
        ops.int8_mm_dequant.default,
        reference=int8_mm_dequant_reference,
        samples=int8_mm_dequant_samples,
        layouts=(*MATRIX, "bias"),
        dtypes=FLOATS,  # the output's (its dtype argument)
        # A's rows and their scales vary together; the columns do not.
        dynamic_dims={0: {0: "rows"}, 1: {0: "rows"}},
        **COMMON,
    ),
    "int8_linear_matmul": OpSpec(
        ops.int8_linear_matmul.default,
        reference=int8_linear_matmul_reference,
        samples=int8_linear_matmul_samples,
        layouts=(*MATRIX, "large-k"),
        dtypes=(torch.int8,),
        # A and B share K; only A's rows vary.
        dynamic_dims={0: {0: "rows"}},
        **COMMON,
    ),
    "int8_linear_matmul.out": OpSpec(
        ops.int8_linear_matmul.out,
        name="int8_linear_matmul_out",
        reference=int8_linear_matmul_reference,
        samples=int8_linear_matmul_out_samples,
        out=True,
        layouts=(*MATRIX, "large-k"),
        dtypes=(torch.int8,),
        dynamic_dims={0: {0: "rows"}, 2: {0: "rows"}},
        bad_inputs=OUT_BAD_INPUTS,
        **COMMON,
    ),
    "quantize_blockwise": OpSpec(
        ops.quantize_blockwise.default,
        reference=quantize_blockwise_reference,
        samples=quantize_blockwise_samples,
        layouts=MATRIX,
        dtypes=FLOATS,
        # The nearest code, found from a float32 scale: one code either way
        # where a value sits within float32's error of the middle of two.
        integer_tolerance=dict(codes=1, fraction=0.01),
        # The absmax per block: its count follows the element count, not rows.
        dynamic_dims={0: {0: "rows"}},
        **COMMON,
    ),
    "dequantize_blockwise": OpSpec(
        ops.dequantize_blockwise.default,
        reference=dequantize_blockwise_reference,
        samples=dequantize_blockwise_samples,
        layouts=MATRIX,
        dtypes=FLOATS,
        # The absmax per block follows the element count, not rows.
        dynamic_dims={0: {0: "rows"}, 1: {0: "blocks"}},
        **COMMON,
    ),
    "dequantize_blockwise.out": OpSpec(
        ops.dequantize_blockwise.out,
        name="dequantize_blockwise_out",
        reference=dequantize_blockwise_reference,
        samples=dequantize_blockwise_out_samples,
        out=True,
        layouts=MATRIX,
        dtypes=FLOATS,
        dynamic_dims={0: {0: "rows"}, 1: {0: "blocks"}, 5: {0: "rows"}},
        bad_inputs=OUT_BAD_INPUTS,
        **COMMON,
    ),
    "quantize_4bit": OpSpec(
        ops.quantize_4bit.default,
        reference=quantize_4bit_reference,
        samples=quantize_4bit_samples,
        layouts=("nf4", "fp4", "nf4-transposed", "nf4-3-d"),
        dtypes=FLOATS,
        dynamic_dims={0: {0: "rows"}},
        # One tensor: none on another device.
        bad_inputs=("dtype",),
        **COMMON,
    ),
    "dequantize_4bit": OpSpec(
        ops.dequantize_4bit.default,
        reference=dequantize_4bit_reference,
        samples=dequantize_4bit_samples,
        layouts=("nf4", "fp4", "nf4-odd", "nf4-3-d"),
        dtypes=FLOATS,  # the output's (its dtype argument)
        # The packed codes and the absmax per block follow the element count.
        dynamic_dims={0: {0: "codes"}, 1: {0: "blocks"}},
        bad_inputs=PACKED_BAD_INPUTS,
        **COMMON,
    ),
    "dequantize_4bit.out": OpSpec(
        ops.dequantize_4bit.out,
        name="dequantize_4bit_out",
        reference=dequantize_4bit_reference,
        samples=dequantize_4bit_out_samples,
        out=True,
        layouts=("nf4", "fp4", "nf4-odd", "nf4-3-d"),
        dtypes=FLOATS,
        dynamic_dims={0: {0: "codes"}, 1: {0: "blocks"}, 6: {0: "rows"}},
        bad_inputs=(*PACKED_BAD_INPUTS, "out-internal-overlap"),
        **COMMON,
    ),
    "gemv_4bit": OpSpec(
        ops.gemv_4bit.default,
        reference=gemv_4bit_reference,
        samples=gemv_4bit_samples,
        layouts=("nf4", "fp4", "nf4-n8"),
        dtypes=FLOATS,
        tolerances=MATMUL_TOLERANCES,
        dynamic_dims={},  # one vector: no size varies
        **COMMON,
    ),
    "optimizer_update_32bit": OpSpec(
        ops.optimizer_update_32bit.default,
        reference=optimizer_update_32bit_reference,
        samples=optimizer_update_32bit_samples,
        layouts=("adam", "momentum", "adam-transposed"),
        dtypes=FLOATS,  # the parameter's and gradient's; the state is float32
        # g, p and the state share their sizes.
        dynamic_dims={1: {0: "rows"}, 2: {0: "rows"}, 3: {0: "rows"}, 4: {0: "rows"}},
        **COMMON,
    ),
}
