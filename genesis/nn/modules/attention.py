"""Attention and transformer building blocks: MultiheadAttention, RotaryEmbedding, FeedForwardSwiGLU."""

from __future__ import annotations

from typing import Any

from genesis.nn import functional as F
from genesis.nn import init
from genesis.nn.modules.linear import Linear, NonDynamicallyQuantizableLinear
from genesis.nn.modules.module import Module
from genesis.nn.parameter import Parameter
from genesis.tensor import Tensor, empty


class MultiheadAttention(Module):
    """Multi-head attention (Vaswani et al., 2017) with torch's parameters, masks and return values.

    Parameters (torch's names, so state dicts are interchangeable): ``in_proj_weight`` (3E, E) xavier-uniform and
    ``in_proj_bias`` zeros — or ``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` when ``kdim``/``vdim``
    differ from ``embed_dim`` — and ``out_proj`` (a Linear with zero bias); optional ``bias_k``/``bias_v``.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights or None)``; inputs are (L, N, E),
    or (N, L, E) with ``batch_first=True``, or unbatched (L, E). Bool masks mark positions that may *not* attend.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        factory = {"device": device, "dtype": dtype}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        batched = query.ndim == 3
        if self.batch_first and batched:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias, self.training,
            key_padding_mask, need_weights, attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        return out, weights

    def merge_masks(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                    query: Tensor) -> tuple[Tensor | None, int | None]:
        """The mask type and the one mask of the given masks, as torch's: ``key_padding_mask`` (B, S) alone is type
        1; an ``attn_mask`` (S, S) or (B * num_heads, S, S) is expanded to (B, num_heads, S, S), type 2, and a
        padding mask is added to it (``or`` for bool masks). ``query`` is (B, S, E). (None, None) without masks."""
        mask_type, merged = None, None
        if key_padding_mask is not None:
            mask_type, merged = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.ndim == 3:
                merged = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                merged = attn_mask.view(1, 1, seq_len, seq_len).expand(batch_size, self.num_heads, -1, -1)
            if key_padding_mask is not None:
                merged = merged + key_padding_mask.view(batch_size, 1, 1, seq_len).expand(-1, self.num_heads, -1, -1)
        return merged, mask_type

    def extra_repr(self) -> str:
        return ""


class RotaryEmbedding(Module):
    """Rotary position embedding tables (Su et al., 2021) in HF Qwen2's layout.

    Holds non-persistent buffers ``cos_cached``/``sin_cached`` of shape (max_position_embeddings, dim), computed in
    float32 from ``inv_freq = theta^(-2i/dim)``. ``forward(x, position_ids)`` returns the (cos, sin) rows for the
    positions, in ``x``'s dtype, ready for ``F.rope``; ``rotate(x, position_ids)`` rotates ``x`` (B, H, T, dim).
    """

    def __init__(self, dim: int, max_position_embeddings: int = 2048, theta: float = 10000.0,
                 device: Any = None) -> None:
        super().__init__()
        self.dim = dim
        self.max_position_embeddings = max_position_embeddings
        self.theta = theta
        cos, sin = F.rope_tables(dim, max_position_embeddings, theta, device=device)
        self.register_buffer("cos_cached", cos, persistent=False)
        self.register_buffer("sin_cached", sin, persistent=False)

    def forward(self, x: Tensor, position_ids: Tensor | None = None) -> tuple[Tensor, Tensor]:
        if position_ids is None:
            seq_len = x.shape[-2]
            if seq_len > self.max_position_embeddings:
                raise RuntimeError(f"RotaryEmbedding: sequence length {seq_len} exceeds max_position_embeddings "
                                   f"{self.max_position_embeddings}")
            cos, sin = self.cos_cached[:seq_len], self.sin_cached[:seq_len]
        else:
            cos, sin = self.cos_cached[position_ids], self.sin_cached[position_ids]
        return cos.to(x.dtype), sin.to(x.dtype)

    def rotate(self, x: Tensor, position_ids: Tensor | None = None) -> Tensor:
        """Rotate ``x`` of shape (B, H, T, dim) by its positions (``arange(T)`` when not given)."""
        cos, sin = self.forward(x, position_ids)
        return F.rope(x, cos, sin)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, max_position_embeddings={self.max_position_embeddings}, theta={self.theta}"


class FeedForwardSwiGLU(Module):
    """The gated MLP of Llama/Qwen: ``down_proj(silu(gate_proj(x)) * up_proj(x))`` (HF parameter names)."""

    def __init__(self, hidden_size: int, intermediate_size: int, bias: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.gate_proj = Linear(hidden_size, intermediate_size, bias=bias, device=device, dtype=dtype)
        self.up_proj = Linear(hidden_size, intermediate_size, bias=bias, device=device, dtype=dtype)
        self.down_proj = Linear(intermediate_size, hidden_size, bias=bias, device=device, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.swiglu(self.gate_proj(x), self.up_proj(x)))
