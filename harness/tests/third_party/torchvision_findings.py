"""What the harness found in torchvision, each as a reproducer in plain PyTorch
and torchvision: no harness, a few lines, an assert that states what should
hold and fails on the torchvision releases tested (0.23, 0.29 on the CPU),
up to the release that fixed it (FIXED_IN).

docs/what_the_harness_found.md shows each function (between
its markers) and test_torchvision.py runs each, expecting the assert to fail,
so the page can't keep a finding that torchvision has fixed.
"""

import contextlib

import torch
import torch.autograd.forward_ad as fwAD
import torchvision

from .findings_helpers import fake_accepts, kernel_accepts


# [ps_roi_pool-forward]
def ps_roi_pool_leaves_out_the_last_row_and_column():
    x = torch.arange(16.0).view(1, 1, 4, 4)  # one image, one channel, 4 x 4
    whole_image = torch.tensor([[0.0, 0.0, 0.0, 4.0, 4.0]])  # (image, x1, y1, x2, y2)
    pooled = torchvision.ops.ps_roi_pool(x, whole_image, output_size=1)
    # The forward averages rows and columns 0-2 only: 5.0, where the mean is 7.5.
    assert pooled.item() == x.mean().item(), f"{pooled.item()} != {x.mean().item()}"


# [ps_roi_pool-forward]


# [ps_roi_pool-backward]
def ps_roi_pool_backward_is_not_its_forwards_derivative():
    x = torch.rand(1, 1, 4, 4, dtype=torch.float64, requires_grad=True)
    whole_image = torch.tensor([[0.0, 0.0, 0.0, 4.0, 4.0]], dtype=torch.float64)
    pooled = torchvision.ops.ps_roi_pool(x, whole_image, output_size=1)
    (grad,) = torch.autograd.grad(pooled.sum(), x)
    # The backward spreads 1/16 over all 16 pixels; the forward read 9 of them.
    forward_reads = torch.zeros(4, 4, dtype=torch.float64)
    forward_reads[:3, :3] = 1 / 9
    assert torch.equal(grad[0, 0], forward_reads), grad[0, 0]


# [ps_roi_pool-backward]


# [roi_pool-rois]
def roi_pool_reads_rois_of_the_wrong_shape():
    x = torch.rand(1, 1, 8, 8)
    rois = torch.tensor([[0.0, 0.0, 0.0, 4.0, 4.0, 99.0]])  # 6 columns: [K, 5] is the contract
    # roi_align refuses them: "rois must have shape as Tensor[K, 5]"
    assert not kernel_accepts(torch.ops.torchvision.roi_align, x, rois, 1.0, 2, 2, 2, False)
    # roi_pool reads them, 5 numbers a row from a buffer of 6 a row.
    assert not kernel_accepts(torch.ops.torchvision.roi_pool, x, rois, 1.0, 2, 2), "accepted"


# [roi_pool-rois]


# [nms-dtype]
def nms_fake_kernel_accepts_integer_boxes():
    nms = torch.ops.torchvision.nms
    boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11]])  # int64: the kernel takes floats
    scores = torch.tensor([0.9, 0.8])
    # The kernel: RuntimeError: "nms_kernel" not implemented for 'Long'.
    assert not kernel_accepts(nms, boxes, scores, 0.5)
    # The meta kernel, which torch.compile and torch.export trace, accepts them.
    assert not fake_accepts(nms, boxes, scores, 0.5), "the meta kernel accepts int64 boxes"


# [nms-dtype]


# [deform_args]
def deform_args(**changes):
    """deform_conv2d's arguments: a 4 x 4 image of 2 channels, a 3 x 3 kernel to
    3 channels, zero offsets, a mask of ones, and a bias; changes replace some."""
    args = dict(
        input=torch.rand(1, 2, 4, 4),
        weight=torch.rand(3, 2, 3, 3),
        offset=torch.zeros(1, 18, 2, 2),
        mask=torch.ones(1, 9, 2, 2),
        bias=torch.rand(3),
    )
    args.update(changes)
    # stride, padding, dilation (height and width), groups, offset groups, use_mask
    return [*args.values(), 1, 1, 0, 0, 1, 1, 1, 1, True]


