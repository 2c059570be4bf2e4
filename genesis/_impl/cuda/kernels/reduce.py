"""Reduction Triton kernels: sum/mean/prod/amax/amin/any/all/sumsq, variance, argmax/argmin, cumsum/cumprod, softmax.

Every reduction sees its input as a strided (M, K) matrix (M kept rows, K reduced), or (K, N) when the reduced
axis is the outer one: ``reduce_rows`` walks K inside each row (unit K stride: wide loads), ``reduce_cols`` walks K
across rows with N contiguous. Both can split K over several programs (a second launch then reduces the partials),
so short outputs still fill the GPU. ``mean`` is the sum times ``scale`` (1 / the reduced count) in the accumulation
dtype, rounded once; when K is split, the partials are plain sums and the second launch applies the scale. ``sumsq``
sums the squares (a 2-norm's reduction). The variance kernels walk the same (M, K) / (K, N) views with Welford's
(mean, M2, count) per lane, merged at the end; when K is split, ``var_merge`` merges the partials of each row.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _min_nan(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _acc_type(x, OP: tl.constexpr):
    if OP == "any" or OP == "all":
        x = (x != 0).to(tl.int32)
    elif x.dtype.is_fp16() or x.dtype.is_bf16():
        x = x.to(tl.float32)
    elif x.dtype.is_int1():
        x = x.to(tl.int32)
    return x


@triton.jit
def _combine(acc, v, OP: tl.constexpr):
    if OP == "sum" or OP == "mean":
        r = acc + v
    elif OP == "sumsq":
        r = acc + v * v
    elif OP == "prod":
        r = acc * v
    elif OP == "amax":
        if v.dtype.is_floating():
            r = _max_nan(acc, v)
        else:
            r = tl.maximum(acc, v)
    elif OP == "amin":
        if v.dtype.is_floating():
            r = _min_nan(acc, v)
        else:
            r = tl.minimum(acc, v)
    elif OP == "any":
        r = tl.maximum(acc, v)
    else:
        r = tl.minimum(acc, v)
    return r


@triton.jit
def _finish(acc, axis: tl.constexpr, OP: tl.constexpr):
    if OP == "sum" or OP == "mean" or OP == "sumsq":
        r = tl.sum(acc, axis)
    elif OP == "prod":
        r = tl.reduce(acc, axis, _mul)
    elif OP == "amax":
        if acc.dtype.is_floating():
            r = tl.reduce(acc, axis, _max_nan)
        else:
            r = tl.max(acc, axis)
    elif OP == "amin":
        if acc.dtype.is_floating():
            r = tl.reduce(acc, axis, _min_nan)
        else:
            r = tl.min(acc, axis)
    elif OP == "any":
        r = tl.max(acc, axis)
    else:
        r = tl.min(acc, axis)
    return r


@triton.jit
def reduce_rows(x, out, M, K, sm, sk, k_per_split, n_split, identity, scale,
                OP: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_s = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    base = rows.to(tl.int64) * sm
    k_begin = pid_s * k_per_split
    k_end = tl.minimum(k_begin + k_per_split, K)
    acc = _acc_type(tl.zeros([BLOCK_M, BLOCK_K], x.dtype.element_ty) + identity, OP)
    for k0 in range(k_begin, k_end, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols < k_end)[None, :]
        v = tl.load(x + base[:, None] + cols[None, :].to(tl.int64) * sk, mask=m, other=identity)
        acc = _combine(acc, _acc_type(v, OP), OP)
    r = _finish(acc, 1, OP)
    if OP == "mean":
        r = r * scale
    tl.store(out + rows * n_split + pid_s, r.to(out.dtype.element_ty), mask=rmask)


@triton.jit
def reduce_cols(x, out, K, N, sk, sn, k_per_split, identity, scale,
                OP: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    coff = cols.to(tl.int64) * sn
    k_begin = pid_s * k_per_split
    k_end = tl.minimum(k_begin + k_per_split, K)
    acc = _acc_type(tl.zeros([BLOCK_K, BLOCK_N], x.dtype.element_ty) + identity, OP)
    for k0 in range(k_begin, k_end, BLOCK_K):
        rows = k0 + tl.arange(0, BLOCK_K)
        m = (rows < k_end)[:, None] & cmask[None, :]
        v = tl.load(x + rows[:, None].to(tl.int64) * sk + coff[None, :], mask=m, other=identity)
        acc = _combine(acc, _acc_type(v, OP), OP)
    r = _finish(acc, 0, OP)
    if OP == "mean":
        r = r * scale
    tl.store(out + pid_s.to(tl.int64) * N + cols, r.to(out.dtype.element_ty), mask=cmask)


@triton.jit
def _welford_merge(mean1, m2_1, n1, mean2, m2_2, n2):
    """Two sets' (mean, M2, count) merged (Chan et al.); an empty set (count 0) leaves the other as it is."""
    n = n1 + n2
    d = mean2 - mean1
    f = tl.where(n > 0, n2 / tl.maximum(n, 1.0), 0.0)
    return mean1 + d * f, m2_1 + m2_2 + d * d * n1 * f, n


