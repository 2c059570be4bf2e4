"""Decoding ops of language models over a preallocated KV cache: cache writes and single-query attention.

Inference only, no autograd history: each op checks its arguments, unwraps the Tensors, calls one backend primitive
(``kv_cache_write_``, ``rope_kv_cache_write_``, ``decode_attention``) and wraps the result. Positions and lengths
are 1-element integer tensors read on the device, never on the host, so a decoding step captured in a CUDA graph
stays valid at every later position. ``genesis.nn.functional`` exports these ops under the same names.
"""

from __future__ import annotations

from genesis.ndarray import check_same_device
from genesis.tensor import Tensor


def _check_cache(op: str, cache: Tensor, x: Tensor, what: str) -> None:
    """Raise unless ``cache`` and ``x`` (named ``what`` in the message) are 4-D and on one device."""
    if cache.ndim != 4 or x.ndim != 4:
        raise RuntimeError(f"{op}: expected 4-D (batch, heads, length, head_dim) tensors, got {what} of shape "
                           f"{tuple(x.shape)} and cache of shape {tuple(cache.shape)}")
    check_same_device(op, cache.device, x.device)


def kv_cache_write_(cache: Tensor, new: Tensor, position: Tensor) -> Tensor:
    """Write ``new`` (B, H, T, D) into ``cache`` (B, H, S, D) at positions ``p .. p + T - 1``; returns ``cache``.

    ``p = position[0]`` stays on the device (a 1-element integer tensor), so a CUDA graph that captured this call
    writes wherever the position points at replay time. Inference only: no autograd history is recorded. The
    caller guarantees ``p + T <= S`` (the value is not read on the host).
    """
    _check_cache("kv_cache_write_", cache, new, "new")
    B, H, T_new, D = new.shape
    if (B, H, D) != (cache.shape[0], cache.shape[1], cache.shape[3]) or T_new > cache.shape[2]:
        raise RuntimeError(f"kv_cache_write_: new of shape {tuple(new.shape)} does not fit the cache of shape "
                           f"{tuple(cache.shape)}")
    if position.numel() != 1 or position.dtype.is_floating_point:
        raise RuntimeError(f"kv_cache_write_: position must be a 1-element integer tensor, got shape "
                           f"{tuple(position.shape)} and dtype {position.dtype}")
    cache.ndarray.backend.kv_cache_write_(cache.ndarray, new.ndarray, position.ndarray.reshape((1,)))
    cache._bump_version()
    return cache


def rope_kv_cache_write_(q: Tensor, k: Tensor, v: Tensor, cos: Tensor, sin: Tensor, k_cache: Tensor,
                         v_cache: Tensor, position: Tensor) -> Tensor:
    """One decoding token of a layer in one step: returns ``rope(q)`` as (B, H, 1, D) and writes ``rope(k)`` and
    ``v`` into ``k_cache`` / ``v_cache`` (B, HK, S, D) at ``position[0]`` (read on the device).

    ``q``, ``k``, ``v`` are (B, 1, heads, D), the layout of the projections; ``cos`` / ``sin`` hold B (or 1) rows of
    D values in any shape with D last (e.g. (B, 1, 1, D)). Equivalent to ``rope`` of the transposed q and k followed
    by two ``kv_cache_write_`` calls; on cuda it is one kernel. Inference only.
    """
    B, T, H, D = q.shape
    if T != 1 or k.shape != v.shape or k.shape[0] != B or k.shape[1] != 1 or k.shape[3] != D or D % 2:
        raise RuntimeError(f"rope_kv_cache_write_: expected q (B, 1, H, D) and k, v (B, 1, HK, D) with an even D, "
                           f"got {tuple(q.shape)}, {tuple(k.shape)} and {tuple(v.shape)}")
    HK = k.shape[2]
    for cache in (k_cache, v_cache):
        _check_cache("rope_kv_cache_write_", cache, q, "q")
        if (cache.shape[0], cache.shape[1], cache.shape[3]) != (B, HK, D):
            raise RuntimeError(f"rope_kv_cache_write_: cache of shape {tuple(cache.shape)} does not match k of "
                               f"shape {tuple(k.shape)}")
    if cos.shape != sin.shape or cos.shape[-1] != D or cos.numel() not in (D, B * D):
        raise RuntimeError(f"rope_kv_cache_write_: cos and sin must hold B or 1 rows of {D} values, got "
                           f"{tuple(cos.shape)} and {tuple(sin.shape)}")
    if position.numel() != 1 or position.dtype.is_floating_point:
        raise RuntimeError(f"rope_kv_cache_write_: position must be a 1-element integer tensor, got shape "
                           f"{tuple(position.shape)} and dtype {position.dtype}")
    if q.dtype is not k_cache.dtype or k.dtype is not k_cache.dtype or v.dtype is not v_cache.dtype:
        raise RuntimeError(f"rope_kv_cache_write_: expected q, k, v and the caches of one dtype, got {q.dtype}, "
                           f"{k.dtype}, {v.dtype} and {k_cache.dtype}")
    rows = cos.numel() // D
    out = q.ndarray.backend.rope_kv_cache_write_(
        q.ndarray, k.ndarray, v.ndarray, cos.ndarray.reshape((rows, D)), sin.ndarray.reshape((rows, D)),
        k_cache.ndarray, v_cache.ndarray, position.ndarray.reshape((1,)))
    k_cache._bump_version()
    v_cache._bump_version()
    return Tensor._wrap(out)


