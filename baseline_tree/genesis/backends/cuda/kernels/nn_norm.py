"""Fused layer_norm and rms_norm, forward and backward, over the last dim of a contiguous (M, N) matrix.

Both norms share the kernels: ``RMS`` drops the mean (rms_norm is layer_norm with mean 0 and no bias).
Statistics and every sum are float32 whatever the input dtype; the output has the input's dtype.

Forward bytes: read x (M*N) and the weight/bias once, write y (M*N) and the per-row mean/rstd (8 bytes a row).
Backward bytes: read dy and x, write dx (3 M*N elements), plus (programs x N) float32 partial sums for the weight and
bias gradients, which ``norm_bwd_reduce`` sums in a fixed order (no atomics: the result is bitwise reproducible).

``ONE_PASS`` keeps ``BLOCK_M`` whole rows in registers (N <= BLOCK_N): narrow rows share a program, so every
program still moves a few KiB. Otherwise rows are walked one at a time in BLOCK_N chunks, reading x again per pass.
The launcher marks N as a multiple of 16 when it is one, so row starts are provably 16-byte aligned and the loads
vectorize (8 bf16 or 4 float32 elements per instruction).
"""

import triton
import triton.language as tl


@triton.jit
def norm_fwd(
    x, w, b, y, mean, rstd,          # pointers: x, y (M, N); w, b (N,); mean, rstd (M,) float32
    M, N, eps,                       # sizes and epsilon
    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, ONE_PASS: tl.constexpr,
):
    if ONE_PASS:
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tl.arange(0, BLOCK_N)
        rm = rows < M
        cm = cols < N
        m = rm[:, None] & cm[None, :]
        offs = rows.to(tl.int64)[:, None] * N + cols[None, :]
        v = tl.load(x + offs, mask=m, other=0.0).to(tl.float32)
        if RMS:
            mu = tl.zeros([BLOCK_M], tl.float32)
            c = v
        else:
            mu = tl.sum(v, 1) / N
            c = tl.where(m, v - mu[:, None], 0.0)
        r = tl.math.rsqrt(tl.sum(c * c, 1) / N + eps)
        out = c * r[:, None]
        if HAS_W:
            out = out * tl.load(w + cols, mask=cm, other=0.0).to(tl.float32)[None, :]
        if HAS_B:
            out = out + tl.load(b + cols, mask=cm, other=0.0).to(tl.float32)[None, :]
        tl.store(y + offs, out.to(y.dtype.element_ty), mask=m)
        tl.store(mean + rows, mu, mask=rm)
        tl.store(rstd + rows, r, mask=rm)
    else:
        row = tl.program_id(0).to(tl.int64)
        base = row * N
        mu = 0.0
        if not RMS:
            acc = tl.zeros([BLOCK_N], tl.float32)
            for k0 in range(0, N, BLOCK_N):
                cols = k0 + tl.arange(0, BLOCK_N)
                acc += tl.load(x + base + cols, mask=cols < N, other=0.0).to(tl.float32)
            mu = tl.sum(acc, 0) / N
        acc2 = tl.zeros([BLOCK_N], tl.float32)
        for k0 in range(0, N, BLOCK_N):
            cols = k0 + tl.arange(0, BLOCK_N)
            m = cols < N
            c = tl.where(m, tl.load(x + base + cols, mask=m, other=0.0).to(tl.float32) - mu, 0.0)
            acc2 += c * c
        r = tl.math.rsqrt(tl.sum(acc2, 0) / N + eps)
        for k0 in range(0, N, BLOCK_N):
            cols = k0 + tl.arange(0, BLOCK_N)
            m = cols < N
            out = (tl.load(x + base + cols, mask=m, other=0.0).to(tl.float32) - mu) * r
            if HAS_W:
                out = out * tl.load(w + cols, mask=m, other=0.0).to(tl.float32)
            if HAS_B:
                out = out + tl.load(b + cols, mask=m, other=0.0).to(tl.float32)
            tl.store(y + base + cols, out.to(y.dtype.element_ty), mask=m)
        tl.store(mean + row, mu)
        tl.store(rstd + row, r)