@triton.jit
def _welford_step(mean, m2, cnt, v, m):
    """The valid lanes ``m`` of ``v`` into the lanes' running (mean, M2, count)."""
    cnt += m.to(mean.dtype)
    delta = tl.where(m, v - mean, 0.0)
    mean += delta / tl.maximum(cnt, 1.0)
    m2 += delta * tl.where(m, v - mean, 0.0)
    return mean, m2, cnt


@triton.jit
def _var_out(m2, den, ROOT: tl.constexpr):
    """M2 over the denominator (inf or nan for a zero one, as torch), or its square root, correctly rounded."""
    if m2.dtype.is_fp64():
        r = m2 / den
        if ROOT:
            r = libdevice.sqrt(r)
    else:
        r = tl.div_rn(m2, den)
        if ROOT:
            r = tl.sqrt_rn(r)
    return r


@triton.jit
def _var_store(out, part, o, plane, mean, m2, cnt, den, mask, SPLIT: tl.constexpr, ROOT: tl.constexpr):
    """A finished row's variance at ``out + o``, or with ``SPLIT`` its partial (count, mean, M2) at ``o`` of the
    three planes of ``part``."""
    if SPLIT:
        tl.store(part + o, cnt, mask=mask)
        tl.store(part + plane + o, mean, mask=mask)
        tl.store(part + 2 * plane + o, m2, mask=mask)
    else:
        tl.store(out + o, _var_out(m2, den, ROOT).to(out.dtype.element_ty), mask=mask)


@triton.jit
def var_rows(x, out, part, M, K, sm, sk, k_per_split, n_split, den,
             ROOT: tl.constexpr, SPLIT: tl.constexpr, F64: tl.constexpr, BLOCK_M: tl.constexpr,
             BLOCK_K: tl.constexpr):
    """The variance of each row of a strided (M, K) view over elements [pid_s k_per_split, ...) of the row: the
    result (``out``, M elements), or with ``SPLIT`` the partials (``part``: 3 planes of (M, n_split))."""
    pid_m = tl.program_id(0)
    pid_s = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    base = rows.to(tl.int64) * sm
    k_begin = pid_s * k_per_split
    k_end = tl.minimum(k_begin + k_per_split, K)
    if F64:
        mean = tl.zeros([BLOCK_M, BLOCK_K], tl.float64)
    else:
        mean = tl.zeros([BLOCK_M, BLOCK_K], tl.float32)
    m2, cnt = mean, mean
    for k0 in range(k_begin, k_end, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols < k_end)[None, :]
        v = tl.load(x + base[:, None] + cols[None, :].to(tl.int64) * sk, mask=m, other=0.0).to(mean.dtype)
        mean, m2, cnt = _welford_step(mean, m2, cnt, v, m)
    mean_r, m2_r, cnt_r = tl.reduce((mean, m2, cnt), 1, _welford_merge)
    _var_store(out, part, rows * n_split + pid_s, M * n_split, mean_r, m2_r, cnt_r, den, rmask, SPLIT, ROOT)


