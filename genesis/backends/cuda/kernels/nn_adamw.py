"""Fused Adam / AdamW step: one kernel updates a parameter and both moment buffers in place.

The optimizer's multi-tensor path concatenates small parameters into one flat buffer, so one launch serves many
parameters. Per element it reads p, g, m, v and writes p, m, v (for float32 states: 28 bytes per fp32 parameter,
torch's fused AdamW moves the same), in place of about a dozen elementwise passes. All arithmetic is float32; the
step-dependent scalars (bias corrections) come from the host.

    g = g + l2 * p                                  (Adam's L2 weight decay; 0 for AdamW)
    p = p * decay                                   (AdamW's decoupled decay 1 - lr * wd; 1 for Adam)
    m = m + (1 - beta1) * (g - m)
    v = beta2 * v + (1 - beta2) * g^2
    p = p - step_size * m / (sqrt(v) / bc2_sqrt + eps)
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
