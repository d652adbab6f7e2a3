"""torchvision's C++/CUDA ops described to the harness: an OpSpec each, with a
reference written in plain torch ops and samples that build valid inputs.

Each declaration that relaxes a default says why next to it; docs
(what_the_harness_found.md) lists what still fails and why.
The references follow torchvision's documented semantics (the pure-Python
loops of its own test suite), vectorised over channels: small inputs, so a
loop over boxes and bins costs little.
"""

from __future__ import annotations

import math

import torch

from extension_cpp_testing import OpSpec

ops = torch.ops.torchvision

# Two dtypes and three input layouts per op: enough to show a layout or dtype
# bug, and the whole file runs in about a minute on two cores.
DTYPES = (torch.float32, torch.float64)
LAYOUTS = ("contiguous", "transposed", "channels-last")
POOLED = (2, 3)  # pooled height and width: not square, so the two can't be swapped
SCALE = 0.5  # spatial_scale: boxes are in an image twice the feature map's size
IMAGES, HEIGHT, WIDTH = 2, 7, 8


def _feature_map(channels, layout, dtype, device, images=IMAGES, size=(HEIGHT, WIDTH)):
    """[images, channels, *size] in one of LAYOUTS."""
    height, width = size
    if layout == "transposed":  # H and W swapped in memory
        return torch.randn(images, channels, width, height, dtype=dtype, device=device).mT
    x = torch.randn(images, channels, height, width, dtype=dtype, device=device)
    return x.to(memory_format=torch.channels_last) if layout == "channels-last" else x


def _rois(count, dtype, device) -> torch.Tensor:
    """[count, 5] rows of (image index, x1, y1, x2, y2), in image coordinates
    (SCALE maps them onto the feature map), inside the image or just past it,
    the first one the whole image."""
    image = torch.randint(IMAGES, (count, 1)).to(dtype)
    x1 = torch.rand(count, 1) * WIDTH / SCALE * 0.6
    y1 = torch.rand(count, 1) * HEIGHT / SCALE * 0.6
    w = torch.rand(count, 1) * WIDTH / SCALE * 0.5 + 0.5
    h = torch.rand(count, 1) * HEIGHT / SCALE * 0.5 + 0.5
    boxes = torch.cat([x1, y1, x1 + w, y1 + h], dim=1)
    # The first covers the whole image: the last row and column are where
    # clipping bugs hide.
    boxes[0] = torch.tensor([0.0, 0.0, WIDTH / SCALE, HEIGHT / SCALE])
    return torch.cat([image, boxes.to(dtype)], dim=1).to(device)


def _bilinear(plane: torch.Tensor, y: float, x: float) -> torch.Tensor:
    """plane [C, H, W] sampled at (y, x) as torchvision's RoI kernels do:
    zero outside (-1, H) x (-1, W), coordinates in (-1, 0] snapped to 0, the
    last row and column repeated past H - 1 and W - 1."""
    height, width = plane.shape[-2:]
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return plane.new_zeros(plane.shape[0])
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = min(int(y), height - 1), min(int(x), width - 1)
    y_high, x_high = min(y_low + 1, height - 1), min(x_low + 1, width - 1)
    if y_low == height - 1:
        y = float(y_low)
    if x_low == width - 1:
        x = float(x_low)
    ly, lx = y - y_low, x - x_low
    hy, hx = 1.0 - ly, 1.0 - lx
    return (
        hy * hx * plane[:, y_low, x_low]
        + hy * lx * plane[:, y_low, x_high]
        + ly * hx * plane[:, y_high, x_low]
        + ly * lx * plane[:, y_high, x_high]
    )


def _align_bins(roi, scale, pooled, sampling_ratio, offset):
    """For each bin (i, j): its sampling points (y, x), as RoIAlign places them."""
    x1, y1, x2, y2 = (float(v) * scale - offset for v in roi[1:])
    roi_h, roi_w = y2 - y1, x2 - x1
    if offset == 0.0:  # not aligned: a roi is at least 1 x 1
        roi_h, roi_w = max(roi_h, 1.0), max(roi_w, 1.0)
    bin_h, bin_w = roi_h / pooled[0], roi_w / pooled[1]
    grid_h = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_h / pooled[0])
    grid_w = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_w / pooled[1])
    for i in range(pooled[0]):
        for j in range(pooled[1]):
            points = [
                (
                    y1 + i * bin_h + (iy + 0.5) * bin_h / grid_h,
                    x1 + j * bin_w + (ix + 0.5) * bin_w / grid_w,
                )
                for iy in range(grid_h)
                for ix in range(grid_w)
            ]
            yield i, j, points, max(grid_h * grid_w, 1)


