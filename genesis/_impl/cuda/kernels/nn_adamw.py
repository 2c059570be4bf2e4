"""Fused optimizer steps: Adam / AdamW and SGD, one tensor or many tensors per launch, and the fused
inf-check-and-unscale of mixed-precision gradients.

Adam / AdamW per element reads p, g, m, v and writes p, m, v (for float32 states: 28 bytes per fp32 parameter,
torch's fused AdamW moves the same), in place of about a dozen elementwise passes. With float32 master weights
``w`` of a bfloat16/float16 parameter it reads w, g, m, v and writes w, m, v and the rounded p. All arithmetic is
float32; the step-dependent scalars (bias corrections) come from the host, or, for a step captured in a CUDA graph
(``Adam(capturable=True)``, a tensor learning rate), are computed by every program from the learning rate and the
step count read from the device (``LR_PTR`` / ``STEP_PTR``):

    decay = 1 - lr * wd,  step_size = lr / (1 - beta1^t),  bc2_sqrt = sqrt(1 - beta2^t)   (powers in float64)

    g = sign * g + l2 * p                           (sign -1 maximizes; Adam's L2 weight decay; 0 for AdamW)
    p = p * decay                                   (AdamW's decoupled decay 1 - lr * wd; 1 for Adam)
    m = m + (1 - beta1) * (g - m)
    v = beta2 * v + (1 - beta2) * g^2
    p = p - step_size * m / (sqrt(v) / bc2_sqrt + eps)

Multi-tensor launches: one grid covers every tensor of a list. The host passes the first tensor of each list as a
typed pointer and, per tensor, its element offset from that first tensor (all tensors of a list share a dtype,
so offsets are exact), its size, and per program the tensor it serves and that tensor's first program. Programs
over the inside of a tensor load without masks, so the loads vectorize; only a tensor's last block is masked.
``A*`` constexprs give each list's alignment in elements (every address 16-byte aligned: 16 / itemsize; else 1).
"""

import triton
import triton.language as tl


