"""Elementwise Triton kernels: unary and binary ops, where, casts, fills and copies of strided views.

One kernel body serves every op: the op name is a compile-time constant, so each (op, dtypes, layout) specialization
compiles to straight-line code. Operand modes (compile-time): 0 absent, 1 tensor, 2 runtime scalar value, 3 one
element broadcast from a pointer. Two layouts:

- ``ew_contig``: every tensor operand is contiguous with the output's shape (or a broadcast single element);
  a 1-D grid of BLOCK-element programs.
- ``ew_strided``: any strides (broadcast, transposed, sliced views, strided ``out=``) over at most 4 coalesced
  dims, as a 2-D tile: up to 3 leading dims flattened into rows, the last dim as columns. Unit column strides are
  compile-time constants so contiguous rows load with wide vector accesses.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _operand(p, offs, mask, M: tl.constexpr):
    if M == 1:
        v = tl.load(p + offs, mask=mask)
    elif M == 2:
        v = tl.zeros(offs.shape, p.dtype) + p
    elif M == 3:
        v = tl.load(p + offs * 0, mask=mask)
    else:
        v = tl.zeros(offs.shape, tl.int8)
    return v


@triton.jit
def _up(x):
    # Half types compute in float32 (as torch's opmath); bool computes as int8.
    if x.dtype.is_fp16() or x.dtype.is_bf16():
        x = x.to(tl.float32)
    elif x.dtype.is_int1():
        x = x.to(tl.int8)
    return x


@triton.jit
def _exp(x):
    if x.dtype.is_fp64():
        y = libdevice.exp(x)
    else:
        y = tl.exp(x)
    return y


@triton.jit
def _activation_backward(grad, x, OP: tl.constexpr):
    # grad * d activation(x) / dx with torch's formulas (ActivationGeluKernel.cu, ActivationSiluKernel.cu); the
    # composites of genesis/ops/unary.py write the same derivatives.
    # Irrational constants as tensors of x's dtype: a bare Python float would be a float32 literal, short of
    # float64 precision.
    if OP == "gelu_backward":
        cdf = 0.5 * (1.0 + libdevice.erf(x * tl.full(x.shape, 0.7071067811865476, x.dtype)))  # Phi(x)
        pdf = _exp(-0.5 * x * x) * tl.full(x.shape, 0.3989422804014327, x.dtype)  # exp(-x^2 / 2) / sqrt(2 pi)
        y = grad * (cdf + x * pdf)
    elif OP == "gelu_tanh_backward":
        k = tl.full(x.shape, 0.7978845608028654, x.dtype)  # sqrt(2 / pi)
        kappa = tl.full(x.shape, 0.044715, x.dtype)
        t = libdevice.tanh(k * (x + kappa * x * x * x))
        y = grad * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * kappa * x * x))
    else:  # silu_backward
        s = 1.0 / (1.0 + _exp(-x))
        y = grad * s * (1.0 + x * (1.0 - s))
    return y


@triton.jit
def _accurate_sigmoid(x):
    # 1 / (1 + exp(-x)) with libdevice's exp and IEEE division in float32 too, as torch's glu kernels compute it.
    e = libdevice.exp(x * -1.0)
    if x.dtype.is_fp32():
        y = tl.math.div_rn(tl.full(x.shape, 1.0, tl.float32), 1.0 + e)
    else:
        y = 1.0 / (1.0 + e)
    return y


@triton.jit
def _digamma(x):
    # Reflection psi(x) = psi(1 - x) - pi / tan(pi x) below 1/2, then psi(z) = psi(z + 8) - sum 1/(z + k) and the
    # asymptotic series at w = z + 8 >= 8.5 (truncation error below 2e-13). Poles as torch: -inf/+inf at +0/-0,
    # NaN at negative integers.
    refl = x < 0.5
    z = tl.where(refl, 1.0 - x, x)
    acc = tl.zeros(x.shape, x.dtype)
    for k in tl.static_range(8):
        acc += 1.0 / (z + k)
    w = z + 8.0
    iw2 = 1.0 / (w * w)
    tail = iw2 * (1.0 / 12 - iw2 * (1.0 / 120 - iw2 * (1.0 / 252 - iw2 * (1.0 / 240 - iw2 * (1.0 / 132)))))
    psi = libdevice.log(w) - 0.5 / w - tail - acc
    y = tl.where(refl, psi - 3.141592653589793 / libdevice.tan(3.141592653589793 * x), psi)
    # The sign of a zero comes from its sign bit: Triton's -x is 0 - x, which loses it.
    y = tl.where(x == 0, tl.where(libdevice.signbit(x) != 0, float("inf"), float("-inf")), y)
    return tl.where((x < 0) & (x == libdevice.floor(x)), float("nan"), y)


@triton.jit
def _trigamma(x):
    # polygamma(1, x) by torch's own steps and in its order, so that values agree to rounding (its truncation error
    # is about 1e-10 relative): reflection psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x) below 1/2, six steps of the
    # recurrence, then the asymptotic series. At the poles sin(pi x) is tiny but not zero: huge values, as torch's.
    refl = x < 0.5
    s = libdevice.sin(3.141592653589793 * x)
    acc = tl.where(refl, -(9.869604401089358 / (s * s)), 0.0)
    z = tl.where(refl, 1.0 - x, x)
    for _ in tl.static_range(6):
        acc += 1.0 / (z * z)
        z += 1.0
    ixx = 1.0 / (z * z)
    acc += (1.0 + 1.0 / (2.0 * z) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / z
    return tl.where(refl, -acc, acc)


@triton.jit
def _unary(x, OP: tl.constexpr):
    if OP == "copy":
        y = x
    elif OP == "neg":
        if x.dtype.is_floating():
            y = x * -1.0  # Triton's -x is 0 - x, which turns +0.0 into +0.0 (torch: -0.0)
        else:
            y = -x
    elif OP == "abs":
        y = tl.abs(x)
    elif OP == "exp":
        if x.dtype.is_fp64():
            y = libdevice.exp(x)
        else:
            y = tl.exp(x)
    elif OP == "exp2":
        y = libdevice.exp2(x)
    elif OP == "log":
        if x.dtype.is_fp64():
            y = libdevice.log(x)
        else:
            y = tl.log(x)
    elif OP == "log2":
        y = libdevice.log2(x)
    elif OP == "log1p":
        y = libdevice.log1p(x)
    elif OP == "expm1":
        y = libdevice.expm1(x)
    elif OP == "sqrt":
        if x.dtype.is_fp64():
            y = libdevice.sqrt(x)
        else:
            y = tl.sqrt_rn(x)
    elif OP == "rsqrt":
        y = libdevice.rsqrt(x)
    elif OP == "reciprocal":
        if x.dtype.is_fp32():  # IEEE division (Triton's plain 1 / x is approximate in float32), as torch's kernel
            y = tl.math.div_rn(tl.full(x.shape, 1.0, tl.float32), x)
        else:
            y = 1.0 / x
    elif OP == "sin":
        y = libdevice.sin(x)
    elif OP == "cos":
        y = libdevice.cos(x)
    elif OP == "tan":
        y = libdevice.tan(x)
    elif OP == "tanh":
        y = libdevice.tanh(x)
    elif OP == "sigmoid":
        if x.dtype.is_fp64():
            y = 1.0 / (1.0 + libdevice.exp(-x))
        else:
            y = 1.0 / (1.0 + tl.exp(-x))
    elif OP == "relu":
        y = tl.where(x < 0, 0, x)
    elif OP == "gelu":
        y = 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))
    elif OP == "gelu_tanh":
        y = 0.5 * x * (1.0 + libdevice.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    elif OP == "silu":
        if x.dtype.is_fp64():
            y = x / (1.0 + libdevice.exp(-x))
        else:
            y = x / (1.0 + tl.exp(-x))
    elif OP == "softplus":
        y = tl.where(x > 20.0, x, libdevice.log1p(libdevice.exp(x)))
    elif OP == "erf":
        y = libdevice.erf(x)
    elif OP == "sign":
        if x.dtype.is_floating():
            y = tl.where(x > 0, 1.0, tl.where(x < 0, -1.0, 0.0))  # sign(nan) = 0, as torch
        else:
            y = tl.where(x > 0, 1, tl.where(x < 0, -1, 0))
    elif OP == "floor":
        if x.dtype.is_floating():
            y = libdevice.floor(x)
        else:
            y = x
    elif OP == "ceil":
        if x.dtype.is_floating():
            y = libdevice.ceil(x)
        else:
            y = x
    elif OP == "round":
        if x.dtype.is_floating():
            y = libdevice.rint(x)
        else:
            y = x
    elif OP == "trunc":
        if x.dtype.is_floating():
            y = libdevice.trunc(x)
        else:
            y = x
    elif OP == "isnan":
        y = x != x
    elif OP == "isinf":
        if x.dtype.is_floating():
            y = tl.abs(x) == float("inf")
        else:
            y = x != x
    elif OP == "logical_not":
        y = x == 0
    elif OP == "bitwise_not":
        y = ~x
    elif OP == "asin":
        y = libdevice.asin(x)
    elif OP == "acos":
        y = libdevice.acos(x)
    elif OP == "atan":
        y = libdevice.atan(x)
    elif OP == "sinh":
        y = libdevice.sinh(x)
    elif OP == "cosh":
        y = libdevice.cosh(x)
    elif OP == "asinh":
        y = libdevice.asinh(x)
    elif OP == "acosh":
        y = libdevice.acosh(x)
    elif OP == "atanh":
        y = libdevice.atanh(x)
    elif OP == "erfc":
        y = libdevice.erfc(x)
    elif OP == "erfinv":
        y = libdevice.erfinv(x)
    elif OP == "lgamma":
        y = libdevice.lgamma(x)
    elif OP == "digamma":
        y = _digamma(x)
    elif OP == "trigamma":
        y = _trigamma(x)
    elif OP == "i0":
        # torch's Cephes formula exp(|x|) * chbevl(...) / sqrt(|x|) gives inf / inf = NaN at |x| = inf.
        y = tl.where(tl.abs(x) == float("inf"), float("nan"), libdevice.cyl_bessel_i0(x))
    elif OP == "i1":
        y = tl.where(tl.abs(x) == float("inf"), float("nan"), libdevice.cyl_bessel_i1(x))
    elif OP == "signbit":
        y = libdevice.signbit(x) != 0
    else:
        tl.static_assert(False, "unknown unary op")
    return y


@triton.jit
def _ipow(a, b):
    # Integer power by squaring (exponents are non-negative: checked above the backend).
    r = tl.zeros(a.shape, a.dtype) + 1
    base = a
    e = b
    for _ in range(63):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    return r


@triton.jit
def _binary(a, b, OP: tl.constexpr):
    if OP == "add":
        y = a + b
    elif OP == "sub":
        y = a - b
    elif OP == "mul":
        y = a * b
    elif OP == "div":
        if a.dtype.is_fp32():
            y = tl.math.div_rn(a, b.to(tl.float32))
        else:
            y = a / b
    elif OP == "floor_divide":
        if a.dtype.is_floating():
            mod = libdevice.fmod(a, b)
            div = (a - mod) / b
            div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
            fd = libdevice.floor(div)
            fd = tl.where(div - fd > 0.5, fd + 1.0, fd)
            fd = tl.where(div == 0, libdevice.copysign(div * 0.0, a / b), fd)
            y = tl.where(b == 0, a / b, fd)
        else:
            q = a // b
            r = a - q * b
            y = tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)
    elif OP == "remainder":
        if a.dtype.is_floating():
            mod = libdevice.fmod(a, b)
            y = tl.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)
        else:
            r = a % b
            y = tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
    elif OP == "pow":
        if a.dtype.is_floating():
            y = libdevice.pow(a, b.to(a.dtype))
        else:
            y = _ipow(a, b)
    elif OP == "maximum":
        if a.dtype.is_floating():
            y = tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
        else:
            y = tl.maximum(a, b)
    elif OP == "minimum":
        if a.dtype.is_floating():
            y = tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
        else:
            y = tl.minimum(a, b)
    elif OP == "atan2":
        y = libdevice.atan2(a, b.to(a.dtype))
    elif OP == "eq":
        y = a == b
    elif OP == "ne":
        y = a != b
    elif OP == "lt":
        y = a < b
    elif OP == "le":
        y = a <= b
    elif OP == "gt":
        y = a > b
    elif OP == "ge":
        y = a >= b
    elif OP == "logical_and":
        y = (a != 0) & (b != 0)
    elif OP == "logical_or":
        y = (a != 0) | (b != 0)
    elif OP == "logical_xor":
        y = (a != 0) != (b != 0)
    elif OP == "bitwise_and":
        y = a & b
    elif OP == "bitwise_or":
        y = a | b
    elif OP == "bitwise_xor":
        y = a ^ b
    elif OP == "hypot":
        y = libdevice.hypot(a, b.to(a.dtype))
    elif OP == "copysign":
        y = libdevice.copysign(a, b.to(a.dtype))
    elif OP == "gelu_backward" or OP == "gelu_tanh_backward" or OP == "silu_backward":
        y = _activation_backward(a, b, OP)
    elif OP == "relu_backward":  # b is relu's output
        y = tl.where(b > 0, a, tl.zeros_like(a))
    elif OP == "logaddexp" or OP == "logaddexp2":  # max + log1p(exp(-|a - b|)); equal infinities give themselves
        if a.dtype.is_floating() and b.dtype.is_floating() and a.dtype != b.dtype:
            b = b.to(a.dtype)
        gap = tl.abs(a - b) * -1.0
        if OP == "logaddexp":
            if a.dtype.is_fp64():
                y = libdevice.log1p(libdevice.exp(gap))
            else:
                y = libdevice.log1p(tl.exp(gap))
        else:
            y = libdevice.log1p(libdevice.exp2(gap)) * tl.full(a.shape, 1.4426950408889634, a.dtype)
        y = tl.where((a == b) & (tl.abs(a) == float("inf")), a, tl.maximum(a, b) + y)
    elif OP == "glu" or OP == "glu_grad_a":  # a * sigmoid(b): the gated half, or the gradient of its first half
        y = a * _accurate_sigmoid(b.to(a.dtype))
    elif OP == "binary_cross_entropy":  # a: probabilities, b: targets; logs clamped at -100, in torch's order
        if a.dtype.is_fp64():
            log_p = libdevice.log(a)
        else:
            log_p = tl.log(a)
        log_q = tl.maximum(libdevice.log1p(a * -1.0), -100.0)
        y = (b - 1.0) * log_q - b * tl.maximum(log_p, -100.0)
    elif OP == "leaky_relu":  # b is the negative slope
        y = tl.where(a > 0, a, a * b.to(a.dtype))
    else:
        tl.static_assert(False, "unknown binary op")
    return y


@triton.jit
def _compute(a, b, c, OP: tl.constexpr, NIN: tl.constexpr):
    if NIN == 1:
        if OP == "bitwise_not" and a.dtype.is_int1():
            y = a == 0
        elif OP == "copy":
            y = a
        else:
            y = _unary(_up(a), OP)
    elif NIN == 2:
        a = _up(a)
        b = _up(b)
        if a.dtype.is_floating() and b.dtype.is_floating() and a.dtype != b.dtype:
            # float32 with float64 (operands of two widths): both in float64, as torch computes them.
            a = a.to(tl.float64)
            b = b.to(tl.float64)
        if a.dtype.is_int() and b.dtype.is_int() and a.dtype != b.dtype:
            b = b.to(a.dtype)  # an int64 scalar with an unsigned or narrow tensor: compute in the tensor's type
        y = _binary(a, b, OP)
    elif OP == "leaky_relu_backward":  # a: grad, b: leaky_relu's input, c: the negative slope
        a = _up(a)
        y = tl.where(_up(b) > 0, a, a * c.to(a.dtype))
    elif OP == "glu_grad_b":  # a: grad, b: the first half, c: the gate half
        a = _up(a)
        s = _accurate_sigmoid(_up(c).to(a.dtype))
        y = (1.0 - s) * s * a * _up(b).to(a.dtype)
    elif OP == "binary_cross_entropy_backward":  # a: grad, b: probabilities, c: targets
        a = _up(a)
        p = _up(b).to(a.dtype)
        # torch's floor 1e-12 is a float32 constant (9.99999996e-13) in every dtype.
        den = tl.maximum((1.0 - p) * p, tl.full(p.shape, 9.999999960041972e-13, p.dtype))
        if a.dtype.is_fp32():
            y = tl.math.div_rn(a * (p - _up(c).to(a.dtype)), den)
        else:
            y = a * (p - _up(c).to(a.dtype)) / den
    elif OP == "add_scaled":  # a + c * b, one rounding (the product and sum contract to a fused multiply-add)
        a = _up(a)
        y = a + _up(b) * c.to(a.dtype)
    elif OP == "clamp":  # a: x (floating), b: the lower bound, c: the upper bound; NaN stays NaN
        a = _up(a)
        y = tl.maximum(a, b.to(a.dtype), propagate_nan=tl.PropagateNan.ALL)
        y = tl.minimum(y, c.to(a.dtype), propagate_nan=tl.PropagateNan.ALL)
    elif OP == "clamp_min_backward":  # a: grad, b: clamp's input, c: the lower bound (false for NaN inputs)
        y = tl.where(_up(b) >= c, a, tl.zeros_like(a))
    elif OP == "clamp_max_backward":  # a: grad, b: clamp's input, c: the upper bound
        y = tl.where(_up(b) <= c, a, tl.zeros_like(a))
    elif OP == "lerp":  # a: start, b: end, c: weight; from the nearer end, as torch's lerp
        a = _up(a)
        b = _up(b)
        w = _up(c).to(a.dtype)
        y = tl.where(tl.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))
    else:
        y = tl.where(a != 0, b, c)
    return y


@triton.jit
def block_offsets(n, BLOCK: tl.constexpr, I64: tl.constexpr):
    """The offsets of this program's BLOCK elements (64-bit where n may pass 2^31) and the mask of those below n."""
    pid = tl.program_id(0)
    if I64:
        offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        offs = pid * BLOCK + tl.arange(0, BLOCK)
    return offs, offs < n


