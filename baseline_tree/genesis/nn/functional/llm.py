"""Building blocks of decoder-only language models: rotary embeddings, SwiGLU, causal softmax, sampling."""

from __future__ import annotations

from genesis import functional as T
from genesis import random
from genesis.autograd import no_grad
from genesis.functional.elementwise import Silu
from genesis.functional.fused import fused_rope, fused_swiglu
from genesis.nn.functional._out import write_out
from genesis.random import Generator
from genesis.tensor import Tensor, arange, zeros_like


def rotate_half(x: Tensor) -> Tensor:
    """``(x1, x2) -> (-x2, x1)`` for the two halves of the last dim (HF Llama/Qwen layout)."""
    half = x.shape[-1] // 2
    return T.cat([-x[..., half:], x[..., :half]], -1)


def rope_tables(head_dim: int, max_positions: int, theta: float = 10000.0, dtype: object = None,
                device: object = None) -> tuple[Tensor, Tensor]:
    """(cos, sin) tables of shape (max_positions, head_dim) for ``rope``.

    ``inv_freq[i] = theta^(-2i / head_dim)``; the angles ``pos * inv_freq`` are repeated for both halves of the
    head dim (``cat(freqs, freqs)``), which is the layout HF's Qwen2 uses with ``rotate_half``.
    """
    if head_dim % 2:
        raise ValueError(f"rope_tables: head_dim must be even, got {head_dim}")
    # float32 like HF's Qwen2RotaryEmbedding, so tables (and rotated values) match it.
    inv_freq = 1.0 / theta ** (arange(0, head_dim, 2, device=device).float() / head_dim)
    pos = arange(max_positions, device=device).float()
    freqs = pos.unsqueeze(1) * inv_freq.unsqueeze(0)  # (P, head_dim / 2)
    emb = T.cat([freqs, freqs], -1)  # (P, head_dim)
    cos, sin = emb.cos(), emb.sin()
    if dtype is not None:
        cos, sin = cos.to(dtype), sin.to(dtype)
    return cos, sin


def rope(x: Tensor, cos: Tensor, sin: Tensor, position_ids: Tensor | None = None, *, unsqueeze_dim: int = 1,
         out: Tensor | None = None) -> Tensor:
    """Apply rotary position embeddings: ``x * cos + rotate_half(x) * sin`` (Su et al., 2021).

    Convention (HF Qwen2/Llama): the head dim is split in two halves that rotate together, and ``cos``/``sin``
    hold each angle twice (``cat(freqs, freqs)``, see ``rope_tables``).

    Args:
        x: (B, H, T, D) when ``unsqueeze_dim=1`` (the default), or (B, T, H, D) with ``unsqueeze_dim=2``.
        cos, sin: tables of shape (P, D) indexed by position, or already gathered per token: (B, T, D) or (T, D),
            or already broadcastable to ``x`` (as many dims as ``x``, e.g. (B, 1, T, D)): used as they are.
        position_ids: (B, T) or (T,) int positions into the tables; default ``arange(T)`` for (P, D) tables.
        out: preallocated result (inference only).
    """
    if cos.shape != sin.shape:
        raise RuntimeError(f"rope: cos and sin must have the same shape, got {tuple(cos.shape)} and "
                           f"{tuple(sin.shape)}")
    if cos.shape[-1] != x.shape[-1]:
        raise RuntimeError(f"rope: the tables' last dim {cos.shape[-1]} does not match the head dim {x.shape[-1]}")
    if cos.ndim == x.ndim and position_ids is None:
        fused = fused_rope(x, cos, sin)
        if fused is not None:
            return write_out("rope", fused, out)
        return write_out("rope", x * cos.to(x.dtype) + rotate_half(x) * sin.to(x.dtype), out)
    seq_len = x.shape[2] if unsqueeze_dim == 1 else x.shape[1]
    if position_ids is not None:
        cos, sin = cos[position_ids], sin[position_ids]  # (B, T, D) or (T, D)
    elif cos.ndim == 2 and cos.shape[0] != seq_len:
        if cos.shape[0] < seq_len:
            raise RuntimeError(f"rope: the tables hold {cos.shape[0]} positions but the sequence has {seq_len}")
        cos, sin = cos[:seq_len], sin[:seq_len]
    if cos.ndim == 2:
        cos, sin = cos.unsqueeze(0), sin.unsqueeze(0)  # (1, T, D)
    fused = fused_rope(x, cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim))
    if fused is not None:
        return write_out("rope", fused, out)
    cos, sin = cos.unsqueeze(unsqueeze_dim).to(x.dtype), sin.unsqueeze(unsqueeze_dim).to(x.dtype)
    return write_out("rope", x * cos + rotate_half(x) * sin, out)