@triton.jit
def var_cols(x, out, part, K, N, sk, k_per_split, n_split, den,
             ROOT: tl.constexpr, SPLIT: tl.constexpr, F64: tl.constexpr, BLOCK_K: tl.constexpr,
             BLOCK_N: tl.constexpr):
    """``var_rows`` for a reduced axis outer to N contiguous kept columns (column c is row c of the result)."""
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    k_begin = pid_s * k_per_split
    k_end = tl.minimum(k_begin + k_per_split, K)
    if F64:
        mean = tl.zeros([BLOCK_K, BLOCK_N], tl.float64)
    else:
        mean = tl.zeros([BLOCK_K, BLOCK_N], tl.float32)
    m2, cnt = mean, mean
    for k0 in range(k_begin, k_end, BLOCK_K):
        rows = k0 + tl.arange(0, BLOCK_K)
        m = (rows < k_end)[:, None] & cmask[None, :]
        v = tl.load(x + rows[:, None].to(tl.int64) * sk + cols[None, :], mask=m, other=0.0).to(mean.dtype)
        mean, m2, cnt = _welford_step(mean, m2, cnt, v, m)
    mean_r, m2_r, cnt_r = tl.reduce((mean, m2, cnt), 0, _welford_merge)
    _var_store(out, part, cols * n_split + pid_s, N * n_split, mean_r, m2_r, cnt_r, den, cmask, SPLIT, ROOT)


