"""Launchers of the fused neural-network kernels (``kernels/nn_*.py``): check, allocate, launch.

Each implements one primitive of the backend contract (``genesis._impl.contract``): softmax_backward, layer_norm,
layer_norm_backward, cross_entropy, cross_entropy_backward, nll_loss, nll_loss_backward (array-op composites), swiglu,
swiglu_backward, rope, attention, attention_backward, adam_step_ (the multi-tensor steps are in ``multi_tensor.py``),
binary_cross_entropy and its backward (elementwise kernels).
"""

from __future__ import annotations

from genesis import dtypes
from genesis._impl.cuda import device_checks, graphs
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import contiguous, full
from genesis._impl.cuda.elementwise import binary, unary
from genesis._impl.cuda.indexing import check_unit_interval
from genesis._impl.cuda.kernels import nn_adamw as adk
from genesis._impl.cuda.kernels import nn_attention as ak
from genesis._impl.cuda.kernels import nn_cross_entropy as cek
from genesis._impl.cuda.kernels import nn_norm as nk
from genesis._impl.cuda.kernels import nn_rope_swiglu as rsk
from genesis._impl.cuda.kernels import nn_softmax as sk
from genesis._impl.cuda.launch import _contig, _ew, _i32, _new, _new_like, _next_pow2, _pointers, _psig, _ptr
from genesis._impl.cuda.reductions import reduce
from genesis.ndarray import NDArray, check_same_device, check_tensor_lists

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
    if out.dtype is dtypes.float64:
        # The kernel accumulates in float32: float64 keeps its precision through float64 elementwise ops.
        if log:
            total = reduce("sum", grad, (dim,), True)
            return binary("sub", grad, binary("mul", unary("exp", out), total))
        total = reduce("sum", binary("mul", grad, out), (dim,), True)
        return binary("mul", out, binary("sub", grad, total))
    g = _dense(grad if dim == last else grad.transpose(dim, last))
    y = _dense(out if dim == last else out.transpose(dim, last))
    dx = _new(y.shape, out.dtype, out.device)
    M, K = _rows(y)
    if M and K:
        rt.ensure_device(out.device.index)
        p, q, r = _ptr(g), _ptr(y), _ptr(dx)
        block, one_pass, warps = _row_tile(K, out.dtype.itemsize)
        go = _SOFTMAX_BWD.launcher((_psig(g, p), _psig(y, q), _psig(dx, r), _i32(K)), (log, block, one_pass), warps)
        go(M, 1, 1, p, q, r, K)
    return dx if dim == last else contiguous(dx.transpose(dim, last))


# ---------------------------------------------------------------- layer_norm / rms_norm

_NORM_FWD = td.Kernel(nk.norm_fwd)
_NORM_BWD = td.Kernel(nk.norm_bwd)
_NORM_REDUCE = td.Kernel(nk.norm_bwd_reduce)