@triton.jit
def adam_step(
    p, g, m, v,                                   # pointers: contiguous, n elements each (updated in place)
    n, beta1, beta2, eps, l2, decay, step_size, bc2_sqrt,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    pv = tl.load(p + offs, mask=ok, other=0.0).to(tl.float32)
    gv = tl.load(g + offs, mask=ok, other=0.0).to(tl.float32) + l2 * pv
    mv = tl.load(m + offs, mask=ok, other=0.0).to(tl.float32)
    vv = tl.load(v + offs, mask=ok, other=0.0).to(tl.float32)
    pv = pv * decay
    mv = mv + (1.0 - beta1) * (gv - mv)
    vv = beta2 * vv + (1.0 - beta2) * gv * gv
    pv = pv - step_size * mv / (tl.sqrt(vv) / bc2_sqrt + eps)
    tl.store(p + offs, pv.to(p.dtype.element_ty), mask=ok)
    tl.store(m + offs, mv.to(m.dtype.element_ty), mask=ok)
    tl.store(v + offs, vv.to(v.dtype.element_ty), mask=ok)


@triton.jit
def _block(block_tensor, block_first, sizes, BLOCK: tl.constexpr):
    """(tensor index, element offsets of this program's block, size of the tensor, whether the block is whole)."""
    pid = tl.program_id(0)
    t = tl.load(block_tensor + pid)
    n = tl.load(sizes + t)
    start = (pid - tl.load(block_first + t)).to(tl.int64) * BLOCK
    return t, start + tl.arange(0, BLOCK), n, start + BLOCK <= n


@triton.jit
def _base(first, offsets, row, T, t, ALIGN: tl.constexpr):
    """Pointer to tensor ``t`` of list ``row``: the list's first tensor plus its element offset."""
    return first + tl.multiple_of(tl.load(offsets + row * T + t), ALIGN)


@triton.jit
def _ld(ptr, mask, MASKED: tl.constexpr):
    if MASKED:
        val = tl.load(ptr, mask=mask, other=0.0)
    else:
        val = tl.load(ptr)
    return val.to(tl.float32)


@triton.jit
def _st(ptr, val, mask, MASKED: tl.constexpr):
    if MASKED:
        tl.store(ptr, val.to(ptr.dtype.element_ty), mask=mask)
    else:
        tl.store(ptr, val.to(ptr.dtype.element_ty))


@triton.jit
def _adam_elems(pp, gp, mp, vp, wp, offs, mask, beta1, beta2, eps, l2, decay, step_size, bc2_sqrt, sign,
                HAS_MASTER: tl.constexpr, MASKED: tl.constexpr):
    if HAS_MASTER:
        pv = _ld(wp + offs, mask, MASKED)
    else:
        pv = _ld(pp + offs, mask, MASKED)
    gv = sign * _ld(gp + offs, mask, MASKED) + l2 * pv
    mv = _ld(mp + offs, mask, MASKED)
    vv = _ld(vp + offs, mask, MASKED)
    pv = pv * decay
    mv = mv + (1.0 - beta1) * (gv - mv)
    vv = beta2 * vv + (1.0 - beta2) * gv * gv
    pv = pv - step_size * mv / (tl.sqrt(vv) / bc2_sqrt + eps)
    if HAS_MASTER:
        _st(wp + offs, pv, mask, MASKED)
    _st(pp + offs, pv, mask, MASKED)
    _st(mp + offs, mv, mask, MASKED)
    _st(vp + offs, vv, mask, MASKED)


@triton.jit
def adam_multi_step(
    p, g, m, v, w,                               # pointers: the first tensor of each list (w: float32 master weights)
    offsets, sizes, block_tensor, block_first,   # int64 (5, T) element offsets; int64 (T,); int32 (programs,), (T,)
    T, beta1, beta2, eps, l2, decay, step_size, bc2_sqrt, sign,
    lr, step, wd,                                # read only with LR_PTR or STEP_PTR (each a scalar or a 0-d pointer)
    HAS_MASTER: tl.constexpr, LR_PTR: tl.constexpr, STEP_PTR: tl.constexpr, BLOCK: tl.constexpr,
    AP: tl.constexpr, AG: tl.constexpr, AM: tl.constexpr, AV: tl.constexpr, AW: tl.constexpr,
):
    if LR_PTR or STEP_PTR:
        if LR_PTR:
            lr_v = tl.load(lr).to(tl.float32)
        else:
            lr_v = lr
        if STEP_PTR:
            t_v = tl.load(step).to(tl.float64)
        else:
            t_v = tl.cast(step, tl.float64)
        decay = 1.0 - lr_v * wd
        step_size = lr_v / (1.0 - tl.exp(t_v * tl.log(tl.cast(beta1, tl.float64)))).to(tl.float32)
        bc2_sqrt = tl.sqrt((1.0 - tl.exp(t_v * tl.log(tl.cast(beta2, tl.float64)))).to(tl.float32))
    t, offs, n, whole = _block(block_tensor, block_first, sizes, BLOCK)
    pp = _base(p, offsets, 0, T, t, AP)
    gp = _base(g, offsets, 1, T, t, AG)
    mp = _base(m, offsets, 2, T, t, AM)
    vp = _base(v, offsets, 3, T, t, AV)
    wp = _base(w, offsets, 4, T, t, AW)
    if whole:
        _adam_elems(pp, gp, mp, vp, wp, offs, offs < n, beta1, beta2, eps, l2, decay, step_size, bc2_sqrt, sign,
                    HAS_MASTER, False)
    else:
        _adam_elems(pp, gp, mp, vp, wp, offs, offs < n, beta1, beta2, eps, l2, decay, step_size, bc2_sqrt, sign,
                    HAS_MASTER, True)


@triton.jit
def _sgd_elems(pp, gp, bp, offs, mask, lr, momentum, dampening, weight_decay, sign,
               MOMENTUM: tl.constexpr, FIRST: tl.constexpr, NESTEROV: tl.constexpr, MASKED: tl.constexpr):
    pv = _ld(pp + offs, mask, MASKED)
    gv = sign * _ld(gp + offs, mask, MASKED) + weight_decay * pv
    if MOMENTUM:
        if FIRST:
            bv = gv
        else:
            bv = momentum * _ld(bp + offs, mask, MASKED) + (1.0 - dampening) * gv
        _st(bp + offs, bv, mask, MASKED)
        if NESTEROV:
            gv = gv + momentum * bv
        else:
            gv = bv
    _st(pp + offs, pv - lr * gv, mask, MASKED)


@triton.jit
def sgd_multi_step(
    p, g, b,                                     # pointers: the first tensor of each list (b: momentum buffers)
    offsets, sizes, block_tensor, block_first,   # as adam_multi_step, offsets (3, T)
    T, lr, momentum, dampening, weight_decay, sign,
    MOMENTUM: tl.constexpr, FIRST: tl.constexpr, NESTEROV: tl.constexpr, BLOCK: tl.constexpr,
    AP: tl.constexpr, AG: tl.constexpr, AB: tl.constexpr,
):
    # buf = momentum * buf + (1 - dampening) * g (buf = g on the first step); p -= lr * (g + momentum * buf if
    # nesterov else buf); g includes the sign (maximize) and the L2 term. Bytes: read p, g (and b), write p (and b).
    t, offs, n, whole = _block(block_tensor, block_first, sizes, BLOCK)
    pp = _base(p, offsets, 0, T, t, AP)
    gp = _base(g, offsets, 1, T, t, AG)
    bp = _base(b, offsets, 2, T, t, AB)
    if whole:
        _sgd_elems(pp, gp, bp, offs, offs < n, lr, momentum, dampening, weight_decay, sign, MOMENTUM, FIRST,
                   NESTEROV, False)
    else:
        _sgd_elems(pp, gp, bp, offs, offs < n, lr, momentum, dampening, weight_decay, sign, MOMENTUM, FIRST,
                   NESTEROV, True)


@triton.jit
def _unscale_elems(gp, found_inf, offs, mask, inv_scale, MASKED: tl.constexpr):
    gv = _ld(gp + offs, mask, MASKED)
    bad = tl.max(((gv != gv) | (tl.abs(gv) == float("inf"))).to(tl.int32), 0) > 0
    # Every program that sees a non-finite value writes the same 1.0: the flag is the same whatever the order.
    tl.store(found_inf, 1.0, mask=bad)
    _st(gp + offs, gv * inv_scale, mask, MASKED)


@triton.jit
def unscale_multi(
    g, found_inf,                                # pointers: the first gradient; found_inf (1,) float32 (set to 1.0)
    offsets, sizes, block_tensor, block_first,   # as adam_multi_step, offsets (1, T)
    T, inv_scale,
    BLOCK: tl.constexpr, AG: tl.constexpr,
):
    # GradScaler's unscale_ in one pass: g *= inv_scale in place, and found_inf = 1 if any g is inf or nan.
    # Bytes: read and write every gradient once.
    t, offs, n, whole = _block(block_tensor, block_first, sizes, BLOCK)
    gp = _base(g, offsets, 0, T, t, AG)
    if whole:
        _unscale_elems(gp, found_inf, offs, offs < n, inv_scale, False)
    else:
        _unscale_elems(gp, found_inf, offs, offs < n, inv_scale, True)
