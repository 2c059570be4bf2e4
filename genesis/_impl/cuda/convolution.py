"""Convolution on CUDA: cuDNN where it runs the case, else Genesis's own pieces (strided window views, copy kernels
and cuBLASLt). Pooling and batch norm are Triton kernels (``nn_layers``).

Convolutions go to cuDNN (``convolution_cudnn``) when it is available, enabled (``genesis.backends.cudnn.enabled``) and
supports the dtype and configuration; otherwise (float64, no cuDNN, a declined case) a convolution is an im2col
product: the padded input's sliding windows are a strided view (no copy), made
contiguous once as (groups, N*out_positions, C/groups*kernel) and multiplied with the weight by batched cuBLASLt
products. Its adjoint (input gradient, transposed convolution) is col2im: one strided in-place add per kernel
offset.
"""

from __future__ import annotations

import math

import numpy as np

from genesis import dtypes
from genesis._impl.cuda import convolution_cudnn
from genesis._impl.cuda.blas import matmul
from genesis._impl.cuda.creation import cast, contiguous, copy_, full
from genesis._impl.cuda.elementwise import binary
from genesis._impl.cuda.reductions import reduce
from genesis.ndarray import NDArray, check_same_device


def _pad(x: NDArray, before: tuple[int, ...], after: tuple[int, ...], value: float) -> NDArray:
    """x (N, C, *S) padded with ``value`` on the spatial dims."""
    if not any(before) and not any(after):
        return x
    shape = x.shape[:2] + tuple(n + b + a for n, b, a in zip(x.shape[2:], before, after))
    out = full(shape, value, x.dtype, x.device)
    inner = out
    for i, (b, n) in enumerate(zip(before, x.shape[2:])):
        inner = inner.narrow(2 + i, b, n)
    copy_(inner, x)
    return out


