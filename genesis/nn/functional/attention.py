"""Attention: ``scaled_dot_product_attention`` and the multi-head attention forward of ``nn.MultiheadAttention``."""

from __future__ import annotations

import math
import warnings

from genesis import amp, dtypes
from genesis import ops as T
from genesis.nn.functional.dropout import dropout
from genesis.nn.functional.linear import linear
from genesis.ops.fused import fused_attention
from genesis.ops.reduce import safe_softmax
from genesis.tensor import Tensor, arange, zeros


def _causal_mask(L: int, S: int, like: Tensor) -> Tensor:
    """Bool (L, S) mask, True where query i may attend key j <= i (top-left aligned, as torch's is_causal)."""
    rows = arange(L, device=like.device).unsqueeze(1)
    cols = arange(S, device=like.device).unsqueeze(0)
    return cols <= rows


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q k^T * scale + mask) v`` over (..., L, E) queries and (..., S, E) keys / (..., S, Ev) values.

    Args:
        attn_mask: bool (True = may attend), or float32 or the query's dtype (added to the scores), broadcastable
            to (..., L, S).
        dropout_p: dropout on the attention weights (use 0 in evaluation).
        is_causal: apply a top-left aligned causal mask (combined with ``attn_mask`` when both are given, as
            torch's CPU implementation does).
        scale: defaults to ``1 / sqrt(E)``.
        enable_gqa: keys/values may have fewer heads (dim -3) than queries; each is shared by
            ``Hq / Hkv`` consecutive query heads.
    """
    # A float mask is cast with the rest, as torch's autocast casts every floating argument (finfo(float32).min
    # becomes -inf in bfloat16).
    query, key, value, attn_mask = amp.autocast_args("scaled_dot_product_attention", query, key, value, attn_mask)
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise RuntimeError(f"scaled_dot_product_attention: Expected query, key, and value to all be at least 2 "
                           f"dimensional, but got query.dim: {query.ndim} key.dim: {key.ndim} and value.dim: "
                           f"{value.ndim} instead.")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: query and key must have the same embedding size, got "
                           f"{query.shape[-1]} and {key.shape[-1]}")
    if attn_mask is not None and not (attn_mask.dtype is dtypes.bool_ or attn_mask.dtype is dtypes.float32
                                      or attn_mask.dtype is query.dtype):
        raise RuntimeError(f"scaled_dot_product_attention: Expected attn_mask dtype to be bool or float or to match "
                           f"query dtype, but got attn_mask.dtype: {attn_mask.dtype.name} and query.dtype: "
                           f"{query.dtype.name}")
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    fused = fused_attention(query, key, value, attn_mask, dropout_p, is_causal, scale_factor, enable_gqa)
    if fused is not None:
        return fused
    if query.device.type == "cpu" and query.dtype in (dtypes.bfloat16, dtypes.float16):
        # As torch's CPU kernel: half-precision attention accumulates in float32 and rounds once at the end.
        mask = attn_mask.float() if attn_mask is not None and attn_mask.dtype.is_floating_point else attn_mask
        with amp.autocast("cpu", enabled=False):
            out = scaled_dot_product_attention(query.float(), key.float(), value.float(), mask, dropout_p, is_causal,
                                               scale_factor, enable_gqa)
        return out.to(query.dtype)
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        hq, hk = query.shape[-3], key.shape[-3]
        if hq % hk or value.shape[-3] != hk:
            raise RuntimeError(f"scaled_dot_product_attention: number of query heads {hq} must be a multiple of the "
                               f"key/value heads {hk}")
        key = T.repeat_interleave(key, hq // hk, dim=-3)
        value = T.repeat_interleave(value, hq // hk, dim=-3)
    # q and k each scaled by sqrt(|scale|) before the product, as torch's composite (its values to the last bit).
    root = math.sqrt(abs(scale_factor))
    scores = T.matmul(query * (-root if scale_factor < 0 else root), key.transpose(-2, -1) * root)  # (..., L, S)
    if is_causal:
        scores = T.masked_fill(scores, ~_causal_mask(L, S, query), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype is dtypes.bool_:
            scores = T.masked_fill(scores, ~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
        weights = safe_softmax(scores, -1)
    else:
        weights = T.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return T.matmul(weights, value)


def _in_projection(q: Tensor, k: Tensor, v: Tensor, w: Tensor, b: Tensor | None, e: int) -> tuple:
    """(q, k, v) projected, and for self-attention the packed (L, N, 3E) projection they are views of (else
    None)."""
    if q is k and k is v:
        packed = linear(q, w, b)
        return (*packed.unflatten(-1, (3, e)).unbind(-2), packed)
    bq = bk = bv = None
    if b is not None:
        bq, bk, bv = b[:e], b[e:2 * e], b[2 * e:]
    return linear(q, w[:e], bq), linear(k, w[e:2 * e], bk), linear(v, w[2 * e:], bv), None


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
                                 in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
                                 bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float,
                                 out_proj_weight: Tensor, out_proj_bias: Tensor | None, training: bool = True,
                                 key_padding_mask: Tensor | None = None, need_weights: bool = True,
                                 attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
                                 q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
                                 v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
                                 static_v: Tensor | None = None, average_attn_weights: bool = True,
                                 is_causal: bool = False) -> tuple:
    """Multi-head attention on sequence-first input (L, N, E) or unbatched (L, E); torch's argument order.

    Masks: ``key_padding_mask`` (N, S) and ``attn_mask`` (L, S) or (N * H, L, S); bool True means *masked out*
    (torch's nn.MultiheadAttention convention, the opposite of scaled_dot_product_attention's), float masks are
    added. Returns (output, weights) with weights averaged over heads if ``average_attn_weights``, or None.
    The projections are ``in_proj_weight`` packed (3 * E, E), or ``q/k/v_proj_weight`` with
    ``use_separate_proj_weight``; ``static_k``/``static_v`` are not supported.
    """
    unbatched = not _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if unbatched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    _check_mask_dtype(key_padding_mask, "key_padding_mask", attn_mask)
    if is_causal and attn_mask is None:
        raise RuntimeError("multi_head_attention_forward: Need attn_mask if specifying the is_causal hint. You may "
                           "use the Transformer module method `generate_square_subsequent_mask` to create this mask.")
    _check_mask_dtype(attn_mask, "attn_mask", None)
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    if embed_dim % num_heads:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight and tuple(key.shape[:2]) != tuple(value.shape[:2]):
        raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                             f"{value.shape[:2]}")
    if not use_separate_proj_weight and tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k and static_v are not supported")
    if attn_mask is not None:
        expected = (tgt_len, key.shape[0]) if attn_mask.ndim == 2 else (bsz * num_heads, tgt_len, key.shape[0])
        if tuple(attn_mask.shape) != expected:
            raise RuntimeError(f"The shape of the {attn_mask.ndim}D attn_mask is {attn_mask.shape}, but should be "
                               f"{expected}.")
    if (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k is set but bias_v is None" if bias_v is None else
                             "bias_v is set but bias_k is None")
    head_dim = embed_dim // num_heads
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v, packed = _in_projection(query, key, value, in_proj_weight, in_proj_bias, embed_dim)
    else:
        packed = None
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = (in_proj_bias[:embed_dim], in_proj_bias[embed_dim:2 * embed_dim],
                          in_proj_bias[2 * embed_dim:])
        q, k, v = linear(query, q_proj_weight, bq), linear(key, k_proj_weight, bk), linear(value, v_proj_weight, bv)
    if bias_k is not None and bias_v is not None:
        k = T.cat([k, bias_k.expand(1, bsz, embed_dim)], 0)
        v = T.cat([v, bias_v.expand(1, bsz, embed_dim)], 0)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    # (L, N, E) -> (N, H, L, head_dim), each contiguous: then the products walk the (N, H) batch with one stride, in
    # the forward and the backward, where these views of the projection would be copied by every product.
    # Self-attention copies its packed projection once, as torch.
    if packed is not None and bias_k is None:
        q, k, v = packed.reshape(tgt_len, bsz, 3, num_heads, head_dim).permute(2, 1, 3, 0, 4).contiguous().unbind(0)
    else:
        q, k, v = (t.reshape(t.shape[0], bsz, num_heads, head_dim).permute(1, 2, 0, 3).contiguous()
                   for t in (q, k, v))
    if add_zero_attn:
        zero_row = zeros((bsz, num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = T.cat([k, zero_row], 2), T.cat([v, zero_row], 2)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[2]
    if key_padding_mask is not None:
        for dim, size in enumerate((bsz, src_len)):
            if key_padding_mask.shape[dim] != size:
                raise AssertionError(f"Expected key_padded_mask.shape[{dim}] to be {size}, but got "
                                     f"{key_padding_mask.shape[dim]}")
    if not need_weights:
        # As torch: scaled_dot_product_attention's fused kernel where one applies (torch's own on the CPU), the
        # masks merged into one additive mask, or only the causal hint when there is no padding mask; else the
        # products below, which compute the same as its composite with fewer ops.
        causal = is_causal and key_padding_mask is None
        mask = None if causal else _merged_mask(attn_mask, key_padding_mask, bsz, num_heads, src_len, q.dtype)
        out = fused_attention(*amp.autocast_args("scaled_dot_product_attention", q, k, v, mask),
                              dropout_p if training else 0.0, causal, 1.0 / math.sqrt(head_dim), False)
        if out is not None:
            out = linear(out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, embed_dim), out_proj_weight, out_proj_bias)
            return (out.squeeze(1) if unbatched else out), None
    scores = T.matmul(q * (1.0 / math.sqrt(head_dim)), k.transpose(-2, -1))  # (N, H, L, S); q scaled, as torch
    if attn_mask is not None:
        if attn_mask.ndim == 3:
            attn_mask = attn_mask.reshape(bsz, num_heads, tgt_len, src_len)
        scores = _apply_mask(scores, attn_mask)
    if key_padding_mask is not None:
        scores = _apply_mask(scores, key_padding_mask.reshape(bsz, 1, 1, src_len))
    # Without the weights torch runs scaled_dot_product_attention, whose safe softmax gives a query that may attend
    # no key zero attention (the output is then out_proj's bias); the weights it returns come from a plain softmax.
    masked = attn_mask is not None or key_padding_mask is not None
    weights = safe_softmax(scores, -1) if masked and not need_weights else T.softmax(scores, -1)
    if dropout_p > 0.0 and training:
        weights = dropout(weights, dropout_p, True)
    out = T.matmul(weights, v)  # (N, H, L, head_dim)
    out = out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    if unbatched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = weights.mean(1)
    if unbatched:
        weights = weights.squeeze(0)
    return out, weights


def _mha_shape_check(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None,
                     attn_mask: Tensor | None, num_heads: int) -> bool:
    """Whether the input of multi-head attention is batched; AssertionError for dims that do not go together, in
    torch's words."""
    if query.ndim not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D query "
                             "tensor")
    batched = query.ndim == 3
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {query.ndim}-D but found "
                             f"{key.ndim}-D and {value.ndim}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or {query.ndim - 1}-D "
                             f"but found {key_padding_mask.ndim}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                                 f"{attn_mask.ndim}-D tensor instead")
        expected = (num_heads, query.shape[0], key.shape[0])
        if not batched and attn_mask.ndim == 3 and tuple(attn_mask.shape) != expected:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
    return batched


