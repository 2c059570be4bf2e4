"""Building blocks of decoder-only language models: rotary embeddings, SwiGLU, causal softmax, sampling.

The decoding ops over a KV cache (``kv_cache_write_``, ``rope_kv_cache_write_``, ``decode_attention``) live in the
ops layer, ``genesis.ops.llm``.
"""

from __future__ import annotations

from genesis import ops as T
from genesis import random
from genesis.autograd import no_grad
from genesis.nn.functional._out import write_out
from genesis.ops.fused import fused_rope, fused_swiglu
from genesis.ops.unary import Silu
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
        cos: table of shape (P, D) indexed by position, or already gathered per token: (B, T, D) or (T, D), or
            already broadcastable to ``x`` (as many dims as ``x``, e.g. (B, 1, T, D)): used as it is.
        sin: the sine table, of the same shape as ``cos``.
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
