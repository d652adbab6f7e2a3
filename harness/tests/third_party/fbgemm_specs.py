"""FBGEMM_GPU's CPU ops (fbgemm-gpu-cpu) described to the harness: an OpSpec
each, with a reference written in plain torch ops from fbgemm's documented
semantics (its docstrings in fbgemm_gpu/docs, the fake kernels of
fbgemm_gpu/sparse_ops.py, and the reference kernels of FBGEMM's
src/QuantUtils.cc and fbgemm_gpu/src), and samples that build valid inputs
(offsets that add up, lengths that fit, indices inside their tables).

The rowwise quantizers (FloatToFused8BitRowwiseQuantized and
FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf) and the 8-bit dequantizer
(Fused8BitRowwiseQuantizedToFloat); the jagged and sparse ops of
recommendation models (jagged_2d_to_dense, permute_2D_sparse_data,
segment_sum_csr, asynchronous_complete_cumsum, lengths_range_out); and
bounds_check_indices, which repairs a batch of embedding lookups in place.

Layout names are labels that each samples() reads: "transposed" stores a
matrix column by column, "step-sliced" makes a tensor every other row (or
element) of one twice as long, "3-d" adds a leading dimension; the others
are named where they are used. ``rows`` sizes the batch: the rows of a
matrix, the bags of a jagged tensor or of each table. ``dtype`` is the dtype
of the op's floating-point input, or of its output where it has none (the
dequantizer), or of its index tensors (the ops of lengths and offsets). Each
declaration that relaxes a default says why next to it; docs
(what_the_harness_found.md) lists what still fails and why.
"""

from __future__ import annotations

import torch
from fbgemm_gpu.split_table_batched_embeddings_ops_common import BoundsCheckMode

from extension_cpp_testing import OpSpec

ops = torch.ops.fbgemm

COLS = 32  # columns of the quantizers' matrices: whole bytes at 2 and 4 bits a value
ODD_COLS = 37  # a width that is no multiple of 4 (the 8-bit ops take any)
TABLES = 3  # the sparse ops' features (tables), each with `rows` bags
DIM = 4  # the width of a jagged tensor's rows


def _laid_out(layout: str, t: torch.Tensor) -> torch.Tensor:
    """t (contiguous) in the layout the label names: "transposed" stores a
    matrix column by column; "step-sliced" makes it every other row of a
    tensor twice as long, whose other rows hold t's rows in reverse order
    (values of the same kind: a kernel that reads them as if t were
    contiguous gives wrong results, rather than failing on garbage)."""
    if "transposed" in layout:
        return t.mT.contiguous().mT
    if "step-sliced" in layout:
        return torch.stack([t, t.flip(0)], dim=1).flatten(0, 1)[::2]
    return t


def _lengths(shape, high: int, dtype=torch.int64) -> torch.Tensor:
    """Random lengths in [0, high], the first one high (a full bag)."""
    lengths = torch.randint(0, high + 1, shape, dtype=dtype)
    lengths.view(-1)[0] = high
    return lengths


def _complete_cumsum(lengths: torch.Tensor) -> torch.Tensor:
    """Offsets of lengths: 0 and then each running sum (one more element)."""
    flat = lengths.reshape(-1).to(torch.int64)
    return torch.cat([flat.new_zeros(1), flat.cumsum(0)]).to(lengths.dtype)


# -- rowwise quantization ------------------------------------------------------


def _rowwise_values(layout: str, dtype, rows: int, cols: int = COLS) -> torch.Tensor:
    """A rows x cols matrix of normal values (2 x rows x cols for "3-d"),
    in the layout the label names."""
    shape = (2, rows, cols) if "3-d" in layout else (rows, cols)
    return _laid_out(layout, torch.randn(shape).to(dtype))