def _check_mask_dtype(mask: Tensor | None, name: str, other: Tensor | None) -> None:
    """A mask is bool or floating (AssertionError otherwise); a key padding mask of another dtype than the
    attention mask is deprecated (a warning), as torch's ``_canonical_mask``."""
    if mask is None:
        return
    if mask.dtype is not dtypes.bool_ and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if other is not None and other.dtype is not mask.dtype:
        warnings.warn(f"Support for mismatched {name} and attn_mask is deprecated. Use same type for both instead.",
                      stacklevel=3)


def _merged_mask(attn_mask: Tensor | None, key_padding_mask: Tensor | None, bsz: int, num_heads: int,
                 src_len: int, dtype: dtypes.dtype) -> Tensor | None:
    """``attn_mask`` and ``key_padding_mask`` (bool True = masked out) as one additive mask broadcastable to
    (N, H, L, S) in ``dtype``, as torch merges them for scaled_dot_product_attention; None without either."""
    mask = None
    if attn_mask is not None:
        mask = _additive(attn_mask, dtype)
        mask = mask.reshape(bsz, num_heads, -1, src_len) if mask.ndim == 3 else mask
    if key_padding_mask is not None:
        padding = _additive(key_padding_mask, dtype).reshape(bsz, 1, 1, src_len)
        mask = padding if mask is None else mask + padding
    return mask


def _additive(mask: Tensor, dtype: dtypes.dtype) -> Tensor:
    """A bool mask (True = masked out) as 0 / -inf, a float one in ``dtype``."""
    if mask.dtype is dtypes.bool_:
        return T.masked_fill(zeros(mask.shape, dtype=dtype, device=mask.device), mask, float("-inf"))
    return mask.to(dtype)


def _apply_mask(scores: Tensor, mask: Tensor) -> Tensor:
    if mask.dtype is dtypes.bool_:
        return T.masked_fill(scores, mask, float("-inf"))
    return scores + mask.to(scores.dtype)


def _pad_last(mask: Tensor) -> Tensor:
    """Append one column (not masked) to a mask's last dim."""
    shape = list(mask.shape)
    shape[-1] = 1
    return T.cat([mask, zeros(shape, dtype=mask.dtype, device=mask.device)], -1)
