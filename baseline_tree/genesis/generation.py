"""Text generation for causal language models: a preallocated KV cache, prefill then decode, sampling.

``generate`` follows transformers' ``generate``: it returns the prompt followed by the new tokens, pads finished
rows with ``pad_token_id``, takes left-padded batches with an ``attention_mask``, and applies the logits processors
in transformers' order (repetition penalty, then temperature, top-k, top-p, min-p). ``stream_generate`` is the same
loop as an iterator of new token ids, which chat front ends turn into text with ``Tokenizer.stream_decoder``.

A model plugs in by providing ``new_cache(batch_size, max_length)`` and
``forward(input_ids, attention_mask=, position_ids=, cache=, logits_to_keep=)`` returning ``.logits``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import genesis
import genesis.nn.functional as F
from genesis.tensor import Tensor


class KVCache:
    """Keys and values of every layer in buffers allocated once, (B, n_kv_heads, max_length, head_dim) each.

    ``update`` writes the new positions in place and returns views of everything cached so far, so no step
    allocates or copies the history; ``advance`` moves the write position after all layers have run. The write
    position lives twice: ``length`` on the host and ``position`` (a 1-element int64 tensor) on the device. Writes
    and the decoding kernels read the device copy, so a decoding step captured in a CUDA graph stays valid.
    """

    def __init__(self, num_layers: int, batch_size: int, num_kv_heads: int, max_length: int, head_dim: int,
                 dtype: Any = None, device: Any = None) -> None:
        shape = (batch_size, num_kv_heads, max_length, head_dim)
        self.keys = [genesis.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.values = [genesis.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.max_length = max_length
        self.length = 0
        self.position = genesis.zeros(1, dtype=genesis.int64, device=device)

    def check_room(self, n: int) -> None:
        """Raise if ``n`` more positions do not fit after the cached ones."""
        if self.length + n > self.max_length:
            raise RuntimeError(f"KVCache: {self.length + n} positions exceed the cache size {self.max_length}")

    def write(self, layer: int, k: Tensor, v: Tensor) -> None:
        """Store k, v (B, n_kv_heads, T, head_dim) at the cached length."""
        self.check_room(k.shape[2])
        F.kv_cache_write_(self.keys[layer], k, self.position)
        F.kv_cache_write_(self.values[layer], v, self.position)

    def update(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store k, v (B, n_kv_heads, T, head_dim) after the cached positions; return (B, n_kv_heads, S, head_dim)."""
        self.write(layer, k, v)
        end = self.length + k.shape[2]
        return self.keys[layer][:, :, :end], self.values[layer][:, :, :end]

    def advance(self, n: int) -> None:
        self.length += n
        self.position.add_(n)

    def reset(self) -> None:
        """Forget the cached positions (the buffers are kept and overwritten by the next prompt)."""
        self.length = 0
        self.position.zero_()


# ---------------------------------------------------------------------------------------------------- logits

def apply_repetition_penalty(logits: Tensor, seen: Tensor, penalty: float) -> Tensor:
    """CTRL's penalty (Keskar et al., 2019): divide positive, multiply negative logits of tokens already in ``seen``.

    Args:
        logits: (B, V) float scores.
        seen: (B, S) int64 ids of the tokens so far (prompt and generated, as transformers does).
        penalty: > 1 discourages repetition, 1 disables it.
    """
    score = logits.gather(1, seen)  # (B, S)
    score = genesis.where(score < 0, score * penalty, score / penalty)
    return logits.scatter(1, seen, score)


def warp_logits(logits: Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                min_p: float = 0.0) -> Tensor:
    """Scale and filter (B, V) logits for sampling; removed tokens get ``-inf``.

    Temperature divides the logits; top-k keeps the k largest; top-p keeps the most likely tokens up to a total
    probability of ``top_p`` (Holtzman et al., 2019; the token crossing the threshold stays); min-p keeps tokens
    with at least ``min_p`` times the top token's probability (Nguyen et al., 2024). At least one token stays.
    """
    if temperature != 1.0:
        logits = logits / temperature
    vocab = logits.shape[-1]
    if 0 < top_k < vocab:
        kth = genesis.topk(logits, top_k, dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, -math.inf)
    if top_p < 1.0:
        sorted_logits, order = genesis.sort(logits, dim=-1, descending=True)  # (B, V) each
        probs = genesis.softmax(sorted_logits, -1)
        before = genesis.cumsum(probs, -1) - probs  # probability of the strictly more likely tokens
        drop_sorted = before > top_p
        drop = drop_sorted.scatter(1, order, drop_sorted)  # back to vocabulary order
        logits = logits.masked_fill(drop, -math.inf)
    if min_p > 0.0:
        probs = genesis.softmax(logits, -1)
        threshold = probs.amax(-1, keepdim=True) * min_p  # (B, 1)
        logits = logits.masked_fill(probs < threshold, -math.inf)
    return logits