# [deform_args]


# [deform_conv2d-bias]
def deform_conv2d_does_not_check_the_bias():
    deform_conv2d = torch.ops.torchvision.deform_conv2d
    args = deform_args(bias=torch.rand(5))  # 3 output channels, 5 biases
    # The kernel: RuntimeError: shape '[1, 3, 1, 1]' is invalid for input of size 5,
    # from a view inside it rather than a check that names the bias.
    assert not kernel_accepts(deform_conv2d, *args)
    assert not fake_accepts(deform_conv2d, *args), "the meta kernel accepts 5 biases"


# [deform_conv2d-bias]


# [deform_conv2d-dtype]
def deform_conv2d_fake_kernel_accepts_integer_input():
    deform_conv2d = torch.ops.torchvision.deform_conv2d
    args = deform_args(input=torch.randint(9, (1, 2, 4, 4)))  # int64
    # The kernel: RuntimeError: "deformable_im2col" not implemented for 'Long'.
    assert not kernel_accepts(deform_conv2d, *args)
    assert not fake_accepts(deform_conv2d, *args), "the meta kernel accepts int64 input"


# [deform_conv2d-dtype]


# [forward-mode]
def forward_mode_gives_no_tangent_and_no_error():
    x = torch.rand(1, 8, 4, 4, dtype=torch.float64)  # 8 channels: 2 per bin of 2 x 2
    rois = torch.tensor([[0.0, 0.0, 0.0, 3.0, 3.0]], dtype=torch.float64)
    ops = torchvision.ops
    calls = {
        "roi_align": lambda x: ops.roi_align(x, rois, output_size=2),
        "roi_pool": lambda x: ops.roi_pool(x, rois, output_size=2),
        "ps_roi_align": lambda x: ops.ps_roi_align(x, rois, output_size=2),
        "ps_roi_pool": lambda x: ops.ps_roi_pool(x, rois, output_size=2),
        "deform_conv2d": lambda x: torch.ops.torchvision.deform_conv2d(
            *[a.double() if torch.is_tensor(a) else a for a in deform_args(input=x[:, :2])]
        ),
    }
    silent = []
    for name, call in calls.items():
        with fwAD.dual_level():
            try:
                out = call(fwAD.make_dual(x, torch.ones_like(x)))
            except RuntimeError:  # "jvp is not implemented": not silent
                continue
            if fwAD.unpack_dual(out).tangent is None:  # no tangent, and no error
                silent.append(name)
    assert not silent, f"forward AD gives no tangent and no error: {silent}"


# [forward-mode]

# On a GPU.


# [nms-devices]
def nms_fake_kernel_accepts_boxes_and_scores_on_two_devices():
    nms = torch.ops.torchvision.nms
    boxes = torch.tensor([[0.0, 0, 10, 10], [1, 1, 11, 11]], device="cuda")
    scores = torch.tensor([0.9, 0.8])  # on the CPU
    # The kernel: RuntimeError: scores must be a CUDA tensor.
    assert not kernel_accepts(nms, boxes, scores, 0.5)
    assert not fake_accepts(nms, boxes, scores, 0.5), "the meta kernel accepts two devices"


# [nms-devices]


# [deform_conv2d-stream]
def deform_conv2d_does_not_run_on_the_current_stream():
    deform_conv2d = torch.ops.torchvision.deform_conv2d
    args = [a.cuda() if torch.is_tensor(a) else a for a in deform_args()]
    want = deform_conv2d(*args)
    image = args[0].clone()
    args[0].zero_()
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # work queued on a side stream, as a pipeline does:
        torch.cuda._sleep(400_000_000)  # the stream is busy for a while (~0.2 s),
        args[0].copy_(image)  # then writes the image,
        got = deform_conv2d(*args)  # then convolves it
    side.synchronize()
    # The kernels ran on the legacy default stream, during the sleep, on zeros.
    assert torch.equal(got, want), "deform_conv2d did not wait for the stream it was called on"


