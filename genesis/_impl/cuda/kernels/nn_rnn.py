"""Fused recurrent cells: one time step of an LSTM, GRU or Elman cell and its gradient (``rnn_cell_`` and
``rnn_cell_backward_``; the products around them run through cuBLASLt).

Every array is a (B, n) row view with unit column stride and its own row stride, so steps of the (T, B, n) buffers
of a whole sequence and column blocks of them are read and written in place. A program handles BLOCK_H hidden units
of one row and all the gates of those units (gate k of unit j lies at column k * H + j, torch's layout). Arithmetic
is float32 for 16- and 32-bit arrays and float64 for float64 ones. sigmoid and tanh are written with ``tl.exp``
(no libdevice), so the interpreter runs them too.

Bytes per row, forward: LSTM reads gi, gh (8H) and h, c (2H), writes h' and the saved gates and c' (6H); GRU reads
6H + H, writes 5H; Elman reads 2H, writes H. Backward reads the saved activations, the incoming gradients and the
previous state, and writes the gate gradients once (GRU twice: the hidden-side n gradient is scaled by r).
"""

import triton
import triton.language as tl

from genesis._impl.cuda.kernels.nn_batchnorm import _acc  # float64 stays float64, the rest computes in float32


@triton.jit
def _sigmoid(v):
    return 1.0 / (1.0 + tl.exp(-v))


@triton.jit
def _tanh(v):
    e = tl.exp(-2.0 * tl.abs(v))  # in (0, 1]: no overflow for any v
    t = (1.0 - e) / (1.0 + e)
    return tl.where(v < 0, -t, t)


@triton.jit
def _load(ptr, m, F64: tl.constexpr):
    return _acc(tl.load(ptr, mask=m, other=0.0), F64)


@triton.jit
def rnn_cell_fwd(
    gi, gh, h, c, h_out, saved,                    # pointers: (B, n) row views, unit column stride
    H, s_gi, s_gh, s_h, s_c, s_out, s_saved,       # hidden size and row strides
    MODE: tl.constexpr, F64: tl.constexpr, BLOCK_H: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    m = cols < H
    a = gi + row * s_gi + cols
    b = gh + row * s_gh + cols
    out = h_out + row * s_out + cols
    ty = h_out.dtype.element_ty
    if MODE == "LSTM":
        s = saved + row * s_saved + cols
        i = _sigmoid(_load(a, m, F64) + _load(b, m, F64))
        f = _sigmoid(_load(a + H, m, F64) + _load(b + H, m, F64))
        g = _tanh(_load(a + 2 * H, m, F64) + _load(b + 2 * H, m, F64))
        o = _sigmoid(_load(a + 3 * H, m, F64) + _load(b + 3 * H, m, F64))
        c_new = f * _load(c + row * s_c + cols, m, F64) + i * g
        tl.store(out, (o * _tanh(c_new)).to(ty), mask=m)
        tl.store(s, i.to(ty), mask=m)
        tl.store(s + H, f.to(ty), mask=m)
        tl.store(s + 2 * H, g.to(ty), mask=m)
        tl.store(s + 3 * H, o.to(ty), mask=m)
        tl.store(s + 4 * H, c_new.to(ty), mask=m)
    elif MODE == "GRU":
        s = saved + row * s_saved + cols
        r = _sigmoid(_load(a, m, F64) + _load(b, m, F64))
        z = _sigmoid(_load(a + H, m, F64) + _load(b + H, m, F64))
        gh_n = _load(b + 2 * H, m, F64)
        n = _tanh(_load(a + 2 * H, m, F64) + r * gh_n)
        h_prev = _load(h + row * s_h + cols, m, F64)
        tl.store(out, (n + z * (h_prev - n)).to(ty), mask=m)  # (1 - z) n + z h
        tl.store(s, r.to(ty), mask=m)
        tl.store(s + H, z.to(ty), mask=m)
        tl.store(s + 2 * H, n.to(ty), mask=m)
        tl.store(s + 3 * H, gh_n.to(ty), mask=m)
    else:
        pre = _load(a, m, F64) + _load(b, m, F64)
        if MODE == "RNN_TANH":
            y = _tanh(pre)
        else:
            y = tl.maximum(pre, 0.0)
        tl.store(out, y.to(ty), mask=m)


@triton.jit
def rnn_cell_bwd(
    g_out, g_h, g_state, h, c, saved, d_gi, d_gh, d_state,    # pointers: (B, n) row views, unit column stride
    H, s_go, s_gh, s_gs, s_h, s_c, s_saved, s_dgi, s_dgh, s_ds,  # hidden size and row strides
    MODE: tl.constexpr, HAS_OUT: tl.constexpr, HAS_H: tl.constexpr, HAS_STATE: tl.constexpr,
    F64: tl.constexpr, BLOCK_H: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    m = cols < H
    s = saved + row * s_saved + cols
    da = d_gi + row * s_dgi + cols
    ty = d_gi.dtype.element_ty
    if F64:
        dh = tl.zeros([BLOCK_H], tl.float64)
    else:
        dh = tl.zeros([BLOCK_H], tl.float32)
    if HAS_OUT:
        dh += _load(g_out + row * s_go + cols, m, F64)
    if HAS_H:
        dh += _load(g_h + row * s_gh + cols, m, F64)
    if MODE == "LSTM":
        i = _load(s, m, F64)
        f = _load(s + H, m, F64)
        g = _load(s + 2 * H, m, F64)
        o = _load(s + 3 * H, m, F64)
        tc = _tanh(_load(s + 4 * H, m, F64))
        dc = dh * o * (1.0 - tc * tc)
        if HAS_STATE:
            dc += _load(g_state + row * s_gs + cols, m, F64)
        c_prev = _load(c + row * s_c + cols, m, F64)
        tl.store(da, (dc * g * i * (1.0 - i)).to(ty), mask=m)
        tl.store(da + H, (dc * c_prev * f * (1.0 - f)).to(ty), mask=m)
        tl.store(da + 2 * H, (dc * i * (1.0 - g * g)).to(ty), mask=m)
        tl.store(da + 3 * H, (dh * tc * o * (1.0 - o)).to(ty), mask=m)
        tl.store(d_state + row * s_ds + cols, (dc * f).to(ty), mask=m)
    elif MODE == "GRU":
        if HAS_STATE:
            dh += _load(g_state + row * s_gs + cols, m, F64)
        r = _load(s, m, F64)
        z = _load(s + H, m, F64)
        n = _load(s + 2 * H, m, F64)
        gh_n = _load(s + 3 * H, m, F64)
        h_prev = _load(h + row * s_h + cols, m, F64)
        dn = dh * (1.0 - z) * (1.0 - n * n)
        dr = (dn * gh_n * r * (1.0 - r)).to(ty)
        dz = (dh * (h_prev - n) * z * (1.0 - z)).to(ty)
        db = d_gh + row * s_dgh + cols
        tl.store(da, dr, mask=m)
        tl.store(da + H, dz, mask=m)
        tl.store(da + 2 * H, dn.to(ty), mask=m)
        tl.store(db, dr, mask=m)
        tl.store(db + H, dz, mask=m)
        tl.store(db + 2 * H, (dn * r).to(ty), mask=m)
        tl.store(d_state + row * s_ds + cols, (dh * z).to(ty), mask=m)
    else:
        y = _load(s, m, F64)  # the step's output
        if MODE == "RNN_TANH":
            d = dh * (1.0 - y * y)
        else:
            d = tl.where(y > 0, dh, 0.0)
        tl.store(da, d.to(ty), mask=m)