def sample_from_logits(logits: Tensor, generator: genesis.Generator | None = None) -> Tensor:
    """One id per row of (B, V) logits, drawn from their softmax.

    Uses the exponential-race form of the Gumbel-max trick: ``argmax(p / E)`` with ``E ~ Exp(1)`` picks index i with
    probability p_i, with no host synchronization and no sort.
    """
    probs = genesis.softmax(logits.float(), -1)
    u = genesis.rand(probs.shape, generator=generator, device=probs.device)
    race = -genesis.log1p(-u)  # Exp(1) samples, > 0 except u == 0
    return (probs / race.clamp(min=1e-20)).argmax(-1)


# ---------------------------------------------------------------------------------------------------- generation

@dataclass
class GenerationOptions:
    """The checked generation parameters (see :func:`generate`)."""

    max_new_tokens: int = 20
    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    eos_token_id: int | Sequence[int] | None = None
    pad_token_id: int | None = None
    stop_strings: Sequence[str] | None = None
    tokenizer: Any = None
    seed: int | None = None
    generator: genesis.Generator | None = None
    cuda_graph: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 0:
            raise ValueError(f"generate: max_new_tokens must be a non-negative int, got {self.max_new_tokens!r}")
        if self.do_sample and not (self.temperature > 0 and math.isfinite(self.temperature)):
            raise ValueError(f"generate: temperature must be a positive number when sampling, got "
                             f"{self.temperature!r}")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"generate: top_k must be a non-negative int, got {self.top_k!r}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"generate: top_p must be in (0, 1], got {self.top_p!r}")
        if not 0.0 <= self.min_p <= 1.0:
            raise ValueError(f"generate: min_p must be in [0, 1], got {self.min_p!r}")
        if not self.repetition_penalty > 0:
            raise ValueError(f"generate: repetition_penalty must be positive, got {self.repetition_penalty!r}")
        if self.stop_strings:
            if isinstance(self.stop_strings, str):
                self.stop_strings = [self.stop_strings]
            if self.tokenizer is None:
                raise ValueError("generate: stop_strings need tokenizer= to decode the generated tokens")
            if any(not isinstance(s, str) or not s for s in self.stop_strings):
                raise ValueError(f"generate: stop_strings must be non-empty strings, got {self.stop_strings!r}")

    @property
    def eos_ids(self) -> list[int]:
        if self.eos_token_id is None:
            return []
        return [self.eos_token_id] if isinstance(self.eos_token_id, int) else list(self.eos_token_id)


def _check_inputs(model: Any, input_ids: Tensor, attention_mask: Tensor | None) -> Tensor:
    if not isinstance(input_ids, Tensor) or input_ids.ndim != 2 or input_ids.dtype.is_floating_point:
        raise ValueError(f"generate: input_ids must be a (batch, seq) integer tensor, got "
                         f"{getattr(input_ids, 'shape', type(input_ids).__name__)}")
    B, T = input_ids.shape
    if T == 0:
        raise ValueError("generate: the prompt is empty")
    max_positions = model.config.max_position_embeddings
    if T > max_positions:
        raise ValueError(f"generate: the prompt has {T} tokens, more than the model's max_position_embeddings "
                         f"{max_positions}")
    if attention_mask is None:
        return genesis.ones(B, T, dtype=genesis.int64, device=input_ids.device)
    if tuple(attention_mask.shape) != (B, T):
        raise ValueError(f"generate: attention_mask shape {tuple(attention_mask.shape)} does not match input_ids "
                         f"{(B, T)}")
    return attention_mask.to(genesis.int64)


_GRAPH_BUCKET = 256  # cache sizes of captured decoders are rounded up to this, so later calls reuse them
_PROMPT_BUCKET = 64  # prompt lengths of captured prefills are rounded up to this
_MAX_GRAPHS = 4  # captured decoders kept per model (each holds a KV cache and a memory pool)
_MAX_PREFILLS = 8  # captured prefill lengths kept per decoder