@triton.jit
def var_merge(part, out, M, P, den, ROOT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr):
    """Each row's P partials of ``var_rows`` / ``var_cols`` merged in one fixed order (deterministic), then its
    variance."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    ps = tl.arange(0, BLOCK_P)
    m = rmask[:, None] & (ps < P)[None, :]
    o = rows[:, None].to(tl.int64) * P + ps[None, :]
    plane = M * P
    cnt = tl.load(part + o, mask=m, other=0.0)
    mean = tl.load(part + plane + o, mask=m, other=0.0)
    m2 = tl.load(part + 2 * plane + o, mask=m, other=0.0)
    _, m2_r, _ = tl.reduce((mean, m2, cnt), 1, _welford_merge)
    tl.store(out + rows, _var_out(m2_r, den, ROOT).to(out.dtype.element_ty), mask=rmask)


_BIG = tl.constexpr(1 << 62)  # index of a lane that has seen no element: loses to every real element
_NONE32 = tl.constexpr(2**31 - 1)  # the same in the int32 positions of arg_reduce_rows' lanes


@triton.jit
def _argmax_combine(v1, i1, v2, i2):
    n1 = v1 != v1
    n2 = v2 != v2
    better = (v2 > v1) | (n2 & ~n1) | (((v2 == v1) | (n1 & n2)) & (i2 < i1))
    take2 = (i2 < _BIG) & ((i1 >= _BIG) | better)
    return tl.where(take2, v2, v1), tl.where(take2, i2, i1)


@triton.jit
def _argmin_combine(v1, i1, v2, i2):
    n1 = v1 != v1
    n2 = v2 != v2
    better = (v2 < v1) | (n2 & ~n1) | (((v2 == v1) | (n1 & n2)) & (i2 < i1))
    take2 = (i2 < _BIG) & ((i1 >= _BIG) | better)
    return tl.where(take2, v2, v1), tl.where(take2, i2, i1)


@triton.jit
def _arg_step(best_v, best_i, v, idx, m, IS_MAX: tl.constexpr):
    # One more column in each lane, in increasing position: it wins if strictly better (so the first occurrence
    # stays), if it is NaN and the best is not, or if it is the lane's first element.
    if IS_MAX:
        better = v > best_v
    else:
        better = v < best_v
    take = m & ((best_i == _NONE32) | better | ((v != v) & (best_v == best_v)))
    return tl.where(take, v, best_v), tl.where(take, idx, best_i)


@triton.jit
def arg_reduce_rows(x, out, vals, M, K, sm, sk, IS_MAX: tl.constexpr, VALUES: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_K: tl.constexpr):
    # The position of each row's extremum, and with VALUES the extremum itself. NaN counts as the largest (argmax)
    # or smallest (argmin) value, the first occurrence wins (torch semantics). Each lane keeps its best in a cheap
    # step per column (int32 positions); the lanes are combined once at the end. Bytes: the rows read once.
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    base = rows.to(tl.int64) * sm
    best_v = _acc_type(tl.zeros([BLOCK_M, BLOCK_K], x.dtype.element_ty), "sum")
    best_i = tl.zeros([BLOCK_M, BLOCK_K], tl.int32) + _NONE32
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols < K)[None, :]
        v = _acc_type(tl.load(x + base[:, None] + cols[None, :].to(tl.int64) * sk, mask=m), "sum")
        best_v, best_i = _arg_step(best_v, best_i, v, cols[None, :], m, IS_MAX)
    lanes_i = tl.where(best_i == _NONE32, _BIG, best_i.to(tl.int64))
    if IS_MAX:
        v, r = tl.reduce((best_v, lanes_i), 1, _argmax_combine)
    else:
        v, r = tl.reduce((best_v, lanes_i), 1, _argmin_combine)
    tl.store(out + rows, r, mask=rmask)
    if VALUES:
        tl.store(vals + rows, v.to(vals.dtype.element_ty), mask=rmask)


@triton.jit
def scan_rows(x, out, M, K, OP: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    # Contiguous (M, K): scan along K, BLOCK_M rows per program.
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    base = rows.to(tl.int64) * K
    if OP == "cumsum":
        carry = tl.zeros([BLOCK_M], out.dtype.element_ty)
    else:
        carry = tl.zeros([BLOCK_M], out.dtype.element_ty) + 1
    carry = _acc_type(carry, "sum")
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols < K)[None, :]
        if OP == "cumsum":
            v = tl.load(x + base[:, None] + cols[None, :], mask=m, other=0)
            v = _acc_type(v.to(out.dtype.element_ty), "sum")
            s = tl.cumsum(v, 1) + carry[:, None]
        else:
            v = tl.load(x + base[:, None] + cols[None, :], mask=m, other=1)
            v = _acc_type(v.to(out.dtype.element_ty), "sum")
            s = tl.cumprod(v, 1) * carry[:, None]
        # The carry is the block's last column (read through a masked sum: Triton rejects `carry += sum(v)` here).
        carry = tl.sum(tl.where(tl.arange(0, BLOCK_K)[None, :] == BLOCK_K - 1, s, 0), 1)
        tl.store(out + base[:, None] + cols[None, :], s.to(out.dtype.element_ty), mask=m)


@triton.jit
def scan_cols(x, out, K, N, n_blocks, OP: tl.constexpr, BLOCK_N: tl.constexpr):
    # Contiguous (outer, K, N): scan along K for BLOCK_N columns of one outer index per program.
    pid = tl.program_id(0)
    outer = (pid // n_blocks).to(tl.int64)
    pid_n = pid % n_blocks
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    base = outer * K * N + cols
    if OP == "cumsum":
        acc = tl.zeros([BLOCK_N], out.dtype.element_ty)
    else:
        acc = tl.zeros([BLOCK_N], out.dtype.element_ty) + 1
    acc = _acc_type(acc, "sum")
    for k in range(0, K):
        v = _acc_type(tl.load(x + base + k * N, mask=cmask).to(out.dtype.element_ty), "sum")
        if OP == "cumsum":
            acc = acc + v
        else:
            acc = acc * v
        tl.store(out + base + k * N, acc.to(out.dtype.element_ty), mask=cmask)


@triton.jit
def softmax_rows(x, out, M, K, LOG: tl.constexpr, BLOCK_K: tl.constexpr, ONE_PASS: tl.constexpr,
                 SAFE: tl.constexpr):
    # Contiguous (M, K): softmax (or log_softmax) of each row; one pass when the row fits in registers. SAFE: a row
    # whose every entry is -inf gives zeros instead of NaN (torch's safe softmax, for attention that may see no key).
    row = tl.program_id(0).to(tl.int64)
    base = row * K
    if ONE_PASS:
        cols = tl.arange(0, BLOCK_K)
        m = cols < K
        v = _acc_type(tl.load(x + base + cols, mask=m, other=-float("inf")), "sum")
        mx = tl.max(v, 0)
        e = tl.exp(v - mx)
        e = tl.where(m, e, 0.0)
        s = tl.sum(e, 0)
        if LOG:
            y = v - mx - tl.log(s)
        else:
            y = e / s
        if SAFE:
            y = tl.where(mx == -float("inf"), 0.0, y)
        tl.store(out + base + cols, y.to(out.dtype.element_ty), mask=m)
    else:
        mx = tl.zeros([BLOCK_K], tl.float32) - float("inf")
        s = tl.zeros([BLOCK_K], tl.float32)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            v = tl.load(x + base + cols, mask=cols < K, other=-float("inf")).to(tl.float32)
            new = tl.maximum(mx, v)
            s = s * tl.exp(tl.where(new == -float("inf"), 0.0, mx - new)) + tl.where(v == -float("inf"), 0.0,
                                                                                      tl.exp(v - new))
            mx = new
        gm = tl.max(mx, 0)
        s = tl.sum(s * tl.exp(tl.where(mx == -float("inf"), -float("inf"), mx - gm)), 0)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = cols < K
            v = tl.load(x + base + cols, mask=m, other=0.0).to(tl.float32)
            if LOG:
                y = v - gm - tl.log(s)
            else:
                y = tl.exp(v - gm) / s
            if SAFE:
                y = tl.where(gm == -float("inf"), 0.0, y)
            tl.store(out + base + cols, y.to(out.dtype.element_ty), mask=m)


@triton.jit
def softmax_rows64(x, out, M, K, LOG: tl.constexpr, BLOCK_K: tl.constexpr, SAFE: tl.constexpr):
    # float64 rows (one pass over the row in chunks: max, then sum, then write); SAFE as softmax_rows.
    row = tl.program_id(0).to(tl.int64)
    base = row * K
    mx = tl.zeros([BLOCK_K], tl.float64) - float("inf")
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        mx = tl.maximum(mx, tl.load(x + base + cols, mask=cols < K, other=-float("inf")))
    gm = tl.max(mx, 0)
    s = tl.zeros([BLOCK_K], tl.float64)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        v = tl.load(x + base + cols, mask=cols < K, other=-float("inf"))
        s += tl.where(cols < K, libdevice.exp(v - gm), 0.0)
    total = tl.sum(s, 0)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = cols < K
        v = tl.load(x + base + cols, mask=m, other=0.0)
        if LOG:
            y = v - gm - libdevice.log(total)
        else:
            y = libdevice.exp(v - gm) / total
        if SAFE:
            y = tl.where(gm == -float("inf"), 0.0, y)
        tl.store(out + base + cols, y, mask=m)


@triton.jit
def int_matmul_kernel(a, b, out, M, N, K, sab, sam, sak, sbb, sbk, sbn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # Integer products (cuBLASLt has no int64 GEMM): exact integer multiply-adds over (BLOCK_M, BLOCK_K, BLOCK_N)
    # tiles, accumulated in the output's type with wraparound, as on the CPU.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    batch = tl.program_id(2).to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], out.dtype.element_ty)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(a + batch * sab + rm[:, None].to(tl.int64) * sam + rk[None, :] * sak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0).to(out.dtype.element_ty)
        y = tl.load(b + batch * sbb + rk[:, None].to(tl.int64) * sbk + rn[None, :] * sbn,
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0).to(out.dtype.element_ty)
        acc += tl.sum(x[:, :, None] * y[None, :, :], 1).to(out.dtype.element_ty)
    tl.store(out + batch * M * N + rm[:, None].to(tl.int64) * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))
