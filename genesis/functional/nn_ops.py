"""Neural-network primitives with a fused backend kernel: convolution and pooling.

Forward and backward both call the backend (``conv``/``conv_backward``, ``pool``/``pool_backward``): one fused
kernel each way is several times faster on the CPU than composing im2col and matmul from smaller ops. The
backward primitives have no backward of their own (no double differentiation through convolution or pooling).
"""

from __future__ import annotations

from genesis.functional.elementwise import Primitive
from genesis.ndarray import NDArray


class Conv(Primitive):
    """``conv(x, w) + bias`` (or the transposed convolution) over the trailing spatial dims."""

    @staticmethod
    def forward(ctx, x: NDArray, w: NDArray, bias: NDArray | None, stride: tuple, padding: tuple, dilation: tuple,
                groups: int, transposed: bool, output_padding: tuple) -> NDArray:
        ctx.save_for_backward(x, w)
        ctx.params = (stride, padding, dilation, groups, transposed, output_padding)
        return x.backend.conv(x, w, bias, stride, padding, dilation, groups, transposed, output_padding)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        mask = tuple(bool(m) for m in ctx.needs_input_grad[:3])
        grad_x, grad_w, grad_b = ConvBackward.apply(grad, x, w, *ctx.params, mask)
        return (grad_x, grad_w, grad_b) + (None,) * 6


class ConvBackward(Primitive):
    """(grad_x, grad_w, grad_bias) of ``Conv`` in one backend call."""

    @staticmethod
    def forward(ctx, grad: NDArray, x: NDArray, w: NDArray, stride: tuple, padding: tuple, dilation: tuple,
                groups: int, transposed: bool, output_padding: tuple, output_mask: tuple) -> tuple:
        return grad.backend.conv_backward(grad, x, w, stride, padding, dilation, groups, transposed,
                                          output_padding, output_mask)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("double backward through convolution is not supported")


class Pool(Primitive):
    """Max or average pooling over 2 or 3 trailing spatial dims; max also returns the argmax indices."""

    @staticmethod
    def forward(ctx, x: NDArray, mode: str, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                ceil_mode: bool, count_include_pad: bool, divisor_override: int | None) -> tuple:
        values, indices = x.backend.pool(x, mode, kernel, stride, padding, dilation, ceil_mode, count_include_pad,
                                         divisor_override)
        ctx.save_for_backward(x, indices)
        ctx.params = (mode, kernel, stride, padding, dilation, ceil_mode, count_include_pad, divisor_override)
        if indices is not None:
            ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices=None):
        x, indices = ctx.saved_tensors
        return (PoolBackward.apply(grad, x, indices, *ctx.params),) + (None,) * 8


class PoolBackward(Primitive):
    @staticmethod
    def forward(ctx, grad: NDArray, x: NDArray, indices: NDArray | None, mode: str, kernel: tuple, stride: tuple,
                padding: tuple, dilation: tuple, ceil_mode: bool, count_include_pad: bool,
                divisor_override: int | None) -> NDArray:
        return grad.backend.pool_backward(grad, x, indices, mode, kernel, stride, padding, dilation, ceil_mode,
                                          count_include_pad, divisor_override)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("double backward through pooling is not supported")