# [deform_conv2d-stream]


# [ps_roi_align-capture]
def ps_roi_align_cannot_be_captured_in_a_cuda_graph():
    x = torch.rand(1, 2 * 2 * 2, 8, 8, device="cuda")  # 2 channels of 2 x 2 bins
    rois = torch.tensor([[0.0, 0.0, 0.0, 7.0, 7.0]], device="cuda")
    torchvision.ops.ps_roi_align(x, rois, output_size=2)  # warm up before capturing
    error = capture_error(lambda: torchvision.ops.ps_roi_align(x, rois, output_size=2))
    # The kernel ends with cudaDeviceSynchronize(), which a capture forbids.
    assert error is None, f"capture failed: {error}"


# [ps_roi_align-capture]


def capture_error(fn):
    """The error that capturing fn() in a CUDA graph raises, or None. A failed
    capture leaves its own stream current and the CUDA RNG capturing: both
    are undone, so CUDA stays usable."""
    torch.cuda.synchronize()
    stream, graph = torch.cuda.current_stream(), torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            fn()
        error = None
    except Exception as e:  # noqa: BLE001  (torch.AcceleratorError, or the op's own)
        error = e
    for cleanup in (torch.cuda.synchronize, graph.reset, capture_nothing):
        with contextlib.suppress(Exception):
            cleanup()
    torch.cuda.set_stream(stream)  # last: capture_nothing can fail and leave its stream current
    return error


def capture_nothing():
    with torch.cuda.graph(torch.cuda.CUDAGraph()):
        pass


# Every reproducer, in the page's order.
FINDINGS = [
    ps_roi_pool_leaves_out_the_last_row_and_column,
    ps_roi_pool_backward_is_not_its_forwards_derivative,
    roi_pool_reads_rois_of_the_wrong_shape,
    nms_fake_kernel_accepts_integer_boxes,
    deform_conv2d_does_not_check_the_bias,
    deform_conv2d_fake_kernel_accepts_integer_input,
    forward_mode_gives_no_tangent_and_no_error,
    nms_fake_kernel_accepts_boxes_and_scores_on_two_devices,
    deform_conv2d_does_not_run_on_the_current_stream,
    ps_roi_align_cannot_be_captured_in_a_cuda_graph,
]
# The reproducers that need a GPU.
NEEDS_CUDA = {
    nms_fake_kernel_accepts_boxes_and_scores_on_two_devices,
    deform_conv2d_does_not_run_on_the_current_stream,
    ps_roi_align_cannot_be_captured_in_a_cuda_graph,
}
# The torchvision release that fixed a finding (make matrix runs a newer one
# than make test's), and the one that brought it: from 0.27 torchvision
# registers its derivatives with torch.library.register_autograd, whose
# kernel drops a forward-mode tangent (before, its C++ autograd Functions
# raised "jvp is not implemented for the c++ API of custom Function").
FIXED_IN = {roi_pool_reads_rois_of_the_wrong_shape: (0, 29, 2)}
INTRODUCED_IN = {forward_mode_gives_no_tangent_and_no_error: (0, 27, 0)}


def torchvision_version() -> tuple:
    """'0.29.1+cu130' -> (0, 29, 1)."""
    return tuple(int(part) for part in torchvision.__version__.split("+")[0].split(".")[:3])


def reproduces(finding) -> bool:
    """Whether the installed torchvision has the bug."""
    version = torchvision_version()
    return INTRODUCED_IN.get(finding, (0,)) <= version < FIXED_IN.get(finding, (99,))
