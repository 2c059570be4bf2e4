"""Fused layer_norm and rms_norm, forward and backward, over the last dim of a contiguous (M, N) matrix.

Both norms share the kernels: ``RMS`` drops the mean (rms_norm is layer_norm with mean 0 and no bias).
Statistics and every sum are float32 whatever the input dtype; the output has the input's dtype.

Forward bytes: read x (M*N) and the weight/bias once, write y (M*N) and the per-row mean/rstd (8 bytes a row).
Backward bytes: read dy and x, write dx (3 M*N elements), plus (programs x N) float32 partial sums for the weight and
bias gradients, which a second reduction sums in a fixed order (no atomics: the result is bitwise reproducible).

``ONE_PASS`` keeps a row in registers (N <= BLOCK_N); otherwise rows are walked in BLOCK_N chunks, reading x again
per pass, and the weight-gradient partials accumulate in the program's own row of the partial buffer.
"""

import triton
import triton.language as tl


@triton.jit
def norm_fwd(
    x, w, b, y, mean, rstd,          # pointers: x, y (M, N); w, b (N,); mean, rstd (M,) float32
    N, eps,                          # sizes and epsilon
    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, BLOCK_N: tl.constexpr, ONE_PASS: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    base = row * N
    if ONE_PASS:
        cols = tl.arange(0, BLOCK_N)
        m = cols < N
        v = tl.load(x + base + cols, mask=m, other=0.0).to(tl.float32)
        if RMS:
            mu = 0.0
            c = v
        else:
            mu = tl.sum(v, 0) / N
            c = tl.where(m, v - mu, 0.0)
        r = tl.math.rsqrt(tl.sum(c * c, 0) / N + eps)
        out = c * r
        if HAS_W:
            out = out * tl.load(w + cols, mask=m, other=0.0).to(tl.float32)
        if HAS_B:
            out = out + tl.load(b + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(y + base + cols, out.to(y.dtype.element_ty), mask=m)
    else:
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
    BLOCK_N: tl.constexpr, ONE_PASS: tl.constexpr,
):
    # Each program takes rows pid, pid + G, pid + 2G, ... and sums its rows' weight/bias gradients privately.
    pid = tl.program_id(0)
    G = tl.num_programs(0)
    n64 = N.to(tl.int64)  # row offsets in 64 bits (the loop index is a plain int32)
    part = pid * n64
    if ONE_PASS:
        cols = tl.arange(0, BLOCK_N)
        m = cols < N
        if HAS_W:
            wv = tl.load(w + cols, mask=m, other=0.0).to(tl.float32)
        dw_acc = tl.zeros([BLOCK_N], tl.float32)
        db_acc = tl.zeros([BLOCK_N], tl.float32)
        for row in range(pid, M, G):
            base = row * n64
            g = tl.load(dy + base + cols, mask=m, other=0.0).to(tl.float32)
            r = tl.load(rstd + row)
            if RMS:
                xhat = tl.load(x + base + cols, mask=m, other=0.0).to(tl.float32) * r
            else:
                xhat = (tl.load(x + base + cols, mask=m, other=0.0).to(tl.float32) - tl.load(mean + row)) * r
            xhat = tl.where(m, xhat, 0.0)
            wg = g * wv if HAS_W else g
            c1 = tl.sum(xhat * wg, 0) / N
            if RMS:
                d = (wg - xhat * c1) * r
            else:
                d = (wg - xhat * c1 - tl.sum(wg, 0) / N) * r
            tl.store(dx + base + cols, d.to(dx.dtype.element_ty), mask=m)
            if NEED_DW:
                dw_acc += g * xhat
            if NEED_DB:
                db_acc += g
        if NEED_DW:
            tl.store(dw_part + part + cols, dw_acc, mask=m)
        if NEED_DB:
            tl.store(db_part + part + cols, db_acc, mask=m)
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
