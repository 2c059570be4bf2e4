"""Launchers of the fused neural-network kernels (``kernels/nn_*.py``): check, allocate, launch.

Each implements one primitive of the backend contract (``genesis.backends``): softmax_backward, layer_norm,
layer_norm_backward, cross_entropy, cross_entropy_backward, swiglu, swiglu_backward, rope, attention,
attention_backward, adam_step_.
"""

from __future__ import annotations

from genesis import dtypes
from genesis.backends.cuda import _contig, _new, _next_pow2, _psig, _ptr, contiguous, full, reduce, rt
from genesis.backends.cuda import triton_driver as td
from genesis.backends.cuda.kernels import nn_adamw as adk
from genesis.backends.cuda.kernels import nn_attention as ak
from genesis.backends.cuda.kernels import nn_cross_entropy as cek
from genesis.backends.cuda.kernels import nn_norm as nk
from genesis.backends.cuda.kernels import nn_rope_swiglu as rsk
from genesis.backends.cuda.kernels import nn_softmax as sk
from genesis.ndarray import NDArray

_F32 = dtypes.float32


def _dense(x: NDArray) -> NDArray:
    return x if _contig(x) else contiguous(x)


def _rows(x: NDArray) -> tuple[int, int]:
    n = x.shape[-1] if x.ndim else 1
    return (x.size // n if n else 0), n


def _row_tile(n: int, itemsize: int) -> tuple[int, bool, int]:
    """(BLOCK, ONE_PASS, num_warps) for a kernel that keeps a row of ``n`` elements in registers when it fits."""
    limit = 16384 if itemsize <= 2 else 8192
    if n <= limit:
        block = max(_next_pow2(n), 16)
        return block, True, 4 if block <= 1024 else 8 if block <= 4096 else 16
    return 4096, False, 8


# ---------------------------------------------------------------- softmax backward

_SOFTMAX_BWD = td.Kernel(sk.softmax_bwd)


def softmax_backward(grad: NDArray, out: NDArray, dim: int, log: bool) -> NDArray:
    last = out.ndim - 1
    if out.ndim == 0:  # softmax of one element is constant
        return full((), 0.0, out.dtype, out.device)
    g = _dense(grad if dim == last else grad.transpose(dim, last))
    y = _dense(out if dim == last else out.transpose(dim, last))
    dx = _new(y.shape, out.dtype, out.device)
    M, K = _rows(y)
    if M and K:
        rt.ensure_device(out.device.index)
        p, q, r = _ptr(g), _ptr(y), _ptr(dx)
        block, one_pass, warps = _row_tile(K, out.dtype.itemsize)
        go = _SOFTMAX_BWD.launcher((_psig(g, p), _psig(y, q), _psig(dx, r), "i32"), (log, block, one_pass), warps)
        go(M, 1, 1, p, q, r, K)
    return dx if dim == last else contiguous(dx.transpose(dim, last))


# ---------------------------------------------------------------- layer_norm / rms_norm

_NORM_FWD = td.Kernel(nk.norm_fwd)
_NORM_BWD = td.Kernel(nk.norm_bwd)


def layer_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, eps: float,
               rms: bool) -> tuple[NDArray, NDArray, NDArray]:
    xc = _dense(x)
    M, N = _rows(xc)
    y = _new(x.shape, x.dtype, x.device)
    mean = _new(x.shape[:-1], _F32, x.device)
    rstd = _new(x.shape[:-1], _F32, x.device)
    if M and N:
        rt.ensure_device(x.device.index)
        w = _dense(weight) if weight is not None else xc
        b = _dense(bias) if bias is not None else xc
        ptrs = (_ptr(xc), _ptr(w), _ptr(b), _ptr(y), _ptr(mean), _ptr(rstd))
        sig = tuple(_psig(a, p) for a, p in zip((xc, w, b, y, mean, rstd), ptrs)) + ("i32", "fp32")
        block, one_pass, warps = _row_tile(N, x.dtype.itemsize)
        go = _NORM_FWD.launcher(sig, (rms, weight is not None, bias is not None, block, one_pass), warps)
        go(M, 1, 1, *ptrs, N, eps)
    return y, mean, rstd