def float_to_fused_8bit_rowwise_reference(t):
    """Each row (the last dimension) as bytes: its values scaled to codes in
    [0, 255] between the row's minimum and maximum (in float32, rounded to the
    nearest even), then the scale (range / 255) and the bias (the minimum) as
    two float32, four bytes each (FloatOrHalfToFused8BitRowwiseQuantizedSBFloatRef)."""
    x = t.float()
    low = x.amin(-1, keepdim=True)
    spread = x.amax(-1, keepdim=True) - low
    codes = torch.round((x - low) * (255 / (spread + 1e-8))).to(torch.uint8)
    scale_bias = torch.cat([spread / 255, low], dim=-1).view(torch.uint8)
    return torch.cat([codes, scale_bias], dim=-1).contiguous()


def float_to_fused_8bit_rowwise_samples(layout, dtype, device, rows):
    cols = ODD_COLS if layout == "odd-columns" else COLS
    return [_rowwise_values(layout, dtype, rows, cols).to(device)]


def fused_8bit_rowwise_to_float_reference(input):
    """Each row's codes times its scale plus its bias, computed in float64
    and rounded to float32 (Fused8BitRowwiseQuantizedSBFloatToFloatOrHalfRef)."""
    codes, scale_bias = input[..., :-8], input[..., -8:].contiguous().view(torch.float32)
    value = codes.double() * scale_bias[..., :1].double() + scale_bias[..., 1:].double()
    return value.float().contiguous()


def fused_8bit_rowwise_to_float_samples(layout, dtype, device, rows):
    """What the 8-bit quantizer makes of normal values, in the layout the
    label names."""
    cols = ODD_COLS if layout == "odd-columns" else COLS
    shape = (2, rows, cols) if "3-d" in layout else (rows, cols)
    fused = float_to_fused_8bit_rowwise_reference(torch.randn(shape))
    return [_laid_out(layout, fused).to(device)]


def _bit_rate(layout: str) -> int:
    return 2 if "2-bit" in layout else 8 if "8-bit" in layout else 4


def float_to_fused_nbit_rowwise_reference(input, bit_rate):
    """Each row as bytes: codes of bit_rate bits in [0, 2^bit_rate - 1]
    between the row's minimum (rounded to float16) and maximum, packed
    8 / bit_rate to a byte, the first in the lowest bits; then the scale and
    the bias (the minimum) as two float16
    (FloatOrHalfToFusedNBitRowwiseQuantizedSBHalfRef)."""
    x = input.float()
    low = x.amin(-1, keepdim=True).half().float()
    spread = x.amax(-1, keepdim=True) - low
    levels = 2**bit_rate - 1
    scale = torch.where(spread == 0, 1.0, spread / levels).half().float()
    scale = torch.where(scale == 0, 1.0, scale)
    inverse = 1 / scale
    # A scale so small that its inverse overflows: one of 1, as the kernel does.
    overflow = inverse.isinf()
    scale, inverse = torch.where(overflow, 1.0, scale), torch.where(overflow, 1.0, inverse)
    codes = torch.round((x - low) * inverse).clamp(0, levels).to(torch.uint8)
    per_byte = 8 // bit_rate
    codes = codes.view(*codes.shape[:-1], -1, per_byte)
    packed = sum(codes[..., i] << (i * bit_rate) for i in range(per_byte)).to(torch.uint8)
    scale_bias = torch.cat([scale, low], dim=-1).half().view(torch.uint8)
    return torch.cat([packed, scale_bias], dim=-1).contiguous()


def float_to_fused_nbit_rowwise_samples(layout, dtype, device, rows):
    return [_rowwise_values(layout, dtype, rows).to(device), _bit_rate(layout)]


# -- jagged and sparse ---------------------------------------------------------


def jagged_2d_to_dense_reference(values, offsets, max_sequence_length):
    """[bags, max_sequence_length, D]: bag b's rows values[offsets[b]:offsets[b + 1]],
    the first max_sequence_length of them, then rows of zeros (fbgemm's
    docstring of jagged_2d_to_dense)."""
    starts, ends = offsets[:-1].long(), offsets[1:].long()
    position = torch.arange(max_sequence_length, device=values.device)
    inside = position < (ends - starts)[:, None]
    # Every position past its bag reads a row of zeros appended to values.
    padded = torch.cat([values, values.new_zeros(1, values.shape[1])])
    index = torch.where(inside, starts[:, None] + position, values.shape[0])
    return padded[index]