def _norm_defaults() -> dict[tuple[str, int], tuple[int, ...]]:
    """Per (kernel, BLOCK_N): forward (BLOCK_M, num_warps), backward (BLOCK_M, num_warps, programs per SM).

    Narrow rows share a program (BLOCK_M rows of BLOCK_N, at least 2048 elements) so each program moves a few KiB;
    4 warps up to 2048 elements, 8 up to 4096, 16 beyond. The backward runs 16 warps per SM (programs loop over
    their rows), fewer programs meaning fewer partial sums to reduce. Swept on an H200 at N = 1024 and 4096 bf16.
    """
    table = {}
    for k in range(4, 15):
        block_n = 1 << k
        block_m = max(1, min(64, 2048 // block_n))
        elems = block_m * block_n
        warps = 4 if elems <= 2048 else 8 if elems <= 4096 else 16
        table[("fwd", block_n)] = (block_m, warps)
        table[("bwd", block_n)] = (block_m, warps, max(1, 16 // warps))
    return table


# ``benchmark/sweep_nn_tiles.py`` times alternatives on the GPU at hand.
NORM_CONFIGS = _norm_defaults()
_NORM_LONG = 4096  # chunk of the looping kernels for rows that do not fit in registers


def _norm_block(n: int, itemsize: int) -> tuple[int, bool]:
    limit = 16384 if itemsize <= 2 else 8192
    if n <= limit:
        return max(_next_pow2(n), 16), True
    return _NORM_LONG, False


def layer_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, eps: float,
               rms: bool) -> tuple[NDArray, NDArray, NDArray]:
    check_same_device("layer_norm", x, weight, bias)
    xc = _dense(x)
    M, N = _rows(xc)
    y = _new(x.shape, x.dtype, x.device)
    stats = _new((2,) + x.shape[:-1], _F32, x.device)  # mean and rstd in one block: one allocation, not two
    rows, strides = x.shape[:-1], stats.strides[1:]
    mean, rstd = stats._view(rows, strides, 0), stats._view(rows, strides, stats.strides[0])
    if M and N:
        rt.ensure_device(x.device.index)
        w = _dense(weight) if weight is not None else xc
        b = _dense(bias) if bias is not None else xc
        ptrs, sig = _pointers((xc, w, b, y, mean, rstd))
        sig = sig + ("i32", _i32(N), "fp32")
        block_n, one_pass = _norm_block(N, x.dtype.itemsize)
        block_m, warps = NORM_CONFIGS[("fwd", block_n)] if one_pass else (1, 8)
        go = _NORM_FWD.launcher(sig, (rms, weight is not None, bias is not None, block_m, block_n, one_pass), warps)
        go((M + block_m - 1) // block_m if one_pass else M, 1, 1, *ptrs, M, N, eps)
    return y, mean, rstd


def layer_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, mean: NDArray, rstd: NDArray, rms: bool,
                        output_mask: tuple, bias_dtype: dtypes.dtype | None = None) -> tuple:
    g, xc = _dense(grad), _dense(x)
    M, N = _rows(xc)
    need_dw = bool(output_mask[1]) and weight is not None
    need_db = bool(output_mask[2]) and not rms
    bias_dtype = bias_dtype or _F32
    dx = _new(x.shape, x.dtype, x.device)
    if not (M and N):  # no rows: the kernels do not run and the parameter gradients are zero
        grad_w = full(weight.shape, 0.0, weight.dtype, x.device) if need_dw else None
        grad_b = full((N,), 0.0, bias_dtype, x.device) if need_db else None
        return (dx if output_mask[0] else None), grad_w, grad_b
    grad_w = _new(weight.shape, weight.dtype, x.device) if need_dw else None
    grad_b = _new((N,), bias_dtype, x.device) if need_db else None
    rt.ensure_device(x.device.index)
    block_n, one_pass = _norm_block(N, x.dtype.itemsize)
    block_m, warps, per_sm = NORM_CONFIGS[("bwd", block_n)] if one_pass else (1, 8, 4)
    programs = max(1, min((M + block_m - 1) // block_m, per_sm * rt.multiprocessor_count(x.device.index)))
    dw_part = _new((programs, N), _F32, x.device) if need_dw else None
    db_part = _new((programs, N), _F32, x.device) if need_db else None
    w = _dense(weight) if weight is not None else xc
    arrays = (g, xc, w, mean, rstd, dx, dx if dw_part is None else dw_part, dx if db_part is None else db_part)
    ptrs, sig = _pointers(arrays)
    sig = sig + ("i32", _i32(N))
    go = _NORM_BWD.launcher(sig, (rms, weight is not None, need_dw, need_db, block_m, block_n, one_pass), warps)
    go(programs, 1, 1, *ptrs, M, N)
    if need_dw or need_db:
        # Second, ordered reduction of the per-program partial sums (deterministic, no atomics), both in one launch.
        parts = (dw_part if need_dw else db_part, db_part if need_db else dw_part,
                 grad_w if need_dw else grad_b, grad_b if need_db else grad_w)
        ptrs, sig = _pointers(parts)
        sig = sig + ("i32", _i32(N))
        # Narrow column strips (16 floats) give many programs: the sum over P rows is latency-bound otherwise.
        go = _NORM_REDUCE.launcher(sig, (need_dw, need_db, 128, 16), 4)
        go((N + 15) // 16, 1, 1, *ptrs, programs, N)
    return (dx if output_mask[0] else None), grad_w, grad_b


# ---------------------------------------------------------------- cross-entropy

_CE_FWD = td.Kernel(cek.cross_entropy_fwd)
_CE_BWD = td.Kernel(cek.cross_entropy_bwd)
_CE_REDUCE = td.Kernel(cek.cross_entropy_reduce)
_CE_REDUCE_BLOCK = 1024


# (BLOCK_V, num_warps) per kernel and element size: the forward keeps three float32 running vectors of BLOCK_V per
# program in registers. Swept on an H200 at 8192 x 151936 bf16 (forward 698 us at (2048, 8) against 823 at
# (2048, 4); backward within 2% from 1024 to 8192 columns); ``benchmark/sweep_nn_tiles.py`` times alternatives.
CE_CONFIGS = {("fwd", 2): (2048, 8), ("fwd", 4): (2048, 8), ("bwd", 2): (2048, 4), ("bwd", 4): (4096, 8)}


def _ce_cfg(kernel: str, v: int, itemsize: int) -> tuple[int, int]:
    block, warps = CE_CONFIGS[(kernel, 2 if itemsize <= 2 else 4)]
    block = min(max(_next_pow2(v), 16), block)
    return block, warps if block >= 2048 else min(warps, 4)


def cross_entropy(x: NDArray, target: NDArray, ignore_index: int, label_smoothing: float, reduction: str,
                  out_dtype: dtypes.dtype, check: tuple[type[Exception], str]) -> tuple:
    check_same_device("cross_entropy", x, target)
    xc, t = _dense(x), _dense(target)
    M, V = xc.shape
    reduced = reduction != "none"
    rows = _new((M,), _F32 if reduced else out_dtype, x.device)
    lse = _new((M,), _F32, x.device)
    rt.ensure_device(x.device.index)
    if M:
        flag = device_checks.flag_pointer()
        ptrs, sig = _pointers((xc, t, rows, lse))
        sig = sig + ("*i64", _i32(V), "i64", "fp32", "i64")
        block, warps = _ce_cfg("fwd", V, x.dtype.itemsize)
        go = _CE_FWD.launcher(sig, (block, label_smoothing > 0), warps)
        go(M, 1, 1, *ptrs, flag, V, ignore_index, label_smoothing, device_checks.code(*check))
        if device_checks.sync_checks and not graphs.capturing:
            rt.current_stream().synchronize()  # raises a recorded bad target with the CPU's class and message
    if not reduced:
        return rows, lse, None
    out = _new((), out_dtype, x.device)
    mean = reduction == "mean"
    count = _new((), _F32, x.device) if mean else None
    ptrs, sig = _pointers((rows, t, out, count if mean else out))
    go = _CE_REDUCE.launcher(sig + ("i64", "i64"), (mean, _CE_REDUCE_BLOCK), 4)
    go(1, 1, 1, *ptrs, M, ignore_index)
    return out, lse, count


def cross_entropy_backward(grad: NDArray, x: NDArray, target: NDArray, lse: NDArray, count: NDArray | None,
                           ignore_index: int, label_smoothing: float) -> NDArray:
    xc, t = _dense(x), _dense(target)
    M, V = xc.shape
    dx = _new((M, V), x.dtype, x.device)
    if M and V:
        rt.ensure_device(x.device.index)
        divide = count is not None
        ptrs, sig = _pointers((xc, t, lse, grad, count if divide else lse, dx))
        sig = sig + (_i32(V), "i64", "fp32", "i64")
        block, warps = _ce_cfg("bwd", V, x.dtype.itemsize)
        go = _CE_BWD.launcher(sig, (block, divide), warps)
        go(M, (V + block - 1) // block, 1, *ptrs, V, ignore_index, label_smoothing,
           grad.strides[0] if grad.ndim else 0)
    return dx


def nll_loss(x: NDArray, target: NDArray, weight: NDArray | None, ignore_index: int, reduction: str) -> tuple:
    """A composite of array ops: the target classes gathered and weighted (weight 0 for ignored rows), reduced."""
    n = x.shape[0]
    valid = target.binary("ne", ignore_index)
    col = valid.where(target, 0).reshape((n, 1))
    w = valid.astype(x.dtype)
    if weight is not None:
        w = w * weight.backend.gather(weight, 0, col.reshape((n,)))
    loss = valid.where(-(x.backend.gather(x, 1, col).reshape((n,)) * w), 0.0)
    total = w.sum((0,))
    if reduction == "none":
        return loss, total
    summed = loss.sum((0,))
    return (summed if reduction == "sum" else summed / total), total


def nll_loss_backward(grad: NDArray, x: NDArray, target: NDArray, weight: NDArray | None, ignore_index: int,
                      reduction: str, total_weight: NDArray) -> NDArray:
    """``-w[t] * grad`` (over the total weight for a mean) scattered into zeros at the target classes."""
    n = x.shape[0]
    valid = target.binary("ne", ignore_index)
    col = valid.where(target, 0).reshape((n, 1))
    w = valid.astype(x.dtype)
    if weight is not None:
        w = w * weight.backend.gather(weight, 0, col.reshape((n,)))
    g = grad / total_weight if reduction == "mean" else grad
    if reduction != "none":
        g = g.expand((n,))
    coef = valid.where(-(w * g), 0.0)
    zeros = full(x.shape, 0, coef.dtype, x.device)  # written in place: no copy of an (N, C) array
    return zeros.backend.scatter_(zeros, 1, col, coef.reshape((n, 1)), "set")


# ---------------------------------------------------------------- SwiGLU


_SWIGLU_FWD = td.Kernel(rsk.swiglu_fwd)
_SWIGLU_BWD = td.Kernel(rsk.swiglu_bwd)
# (BLOCK_H, num_warps) per kernel: on an H200 at 8192 x 8192 bf16 every block from 1024 to 8192 columns ran within
# 3% (about 4.1 TB/s); ``benchmark/sweep_nn_tiles.py`` times alternatives.
SWIGLU_CONFIGS = {"fwd": (4096, 8), "bwd": (4096, 8)}


def _swiglu_cfg(kernel: str, h: int) -> tuple[int, int]:
    block, warps = SWIGLU_CONFIGS[kernel]
    block = min(_next_pow2(h), block)
    return block, warps if block >= 2048 else min(warps, 4)


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
    check_same_device("swiglu", gate, up)
    g, sg = _row_view(gate)
    u, su = _row_view(up)
    out = _new(gate.shape, gate.dtype, gate.device)
    M, H = _rows(out)
    if M and H:
        rt.ensure_device(gate.device.index)
        ptrs, sig = _pointers((g, u, out))
        block, warps = _swiglu_cfg("fwd", H)
        sig = sig + tuple(_i32(v) for v in (H, sg, su, H))
        go = _SWIGLU_FWD.launcher(sig, (block,), warps)
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
        ptrs, sig = _pointers(arrays)
        block, warps = _swiglu_cfg("bwd", H)
        sig = sig + tuple(_i32(v) for v in (H, sg, su))
        go = _SWIGLU_BWD.launcher(sig, (block,), warps)
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
    check_same_device("rope", x, cos, sin)
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
        ptrs, sig = _pointers(arrays)
        half = D // 2
        block_d = max(_next_pow2(half), 2)
        block_r = max(1, min(64, 4096 // block_d))
        sig = sig + ("i32", "i32", "i32", "i64", "i64", "i64")
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
        ptrs, sig = _pointers(arrays)
        sig = sig + types
        block_m, block_n, warps, stages = _attn_cfg("fwd", D, L)
        go = _ATTN_FWD.launcher(sig, (D, block_m, block_n, is_causal, mask is not None), warps, stages)
        go((L + block_m - 1) // block_m, B * H, 1, *ptrs, *scalars)
    return out, lse


def attention_backward(grad: NDArray, q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, out: NDArray,
                       lse: NDArray, is_causal: bool, scale: float) -> tuple[NDArray, NDArray, NDArray]:
    q, k, v, do = _unit_last(q), _unit_last(k), _unit_last(v), _unit_last(grad)
    B, H, L, D = q.shape
    HK, S = k.shape[1], k.shape[2]
    dq = _new(q.shape, q.dtype, q.device)
    dk = _new((B, HK, S, D), k.dtype, k.device)
    dv = _new((B, HK, S, D), v.dtype, v.device)
    if not (q.size and k.size):
        return dq, dk, dv
    rt.ensure_device(q.device.index)
    delta = _new((B * H, L), _F32, q.device)
    # dO is read through its strides: the gradient of a (B, L, H, D) output transposed to (B, H, L, D), as an
    # attention layer's output usually is, needs no copy.
    do_strides = do.strides[:3]
    do_types = tuple("i64:16" if s % 16 == 0 else "i64" for s in do_strides)
    pre, sig = _pointers((out, do, delta))
    go = _ATTN_PRE.launcher(sig + do_types + ("i32", "i32", "i32"), (D, 64), 4)
    go((B * H * L + 63) // 64, 1, 1, *pre, *do_strides, B * H * L, H, L)
    mask, types, scalars = _attn_args(q, k, v, mask, scale)
    types, scalars = types[:13] + do_types + types[13:], scalars[:13] + do_strides + scalars[13:]
    m = mask if mask is not None else q
    flags = (is_causal, mask is not None)
    block_m, block_n, warps, stages = _attn_cfg("dkdv", D, S)
    arrays = (q, k, v, m, do, lse, delta, dk, dv)
    ptrs, sig = _pointers(arrays)
    go = _ATTN_DKDV.launcher(sig + types,
                             (D, block_m, block_n, *flags), warps, stages)
    go((S + block_n - 1) // block_n, B * HK, 1, *ptrs, *scalars)
    block_m, block_n, warps, stages = _attn_cfg("dq", D, L)
    arrays = (q, k, v, m, do, lse, delta, dq)
    ptrs, sig = _pointers(arrays)
    go = _ATTN_DQ.launcher(sig + types,
                           (D, block_m, block_n, *flags), warps, stages)
    go((L + block_m - 1) // block_m, B * H, 1, *ptrs, *scalars)
    return dq, dk, dv


# ---------------------------------------------------------------- Adam / AdamW step

_ADAM = td.Kernel(adk.adam_step)


def adam_step_(param: NDArray, grad: NDArray, exp_avg: NDArray, exp_avg_sq: NDArray, lr: float, beta1: float,
               beta2: float, eps: float, weight_decay: float, decoupled: bool, step: int) -> None:
    check_tensor_lists("adam_step_", ("param", "grad", "exp_avg", "exp_avg_sq"), [param], [grad], [exp_avg],
                       [exp_avg_sq])
    arrays = (param, _dense(grad), exp_avg, exp_avg_sq)
    assert all(_contig(a) for a in (param, exp_avg, exp_avg_sq)), "adam_step_ updates contiguous arrays in place"
    n = param.size
    if not n:
        return
    rt.ensure_device(param.device.index)
    ptrs, sig = _pointers(arrays)
    sig = sig + ("i64",) + ("fp32",) * 7
    block = 2048
    go = _ADAM.launcher(sig, (block,), 8)
    l2, decay = (0.0, 1.0 - lr * weight_decay) if decoupled else (weight_decay, 1.0)
    go((n + block - 1) // block, 1, 1, *ptrs, n, beta1, beta2, eps, l2, decay, lr / (1 - beta1 ** step),
       (1 - beta2 ** step) ** 0.5)


def binary_cross_entropy(p: NDArray, t: NDArray) -> NDArray:
    """One kernel; each operand's range is checked on the device by a read-only launch and reported at the next
    synchronization."""
    check_same_device("binary_cross_entropy", p, t)
    for x, name in ((p, "input"), (t, "target")):
        check_unit_interval(x, RuntimeError, f"all elements of {name} should be between 0 and 1")
    return _ew("binary_cross_entropy", 2, _new_like(p, p.dtype, t), (p, t), p.dtype)


def binary_cross_entropy_backward(grad: NDArray, p: NDArray, t: NDArray) -> NDArray:
    check_same_device("binary_cross_entropy_backward", grad, p, t)
    return _ew("binary_cross_entropy_backward", 3, _new_like(p, grad.dtype, grad), (grad, p, t), grad.dtype)