def layer_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, mean: NDArray, rstd: NDArray, rms: bool,
                        output_mask: tuple) -> tuple:
    g, xc = _dense(grad), _dense(x)
    M, N = _rows(xc)
    need_dw = bool(output_mask[1]) and weight is not None
    need_db = bool(output_mask[2]) and not rms
    dx = _new(x.shape, x.dtype, x.device)
    programs = max(1, min(M, 4 * rt.multiprocessor_count(x.device.index))) if M else 1
    dw_part = _new((programs, N), _F32, x.device) if need_dw else None
    db_part = _new((programs, N), _F32, x.device) if need_db else None
    if M and N:
        rt.ensure_device(x.device.index)
        w = _dense(weight) if weight is not None else xc
        arrays = (g, xc, w, mean, rstd, dx, dx if dw_part is None else dw_part, dx if db_part is None else db_part)
        ptrs = tuple(_ptr(a) for a in arrays)
        sig = tuple(_psig(a, p) for a, p in zip(arrays, ptrs)) + ("i32", "i32")
        block, one_pass, warps = _row_tile(N, x.dtype.itemsize)
        go = _NORM_BWD.launcher(sig, (rms, weight is not None, need_dw, need_db, block, one_pass), warps)
        go(programs, 1, 1, *ptrs, M, N)
    grad_w = grad_b = None
    if need_dw:
        # Second, ordered reduction of the per-program partial sums (deterministic, no atomics).
        grad_w = _sum_rows(dw_part, M, weight.dtype, weight.shape)
    if need_db:
        grad_b = _sum_rows(db_part, M, _F32, (N,))  # the caller casts to the bias dtype
    return (dx if output_mask[0] else None), grad_w, grad_b


def _sum_rows(part: NDArray, M: int, dtype: dtypes.dtype, shape: tuple[int, ...]) -> NDArray:
    if not M:  # no rows: the kernel did not run and the gradient is zero
        return full(shape, 0.0, dtype, part.device)
    return reduce("sum", part, (0,), False).astype(dtype).reshape(shape)


# ---------------------------------------------------------------- cross-entropy

_CE_FWD = td.Kernel(cek.cross_entropy_fwd)
_CE_BWD = td.Kernel(cek.cross_entropy_bwd)


def _ce_block(v: int, itemsize: int) -> int:
    # Three float32 running vectors of BLOCK_V per program: 4096 keeps them in registers at 8 warps.
    return min(max(_next_pow2(v), 16), 4096 if itemsize <= 2 else 2048)


def cross_entropy(x: NDArray, target: NDArray, ignore_index: int, label_smoothing: float) -> tuple[NDArray, NDArray]:
    xc, t = _dense(x), _dense(target)
    M, V = xc.shape
    loss = _new((M,), _F32, x.device)
    lse = _new((M,), _F32, x.device)
    if M:
        rt.ensure_device(x.device.index)
        ptrs = (_ptr(xc), _ptr(t), _ptr(loss), _ptr(lse))
        sig = tuple(_psig(a, p) for a, p in zip((xc, t, loss, lse), ptrs)) + ("i32", "i64", "fp32")
        block = _ce_block(V, x.dtype.itemsize)
        go = _CE_FWD.launcher(sig, (block, label_smoothing > 0), 8 if block >= 2048 else 4)
        go(M, 1, 1, *ptrs, V, ignore_index, label_smoothing)
    return loss, lse


