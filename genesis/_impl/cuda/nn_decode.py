"""Launchers of the decoding kernels (``kernels/nn_decode.py``): ``kv_cache_write_``, ``rope_kv_cache_write_`` and
``decode_attention``.

None of them reads a device value on the host, so all three can be captured in a CUDA graph.
"""

from __future__ import annotations

from genesis import dtypes
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import cast
from genesis._impl.cuda.kernels import nn_decode as dk
from genesis._impl.cuda.launch import _new, _next_pow2, _pointers
from genesis._impl.cuda.nn_fused import _unit_last
from genesis.ndarray import NDArray, check_same_device

_KV_WRITE = td.Kernel(dk.kv_write_kernel)
_PARTIAL = td.Kernel(dk.decode_attention_kernel)
_COMBINE = td.Kernel(dk.decode_combine_kernel)
_ROPE_CACHE = td.Kernel(dk.rope_cache_kernel)
SPLIT = 128  # keys per program: small enough that a short cache still spreads over many programs
BLOCK_N = 64


def kv_cache_write_(cache: NDArray, new: NDArray, position: NDArray) -> None:
    """cache[:, :, p:p + T] = new with p = position[0] read on the device; cache (B, H, S, D), new (B, H, T, D)."""
    check_same_device("kv_cache_write_", cache, new, position)
    new = _unit_last(new)
    if new.dtype is not cache.dtype:
        new = cast(new, cache.dtype)
    if position.dtype is not dtypes.int64:
        position = cast(position, dtypes.int64)
    B, H, T, D = new.shape
    if B * H * T == 0 or D == 0:
        return
    rt.ensure_device(cache.device.index)
    arrays = (cache, new, position)
    ptrs, sig = _pointers(arrays)
    sig = sig + ("i32", "i32") + ("i64",) * 6 + ("i32",)
    go = _KV_WRITE.launcher(sig, (_next_pow2(D),), 1 if D <= 64 else 2)
    (n_sb, n_sh, n_st, _), (c_sb, c_sh, c_ss, _) = new.strides, cache.strides
    go(B * H * T, 1, 1, *ptrs, T, H, n_sb, n_sh, n_st, c_sb, c_sh, c_ss, D)


def decode_attention(q: NDArray, k: NDArray, v: NDArray, length: NDArray, key_mask: NDArray | None,
                     scale: float) -> NDArray:
    """Attention of one query per head over the first ``length[0]`` cached keys (see the contract)."""
    check_same_device("decode_attention", q, k, v, length, key_mask)
    B, H, L, D = q.shape
    HK, S = k.shape[1], k.shape[2]
    group = H // HK
    q, k, v = _unit_last(q), _unit_last(k), _unit_last(v)
    if length.dtype is not dtypes.int64:
        length = cast(length, dtypes.int64)
    out = _new((B, H, 1, D), q.dtype, q.device)
    if B * H == 0 or D == 0:
        return out
    rt.ensure_device(q.device.index)
    has_mask = key_mask is not None
    if has_mask:
        key_mask = cast(key_mask, dtypes.int8) if key_mask.dtype is not dtypes.int8 else key_mask
        key_mask = _unit_last(key_mask)
        mask_sb = key_mask.strides[0]
    else:
        key_mask = length  # any valid pointer: never read
        mask_sb = 0
    num_splits = max(1, (S + SPLIT - 1) // SPLIT)
    po = _new((B, H, num_splits, D), dtypes.float32, q.device)
    pm = _new((B, H, num_splits), dtypes.float32, q.device)
    pl = _new((B, H, num_splits), dtypes.float32, q.device)
    arrays = (q, k, v, length, key_mask, po, pm, pl)
    ptrs, sig = _pointers(arrays)
    block_d = max(_next_pow2(D), 16)
    block_g = max(_next_pow2(group), 16)
    consts = (group, block_g, BLOCK_N, block_d, SPLIT, has_mask, q.dtype is dtypes.float32)
    sig = sig + ("fp32", "i32", "i32", "i32") + ("i64",) * 9
    go = _PARTIAL.launcher(sig, consts, 4)
    go(B * HK, num_splits, 1, *ptrs, scale, HK, D, num_splits, q.strides[0], q.strides[1],
       k.strides[0], k.strides[1], k.strides[2], v.strides[0], v.strides[1], v.strides[2], mask_sb)
    combine = (po, pm, pl, out)
    cptrs, csig = _pointers(combine)
    go = _COMBINE.launcher(csig + ("i32", "i32", "i64", "i64", "i32"), (min(_next_pow2(num_splits), 64), block_d), 4)
    go(B * H, 1, 1, *cptrs, num_splits, D, out.strides[0], out.strides[1], H)
    return out


def rope_kv_cache_write_(q: NDArray, k: NDArray, v: NDArray, cos: NDArray, sin: NDArray, k_cache: NDArray,
                         v_cache: NDArray, position: NDArray) -> NDArray:
    """Rotated queries (B, H, 1, D); rotated keys and the values written into the caches (see the contract)."""
    check_same_device("rope_kv_cache_write_", q, k, v, cos, sin, k_cache, v_cache, position)
    B, _, H, D = q.shape
    HK = k.shape[2]
    q, k, v = _unit_last(q), _unit_last(k), _unit_last(v)
    cos, sin = _unit_last(cos), _unit_last(sin)
    if position.dtype is not dtypes.int64:
        position = cast(position, dtypes.int64)
    out = _new((B, H, 1, D), q.dtype, q.device)
    if B == 0 or D == 0:
        return out
    rt.ensure_device(q.device.index)
    arrays = (q, k, v, cos, sin, out, k_cache, v_cache, position)
    ptrs, sig = _pointers(arrays)
    sig = sig + ("i64",) * 13 + ("i32",)
    half = D // 2
    go = _ROPE_CACHE.launcher(sig, (half, max(_next_pow2(half), 16)), 1 if D <= 128 else 2)
    t_sb = cos.strides[0] if cos.shape[0] > 1 else 0
    go(B, H + HK, 1, *ptrs, q.strides[0], q.strides[2], k.strides[0], k.strides[2], v.strides[0], v.strides[2], t_sb,
       k_cache.strides[0], k_cache.strides[1], k_cache.strides[2], v_cache.strides[0], v_cache.strides[1],
       v_cache.strides[2], H)
    return out