def roi_align_reference(x, rois, scale, ph, pw, sampling_ratio, aligned):
    out = x.new_zeros(rois.shape[0], x.shape[1], ph, pw)
    pieces = {}
    for k, roi in enumerate(rois):
        plane = x[int(roi[0])]
        for i, j, points, count in _align_bins(roi, scale, (ph, pw), sampling_ratio, 0.5 * aligned):
            pieces[k, i, j] = sum(_bilinear(plane, y, xx) for y, xx in points) / count
    return _assemble(out, pieces)


def _assemble(out, pieces):
    """out with pieces[(k, i, j)] ([C] each) written in, differentiably."""
    if not pieces:
        return out
    index = torch.tensor(list(pieces), dtype=torch.long)
    values = torch.stack(list(pieces.values()))  # [n, C]
    flat = out.permute(0, 2, 3, 1).reshape(-1, out.shape[1])
    rows = (index[:, 0] * out.shape[2] + index[:, 1]) * out.shape[3] + index[:, 2]
    flat = flat.index_put((rows.to(out.device),), values)
    n, c, h, w = out.shape
    return flat.view(n, h, w, c).permute(0, 3, 1, 2).contiguous()


def _round(v: float) -> int:
    """C's round(): halves away from zero (Python's round() goes to even)."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def _pool_bins(roi, scale, pooled, height, width, plus_one):
    """For each bin (i, j): its rows and columns [start, end) in the feature map,
    as RoIPool rounds them (plus_one: the roi's end is inclusive)."""
    x1, y1, x2, y2 = (_round(float(v) * scale) for v in roi[1:])
    roi_h = max(y2 - y1 + plus_one, 1)
    roi_w = max(x2 - x1 + plus_one, 1)
    bin_h, bin_w = roi_h / pooled[0], roi_w / pooled[1]
    for i in range(pooled[0]):
        h0 = min(max(math.floor(i * bin_h) + y1, 0), height)
        h1 = min(max(math.ceil((i + 1) * bin_h) + y1, 0), height)
        for j in range(pooled[1]):
            w0 = min(max(math.floor(j * bin_w) + x1, 0), width)
            w1 = min(max(math.ceil((j + 1) * bin_w) + x1, 0), width)
            yield i, j, (h0, h1), (w0, w1)


def roi_pool_reference(x, rois, scale, ph, pw):
    """(the max of each bin, where it is: h * W + w in the feature map, -1 where empty)."""
    out = x.new_zeros(rois.shape[0], x.shape[1], ph, pw)
    argmax = torch.full(out.shape, -1, dtype=torch.int32, device=x.device)
    pieces = {}
    for k, roi in enumerate(rois):
        plane = x[int(roi[0])]
        for i, j, (h0, h1), (w0, w1) in _pool_bins(roi, scale, (ph, pw), *plane.shape[-2:], 1):
            if h1 > h0 and w1 > w0:
                region = plane[:, h0:h1, w0:w1].reshape(plane.shape[0], -1)
                pieces[k, i, j], where = region.max(dim=1)
                hh, ww = where // (w1 - w0) + h0, where % (w1 - w0) + w0
                argmax[k, :, i, j] = hh * plane.shape[-1] + ww
    return _assemble(out, pieces), argmax


def _ps_channels(channels, ph, pw, i, j):
    """The input channel of each output channel at bin (i, j): position-sensitive."""
    return [(c * ph + i) * pw + j for c in range(channels // (ph * pw))]


def ps_roi_pool_reference(x, rois, scale, ph, pw):
    out_channels = x.shape[1] // (ph * pw)
    out = x.new_zeros(rois.shape[0], out_channels, ph, pw)
    mapping = torch.empty(out.shape, dtype=torch.int32, device=x.device)
    pieces = {}
    for k, roi in enumerate(rois):
        plane = x[int(roi[0])]
        for i, j, (h0, h1), (w0, w1) in _pool_bins(roi, scale, (ph, pw), *plane.shape[-2:], 0):
            channels = _ps_channels(x.shape[1], ph, pw, i, j)
            mapping[k, :, i, j] = torch.tensor(channels)
            if h1 > h0 and w1 > w0:
                pieces[k, i, j] = plane[channels, h0:h1, w0:w1].mean(dim=(1, 2))
    return _assemble(out, pieces), mapping


def ps_roi_align_reference(x, rois, scale, ph, pw, sampling_ratio):
    out_channels = x.shape[1] // (ph * pw)
    out = x.new_zeros(rois.shape[0], out_channels, ph, pw)
    mapping = torch.empty(out.shape, dtype=torch.int32, device=x.device)
    pieces = {}
    for k, roi in enumerate(rois):
        plane = x[int(roi[0])]
        for i, j, points, count in _align_bins(roi, scale, (ph, pw), sampling_ratio, 0.5):
            channels = _ps_channels(x.shape[1], ph, pw, i, j)
            mapping[k, :, i, j] = torch.tensor(channels)
            pieces[k, i, j] = sum(_bilinear(plane[channels], y, xx) for y, xx in points) / count
    return _assemble(out, pieces), mapping


def nms_reference(boxes, scores, iou_threshold):
    """Greedy: the best box left is kept, and every box overlapping it by more
    than iou_threshold dropped. Returns the kept indices, best first."""
    order = scores.argsort(descending=True)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    keep = []
    while order.numel() > 0:
        best, order = order[0], order[1:]
        keep.append(best)
        top_left = torch.maximum(boxes[order, :2], boxes[best, :2])
        bottom_right = torch.minimum(boxes[order, 2:], boxes[best, 2:])
        inter = (bottom_right - top_left).clamp(min=0).prod(dim=1)
        iou = inter / (area[order] + area[best] - inter)
        order = order[iou <= iou_threshold]
    return torch.stack(keep) if keep else torch.empty(0, dtype=torch.long, device=boxes.device)


def _bilinear_zero(images: torch.Tensor, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """images [B, C, H, W] sampled at y, x [B, P] (P points per image) as
    deform_conv2d does: each corner outside the image counts as zero. [B, C, P]"""
    height, width = images.shape[-2:]
    y0, x0 = y.floor(), x.floor()
    total = 0
    for dy in (0, 1):
        for dx in (0, 1):
            yy, xx = y0 + dy, x0 + dx
            weight = (1 - (y - yy).abs()) * (1 - (x - xx).abs())
            inside = (yy >= 0) & (yy < height) & (xx >= 0) & (xx < width)
            index = (yy.clamp(0, height - 1) * width + xx.clamp(0, width - 1)).long()
            flat = images.flatten(2)  # [B, C, H*W]
            values = flat.gather(2, index[:, None, :].expand(-1, flat.shape[1], -1))
            total = total + values * (weight * inside)[:, None, :]
    return total


def deform_conv2d_reference(
    x, weight, offset, mask, bias, sh, sw, pad_h, pad_w, dh, dw, groups, offset_groups, use_mask
):
    batch, channels, height, width = x.shape
    out_channels, _, kh, kw = weight.shape
    out_h, out_w = offset.shape[-2:]
    taps = kh * kw
    # Where each tap of each output position samples, before the offsets.
    oy = torch.arange(out_h, device=x.device, dtype=x.dtype) * sh - pad_h
    ox = torch.arange(out_w, device=x.device, dtype=x.dtype) * sw - pad_w
    ky = (torch.arange(taps, device=x.device) // kw).to(x.dtype) * dh
    kx = (torch.arange(taps, device=x.device) % kw).to(x.dtype) * dw
    base_y = ky[:, None, None] + oy[None, :, None]  # [taps, out_h, 1]
    base_x = kx[:, None, None] + ox[None, None, :]  # [taps, 1, out_w]
    offset = offset.view(batch, offset_groups, taps, 2, out_h, out_w)
    per_group = channels // offset_groups
    columns = []
    for g in range(offset_groups):
        y = (base_y + offset[:, g, :, 0]).reshape(batch, -1)
        xx = (base_x + offset[:, g, :, 1]).reshape(batch, -1)
        sampled = _bilinear_zero(x[:, g * per_group : (g + 1) * per_group], y, xx)
        sampled = sampled.view(batch, per_group, taps, out_h, out_w)
        if use_mask:
            sampled = sampled * mask.view(batch, offset_groups, taps, out_h, out_w)[:, g, None]
        columns.append(sampled)
    columns = torch.cat(columns, dim=1)  # [B, C, taps, out_h, out_w]
    columns = columns.view(batch, groups, channels // groups * taps, out_h * out_w)
    w = weight.view(groups, out_channels // groups, -1)
    out = torch.einsum("gok,bgkp->bgop", w, columns).reshape(batch, out_channels, out_h, out_w)
    return (out + bias.view(1, -1, 1, 1)).contiguous()


# -- samples ------------------------------------------------------------------


def roi_samples(channels, *extra):
    """samples() for the RoI ops: a feature map of IMAGES images and ``rows`` rois."""

    def samples(layout, dtype, device, rows):
        x = _feature_map(channels, layout, dtype, device)
        return [x, _rois(rows, dtype, device), SCALE, *POOLED, *extra]

    return samples


def nms_samples(layout, dtype, device, rows):
    """rows boxes (x1, y1, x2, y2) in a 40 x 40 image, many overlapping, and their scores."""
    corners = torch.rand(rows, 2) * 30
    boxes = torch.cat([corners, corners + torch.rand(rows, 2) * 15 + 1], dim=1)
    if layout == "transposed":  # each coordinate a row in memory
        boxes = boxes.t().contiguous().t()
    return [boxes.to(dtype=dtype, device=device), torch.rand(rows, dtype=dtype, device=device), 0.5]


# deform_conv2d: 3 x 3 kernel, stride 1, padding 1, dilation 1, 2 groups, 2 offset groups.
DEFORM = dict(channels=4, out_channels=4, kernel=3, groups=2, offset_groups=2)


def deform_samples(layout, dtype, device, rows):
    """A batch of 4 x 4 x 5 images that grows with rows (2 for gradcheck's rows=3:
    gradcheck perturbs every offset and mask element), with offsets, a mask
    and a bias."""
    c, o, k, g, og = DEFORM.values()
    batch = 2 + rows // 16
    kw = dict(dtype=dtype, device=device)
    x = _feature_map(c, layout, dtype, device, images=batch, size=(4, 5))
    weight = torch.randn(o, c // g, k, k, **kw)
    offset = torch.rand(batch, 2 * og * k * k, 4, 5, **kw) * 4 - 2
    mask = torch.rand(batch, og * k * k, 4, 5, **kw)
    bias = torch.randn(o, **kw)
    return [x, weight, offset, mask, bias, 1, 1, 1, 1, 1, 1, g, og, True]


# -- the specs ----------------------------------------------------------------

# What every torchvision op here declares, each for the reason given.
COMMON = dict(
    dtypes=DTYPES,
    layouts=LAYOUTS,
    # torchvision's meta kernels (torchvision/_meta_registrations.py) check the
    # inputs in their own words, not the C++ kernels': they must still raise.
    same_error_words=False,
    # The ops return contiguous outputs made by the kernel, whatever the input
    # layout; the references do too, so the strides check compares them.
    compare_storage=True,
)
ROI = dict(
    COMMON,
    # Only the feature map is differentiable: the rois are coordinates (their
    # gradient is not defined, and the kernels return none).
    grad_args=(0,),
    # The rois vary in number independently of the images.
    dynamic_dims={1: {0: "rois"}},
    # roi_align is reverse mode only (register_autograd-style C++ autograd).
    autodiff=("reverse",),
    skip={
        "gradgradcheck": "torchvision's RoI ops have no double backward "
        "(RuntimeError: double backwards on ... not supported)",
        "vmap": "torchvision registers no batching rule for its ops, and vmap over rois "
        "with a batch index column has no meaning",
    },
    # Bad input: a dtype the kernels don't take, and rois with 6 columns.
    bad_inputs=("dtype", "shape", "device"),
)

SPECS = {
    "roi_align": OpSpec(
        ops.roi_align.default,
        reference=roi_align_reference,
        samples=roi_samples(3, 2, True),  # 3 channels, sampling_ratio 2, aligned
        **ROI,
    ),
    "roi_pool": OpSpec(
        ops.roi_pool.default,
        reference=roi_pool_reference,
        samples=roi_samples(3),
        **ROI,
    ),
    "ps_roi_align": OpSpec(
        ops.ps_roi_align.default,
        reference=ps_roi_align_reference,
        samples=roi_samples(2 * POOLED[0] * POOLED[1], 2),  # 2 output channels
        **ROI,
    ),
    "ps_roi_pool": OpSpec(
        ops.ps_roi_pool.default,
        reference=ps_roi_pool_reference,
        samples=roi_samples(2 * POOLED[0] * POOLED[1]),
        **ROI,
    ),
    "nms": OpSpec(
        ops.nms.default,
        reference=nms_reference,
        samples=nms_samples,
        dtypes=DTYPES,
        layouts=("contiguous", "transposed"),
        same_error_words=False,  # as COMMON
        # How many boxes survive depends on their values.
        dynamic_output=True,
        # The kernel returns a slice of a buffer sized for every box: the
        # strides check compares the view.
        compare_storage=False,
        # The CUDA kernel copies its mask to the host to pick the boxes.
        capturable=False,
        differentiable=False,  # indices
        bad_inputs=("dtype", "shape", "device"),
    ),
    "deform_conv2d": OpSpec(
        ops.deform_conv2d.default,
        reference=deform_conv2d_reference,
        samples=deform_samples,
        # channels_last input passes as the other two do; left out, as
        # gradcheck of every offset costs seconds per layout.
        **{**COMMON, "layouts": ("contiguous", "transposed")},
        # The batch dimension of the input, offsets and mask varies together.
        dynamic_dims={0: {0: "batch"}, 2: {0: "batch"}, 3: {0: "batch"}},
        # The CUDA backward sums the offsets' gradients with atomic adds.
        nondeterministic=True,
        # Reverse mode only, as the RoI ops.
        autodiff=("reverse",),
        # Bad input: an integer image, a bias one longer than the output
        # channels (shape: the last tensor), inputs on two devices.
        bad_inputs=("dtype", "shape", "device"),
        skip={
            "gradgradcheck": "deform_conv2d has no double backward in torchvision",
            "vmap": "torchvision registers no batching rule for its ops",
        },
    ),
}