def swiglu(gate: Tensor, up: Tensor | None = None, *, out: Tensor | None = None) -> Tensor:
    """``silu(gate) * up`` (Shazeer, 2020). With one argument, its last dim is split into (gate, up) halves."""
    if up is None:
        if gate.shape[-1] % 2:
            raise RuntimeError(f"swiglu: the last dim must be even to split into gate and up, got {gate.shape[-1]}")
        gate, up = T.chunk(gate, 2, -1)
    if gate.shape != up.shape:
        raise RuntimeError(f"swiglu: gate and up must have the same shape, got {tuple(gate.shape)} and "
                           f"{tuple(up.shape)}")
    fused = fused_swiglu(gate, up)
    return write_out("swiglu", fused if fused is not None else Silu.apply(gate) * up, out)


def _check_cache(op: str, cache: Tensor, x: Tensor, what: str) -> None:
    if cache.ndim != 4 or x.ndim != 4:
        raise RuntimeError(f"{op}: expected 4-D (batch, heads, length, head_dim) tensors, got {what} of shape "
                           f"{tuple(x.shape)} and cache of shape {tuple(cache.shape)}")
    if cache.device != x.device:
        raise RuntimeError(f"{op}: expected all tensors to be on the same device, but found {cache.device} and "
                           f"{x.device}")


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


def causal_softmax(scores: Tensor, dim: int = -1) -> Tensor:
    """Softmax of attention scores (..., T, S) with future keys masked out.

    The mask is aligned to the bottom right: query ``i`` sees keys ``j <= i + (S - T)``, which is what a decoder
    needs when the T newest queries attend a cache of S keys (for T == S it is the usual lower-triangular mask).
    """
    if dim not in (-1, scores.ndim - 1):
        raise ValueError(f"causal_softmax: only the last dim is supported, got dim={dim}")
    t, s = scores.shape[-2], scores.shape[-1]
    rows = arange(t, device=scores.device).unsqueeze(1)
    cols = arange(s, device=scores.device).unsqueeze(0)
    masked = T.masked_fill(scores, cols > rows + (s - t), float("-inf"))
    return T.softmax(masked, -1)


def random_sample(logits: Tensor, top_p: float = 1.0, top_k: int = 0, temperature: float = 1.0,
                  generator: Generator | None = None) -> Tensor:
    """Sample one token id per row of ``logits`` (..., V) with temperature, top-k and nucleus (top-p) filtering.

    ``temperature == 0`` (or ``top_k == 1``) is greedy decoding (argmax). ``top_k == 0`` keeps every token; top-p
    keeps the smallest set of most likely tokens whose probability reaches ``top_p`` (always at least one).
    Returns int64 ids of shape ``logits.shape[:-1]``.
    """
    if temperature < 0:
        raise ValueError(f"random_sample: temperature must be non-negative, got {temperature}")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"random_sample: top_p must be in (0, 1], got {top_p}")
    if top_k < 0:
        raise ValueError(f"random_sample: top_k must be non-negative, got {top_k}")
    with no_grad():
        lead = logits.shape[:-1]
        flat = logits.reshape(-1, logits.shape[-1]).float()
        if temperature == 0 or top_k == 1:
            return flat.argmax(-1).reshape(lead)
        flat = flat / temperature
        if 0 < top_k < flat.shape[-1]:
            kth = T.topk(flat, top_k, -1).values[:, -1:]
            flat = T.masked_fill(flat, flat < kth, float("-inf"))
        probs = T.softmax(flat, -1)
        if top_p < 1.0:
            sorted_probs, order = T.sort(probs, -1, descending=True)
            before = T.cumsum(sorted_probs, -1) - sorted_probs  # mass of the strictly more likely tokens
            drop_sorted = before >= top_p
            drop = zeros_like(drop_sorted).scatter(1, order, drop_sorted)
            probs = T.masked_fill(probs, drop, 0.0)
        ids = random.multinomial(probs, 1, generator=generator)
        return ids.reshape(lead)