@triton.jit
def ew_contig(out, x0, x1, x2, n, OP: tl.constexpr, NIN: tl.constexpr, M0: tl.constexpr, M1: tl.constexpr,
              M2: tl.constexpr, BLOCK: tl.constexpr, I64: tl.constexpr):
    offs, mask = block_offsets(n, BLOCK, I64)
    a = _operand(x0, offs, mask, M0)
    b = _operand(x1, offs, mask, M1)
    c = _operand(x2, offs, mask, M2)
    y = _compute(a, b, c, OP, NIN)
    tl.store(out + offs, y.to(out.dtype.element_ty), mask=mask)


@triton.jit
def _tile_offsets(r0, r1, r2, cols, s0, s1, s2, sc):
    return (r0 * s0 + r1 * s1 + r2 * s2)[:, None] + cols[None, :].to(tl.int64) * sc


@triton.jit
def ew_strided(out, x0, x1, x2, n_rows, C, R1, R2, n_cblocks,
               os0, os1, os2, osc, as0, as1, as2, asc, bs0, bs1, bs2, bsc, cs0, cs1, cs2, csc,
               OP: tl.constexpr, NIN: tl.constexpr, M0: tl.constexpr, M1: tl.constexpr, M2: tl.constexpr,
               BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid = tl.program_id(0)
    pr = pid // n_cblocks
    pc = pid - pr * n_cblocks
    rows = pr * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = pc * BLOCK_C + tl.arange(0, BLOCK_C)
    r2 = rows % R2
    t = rows // R2
    r1 = (t % R1).to(tl.int64)
    r0 = (t // R1).to(tl.int64)
    r2 = r2.to(tl.int64)
    mask = (rows < n_rows)[:, None] & (cols < C)[None, :]
    a = _operand(x0, _tile_offsets(r0, r1, r2, cols, as0, as1, as2, asc), mask, M0)
    b = _operand(x1, _tile_offsets(r0, r1, r2, cols, bs0, bs1, bs2, bsc), mask, M1)
    c = _operand(x2, _tile_offsets(r0, r1, r2, cols, cs0, cs1, cs2, csc), mask, M2)
    y = _compute(a, b, c, OP, NIN)
    o = _tile_offsets(r0, r1, r2, cols, os0, os1, os2, osc)
    tl.store(out + o, y.to(out.dtype.element_ty), mask=mask)


@triton.jit
def arange_kernel(out, start, step, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = start + offs.to(start.dtype) * step
    tl.store(out + offs, v.to(out.dtype.element_ty), mask=offs < n)


@triton.jit
def cat_rows(out, s0, s1, s2, s3, w0, w1, w2, w3, a0, a1, a2, a3, b0, b1, b2, b3, r0, r1, r2, r3, c0, c1, c2, c3,
             n_rows, R1, R2, out_row, n_cblocks, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """Up to four inputs copied into one concatenation (``cat``) in one launch. The output is ``n_rows`` rows of
    ``out_row`` elements, the rows numbered over the dims before the concatenated one seen as (n_rows / (R1 R2), R1,
    R2). Input k holds each row as ``w_k`` contiguous elements, row (i, j, l) at ``i a_k + j b_k + l r_k`` (any
    strides: transposed or sliced inputs too), landing at column ``c_k`` of the output row. Grid: (row blocks x
    column blocks of the widest input, inputs)."""
    pid = tl.program_id(0)
    k = tl.program_id(1)
    rb = pid // n_cblocks
    cb = pid - rb * n_cblocks
    src = s0
    width = w0
    sa = a0
    sb = b0
    step = r0
    col = c0
    if k == 1:
        src = s1
        width = w1
        sa = a1
        sb = b1
        step = r1
        col = c1
    if k == 2:
        src = s2
        width = w2
        sa = a2
        sb = b2
        step = r2
        col = c2
    if k == 3:
        src = s3
        width = w3
        sa = a3
        sb = b3
        step = r3
        col = c3
    rows = (rb * ROWS + tl.arange(0, ROWS)).to(tl.int64)[:, None]
    outer = rows // (R1 * R2)
    within = rows - outer * (R1 * R2)
    mid = within // R2
    start = outer * sa + mid * sb + (within - mid * R2) * step
    cols = cb * BLOCK + tl.arange(0, BLOCK)[None, :]
    mask = (rows < n_rows) & (cols < width)
    v = tl.load(src + start + cols, mask=mask)
    tl.store(out + rows * out_row + col + cols, v, mask=mask)


@triton.jit
def triangle_kernel(x, out, n_rows, C, R, k, n_cblocks, UPPER: tl.constexpr, BLOCK_R: tl.constexpr,
                    BLOCK_C: tl.constexpr):
    # Contiguous matrices of R rows and C columns stacked as n_rows rows: an element is kept where its column minus
    # its row (within the matrix) is >= k (UPPER) or <= k, else zero; the dropped elements are never read.
    pid = tl.program_id(0)
    pr = pid // n_cblocks
    pc = pid - pr * n_cblocks
    rows = pr * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = pc * BLOCK_C + tl.arange(0, BLOCK_C)
    m = (rows < n_rows)[:, None] & (cols < C)[None, :]
    d = cols[None, :].to(tl.int64) - (rows % R)[:, None].to(tl.int64)
    if UPPER:
        keep = d >= k
    else:
        keep = d <= k
    offs = rows[:, None].to(tl.int64) * C + cols[None, :]
    tl.store(out + offs, tl.load(x + offs, mask=m & keep, other=0), mask=m)