def jagged_2d_to_dense_samples(layout, dtype, device, rows):
    """rows bags of up to 4 rows of DIM values; offsets int64 ("int32-offsets":
    int32); max_sequence_length 4 ("truncated": 2, shorter than some bags)."""
    offsets = _complete_cumsum(_lengths((rows,), 4))
    if layout == "int32-offsets":
        offsets = offsets.int()
    values = _laid_out(layout, torch.randn(int(offsets[-1]), DIM).to(dtype))
    max_length = 2 if layout == "truncated" else 4
    return [values.to(device), offsets.to(device), max_length]


# Bad values jagged_2d_to_dense must refuse: its offsets index the values' rows.
def _decreasing_offsets(args):
    values, offsets, max_length = args
    offsets = offsets.clone()
    offsets[1] = offsets[2] + 1  # bag 0 ends past where bag 1 ends
    return [values, offsets, max_length]


def _offsets_past_the_values(args):
    values, offsets, max_length = args
    offsets = offsets.clone()
    offsets[-1] = values.shape[0] + 4  # the last bag ends 4 rows past the values
    return [values, offsets, max_length]


JAGGED_BAD_VALUES = {
    "offsets that decrease": _decreasing_offsets,
    "offsets past the values' rows": _offsets_past_the_values,
}


def _permute(layout: str) -> torch.Tensor:
    """The order of the features: each once ("unweighted", "weighted"), one
    twice ("repeating"), one only ("subset"), or each once as every other
    element of a longer tensor ("step-sliced-permute")."""
    if layout == "repeating":
        order = [2, 0, 2, 1]
    elif layout == "subset":
        order = [1]
    else:
        order = [2, 0, 1]
    return _laid_out(layout, torch.tensor(order, dtype=torch.int32))


def permute_2D_sparse_data_reference(permute, lengths, values, weights, permuted_lengths_sum=None):
    """The features in permute's order: (their lengths, their values, their
    weights), each feature's bags of values taken whole, in order; a feature
    may come twice or not at all (fbgemm's permute_2D_sparse_data_cpu)."""
    order = permute.long()
    starts = _complete_cumsum(lengths)[:-1].view(lengths.shape)[order].reshape(-1)
    permuted_lengths = lengths[order]
    counts = permuted_lengths.reshape(-1).long()
    # Each output element: its bag's start, plus its place in the bag.
    first = torch.repeat_interleave(_complete_cumsum(counts)[:-1], counts)
    position = torch.arange(first.numel(), device=values.device)
    index = torch.repeat_interleave(starts.long(), counts) + position - first
    permuted_weights = None if weights is None else weights[index]
    return permuted_lengths, values[index], permuted_weights


def permute_2D_sparse_data_samples(layout, dtype, device, rows):
    """TABLES features of rows bags each, of up to 3 int64 ids, weighted by
    values of dtype (but for "unweighted"); lengths int64 ("int32-lengths": int32)."""
    lengths = _lengths((TABLES, rows), 3)
    if layout == "int32-lengths":
        lengths = lengths.int()
    total = int(lengths.sum())
    values = torch.randint(0, 1000, (total,))
    weights = None if layout == "unweighted" else torch.rand(total).to(dtype).to(device)
    return [_permute(layout).to(device), lengths.to(device), values.to(device), weights]


# segment_sum_csr's batch_size: each segment of the CSR is this many values per row.
SEGMENT_BATCH = 2


def segment_sum_csr_reference(batch_size, csr_seg, values):
    """Segment i: the sum of values[csr_seg[i] * batch_size : csr_seg[i + 1] *
    batch_size] (fbgemm's _segment_sum_csr_cpu_kernel), in float64."""
    bounds = csr_seg.long() * batch_size
    segment = torch.repeat_interleave(torch.arange(csr_seg.numel() - 1), bounds.diff())
    summed = torch.zeros(csr_seg.numel() - 1, dtype=torch.float64, device=values.device)
    summed = summed.index_add(0, segment.to(values.device), values[: int(bounds[-1])].double())
    return summed.to(values.dtype)