def _windows(xp: NDArray, groups: int, out_size: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...],
             dilation: tuple[int, ...], offset: tuple[int, ...] = ()) -> NDArray:
    """The (N, g, C/g, *out, *kernel) view of a contiguous padded input's sliding windows."""
    N, C = xp.shape[:2]
    sN, sC = xp.strides[:2]
    sp = xp.strides[2:]
    start = xp.offset + sum(o * s for o, s in zip(offset, sp))
    shape = (N, groups, C // groups) + tuple(out_size) + tuple(kernel)
    strides = (sN, sC * (C // groups), sC) + tuple(s * st for s, st in zip(sp, stride)) + \
        tuple(s * d for s, d in zip(sp, dilation))
    return xp.as_strided(shape, strides, start)


def _im2col(xp: NDArray, groups: int, out_size: tuple, kernel: tuple, stride: tuple, dilation: tuple) -> NDArray:
    nd = len(kernel)
    win = _windows(xp, groups, out_size, kernel, stride, dilation)
    order = (1, 0) + tuple(range(3, 3 + nd)) + (2,) + tuple(range(3 + nd, 3 + 2 * nd))
    cols = contiguous(win.permute(order))
    N, C = xp.shape[:2]
    return cols.reshape((groups, N * math.prod(out_size), C // groups * math.prod(kernel)))


def _col2im(cols: NDArray, out: NDArray, groups: int, out_size: tuple, kernel: tuple, stride: tuple,
            dilation: tuple) -> None:
    """out (N, C, *Sp) += the windows' contributions in ``cols`` (g, N*prod(out_size), C/g*prod(kernel))."""
    nd = len(kernel)
    N, C = out.shape[:2]
    full = cols.reshape((groups, N) + tuple(out_size) + (C // groups,) + tuple(kernel))
    # (N, g, Cg, *out, *kernel) view of the columns, matching _windows' layout.
    order = (1, 0, 2 + nd) + tuple(range(2, 2 + nd)) + tuple(range(3 + nd, 3 + 2 * nd))
    src_all = full.permute(order)
    for k in np.ndindex(*kernel):
        target = _windows(out, groups, out_size, (1,) * nd, stride, (1,) * nd,
                          tuple(ki * d for ki, d in zip(k, dilation)))
        target = target.squeeze(tuple(range(3 + nd, 3 + 2 * nd)))
        src = src_all
        for ki in k:
            src = src.narrow(3 + nd, ki, 1).squeeze((3 + nd,))
        binary("add", target, src, out=target)


def _out_size(size: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple) -> tuple[int, ...]:
    return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1 for s, k, st, p, d in zip(size, kernel, stride, padding,
                                                                                 dilation))


def _to_groups(t: NDArray, groups: int) -> NDArray:
    """(N, O, *S) -> contiguous (g, N*prod(S), O/g)."""
    N, O = t.shape[:2]
    nd = t.ndim - 2
    v = t.reshape((N, groups, O // groups) + t.shape[2:]).permute((1, 0) + tuple(range(3, 3 + nd)) + (2,))
    return contiguous(v).reshape((groups, N * math.prod(t.shape[2:]), O // groups))


def _from_groups(m: NDArray, N: int, size: tuple) -> NDArray:
    """(g, N*prod(size), Og) -> contiguous (N, g*Og, *size)."""
    g, _, og = m.shape
    nd = len(size)
    v = m.reshape((g, N) + tuple(size) + (og,)).permute((1, 0, 2 + nd) + tuple(range(2, 2 + nd)))
    return contiguous(v).reshape((N, g * og) + tuple(size))


def _wmat(w: NDArray, groups: int) -> NDArray:
    """Weight (O, C/g, *K) -> (g, O/g, C/g*prod(K))."""
    w = w if w.is_contiguous() else contiguous(w)
    return w.reshape((groups, w.shape[0] // groups, math.prod(w.shape[1:])))


def _add_bias(out: NDArray, bias: NDArray | None) -> NDArray:
    if bias is None:
        return out
    return binary("add", out, bias.reshape((bias.shape[0],) + (1,) * (out.ndim - 2)), out=out)


def _conv_fwd(x: NDArray, w: NDArray, stride: tuple, padding: tuple, dilation: tuple, groups: int) -> NDArray:
    kernel = w.shape[2:]
    out_size = _out_size(x.shape[2:], kernel, stride, padding, dilation)
    xp = _pad(x if x.is_contiguous() else contiguous(x), padding, padding, 0)
    cols = _im2col(xp, groups, out_size, kernel, stride, dilation)
    prod = matmul(cols, _wmat(w, groups).transpose(1, 2))
    return _from_groups(prod, x.shape[0], out_size)


def _conv_adjoint(g: NDArray, w: NDArray, in_size: tuple, stride: tuple, padding: tuple, dilation: tuple,
                  groups: int, channels: int) -> NDArray:
    """The input gradient of a convolution (= transposed convolution) of ``g`` (N, O, *out) with weight w."""
    kernel = w.shape[2:]
    out_size = g.shape[2:]
    gcols = matmul(_to_groups(g, groups), _wmat(w, groups))
    padded = tuple(s + 2 * p for s, p in zip(in_size, padding))
    acc_dtype = dtypes.float32 if g.dtype in (dtypes.float16, dtypes.bfloat16) else g.dtype
    xpg = full((g.shape[0], channels) + padded, 0, acc_dtype, g.device)
    _col2im(gcols, xpg, groups, out_size, kernel, stride, dilation)
    inner = xpg
    for i, (p, n) in enumerate(zip(padding, in_size)):
        inner = inner.narrow(2 + i, p, n)
    return cast(inner, g.dtype)


def conv(x: NDArray, w: NDArray, bias: NDArray | None, stride: tuple, padding: tuple, dilation: tuple, groups: int,
         transposed: bool, output_padding: tuple, out: NDArray | None = None) -> NDArray:
    check_same_device("conv", x, w, bias, out)
    batched = x.ndim == w.ndim
    if not batched:
        x = x.unsqueeze(0)
    given = out if out is None or batched else out.unsqueeze(0)  # cuDNN writes straight into it where it can
    out = None
    if transposed:
        size = tuple((s - 1) * st - 2 * p + d * (k - 1) + op + 1 for s, st, p, d, k, op in
                     zip(x.shape[2:], stride, padding, dilation, w.shape[2:], output_padding))
        if convolution_cudnn.usable(x, w):
            out = convolution_cudnn.data_grad(x, w, (x.shape[0], w.shape[1] * groups) + size, stride, padding, dilation,
                                              into=given)
    elif convolution_cudnn.usable(x, w):
        out = convolution_cudnn.forward(x, w, stride, padding, dilation, into=given)
    if out is None:
        if transposed:
            out = _conv_adjoint(x, w, size, stride, padding, dilation, groups, w.shape[1] * groups)
        else:
            out = _conv_fwd(x, w, stride, padding, dilation, groups)
        if convolution_cudnn.is_channels_last(x) or convolution_cudnn.is_channels_last(w):
            # The im2col path computes in NC* order; the output keeps the input's channels_last layout (as torch).
            relaid = convolution_cudnn.empty(out.shape, out.dtype, out.device, True)
            out = copy_(relaid, out)
    if given is not None and out is not given:
        out = copy_(given, out)
    out = _add_bias(out, bias)
    return out if batched else out.squeeze((0,))


def conv_backward(grad: NDArray, x: NDArray, w: NDArray, stride: tuple, padding: tuple, dilation: tuple, groups: int,
                  transposed: bool, output_padding: tuple, output_mask: tuple) -> tuple:
    batched = x.ndim == w.ndim
    if not batched:
        x, grad = x.unsqueeze(0), grad.unsqueeze(0)
    gx = gw = gb = None
    if convolution_cudnn.usable(grad, x, w):
        # The forward's layout (channels_last if the input or weight was, as torch) for both gradients.
        cl = convolution_cudnn.is_channels_last(x) or convolution_cudnn.is_channels_last(w)
        if output_mask[0]:
            gx = convolution_cudnn.forward(grad, w, stride, padding, dilation, cl, x.shape[2:]) if transposed else \
                convolution_cudnn.data_grad(grad, w, x.shape, stride, padding, dilation, cl)
        if output_mask[1]:
            gw = convolution_cudnn.weight_grad(grad, x, w.shape, stride, padding, dilation, cl) if transposed else \
                convolution_cudnn.weight_grad(x, grad, w.shape, stride, padding, dilation, cl)
    if (output_mask[0] and gx is None) or (output_mask[1] and gw is None):
        grad = grad if grad.is_contiguous() else contiguous(grad)  # the im2col path reads it contiguous
    kernel = w.shape[2:]
    if output_mask[0]:
        if gx is None:
            if transposed:
                gx = _conv_fwd(grad, w, stride, padding, dilation, groups)
            else:
                gx = _conv_adjoint(grad, w, x.shape[2:], stride, padding, dilation, groups, x.shape[1])
        if not batched:
            gx = gx.squeeze((0,))
    if output_mask[1] and gw is None:
        # Columns of the side that was windowed (input for a convolution, gradient for a transposed one).
        windowed, other = (grad, x) if transposed else (x, grad)
        out_size = other.shape[2:]
        src = windowed if windowed.is_contiguous() else contiguous(windowed)
        cols = _im2col(_pad(src, padding, padding, 0), groups, out_size, kernel, stride, dilation)
        m = _to_groups(other if other.is_contiguous() else contiguous(other), groups)
        gwm = matmul(m.transpose(1, 2), cols)  # (g, other_channels/g, windowed_channels/g * prod(K))
        gw = contiguous(gwm).reshape(w.shape)
    if output_mask[2]:
        gb = reduce("sum", grad, (0,) + tuple(range(2, grad.ndim)), False)
    return gx, gw, gb