@triton.jit
def norm_bwd(
    dy, x, w, mean, rstd, dx, dw_part, db_part,  # pointers: dy, x, dx (M, N); w (N,); mean, rstd (M,);
                                                 # dw_part, db_part (programs, N) float32
    M, N,                                        # sizes
    RMS: tl.constexpr, HAS_W: tl.constexpr, NEED_DW: tl.constexpr, NEED_DB: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, ONE_PASS: tl.constexpr,
):
    # Each program takes row blocks pid, pid + G, pid + 2G, ... and sums their weight/bias gradients privately into
    # its own row of the partial buffers.
    pid = tl.program_id(0)
    G = tl.num_programs(0)
    n64 = N.to(tl.int64)  # row offsets in 64 bits (the loop index is a plain int32)
    part = pid * n64
    if ONE_PASS:
        cols = tl.arange(0, BLOCK_N)
        cm = cols < N
        if HAS_W:
            wv = tl.load(w + cols, mask=cm, other=0.0).to(tl.float32)
        dw_acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        db_acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for r0 in range(pid * BLOCK_M, M, G * BLOCK_M):
            rows = r0 + tl.arange(0, BLOCK_M)
            rm = rows < M
            m = rm[:, None] & cm[None, :]
            offs = rows.to(tl.int64)[:, None] * n64 + cols[None, :]
            g = tl.load(dy + offs, mask=m, other=0.0).to(tl.float32)
            r = tl.load(rstd + rows, mask=rm, other=0.0)
            xv = tl.load(x + offs, mask=m, other=0.0).to(tl.float32)
            if RMS:
                xhat = xv * r[:, None]
            else:
                xhat = tl.where(m, (xv - tl.load(mean + rows, mask=rm, other=0.0)[:, None]) * r[:, None], 0.0)
            if HAS_W:
                wg = g * wv[None, :]
            else:
                wg = g
            c1 = tl.sum(xhat * wg, 1) / N
            if RMS:
                d = (wg - xhat * c1[:, None]) * r[:, None]
            else:
                d = (wg - xhat * c1[:, None] - (tl.sum(wg, 1) / N)[:, None]) * r[:, None]
            tl.store(dx + offs, d.to(dx.dtype.element_ty), mask=m)
            if NEED_DW:
                dw_acc += g * xhat
            if NEED_DB:
                db_acc += g
        if NEED_DW:
            tl.store(dw_part + part + cols, tl.sum(dw_acc, 0), mask=cm)
        if NEED_DB:
            tl.store(db_part + part + cols, tl.sum(db_acc, 0), mask=cm)
    else:
        for k0 in range(0, N, BLOCK_N):  # the partial rows start at zero
            cols = k0 + tl.arange(0, BLOCK_N)
            if NEED_DW:
                tl.store(dw_part + part + cols, tl.zeros([BLOCK_N], tl.float32), mask=cols < N)
            if NEED_DB:
                tl.store(db_part + part + cols, tl.zeros([BLOCK_N], tl.float32), mask=cols < N)
        for row in range(pid, M, G):
            base = row * n64
            r = tl.load(rstd + row)
            mu = 0.0 if RMS else tl.load(mean + row)
            s1 = tl.zeros([BLOCK_N], tl.float32)
            s2 = tl.zeros([BLOCK_N], tl.float32)
            for k0 in range(0, N, BLOCK_N):
                cols = k0 + tl.arange(0, BLOCK_N)
                m = cols < N
                g = tl.load(dy + base + cols, mask=m, other=0.0).to(tl.float32)
                xhat = tl.where(m, (tl.load(x + base + cols, mask=m, other=0.0).to(tl.float32) - mu) * r, 0.0)
                wg = g * tl.load(w + cols, mask=m, other=0.0).to(tl.float32) if HAS_W else g
                s1 += xhat * wg
                s2 += wg
            c1 = tl.sum(s1, 0) / N
            c2 = 0.0 if RMS else tl.sum(s2, 0) / N
            for k0 in range(0, N, BLOCK_N):
                cols = k0 + tl.arange(0, BLOCK_N)
                m = cols < N
                g = tl.load(dy + base + cols, mask=m, other=0.0).to(tl.float32)
                xhat = tl.where(m, (tl.load(x + base + cols, mask=m, other=0.0).to(tl.float32) - mu) * r, 0.0)
                wg = g * tl.load(w + cols, mask=m, other=0.0).to(tl.float32) if HAS_W else g
                tl.store(dx + base + cols, ((wg - xhat * c1 - c2) * r).to(dx.dtype.element_ty), mask=m)
                if NEED_DW:
                    p = tl.load(dw_part + part + cols, mask=m, other=0.0)
                    tl.store(dw_part + part + cols, p + g * xhat, mask=m)
                if NEED_DB:
                    p = tl.load(db_part + part + cols, mask=m, other=0.0)
                    tl.store(db_part + part + cols, p + g, mask=m)


@triton.jit
def norm_bwd_reduce(
    dw_part, db_part, dw, db,        # pointers: partials (P, N) float32; dw (N,) in the weight's dtype; db (N,) float32
    P, N,                            # sizes
    NEED_DW: tl.constexpr, NEED_DB: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
):
    # Second stage: each program sums BLOCK_N columns of both partial buffers over all P rows, always in the same
    # order, and writes the gradients in their final dtype (one launch for weight and bias).
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cm = cols < N
    acc_w = tl.zeros([BLOCK_P, BLOCK_N], tl.float32)
    acc_b = tl.zeros([BLOCK_P, BLOCK_N], tl.float32)
    for p0 in range(0, P, BLOCK_P):
        rows = p0 + tl.arange(0, BLOCK_P)
        m = (rows < P)[:, None] & cm[None, :]
        offs = rows.to(tl.int64)[:, None] * N + cols[None, :]
        if NEED_DW:
            acc_w += tl.load(dw_part + offs, mask=m, other=0.0)
        if NEED_DB:
            acc_b += tl.load(db_part + offs, mask=m, other=0.0)
    if NEED_DW:
        tl.store(dw + cols, tl.sum(acc_w, 0).to(dw.dtype.element_ty), mask=cm)
    if NEED_DB:
        tl.store(db + cols, tl.sum(acc_b, 0).to(db.dtype.element_ty), mask=cm)