def cross_entropy_backward(grad: NDArray, x: NDArray, target: NDArray, lse: NDArray, ignore_index: int,
                           label_smoothing: float) -> NDArray:
    xc, t, g = _dense(x), _dense(target), _dense(grad.astype(_F32) if grad.dtype is not _F32 else grad)
    M, V = xc.shape
    dx = _new((M, V), x.dtype, x.device)
    if M and V:
        rt.ensure_device(x.device.index)
        arrays = (xc, t, lse, g, dx)
        ptrs = tuple(_ptr(a) for a in arrays)
        sig = tuple(_psig(a, p) for a, p in zip(arrays, ptrs)) + ("i32", "i64", "fp32")
        block = min(max(_next_pow2(V), 16), 4096)
        go = _CE_BWD.launcher(sig, (block,), 8 if block >= 2048 else 4)
        go(M, (V + block - 1) // block, 1, *ptrs, V, ignore_index, label_smoothing)
    return dx


# ---------------------------------------------------------------- SwiGLU


_SWIGLU_FWD = td.Kernel(rsk.swiglu_fwd)
_SWIGLU_BWD = td.Kernel(rsk.swiglu_bwd)


def _row_view(x: NDArray) -> tuple[NDArray, int]:
    """``x`` (or a contiguous copy) as rows of its last dim with one row stride, and that stride."""
    if x.ndim and x.strides[-1] == 1:
        H = x.shape[-1]
        lead = x.shape[:-1]
        stride = x.strides[-2] if x.ndim > 1 else H
        # Leading dims must walk rows uniformly: stride[d] = stride[d + 1] * shape[d + 1].
        ok = all(x.strides[d] == x.strides[d + 1] * x.shape[d + 1] or x.shape[d] == 1 for d in range(len(lead) - 1))
        if ok:
            return x, stride
    xc = contiguous(x)
    return xc, x.shape[-1] if x.ndim else 1


def swiglu(gate: NDArray, up: NDArray) -> NDArray:
    g, sg = _row_view(gate)
    u, su = _row_view(up)
    out = _new(gate.shape, gate.dtype, gate.device)
    M, H = _rows(out)
    if M and H:
        rt.ensure_device(gate.device.index)
        ptrs = (_ptr(g), _ptr(u), _ptr(out))
        block = min(_next_pow2(H), 2048)
        sig = tuple(_psig(a, p) for a, p in zip((g, u, out), ptrs)) + ("i32",) * 4
        go = _SWIGLU_FWD.launcher(sig, (block,), 4 if block <= 1024 else 8)
        go(M, (H + block - 1) // block, 1, *ptrs, H, sg, su, H)
    return out


def swiglu_backward(grad: NDArray, gate: NDArray, up: NDArray) -> tuple[NDArray, NDArray]:
    d = _dense(grad)
    g, sg = _row_view(gate)
    u, su = _row_view(up)
    dg = _new(gate.shape, gate.dtype, gate.device)
    du = _new(up.shape, up.dtype, up.device)
    M, H = _rows(dg)
    if M and H:
        rt.ensure_device(gate.device.index)
        arrays = (d, g, u, dg, du)
        ptrs = tuple(_ptr(a) for a in arrays)
        block = min(_next_pow2(H), 2048)
        sig = tuple(_psig(a, p) for a, p in zip(arrays, ptrs)) + ("i32",) * 3
        go = _SWIGLU_BWD.launcher(sig, (block,), 4 if block <= 1024 else 8)
        go(M, (H + block - 1) // block, 1, *ptrs, H, sg, su)
    return dg, du


# ---------------------------------------------------------------- RoPE

_ROPE = td.Kernel(rsk.rope_kernel)


def _lead3(x: NDArray) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shape and strides of the leading dims of ``x``, merged or padded to exactly three."""
    shape, strides = list(x.shape[:-1]), list(x.strides[:-1])
    while len(shape) > 3:  # merge the two outermost dims (the caller guarantees they merge: contiguous x)
        shape[0:2] = [shape[0] * shape[1]]
        strides[0:2] = [strides[1]]
    while len(shape) < 3:
        shape.insert(0, 1)
        strides.insert(0, 0)
    return tuple(shape), tuple(strides)


def rope(x: NDArray, cos: NDArray, sin: NDArray, inverse: bool) -> NDArray:
    xc = _dense(x)
    D = x.shape[-1]
    cos, sin = cos.expand(x.shape), sin.expand(x.shape)
    if cos.strides[-1] != 1 or cos.strides != sin.strides or x.ndim > 4:
        cos, sin = contiguous(cos), contiguous(sin)
    out = _new(x.shape, x.dtype, x.device)
    R = x.size // D if D else 0
    if R:
        rt.ensure_device(x.device.index)
        (_, S1, S2), _ = _lead3(xc)
        _, (c0, c1, c2) = _lead3(cos)
        arrays = (xc, cos, sin, out)
        ptrs = tuple(_ptr(a) for a in arrays)
        half = D // 2
        block_d = max(_next_pow2(half), 2)
        block_r = max(1, min(64, 4096 // block_d))
        sig = tuple(_psig(a, p) for a, p in zip(arrays, ptrs)) + ("i32", "i32", "i32", "i64", "i64", "i64")
        go = _ROPE.launcher(sig, (half, block_r, block_d, inverse), 4)
        go((R + block_r - 1) // block_r, 1, 1, *ptrs, R, S1, S2, c0, c1, c2)
    return out


# ---------------------------------------------------------------- flash attention

_ATTN_FWD = td.Kernel(ak.attn_fwd)
_ATTN_PRE = td.Kernel(ak.attn_bwd_pre)
_ATTN_DKDV = td.Kernel(ak.attn_bwd_dkdv)
_ATTN_DQ = td.Kernel(ak.attn_bwd_dq)


def _unit_last(x: NDArray) -> NDArray:
    return x if x.strides[-1] == 1 else contiguous(x)


def _attn_args(q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, scale: float) -> tuple:
    """(mask array, signature types and runtime scalars after the pointers) shared by the attention kernels.

    Strides that are multiples of 16 are marked so: rows then start 16-byte aligned and the tile loads vectorize
    (unmarked, Triton must assume any alignment and loads element by element)."""
    B, H, L, _ = q.shape
    HK, S = k.shape[1], k.shape[2]
    if mask is not None:
        mask = mask.expand((B, H, L, S))
        mstrides = mask.strides
    else:
        mstrides = (0, 0, 0, 0)
    strides = (*q.strides[:3], *k.strides[:3], *v.strides[:3], *mstrides)
    types = tuple("i64:16" if s % 16 == 0 else "i64" for s in strides) + ("i32", "i32", "i32", "i32", "fp32")
    return mask, types, (*strides, H, H // HK, L, S, scale)


# Tile configurations (BLOCK_M, BLOCK_N, num_warps, num_stages) per kernel and head dim class ("small": D <= 64),
# measured on an H100/H200 (docs/attention.md). BLOCK_N divides BLOCK_M for "fwd" and "dq", BLOCK_M divides BLOCK_N
# for "dkdv". ``benchmark/bench_nn.py --sweep-attention`` times alternatives on the GPU at hand.
ATTENTION_CONFIGS = {
    ("fwd", "small"): (64, 64, 4, 3), ("fwd", "large"): (128, 64, 8, 3),
    ("dkdv", "small"): (32, 64, 4, 3), ("dkdv", "large"): (32, 64, 4, 3),
    ("dq", "small"): (64, 64, 4, 4), ("dq", "large"): (128, 64, 8, 3),
}


def _attn_cfg(kernel: str, D: int, rows: int) -> tuple[int, int, int, int]:
    """The tile configuration, its owned block shrunk to ``rows`` (short sequences, decoding) keeping the nesting."""
    block_m, block_n, warps, stages = ATTENTION_CONFIGS[(kernel, "small" if D <= 64 else "large")]
    fit = max(16, _next_pow2(rows))
    if kernel == "dkdv":
        block_n = min(block_n, fit)
        block_m = min(block_m, block_n)
    else:
        block_m = min(block_m, fit)
        block_n = min(block_n, block_m)
    return block_m, block_n, warps, stages


def attention(q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, is_causal: bool,
              scale: float) -> tuple[NDArray, NDArray]:
    q, k, v = _unit_last(q), _unit_last(k), _unit_last(v)
    B, H, L, D = q.shape
    out = _new((B, H, L, D), q.dtype, q.device)
    lse = _new((B * H, L), _F32, q.device)
    if out.size:
        rt.ensure_device(q.device.index)
        if mask is None and not scale > 0:
            # The unmasked forward folds a positive scale into the running max; a zero mask takes the other path.
            mask = full((1, 1, 1, 1), 0.0, _F32, q.device)
        mask, types, scalars = _attn_args(q, k, v, mask, scale)
        m = mask if mask is not None else q
        arrays = (q, k, v, m, out, lse)
        ptrs = tuple(_ptr(a) for a in arrays)
        sig = tuple(_psig(a, p) for a, p in zip(arrays, ptrs)) + types
        block_m, block_n, warps, stages = _attn_cfg("fwd", D, L)
        go = _ATTN_FWD.launcher(sig, (D, block_m, block_n, is_causal, mask is not None), warps, stages)
        go((L + block_m - 1) // block_m, B * H, 1, *ptrs, *scalars)
    return out, lse


def attention_backward(grad: NDArray, q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, out: NDArray,
                       lse: NDArray, is_causal: bool, scale: float) -> tuple[NDArray, NDArray, NDArray]:
    q, k, v, do = _unit_last(q), _unit_last(k), _unit_last(v), _dense(grad)
    B, H, L, D = q.shape
    HK, S = k.shape[1], k.shape[2]
    dq = _new(q.shape, q.dtype, q.device)
    dk = _new((B, HK, S, D), k.dtype, k.device)
    dv = _new((B, HK, S, D), v.dtype, v.device)
    if not (q.size and k.size):
        return dq, dk, dv
    rt.ensure_device(q.device.index)
    delta = _new((B * H, L), _F32, q.device)
    pre = (_ptr(out), _ptr(do), _ptr(delta))
    go = _ATTN_PRE.launcher(tuple(_psig(a, p) for a, p in zip((out, do, delta), pre)) + ("i32",), (D, 64), 4)
    go((B * H * L + 63) // 64, 1, 1, *pre, B * H * L)
    mask, types, scalars = _attn_args(q, k, v, mask, scale)
    m = mask if mask is not None else q
    flags = (is_causal, mask is not None)
    block_m, block_n, warps, stages = _attn_cfg("dkdv", D, S)
    arrays = (q, k, v, m, do, lse, delta, dk, dv)
    ptrs = tuple(_ptr(a) for a in arrays)
    go = _ATTN_DKDV.launcher(tuple(_psig(a, p) for a, p in zip(arrays, ptrs)) + types,
                             (D, block_m, block_n, *flags), warps, stages)
    go((S + block_n - 1) // block_n, B * HK, 1, *ptrs, *scalars)
    block_m, block_n, warps, stages = _attn_cfg("dq", D, L)
    arrays = (q, k, v, m, do, lse, delta, dq)
    ptrs = tuple(_ptr(a) for a in arrays)
    go = _ATTN_DQ.launcher(tuple(_psig(a, p) for a, p in zip(arrays, ptrs)) + types,
                           (D, block_m, block_n, *flags), warps, stages)
    go((L + block_m - 1) // block_m, B * H, 1, *ptrs, *scalars)
    return dq, dk, dv


# ---------------------------------------------------------------- Adam / AdamW step

_ADAM = td.Kernel(adk.adam_step)


def adam_step_(param: NDArray, grad: NDArray, exp_avg: NDArray, exp_avg_sq: NDArray, lr: float, beta1: float,
               beta2: float, eps: float, weight_decay: float, decoupled: bool, step: int) -> None:
    arrays = (param, _dense(grad), exp_avg, exp_avg_sq)
    assert all(_contig(a) for a in (param, exp_avg, exp_avg_sq)), "adam_step_ updates contiguous arrays in place"
    n = param.size
    if not n:
        return
    rt.ensure_device(param.device.index)
    ptrs = tuple(_ptr(a) for a in arrays)
    sig = tuple(_psig(a, p) for a, p in zip(arrays, ptrs)) + ("i64",) + ("fp32",) * 7
    block = 2048
    go = _ADAM.launcher(sig, (block,), 8)
    l2, decay = (0.0, 1.0 - lr * weight_decay) if decoupled else (weight_decay, 1.0)
    go((n + block - 1) // block, 1, 1, *ptrs, n, beta1, beta2, eps, l2, decay, lr / (1 - beta1 ** step),
       (1 - beta2 ** step) ** 0.5)