def segment_sum_csr_samples(layout, dtype, device, rows):
    """rows segments of up to 3 rows of SEGMENT_BATCH values; csr_seg int64
    ("int32-csr": int32)."""
    csr_seg = _complete_cumsum(_lengths((rows,), 3))
    if layout == "int32-csr":
        csr_seg = csr_seg.int()
    values = _laid_out(layout, torch.randn(int(csr_seg[-1]) * SEGMENT_BATCH).to(dtype))
    return [SEGMENT_BATCH, csr_seg.to(device), values.to(device)]


def asynchronous_complete_cumsum_reference(t_in):
    """Each row's (a 1-d tensor's) running sums, after a 0: one more element
    than the row (fbgemm's asynchronous_complete_cumsum_cpu)."""
    zeros = t_in.new_zeros(*t_in.shape[:-1], 1)
    return torch.cat([zeros, t_in.cumsum(-1, dtype=t_in.dtype)], dim=-1)


def asynchronous_complete_cumsum_samples(layout, dtype, device, rows):
    """Lengths: rows of them ("1-d", "step-sliced"), or rows x 5 ("2-d", "transposed")."""
    shape = (rows,) if layout in ("1-d", "step-sliced") else (rows, 5)
    return [_laid_out(layout, _lengths(shape, 9, dtype)).to(device)]


def lengths_range_out_reference(t_in, shape=None):
    """0, 1, ..., length - 1 for each length, one after the other (fbgemm's
    lengths_range_out)."""
    counts = t_in.long()
    first = torch.repeat_interleave(_complete_cumsum(counts)[:-1], counts)
    return (torch.arange(first.numel(), device=t_in.device) - first).to(t_in.dtype)


def lengths_range_out_samples(layout, dtype, device, rows):
    """The schema's order, output first: an output of the right size, rows
    lengths of dtype."""
    lengths = _lengths((rows,), 5, dtype)
    output = torch.empty(int(lengths.sum()), dtype=dtype)
    return [output.to(device), _laid_out(layout, lengths).to(device)]


# -- bounds_check_indices ------------------------------------------------------

ROWS_PER_TABLE = (10, 20, 5)  # one embedding table per feature (TABLES)