class _Prefill:
    """One prompt length bucket's captured prefill: static inputs, the graph, and the logits it writes."""

    def __init__(self, batch_size: int, length: int, padded: bool, device: Any) -> None:
        self.ids = genesis.zeros(batch_size, length, dtype=genesis.int64, device=device)
        self.positions = genesis.zeros(batch_size, length, dtype=genesis.int64, device=device)
        self.mask = genesis.zeros(batch_size, length, dtype=genesis.int64, device=device) if padded else None
        self.last = genesis.zeros(1, dtype=genesis.int64, device=device)  # where the last prompt token sits
        self.graph = genesis.cuda.CUDAGraph()
        self.logits: Tensor | None = None


class GraphedDecoder:
    """Prefill and decoding steps of a model captured as CUDA graphs, with the KV cache and buffers they read.

    The decoding step reads the token ids, rotary positions and key mask from static buffers, and the cache position
    from the device (see :class:`KVCache`), so one capture serves every step of every later call with the same batch
    size and cache size. ``step`` fills the buffers and replays the graph: one launch instead of a few hundred kernel
    launches from Python.

    Prompts are captured per length bucket (a multiple of 64): the prompt is padded on the right to the bucket. The
    padding cannot change the real tokens' results (attention is causal), the logits are taken at the last real
    token, and the keys and values the padding leaves in the cache lie past the cache position, where decoding
    overwrites them before reading. The captured kernels use the weights' addresses; ``matches`` tells whether the
    model still has the same parameter storage.
    """

    def __init__(self, model: Any, batch_size: int, max_length: int, padded: bool) -> None:
        self.device = model.device
        self.batch_size, self.padded = batch_size, padded
        self.cache = model.new_cache(batch_size, max_length)
        self.ids = genesis.zeros(batch_size, 1, dtype=genesis.int64, device=self.device)
        self.positions = genesis.zeros(batch_size, 1, dtype=genesis.int64, device=self.device)
        self.mask = genesis.ones(batch_size, max_length, dtype=genesis.int64, device=self.device) if padded else None
        self.param_ptrs = _param_ptrs(model)
        self.prefills: dict[int, _Prefill] = {}
        self.graph = genesis.cuda.CUDAGraph()
        self.logits = self._capture(self.graph, lambda: self._logits(model, self.ids, self.mask, self.positions, 1))

    def _logits(self, model: Any, ids: Tensor, mask: Tensor | None, positions: Tensor, keep: int | Tensor) -> Tensor:
        """Next-token logits (B, vocab) float32 of one forward pass into the decoder's cache."""
        out = model(ids, attention_mask=mask, position_ids=positions, cache=self.cache, logits_to_keep=keep)
        return out.logits[:, -1].float()

    def _capture(self, graph: Any, forward: Callable[[], Tensor]) -> Tensor:
        """Run ``forward`` once (the kernels compile and the allocator fills), then record it into ``graph``.

        The cache is left empty. Returns the tensor that every replay of ``graph`` writes.
        """
        with genesis.no_grad():
            forward()
            self.cache.reset()
            with genesis.cuda.graph(graph):
                out = forward()  # recorded, not run: the cache position did not move
        self.cache.reset()
        return out

    def matches(self, model: Any) -> bool:
        return self.param_ptrs == _param_ptrs(model)

    def release(self) -> None:
        """Free the graphs' memory pools."""
        for p in self.prefills.values():
            p.graph.reset()
        self.prefills.clear()
        self.graph.reset()

    def prefill(self, model: Any, ids: Tensor, mask: Tensor | None, positions: Tensor) -> Tensor | None:
        """Logits (B, vocab) float32 after the prompt ``ids`` (B, T), written into an empty cache; None when the
        bucketed prompt does not fit the cache (the caller then runs the prompt eagerly)."""
        T = ids.shape[1]
        length = -(-T // _PROMPT_BUCKET) * _PROMPT_BUCKET
        if length > self.cache.max_length:
            return None
        entry = self.prefills.get(length)
        if entry is None:
            if len(self.prefills) >= _MAX_PREFILLS:
                self.prefills.pop(next(iter(self.prefills))).graph.reset()
            entry = _Prefill(self.batch_size, length, self.padded, self.device)
            try:
                entry.logits = self._capture(
                    entry.graph, lambda: self._logits(model, entry.ids, entry.mask, entry.positions, entry.last))
            except RuntimeError as exc:
                warnings.warn(f"generate: the prompt could not be captured as a CUDA graph, running it eagerly "
                              f"({type(exc).__name__}: {exc})", RuntimeWarning, stacklevel=3)
                self.cache.reset()
                return None
            self.prefills[length] = entry
        entry.ids[:, :T] = ids
        entry.positions[:, :T] = positions
        if entry.mask is not None:
            entry.mask[:, :T] = mask
        if length > T:  # the padding: any valid token at any position, never attended by the prompt
            entry.ids[:, T:] = 0
            entry.positions[:, T:] = 0
            if entry.mask is not None:
                entry.mask[:, T:] = 0
        entry.last.fill_(T - 1)
        self.cache.reset()
        entry.graph.replay()
        self.cache.length = T
        self.cache.position.fill_(T)  # the graph advanced it by the bucket length
        return entry.logits

    def step(self, ids: Tensor, positions: Tensor) -> Tensor:
        """Logits (B, vocab) float32 of the next token after ``ids`` (B, 1) at ``positions`` (B, 1)."""
        self.ids.copy_(ids)
        self.positions.copy_(positions)
        self.graph.replay()
        self.cache.length += 1  # the graph advanced the device position itself
        return self.logits


def _param_ptrs(model: Any) -> tuple[int, ...]:
    return tuple(p.data_ptr() for p in model.parameters())


def _graphed_decoder(model: Any, batch_size: int, length: int, padded: bool) -> GraphedDecoder | None:
    """A captured decoder for ``model`` with room for ``length`` tokens, reused when one fits; None if capture
    is impossible (the reason is kept in ``model._cuda_graph_error``)."""
    if getattr(model, "_cuda_graph_error", None):
        return None
    decoders = model.__dict__.setdefault("_graphed_decoders", {})
    size = min(-(-length // _GRAPH_BUCKET) * _GRAPH_BUCKET, model.config.max_position_embeddings)
    key = (batch_size, size, padded)
    decoder = decoders.get(key)
    if decoder is not None and not decoder.matches(model):
        decoders.pop(key).release()
        decoder = None
    if decoder is None:
        if len(decoders) >= _MAX_GRAPHS:
            decoders.pop(next(iter(decoders))).release()
        try:
            decoder = decoders[key] = GraphedDecoder(model, batch_size, size, padded)
        except RuntimeError as exc:
            model._cuda_graph_error = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"generate: the decoding step could not be captured as a CUDA graph, decoding eagerly "
                          f"({model._cuda_graph_error})", RuntimeWarning, stacklevel=3)
            return None
    decoder.cache.reset()
    return decoder


def stream_generate(model: Any, input_ids: Tensor, attention_mask: Tensor | None = None,
                    **kwargs: Any) -> Iterator[Tensor]:
    """Yield the next token id of every row, (B,) int64, one step at a time (see :func:`generate`).

    Rows that have finished (EOS or a stop string) yield ``pad_token_id`` until all have finished.
    """
    opts = GenerationOptions(**kwargs)
    mask = _check_inputs(model, input_ids, attention_mask)
    input_ids = input_ids.to(genesis.int64)
    B, T = input_ids.shape
    device = input_ids.device
    max_new = min(opts.max_new_tokens, model.config.max_position_embeddings - T)
    if max_new <= 0:
        return
    generator = opts.generator
    if generator is None and opts.seed is not None:
        generator = genesis.Generator(device).manual_seed(opts.seed)
    eos_ids = opts.eos_ids
    pad_id = opts.pad_token_id if opts.pad_token_id is not None else (eos_ids[0] if eos_ids else 0)
    eos = genesis.tensor(eos_ids, dtype=genesis.int64, device=device) if eos_ids else None
    tokens = genesis.full((B, T + max_new), pad_id, dtype=genesis.int64, device=device)  # every id so far
    tokens[:, :T] = input_ids
    full_mask = genesis.ones(B, T + max_new, dtype=genesis.int64, device=device)
    full_mask[:, :T] = mask
    # Left padding: each row's positions count its real tokens only, as transformers' generate does.
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)  # (B, T)
    unfinished = genesis.ones(B, dtype=genesis.bool, device=device)
    # Without padding the model's causal fast path needs no mask at all.
    padded = not bool(mask.all())
    decoder = None
    if opts.cuda_graph and device.type == "cuda":
        decoder = _graphed_decoder(model, B, T + max_new, padded)
    if decoder is not None:
        cache = decoder.cache
        if padded:  # the captured step reads its key mask from the decoder's buffer
            decoder.mask[:, :T + max_new] = full_mask
            full_mask = decoder.mask
    else:
        cache = model.new_cache(B, T + max_new)
    step_ids = input_ids
    with genesis.no_grad():
        for step in range(max_new):
            length = T + step
            logits = None
            if decoder is not None:
                if step > 0:
                    logits = decoder.step(step_ids, position_ids)  # (B, vocab)
                else:
                    logits = decoder.prefill(model, step_ids, mask if padded else None, position_ids)
            if logits is None:
                step_mask = full_mask[:, :length] if padded else None
                logits = model(step_ids, attention_mask=step_mask, position_ids=position_ids,
                               cache=cache, logits_to_keep=1).logits[:, -1].float()  # (B, vocab)
            if opts.repetition_penalty != 1.0:
                logits = apply_repetition_penalty(logits, tokens[:, :length], opts.repetition_penalty)
            if opts.do_sample:
                logits = warp_logits(logits, opts.temperature, opts.top_k, opts.top_p, opts.min_p)
                next_ids = sample_from_logits(logits, generator)
            else:
                next_ids = logits.argmax(-1)  # (B,)
            next_ids = genesis.where(unfinished, next_ids, genesis.full_like(next_ids, pad_id))
            tokens[:, length] = next_ids
            yield next_ids
            if eos is not None:
                unfinished = unfinished & ~(next_ids.unsqueeze(1) == eos).any(1)
            if opts.stop_strings:
                unfinished = unfinished & ~_hits_stop_string(tokens[:, T:length + 1], unfinished, opts)
            # Reading the flags back synchronizes with the device, so only when a row can have ended.
            if (eos is not None or opts.stop_strings) and not bool(unfinished.any()):
                return
            step_ids = next_ids.unsqueeze(1)  # (B, 1)
            position_ids = position_ids[:, -1:] + 1  # (B, 1)


def _hits_stop_string(generated: Tensor, unfinished: Tensor, opts: GenerationOptions) -> Tensor:
    """(B,) bool: unfinished rows whose generated text now contains a stop string (checked on a decoded tail)."""
    # A stop string of n characters spans at most 4n bytes, hence at most 4n byte-level tokens.
    window = 4 * max(len(s) for s in opts.stop_strings) + 4
    rows = generated[:, -window:].tolist()
    alive = unfinished.tolist()
    hits = [alive[i] and any(s in opts.tokenizer.decode(row) for s in opts.stop_strings) for i, row in enumerate(rows)]
    return genesis.tensor(hits, dtype=genesis.bool, device=generated.device)


def generate(model: Any, input_ids: Tensor, attention_mask: Tensor | None = None, **kwargs: Any) -> Tensor:
    """Generate continuations; returns the prompt followed by the new tokens, (B, T + new), as transformers does.

    Args:
        model: a causal LM (see the module docstring).
        input_ids: (B, T) prompts, left-padded when their lengths differ.
        attention_mask: (B, T), 1 for tokens and 0 for padding.
        max_new_tokens: at most this many new tokens (fewer if the model's positions run out).
        do_sample: sample instead of greedy decoding.
        temperature, top_k, top_p, min_p: sampling filters (see :func:`warp_logits`); ``top_k`` defaults to 50 and
            all are ignored when ``do_sample`` is False, as in transformers.
        repetition_penalty: CTRL's penalty on tokens already present (1 disables it).
        eos_token_id: an id or ids that end a row; pad_token_id fills rows that ended (default: the first EOS).
        stop_strings: strings that end a row once generated (needs ``tokenizer``).
        seed / generator: make sampling reproducible.

    Raises:
        ValueError: invalid parameters, or a prompt longer than the model's positions.
    """
    steps = list(stream_generate(model, input_ids, attention_mask, **kwargs))
    if not steps:
        return input_ids
    new = genesis.stack(steps, 1)  # (B, new)
    return genesis.cat([input_ids.to(genesis.int64), new], 1)
