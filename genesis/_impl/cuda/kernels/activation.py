"""Activations with Python-number parameters (the backend's ``activation`` and ``activation_backward``): one kernel
each way over a flat array. The op name is a compile-time constant and the parameters are runtime scalars, so one
compiled variant serves every value of alpha, beta or lambd. Half precision computes in float32 and float64 in
float64 (torch's opmath); each formula follows torch's CUDA kernel step by step, so the values round alike.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice

from genesis._impl.cuda.kernels.elementwise import block_offsets


@triton.jit
def _exp(x):
    # libdevice's exp in float32 too (Triton's tl.exp is approximate there): half-precision results then round as
    # torch's do.
    return libdevice.exp(x)


@triton.jit
def _log(x):
    return libdevice.log(x)


@triton.jit
def _div(a, b):
    # IEEE division in float32 (Triton's plain a / b is approximate there), as torch's kernels divide.
    if a.dtype.is_fp32():
        y = tl.math.div_rn(a, b)
    else:
        y = a / b
    return y


@triton.jit
def _relu6_of_shifted(x):
    # min(max(x + 3, 0), 6) with NaN kept, as std::min / std::max keep a NaN first operand.
    y = tl.maximum(x + 3.0, 0.0, propagate_nan=tl.PropagateNan.ALL)
    return tl.minimum(y, 6.0, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _forward(x, p0, p1, p2, OP: tl.constexpr):
    if OP == "elu":  # p0 alpha, p1 scale, p2 input_scale
        y = tl.where(x > 0, x * p1, libdevice.expm1(x * p2) * (p0 * p1))
    elif OP == "hardswish":  # divided by 6, as torch's CPU kernel (its CUDA kernel multiplies by 1/6)
        y = _div(x * _relu6_of_shifted(x), tl.full(x.shape, 6.0, x.dtype))
    elif OP == "hardsigmoid":
        y = _div(_relu6_of_shifted(x), tl.full(x.shape, 6.0, x.dtype))
    elif OP == "hardtanh":  # p0 min_val, p1 max_val
        y = tl.minimum(tl.maximum(x, p0, propagate_nan=tl.PropagateNan.ALL), p1, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "softplus":  # p0 beta, p1 threshold
        y = tl.where(x * p0 > p1, x, _div(libdevice.log1p(_exp(x * p0)), p0))
    elif OP == "softshrink":  # p0 lambd
        y = tl.where(x > p0, x - p0, tl.where(x < -p0, x + p0, tl.where(x != x, x, 0.0)))
    elif OP == "hardshrink":  # p0 lambd
        y = tl.where((x >= -p0) & (x <= p0), 0.0, x)
    elif OP == "threshold":  # p0 threshold, p1 value
        y = tl.where(x <= p0, p1, x)
    elif OP == "mish":
        y = x * libdevice.tanh(libdevice.log1p(_exp(x)))
    elif OP == "log_sigmoid":
        y = tl.minimum(x, 0.0) - libdevice.log1p(_exp(-tl.abs(x)))
    elif OP == "logit":  # p0 eps (negative: none)
        z = tl.minimum(tl.maximum(x, p0, propagate_nan=tl.PropagateNan.ALL), 1.0 - p0,
                       propagate_nan=tl.PropagateNan.ALL)
        z = tl.where(p0 < 0, x, z)
        y = _log(_div(z, 1.0 - z))
    else:
        tl.static_assert(False, "unknown activation")
    return y


@triton.jit
def _backward(g, x, p0, p1, p2, OP: tl.constexpr):
    if OP == "elu":
        y = tl.where(x <= 0, g * p2 * (p0 * p1) * _exp(x * p2), g * p1)
    elif OP == "hardswish":
        # Zero at -3 and slope 1 at 3, as torch's CPU kernel and the hardtanh inside it (its CUDA kernel takes the
        # middle piece at both kinks).
        y = tl.where(x <= -3.0, 0.0, tl.where(x < 3.0, g * (_div(x, tl.full(x.shape, 3.0, x.dtype)) + 0.5), g))
    elif OP == "hardsigmoid":
        # 1/6 rounded to float32 in every dtype, as torch's kernels write the constant.
        y = tl.where((x > -3.0) & (x < 3.0), g * tl.full(x.shape, 0.1666666716337204, x.dtype), 0.0)
    elif OP == "hardtanh":
        y = tl.where((x <= p0) | (x >= p1), 0.0, g)
    elif OP == "softplus":
        z = _exp(x * p0)
        y = tl.where(x * p0 > p1, g, _div(g * z, z + 1.0))
    elif OP == "softshrink" or OP == "hardshrink":
        y = tl.where((x >= -p0) & (x <= p0), 0.0, g)
    elif OP == "threshold":
        y = tl.where(x <= p0, 0.0, g)
    elif OP == "mish":
        s = _div(tl.full(x.shape, 1.0, x.dtype), 1.0 + _exp(-x))
        t = libdevice.tanh(libdevice.log1p(_exp(x)))
        y = g * (t + x * s * (1.0 - t * t))
    elif OP == "log_sigmoid":
        negative = x < 0
        z = _exp(-tl.abs(x))
        y = g * (tl.where(negative, 1.0, 0.0) - tl.where(negative, 1.0, -1.0) * _div(z, 1.0 + z))
    elif OP == "logit":  # zero outside [eps, 1 - eps]; without eps NaN outside [0, 1]
        no_eps = p0 < 0
        outside = (x < tl.where(no_eps, 0.0, p0)) | (x > tl.where(no_eps, 1.0, 1.0 - p0))
        y = tl.where(outside, tl.where(no_eps, float("nan"), 0.0), _div(g, x * (1.0 - x)))
    else:
        tl.static_assert(False, "unknown activation")
    return y


@triton.jit
def activation_kernel(out, x, g, n, p0, p1, p2, OP: tl.constexpr, BACKWARD: tl.constexpr, G_ONE: tl.constexpr,
                      BLOCK: tl.constexpr, I64: tl.constexpr):
    """``out = activation(x)``, or with ``BACKWARD`` ``out = g * activation'(x)``, over ``n`` elements laid out
    alike (``g`` unused forward; with ``G_ONE`` one element broadcast, the gradient of a sum)."""
    offs, mask = block_offsets(n, BLOCK, I64)
    v = tl.load(x + offs, mask=mask)
    if v.dtype.is_fp16() or v.dtype.is_bf16():
        v = v.to(tl.float32)
    # The parameters as tensors of the compute dtype (splats the compiler folds).
    zero = tl.zeros_like(v)
    if BACKWARD:
        if G_ONE:
            gv = tl.load(g + offs * 0, mask=mask).to(v.dtype)
        else:
            gv = tl.load(g + offs, mask=mask).to(v.dtype)
        y = _backward(gv, v, zero + p0, zero + p1, zero + p2, OP)
    else:
        y = _forward(v, zero + p0, zero + p1, zero + p2, OP)
    tl.store(out + offs, y.to(out.dtype.element_ty), mask=mask)