def bounds_check_indices_reference(
    rows_per_table, indices, offsets, bounds_check_mode, warning, weights=None
):
    """Repairs indices and offsets in place, as fbgemm's
    bounds_check_indices_cpu: the last offset becomes the number of indices;
    each bag's offsets are clamped to [0, number of indices], the end to no
    less than the start; an index outside its table (but -1, a pruned row)
    becomes 0. With WARNING, warning[0] counts the repairs; with FATAL the
    inputs must need none."""
    if bounds_check_mode == BoundsCheckMode.FATAL:
        return
    count = 0
    starts, rows_of = offsets.tolist(), rows_per_table.tolist()
    values = indices.tolist()
    total = len(values)
    if starts[-1] != total:
        count += 1
        starts[-1] = total
    per_table = (len(starts) - 1) // len(rows_of)
    for bag in range(len(starts) - 1):
        start, end = starts[bag], starts[bag + 1]
        if start < 0 or start > end or end > total:
            count += 1
            start = max(0, min(start, total))
            end = max(start, min(end, total))
            starts[bag], starts[bag + 1] = start, end
        for i in range(start, end):
            if values[i] != -1 and not 0 <= values[i] < rows_of[bag // per_table]:
                count += 1
                values[i] = 0
    indices.copy_(torch.tensor(values))
    offsets.copy_(torch.tensor(starts))
    if bounds_check_mode == BoundsCheckMode.WARNING:
        warning.fill_(count)


def bounds_check_indices_samples(layout, dtype, device, rows):
    """TABLES features of rows bags each, up to 4 indices a bag, of dtype; one
    in eight outside its table, one in eight -1 (pruned); mode WARNING
    ("ignore": IGNORE; "fatal": FATAL, every index inside). "bad-offsets":
    the last offset past the end, one bag's start past its end; "mixed-offsets"
    the same, offsets of the other index dtype than indices. "weighted": a
    float32 weight per index. "step-sliced": indices every other element."""
    offsets = _complete_cumsum(_lengths((TABLES * rows,), 4, dtype))
    total = int(offsets[-1])
    table = torch.repeat_interleave(torch.arange(TABLES), rows)
    rows_per_table = torch.tensor(ROWS_PER_TABLE)
    bag_rows = rows_per_table[table]
    index_rows = torch.repeat_interleave(bag_rows, offsets.diff().long())
    indices = (torch.rand(total) * index_rows).long()
    if layout != "fatal":
        which = torch.arange(total) % 8
        indices = torch.where(which == 3, index_rows + 2, indices)
        indices = torch.where(which == 6, -1, indices)
    if "offsets" in layout:
        offsets[-1] += 3
        offsets[1] = offsets[2] + 1
    if layout == "mixed-offsets":
        offsets = offsets.to(torch.int32 if dtype == torch.int64 else torch.int64)
    indices = _laid_out(layout, indices.to(dtype))
    modes = {"ignore": BoundsCheckMode.IGNORE, "fatal": BoundsCheckMode.FATAL}
    mode = modes.get(layout, BoundsCheckMode.WARNING)
    warning = torch.zeros(1, dtype=torch.int64)
    weights = torch.rand(total).to(device) if layout == "weighted" else None
    tensors = [t.to(device) for t in (rows_per_table, indices, offsets)]
    return [*tensors, mode.value, warning.to(device), weights]


# -- the specs -----------------------------------------------------------------

# What every fbgemm op here declares, each for the reason given.
COMMON = dict(
    # fbgemm-gpu-cpu is the CPU build: no CUDA kernels to check.
    devices=("cpu",),
    # fbgemm's fake kernels (sparse_ops.py) check their inputs in their own
    # words, or not at all: they must still raise.
    same_error_words=False,
    # fbgemm registers no batching rule for these ops.
    skip={"vmap": "fbgemm registers no batching rule (torch.library.register_vmap)"},
)
# The quantizers' outputs are integer codes, and the dequantizer's input:
# nothing to differentiate.
CODES = dict(differentiable=False, **COMMON)
QUANTIZER_LAYOUTS = ("contiguous", "transposed", "step-sliced")
# A sum of up to 3 x SEGMENT_BATCH terms, accumulated in the values' dtype
# (the kernel's accumulator is a value_t): a rounding a term.
SUM_TOLERANCES = {
    torch.float16: dict(rtol=1e-2, atol=1e-2),
    torch.bfloat16: dict(rtol=5e-2, atol=5e-2),
    torch.float32: dict(rtol=1e-5, atol=1e-5),
}
INDEX_DTYPES = (torch.int64, torch.int32)

SPECS = {
    "FloatToFused8BitRowwiseQuantized": OpSpec(
        ops.FloatToFused8BitRowwiseQuantized.default,
        reference=float_to_fused_8bit_rowwise_reference,
        samples=float_to_fused_8bit_rowwise_samples,
        layouts=(*QUANTIZER_LAYOUTS, "3-d", "odd-columns"),
        dtypes=(torch.float32,),  # "Float": its sibling ops take float16
        **CODES,
    ),
    "FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf": OpSpec(
        ops.FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf.default,
        reference=float_to_fused_nbit_rowwise_reference,
        samples=float_to_fused_nbit_rowwise_samples,
        layouts=(*QUANTIZER_LAYOUTS, "2-bit", "8-bit"),  # 4 bits a value but where named
        dtypes=(torch.float16, torch.float32),
        **CODES,
    ),
    "Fused8BitRowwiseQuantizedToFloat": OpSpec(
        ops.Fused8BitRowwiseQuantizedToFloat.default,
        reference=fused_8bit_rowwise_to_float_reference,
        samples=fused_8bit_rowwise_to_float_samples,
        layouts=(*QUANTIZER_LAYOUTS, "3-d", "odd-columns"),
        dtypes=(torch.float32,),  # the output's: uint8 rows in, float32 out
        **CODES,
    ),
    "jagged_2d_to_dense": OpSpec(
        ops.jagged_2d_to_dense.default,
        reference=jagged_2d_to_dense_reference,
        samples=jagged_2d_to_dense_samples,
        layouts=("contiguous", "transposed", "step-sliced", "truncated", "int32-offsets"),
        dtypes=(torch.float16, torch.bfloat16, torch.float32),  # no float64 kernel
        # It takes integer values too: the wrong dtype is another.
        accepted_dtypes=(torch.float16, torch.bfloat16, torch.float32, torch.int32, torch.int64),
        # The derivatives in float32, its widest kernel.
        grad_dtype=torch.float32,
        # The values' rows follow the bags' lengths, not the number of bags;
        # the kernel needs two bags or more (offsets of 3 or more).
        dynamic_dims={0: {0: "values"}, 1: {0: torch.export.Dim("offsets", min=3)}},
        # A C++ autograd function (jagged_to_padded_dense's): reverse mode.
        autodiff=("reverse",),
        bad_values=JAGGED_BAD_VALUES,
        **COMMON,
    ),
    "permute_2D_sparse_data": OpSpec(
        ops.permute_2D_sparse_data.default,
        reference=permute_2D_sparse_data_reference,
        samples=permute_2D_sparse_data_samples,
        layouts=(
            "weighted",
            "unweighted",
            "repeating",
            "subset",
            "step-sliced-permute",
            "int32-lengths",
        ),
        dtypes=(torch.float16, torch.float32, torch.float64),  # the weights'
        # The permuted values' count is the sum of the permuted lengths.
        dynamic_output=True,
        # Each feature has rows bags; the values and weights follow their lengths.
        dynamic_dims={1: {1: "bags"}, 2: {0: "values"}, 3: {0: "values"}},
        # The weights are what is differentiated: none without them.
        grad_args={"unweighted": ()},
        # Its backward is a torch.library.register_autograd formula: reverse mode.
        autodiff=("reverse",),
        **COMMON,
    ),
    "segment_sum_csr": OpSpec(
        ops.segment_sum_csr.default,
        reference=segment_sum_csr_reference,
        samples=segment_sum_csr_samples,
        layouts=("contiguous", "step-sliced", "int32-csr"),
        dtypes=(torch.float16, torch.bfloat16, torch.float32),  # no float64 kernel
        tolerances=SUM_TOLERANCES,
        # The values follow the segments' lengths, not the number of segments,
        # of which the kernel needs two or more (a csr_seg of 3 or more).
        dynamic_dims={1: {0: torch.export.Dim("segments", min=3)}, 2: {0: "values"}},
        # fbgemm registers no derivative for it: every mode must raise.
        autodiff=(),
        **COMMON,
    ),
    "asynchronous_complete_cumsum": OpSpec(
        ops.asynchronous_complete_cumsum.default,
        reference=asynchronous_complete_cumsum_reference,
        samples=asynchronous_complete_cumsum_samples,
        layouts=("1-d", "2-d", "transposed", "step-sliced"),
        dtypes=INDEX_DTYPES,  # lengths in, offsets out
        # It takes float lengths too: the wrong dtype is another.
        accepted_dtypes=(*INDEX_DTYPES, torch.float16, torch.bfloat16, torch.float32),
        **COMMON,
    ),
    "lengths_range_out": OpSpec(
        ops.lengths_range_out.default,
        reference=lengths_range_out_reference,
        samples=lengths_range_out_samples,
        out=("output",),  # its first argument, `Tensor output`
        layouts=("contiguous", "step-sliced"),
        dtypes=INDEX_DTYPES,
        # The output's size is the sum of the lengths.
        dynamic_dims={0: {0: "range"}, 1: {0: "rows"}},
        **COMMON,
    ),
    "bounds_check_indices": OpSpec(
        ops.bounds_check_indices.default,
        reference=bounds_check_indices_reference,
        samples=bounds_check_indices_samples,
        layouts=(
            "warning",
            "ignore",
            "fatal",
            "weighted",
            "bad-offsets",
            "mixed-offsets",
            "step-sliced",
        ),
        dtypes=INDEX_DTYPES,  # the indices' and offsets'
        # The indices (and their weights) follow the bags' lengths; the offsets
        # the bags (TABLES x rows, plus one).
        dynamic_dims={1: {0: "indices"}, 2: {0: "offsets"}, 5: {0: "indices"}},
        **COMMON,
    ),
}