def decode_attention(q: Tensor, k_cache: Tensor, v_cache: Tensor, length: Tensor, key_mask: Tensor | None = None,
                     scale: float | None = None) -> Tensor:
    """Attention of one new query per head over the first ``length[0]`` cached keys; returns (B, H, 1, D).

    ``q`` is (B, H, 1, D), ``k_cache``/``v_cache`` (B, HK, S, D) with H a multiple of HK (grouped-query attention:
    query head h reads KV head ``h // (H / HK)``, nothing is repeated). ``length`` is a 1-element integer tensor
    read on the device (so a captured CUDA graph serves every length); ``key_mask`` (B, >= length), nonzero where
    a key may be attended (padding is 0). ``scale`` defaults to ``1 / sqrt(D)``. On CUDA this is a split-K flash
    decoding kernel; inference only.
    """
    _check_cache("decode_attention", k_cache, q, "q")
    B, H, L, D = q.shape
    if L != 1:
        raise RuntimeError(f"decode_attention: expected one query per head (q of shape (B, H, 1, D)), got "
                           f"{tuple(q.shape)}")
    HK = k_cache.shape[1]
    if v_cache.shape != k_cache.shape or k_cache.shape[0] != B or k_cache.shape[3] != D or H % HK:
        raise RuntimeError(f"decode_attention: q {tuple(q.shape)}, k_cache {tuple(k_cache.shape)} and v_cache "
                           f"{tuple(v_cache.shape)} do not match (number of heads must be a multiple of KV heads)")
    if length.numel() != 1 or length.dtype.is_floating_point:
        raise RuntimeError(f"decode_attention: length must be a 1-element integer tensor, got shape "
                           f"{tuple(length.shape)} and dtype {length.dtype}")
    mask = None
    if key_mask is not None:
        if key_mask.ndim != 2 or key_mask.shape[0] != B:
            raise RuntimeError(f"decode_attention: key_mask must be (batch, keys) = ({B}, S), got "
                               f"{tuple(key_mask.shape)}")
        mask = key_mask.ndarray
    if q.dtype is not k_cache.dtype or v_cache.dtype is not k_cache.dtype:
        raise RuntimeError(f"decode_attention: expected q, k_cache and v_cache of one dtype, got {q.dtype}, "
                           f"{k_cache.dtype} and {v_cache.dtype}")
    scale = 1.0 / D ** 0.5 if scale is None else float(scale)
    out = q.ndarray.backend.decode_attention(q.ndarray, k_cache.ndarray, v_cache.ndarray,
                                             length.ndarray.reshape((1,)), mask, scale)
    return Tensor._wrap(out)
