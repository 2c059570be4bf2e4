"""Qwen2 / Qwen2.5 and Qwen3 (dense) decoder-only language models, with Hugging Face parameter names.

Reads top-down: the configuration, then the blocks in dependency order (rotary angles, attention, MLP, decoder
layer, the model body, the causal-LM head), then loading and saving Hugging Face directories.

The two families differ in three places only: Qwen2 has biases on the q/k/v projections; Qwen3 has none, normalizes
queries and keys per head with an RMSNorm before the rotation, and sets ``head_dim`` explicitly.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable

import genesis
from genesis import nn
from genesis.models.checkpoint import iter_weights, read_index, save_checkpoint
from genesis.models.generation import KVCache, generate
from genesis.nn import functional as F
from genesis.safetensors_io import iter_tensors, write_text  # noqa: F401 - iter_tensors: kept public here
from genesis.tensor import Tensor

IGNORE_INDEX = -100  # label value excluded from the loss, as in transformers


# ---------------------------------------------------------------------------------------------------- configuration

@dataclass
class QwenConfig:
    """Hyperparameters of a Qwen model; field names follow transformers', defaults are Qwen2.5-0.5B's shape.

    ``attention_bias`` puts biases on the q/k/v projections (Qwen2); ``qk_norm`` normalizes queries and keys per
    head (Qwen3). ``head_dim`` defaults to ``hidden_size // num_attention_heads``.
    """

    model_type: str = "qwen2"
    vocab_size: int = 151936
    hidden_size: int = 896
    intermediate_size: int = 4864
    num_hidden_layers: int = 24
    num_attention_heads: int = 14
    num_key_value_heads: int = 2
    head_dim: int | None = None
    max_position_embeddings: int = 32768
    rope_theta: float = 1000000.0
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = True
    attention_bias: bool = True
    qk_norm: bool = False
    initializer_range: float = 0.02
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None
    pad_token_id: int | None = None

    def __post_init__(self) -> None:
        check_field_types(asdict(self), type(self).__name__)
        if self.model_type not in MODEL_TYPES:
            raise ValueError(f"QwenConfig: unsupported model_type {self.model_type!r} (supported: "
                             f"{', '.join(MODEL_TYPES)})")
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                     "num_key_value_heads", "max_position_embeddings"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"QwenConfig: {name} must be a positive int, got {value!r}")
        if self.head_dim is None:
            if self.hidden_size % self.num_attention_heads:
                raise ValueError(f"QwenConfig: hidden_size {self.hidden_size} is not divisible by "
                                 f"num_attention_heads {self.num_attention_heads}")
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.head_dim <= 0 or self.head_dim % 2:
            raise ValueError(f"QwenConfig: head_dim must be a positive even number (rotary pairs), got {self.head_dim}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"QwenConfig: num_attention_heads {self.num_attention_heads} is not a multiple of "
                             f"num_key_value_heads {self.num_key_value_heads}")

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "config") -> QwenConfig:
        """A config from the contents of a Hugging Face ``config.json``; ``source`` names the file in errors.

        Raises:
            ValueError: an unsupported architecture or option (sliding-window layers, rope scaling, an activation
                other than SiLU, mixture-of-experts), or a missing required key.
        """
        check_field_types(d, source)
        model_type = d.get("model_type")
        if model_type not in MODEL_TYPES:
            raise ValueError(f"{source}: unsupported architecture model_type={model_type!r} (supported: "
                             f"{', '.join(MODEL_TYPES)})")
        for key in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"):
            if key not in d:
                raise ValueError(f"{source}: missing required key {key!r}")
        if d.get("use_sliding_window") or any(t != "full_attention" for t in d.get("layer_types") or ()):
            raise ValueError(f"{source}: sliding-window attention layers are not supported "
                             f"(use_sliding_window={d.get('use_sliding_window')}, layer_types={d.get('layer_types')})")
        if d.get("hidden_act", "silu") != "silu":
            raise ValueError(f"{source}: unsupported hidden_act {d['hidden_act']!r} (only 'silu')")
        rope = d.get("rope_parameters") or {}
        scaling = d.get("rope_scaling") or rope
        check_field_types({"rope_theta": rope.get("rope_theta", 10000.0)}, f"{source}: rope_parameters")
        rope_type = scaling.get("rope_type", scaling.get("type", "default"))
        if rope_type != "default":
            raise ValueError(f"{source}: unsupported rope scaling type {rope_type!r} (only the default rotary "
                             "embedding is implemented)")
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in known}
        kwargs["rope_theta"] = float(d.get("rope_theta", rope.get("rope_theta", 10000.0)))
        kwargs.setdefault("num_key_value_heads", d["num_attention_heads"])
        kwargs.setdefault("tie_word_embeddings", False)
        if model_type == "qwen2":
            kwargs["attention_bias"] = True
            kwargs["qk_norm"] = False
            return Qwen2Config(**kwargs)
        kwargs.setdefault("attention_bias", False)
        kwargs.setdefault("head_dim", 128)
        kwargs["qk_norm"] = True
        return Qwen3Config(**kwargs)

    @classmethod
    def from_json_file(cls, path: str | Path) -> QwenConfig:
        """Read a Hugging Face ``config.json`` (errors name the file)."""
        return cls.from_dict(_read_config(Path(path)), str(path))

    def to_dict(self, dtype: genesis.dtype | None = None) -> dict[str, Any]:
        """The ``config.json`` contents transformers reads (4.x and 5.x spellings of the rotary settings)."""
        d = asdict(self)
        d.pop("qk_norm")
        if self.model_type == "qwen2":
            d.pop("attention_bias")
        d["architectures"] = [MODEL_TYPES[self.model_type]]
        d["hidden_act"] = "silu"
        d["rope_scaling"] = None
        d["rope_parameters"] = {"rope_type": "default", "rope_theta": self.rope_theta}
        d["use_sliding_window"] = False
        d["sliding_window"] = None
        d["max_window_layers"] = self.num_hidden_layers
        d["layer_types"] = ["full_attention"] * self.num_hidden_layers
        d["attention_dropout"] = 0.0
        d["use_cache"] = True
        if dtype is not None:
            d["torch_dtype"] = d["dtype"] = dtype.name
        return d


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is not a size


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# What each config.json field read here must hold: a test and its words for the error. Values of the wrong type
# would otherwise load silently (the string "false" is truthy) or fail later, far from the file.
_FIELD_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    **dict.fromkeys(("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                     "num_key_value_heads", "max_position_embeddings"), (_is_int, "an int")),
    **dict.fromkeys(("head_dim", "bos_token_id", "pad_token_id"),
                    (lambda v: v is None or _is_int(v), "an int or null")),
    "eos_token_id": (lambda v: v is None or _is_int(v) or (isinstance(v, list) and all(map(_is_int, v))),
                     "an int, a list of ints or null"),
    **dict.fromkeys(("rope_theta", "rms_norm_eps", "initializer_range"), (_is_number, "a number")),
    **dict.fromkeys(("tie_word_embeddings", "attention_bias", "qk_norm"), (lambda v: isinstance(v, bool),
                                                                           "a bool (true or false)")),
    **dict.fromkeys(("model_type", "hidden_act"), (lambda v: isinstance(v, str), "a string")),
    **dict.fromkeys(("rope_scaling", "rope_parameters"), (lambda v: v is None or isinstance(v, dict),
                                                          "an object or null")),
    "use_sliding_window": (lambda v: v is None or isinstance(v, bool), "a bool or null"),
    "layer_types": (lambda v: v is None or isinstance(v, list), "a list or null"),
}


def check_field_types(values: dict[str, Any], source: str) -> None:
    """Check the type of every known field in ``values`` (a ``config.json``'s contents).

    Raises:
        ValueError: a field holds the wrong type; the message names ``source`` and the field.
    """
    for name, (valid, kind) in _FIELD_TYPES.items():
        if name in values and not valid(values[name]):
            raise ValueError(f"{source}: field {name!r} must be {kind}, got {values[name]!r}")


@dataclass
class Qwen2Config(QwenConfig):
    """Qwen2 / Qwen2.5: biases on q/k/v."""

    model_type: str = "qwen2"


@dataclass
class Qwen3Config(QwenConfig):
    """Qwen3 dense: per-head q/k RMSNorm, no q/k/v biases, explicit head_dim."""

    model_type: str = "qwen3"
    head_dim: int | None = 128
    attention_bias: bool = False
    qk_norm: bool = True


MODEL_TYPES = {"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}


@dataclass
class CausalLMOutput:
    """What a causal LM returns: ``logits`` (B, T, vocab) and, when labels were given, the mean ``loss``."""

    logits: Tensor
    loss: Tensor | None = None


# ---------------------------------------------------------------------------------------------------- blocks

def rotary_inv_freq(head_dim: int, theta: float, device: Any = None) -> Tensor:
    """The rotary frequencies ``theta^(-2i/head_dim)``, (head_dim / 2,) float32, computed as transformers does."""
    return 1.0 / (theta ** (genesis.arange(0, head_dim, 2, dtype=genesis.float32, device=device) / head_dim))


def rotary_cos_sin(position_ids: Tensor, inv_freq: Tensor) -> tuple[Tensor, Tensor]:
    """cos and sin of the rotary angles ``pos * inv_freq``, each (B, T, head_dim), in float32.

    Computed in float32 from the positions as transformers does, so the angles match it bit for bit; each angle is
    repeated for both halves of the head dim (the ``rotate_half`` layout of ``F.rope``).
    """
    freqs = position_ids.float().unsqueeze(-1) * inv_freq  # (B, T, head_dim / 2)
    angles = genesis.cat([freqs, freqs], -1)  # (B, T, head_dim)
    return angles.cos(), angles.sin()


class QwenAttention(nn.Module):
    """Grouped-query self-attention with rotary positions and an optional KV cache."""

    def __init__(self, config: QwenConfig, layer_idx: int, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        kw = {"device": device, "dtype": dtype}
        hidden, q_size, kv_size = config.hidden_size, self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        self.q_proj = nn.Linear(hidden, q_size, bias=config.attention_bias, **kw)
        self.k_proj = nn.Linear(hidden, kv_size, bias=config.attention_bias, **kw)
        self.v_proj = nn.Linear(hidden, kv_size, bias=config.attention_bias, **kw)
        self.o_proj = nn.Linear(q_size, hidden, bias=False, **kw)
        if config.qk_norm:
            self.q_norm = nn.RMSNorm(self.head_dim, eps=config.rms_norm_eps, **kw)
            self.k_norm = nn.RMSNorm(self.head_dim, eps=config.rms_norm_eps, **kw)
        else:
            self.q_norm = self.k_norm = None

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Tensor | None,
                cache: KVCache | None = None, decode_length: Tensor | None = None) -> Tensor:
        """Attention output (B, T, hidden).

        ``decode_length`` (a 1-element device tensor, the cached length after this token) selects the decoding
        path: one token attends the cache through ``F.decode_attention``, and ``mask`` is then a (B, S) key mask
        (1 = attend) or None.
        """
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim)  # (B, T, n_heads, head_dim)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim)  # (B, T, n_kv_heads, head_dim)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        if decode_length is not None:
            keys, values = cache.keys[self.layer_idx], cache.values[self.layer_idx]
            cache.check_room(1)
            q = F.rope_kv_cache_write_(q, k, v, cos, sin, keys, values, cache.position)  # (B, n_heads, 1, hd)
            out = F.decode_attention(q, keys, values, decode_length, mask)  # (B, n_heads, 1, head_dim)
            return self.o_proj(out.reshape(B, 1, self.num_heads * self.head_dim))
        q = F.rope(q.transpose(1, 2), cos, sin)  # (B, n_heads, T, head_dim)
        k = F.rope(k.transpose(1, 2), cos, sin)  # (B, n_kv_heads, T, head_dim)
        v = v.transpose(1, 2)  # (B, n_kv_heads, T, head_dim)
        if cache is not None:
            k, v = cache.update(self.layer_idx, k, v)  # (B, n_kv_heads, S, head_dim), S = cached + T
        causal = mask is None and T > 1
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                             enable_gqa=self.num_kv_heads != self.num_heads)  # (B, n_heads, T, hd)
        out = out.transpose(1, 2).reshape(B, T, self.num_heads * self.head_dim)  # (B, T, n_heads * head_dim)
        return self.o_proj(out)


class QwenMLP(nn.Module):
    """SwiGLU feed-forward: ``down(silu(gate(x)) * up(x))``."""

    def __init__(self, config: QwenConfig, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False, **kw)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False, **kw)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False, **kw)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.swiglu(self.gate_proj(x), self.up_proj(x)))


class QwenDecoderLayer(nn.Module):
    """Pre-norm transformer block: ``x + attn(norm(x))``, then ``x + mlp(norm(x))``."""

    def __init__(self, config: QwenConfig, layer_idx: int, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.input_layernorm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps, **kw)
        self.self_attn = QwenAttention(config, layer_idx, **kw)
        self.post_attention_layernorm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps, **kw)
        self.mlp = QwenMLP(config, **kw)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Tensor | None,
                cache: KVCache | None = None, decode_length: Tensor | None = None) -> Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache, decode_length)
        return x + self.mlp(self.post_attention_layernorm(x))


def attention_mask_4d(attention_mask: Tensor, query_len: int, past_len: int) -> Tensor:
    """Bool (B, 1, T, S) mask, True where a query may attend a key: causal and not padding.

    ``attention_mask`` is (B, S) with 1 for real tokens and 0 for padding, over the cached keys and the T new ones
    (S = past_len + T). A padding query is still allowed to see itself, so no row is empty (its output is unused).
    """
    S = attention_mask.shape[1]
    device = attention_mask.device
    q_pos = genesis.arange(past_len, past_len + query_len, device=device).view(query_len, 1)  # (T, 1)
    k_pos = genesis.arange(S, device=device).view(1, S)  # (1, S)
    causal = k_pos <= q_pos  # (T, S)
    valid = attention_mask.bool().view(-1, 1, 1, S)  # (B, 1, 1, S)
    return (causal & valid) | (k_pos == q_pos)  # (B, 1, T, S)


class QwenModel(nn.Module):
    """The decoder body: token embedding, the layers, the final norm."""

    def __init__(self, config: QwenConfig, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, **kw)
        self.layers = nn.ModuleList([QwenDecoderLayer(config, i, **kw) for i in range(config.num_hidden_layers)])
        self.norm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps, **kw)
        # A plain attribute, not a buffer: it must stay float32 when the model is cast to half precision.
        self._inv_freq = rotary_inv_freq(config.head_dim, config.rope_theta, device)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, position_ids: Tensor | None = None,
                cache: KVCache | None = None) -> Tensor:
        B, T = input_ids.shape
        past = cache.length if cache is not None else 0
        if past + T > self.config.max_position_embeddings:
            raise ValueError(f"Qwen: sequence length {past + T} exceeds max_position_embeddings "
                             f"{self.config.max_position_embeddings}")
        if position_ids is None:
            position_ids = genesis.arange(past, past + T, device=input_ids.device).view(1, T).expand(B, T)
        if self._inv_freq.device != input_ids.device:
            self._inv_freq = rotary_inv_freq(self.config.head_dim, self.config.rope_theta, input_ids.device)
        cos, sin = rotary_cos_sin(position_ids, self._inv_freq)  # (B, T, head_dim)
        x = self.embed_tokens(input_ids)  # (B, T, hidden)
        # (B, 1, T, head_dim): broadcast over the heads of every layer's (B, heads, T, head_dim) queries and keys.
        cos, sin = cos.to(x.dtype).unsqueeze(1), sin.to(x.dtype).unsqueeze(1)
        mask = decode_length = None
        if cache is not None and T == 1 and not x.requires_grad:
            # Decoding one token: attend the cache with the decoding kernel; a (B, S) key mask is all it needs.
            decode_length = cache.position + 1
            # The decoding kernel reads an int8 key mask: cast once here rather than in each layer's call.
            mask = attention_mask.to(genesis.int8) if attention_mask is not None else None
        elif attention_mask is not None:
            mask = attention_mask_4d(attention_mask, T, past)
        elif cache is not None and past > 0 and T > 1:
            mask = attention_mask_4d(genesis.ones(B, past + T, dtype=genesis.int64, device=x.device), T, past)
        for layer in self.layers:
            x = layer(x, cos, sin, mask, cache, decode_length)
        if cache is not None:
            cache.advance(T)
        return self.norm(x)


class QwenForCausalLM(nn.Module):
    """A Qwen body with a language-modeling head; the API mirrors transformers' ``*ForCausalLM``.

    ``model(input_ids, attention_mask=None, labels=None)`` returns a :class:`CausalLMOutput`; ``generate`` returns
    the prompt followed by the new tokens; ``from_pretrained`` / ``save_pretrained`` read and write Hugging Face
    directories.
    """

    config_class: type[QwenConfig] = QwenConfig

    def __init__(self, config: QwenConfig, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.config = config
        self.generation_config: dict[str, Any] = {}
        self.model = QwenModel(config, device=device, dtype=dtype)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False, device=device, dtype=dtype)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self._init_weights()

    def _init_weights(self) -> None:
        """transformers' initialization: normal(0, initializer_range) for matrices, zero biases, unit norms."""
        std = self.config.initializer_range
        with genesis.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                elif name.endswith(".bias"):
                    p.zero_()
                else:
                    nn.init.normal_(p, 0.0, std)

    @property
    def device(self) -> genesis.device:
        return self.lm_head.weight.device

    @property
    def dtype(self) -> genesis.dtype:
        return self.lm_head.weight.dtype

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, labels: Tensor | None = None,
                position_ids: Tensor | None = None, cache: KVCache | None = None,
                logits_to_keep: int | Tensor = 0) -> CausalLMOutput:
        """Logits for every position (or the last ``logits_to_keep``), and the next-token loss if ``labels``.

        Args:
            input_ids: (B, T) int64 token ids.
            attention_mask: (B, S) with 1 for tokens and 0 for padding (S covers the cached tokens too).
            labels: (B, T) targets; position t is scored against labels[t + 1] as in transformers, and
                ``-100`` entries are ignored. The loss is the mean over the scored tokens, in float32.
            position_ids: (B, T) rotary positions; default ``arange`` after the cached tokens.
            cache: a :class:`KVCache` from ``new_cache`` to read from and append to.
            logits_to_keep: when > 0, compute logits only for the last that many positions; a 1-D int64 tensor
                keeps the positions it lists (as in transformers).
        """
        if input_ids.ndim != 2:
            raise ValueError(f"Qwen: input_ids must be (batch, seq), got shape {tuple(input_ids.shape)}")
        h = self.model(input_ids, attention_mask, position_ids, cache)  # (B, T, hidden)
        if isinstance(logits_to_keep, Tensor):
            h = h.index_select(1, logits_to_keep)  # positions given on the device
        elif logits_to_keep > 0:
            h = h[:, -logits_to_keep:]
        logits = self.lm_head(h)  # (B, T, vocab)
        loss = None
        if labels is not None:
            loss = causal_lm_loss(logits, labels)
        return CausalLMOutput(logits=logits, loss=loss)

    def new_cache(self, batch_size: int, max_length: int) -> KVCache:
        """A preallocated KV cache for ``batch_size`` sequences of up to ``max_length`` tokens."""
        if max_length > self.config.max_position_embeddings:
            raise ValueError(f"Qwen: a cache of {max_length} tokens exceeds max_position_embeddings "
                             f"{self.config.max_position_embeddings}")
        c = self.config
        return KVCache(c.num_hidden_layers, batch_size, c.num_key_value_heads, max_length, c.head_dim,
                       dtype=self.dtype, device=self.device)

    def generate(self, input_ids: Tensor, attention_mask: Tensor | None = None, **kwargs: Any) -> Tensor:
        """Prompt followed by new tokens, (B, T + new); see :func:`genesis.generation.generate` for the options.

        The EOS ids of ``generation_config.json`` / ``config.json`` stop generation unless ``eos_token_id`` is
        given.
        """
        if "eos_token_id" not in kwargs:
            eos = self.generation_config.get("eos_token_id", self.config.eos_token_id)
            kwargs["eos_token_id"] = eos
        if "pad_token_id" not in kwargs:
            kwargs["pad_token_id"] = self.generation_config.get("pad_token_id", self.config.pad_token_id)
        return generate(self, input_ids, attention_mask=attention_mask, **kwargs)

    # ------------------------------------------------------------------------------------------------ checkpoints
    @classmethod
    def from_pretrained(cls, path: str | Path, dtype: Any = None, device: Any = None) -> QwenForCausalLM:
        """Load a Hugging Face model directory (``config.json`` and safetensors weights, sharded or not, or
        PyTorch-format ``pytorch_model.bin`` weights and their shards, read without running pickled code).

        Every header is read and checked against the model (names, shapes) before any weight is, then tensors are
        streamed file by file, so host memory stays near one tensor beyond the model itself and an error never
        leaves a half-loaded model behind.

        Args:
            path: the directory.
            dtype: parameter dtype (default float32; ``"auto"`` takes the checkpoint's ``torch_dtype``).
            device: where the parameters live (default the CPU).

        Raises:
            FileNotFoundError / ValueError: missing or corrupt files (the message names the file), an unsupported
                architecture, or a checkpoint that does not fit the config.
        """
        directory = Path(path)
        config_path = directory / "config.json"
        raw = _read_config(config_path)
        config = QwenConfig.from_dict(raw, str(config_path))
        if not isinstance(config, cls.config_class):
            raise ValueError(f"{config_path}: model_type {config.model_type!r} is a "
                             f"{MODEL_TYPES[config.model_type]}, not a {cls.__name__}")
        if dtype == "auto":
            dtype = raw.get("dtype") or raw.get("torch_dtype") or "float32"
        dtype = genesis.dtypes.to_dtype(dtype) if dtype is not None else genesis.float32
        tensors = read_index(directory)
        model = cls(config, device=device, dtype=dtype)
        params = dict(model.state_dict(keep_vars=True))
        tied = config.tie_word_embeddings
        expected = {name for name in params if not (tied and name == "lm_head.weight")}
        tensors = {n: t for n, t in tensors.items() if not (tied and n == "lm_head.weight")}
        missing = sorted(expected - tensors.keys())
        unexpected = sorted(tensors.keys() - expected)
        if missing or unexpected:
            raise ValueError(f"{directory}: checkpoint does not match the config: missing {missing[:5]}"
                             f"{' ...' if len(missing) > 5 else ''}, unexpected {unexpected[:5]}"
                             f"{' ...' if len(unexpected) > 5 else ''}")
        for name, info in tensors.items():
            if tuple(params[name].shape) != info.shape:
                raise ValueError(f"{info.file}: tensor {name!r} has shape {list(info.shape)}, the config needs "
                                 f"{list(params[name].shape)}")
        with genesis.no_grad():
            for name, array in iter_weights(tensors):
                params[name].copy_(genesis.tensor(array, device=params[name].device))
        generation_path = directory / "generation_config.json"
        if generation_path.is_file():
            model.generation_config = _read_config(generation_path)
        model.eval()
        return model

    def save_pretrained(self, path: str | Path, max_shard_size: int | str = "5GB") -> None:
        """Write ``config.json`` and safetensors weights (sharded above ``max_shard_size``) that transformers loads.

        With tied embeddings ``lm_head.weight`` is left out, as transformers does. Every file is written atomically
        and the previous checkpoint in ``path`` stays loadable until the new one is complete.
        """
        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        arrays = {}
        for name, p in self.state_dict().items():
            if self.config.tie_word_embeddings and name == "lm_head.weight":
                continue
            arrays[name] = p.detach().cpu().numpy()
        save_checkpoint(arrays, directory, max_shard_size)
        write_text(directory / "config.json", json.dumps(self.config.to_dict(self.dtype), indent=2))
        if self.generation_config:
            write_text(directory / "generation_config.json", json.dumps(self.generation_config, indent=2))


def _read_config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    try:
        d = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(d, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return d


def causal_lm_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean next-token cross-entropy in float32: position t predicts labels[t + 1]; -100 labels are ignored.

    The labels are shifted (padded with -100 at the end) rather than the logits sliced, so the (B, T, vocab)
    logits are used in place instead of copied, as transformers does.
    """
    V = logits.shape[-1]
    targets = F.pad(labels, (0, 1), value=IGNORE_INDEX)[:, 1:]  # (B, T)
    return F.cross_entropy(logits.float().reshape(-1, V), targets.reshape(-1), ignore_index=IGNORE_INDEX)


class Qwen2ForCausalLM(QwenForCausalLM):
    """Qwen2 / Qwen2.5 causal LM (``model_type: qwen2``)."""

    config_class = Qwen2Config


class Qwen3ForCausalLM(QwenForCausalLM):
    """Qwen3 dense causal LM (``model_type: qwen3``)."""

    config_class = Qwen3Config
