"""genesis.generation: KV cache, logits processors against transformers', sampling, stopping, streaming, padding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis
from genesis.generation import (
    KVCache,
    apply_repetition_penalty,
    sample_from_logits,
    stream_generate,
    warp_logits,
)
from genesis.models import Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM
from tests.helpers import DEVICE, to_genesis, to_torch

VOCAB = 64


@pytest.fixture(scope="module", params=["qwen2", "qwen3"])
def model(request):
    genesis.manual_seed(0)
    shape = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=48)
    if request.param == "qwen2":
        return Qwen2ForCausalLM(Qwen2Config(**shape), device=DEVICE).eval()
    return Qwen3ForCausalLM(Qwen3Config(**shape, head_dim=8), device=DEVICE).eval()


def prompt(*rows: list[int]) -> tuple[genesis.Tensor, genesis.Tensor]:
    """Left-padded ids and mask for rows of different lengths."""
    width = max(len(r) for r in rows)
    ids = [[0] * (width - len(r)) + r for r in rows]
    mask = [[0] * (width - len(r)) + [1] * len(r) for r in rows]
    return (genesis.tensor(ids, dtype=genesis.int64, device=DEVICE),
            genesis.tensor(mask, dtype=genesis.int64, device=DEVICE))


def test_cached_decoding_equals_full_forward(model) -> None:
    ids = genesis.randint(0, VOCAB, (2, 12), device=DEVICE)
    full = model(ids).logits
    cache = model.new_cache(2, 12)
    with genesis.no_grad():
        parts = [model(ids[:, :7], cache=cache).logits]
        for t in range(7, 12):
            parts.append(model(ids[:, t:t + 1], cache=cache).logits)
    assert cache.length == 12
    torch.testing.assert_close(to_torch(genesis.cat(parts, 1)), to_torch(full), rtol=1e-5, atol=1e-5)
    # Two tokens at once after a cached prefix take the causal mask into account.
    cache = model.new_cache(2, 12)
    with genesis.no_grad():
        model(ids[:, :10], cache=cache)
        tail = model(ids[:, 10:], cache=cache).logits
    torch.testing.assert_close(to_torch(tail), to_torch(full[:, 10:]), rtol=1e-5, atol=1e-5)


def test_kv_cache_is_preallocated_and_bounded() -> None:
    cache = KVCache(num_layers=2, batch_size=1, num_kv_heads=2, max_length=4, head_dim=8, device=DEVICE)
    buffers = [k.data_ptr() for k in cache.keys]
    k = genesis.ones(1, 2, 3, 8, device=DEVICE)
    keys, values = cache.update(0, k, 2 * k)
    assert tuple(keys.shape) == (1, 2, 3, 8) and float(values.sum()) == 2 * 48
    assert [k.data_ptr() for k in cache.keys] == buffers
    cache.advance(3)
    with pytest.raises(RuntimeError, match="exceed the cache size 4"):
        cache.update(0, k, k)


def test_left_padded_batch_matches_each_prompt_alone(model) -> None:
    rows = [[5, 9, 13, 2, 7, 30, 31], [11, 3], [40, 41, 42, 43]]
    ids, mask = prompt(*rows)
    batched = model.generate(ids, attention_mask=mask, max_new_tokens=10, eos_token_id=None)
    for i, row in enumerate(rows):
        alone = model.generate(genesis.tensor([row], dtype=genesis.int64, device=DEVICE), max_new_tokens=10,
                               eos_token_id=None)
        assert to_torch(batched[i, -10:]).tolist() == to_torch(alone[0, -10:]).tolist()


def test_stream_matches_generate_and_eos_pads_finished_rows(model) -> None:
    ids, mask = prompt([1, 2, 3, 4], [9, 8])
    full = model.generate(ids, attention_mask=mask, max_new_tokens=12, eos_token_id=None)
    steps = [to_torch(s).tolist() for s in stream_generate(model, ids, mask, max_new_tokens=12)]
    assert to_torch(full[:, 4:]).T.tolist() == steps
    # Make row 0's third new token its EOS: later tokens of that row become padding, row 1 runs on.
    eos = steps[2][0]
    out = to_torch(model.generate(ids, attention_mask=mask, max_new_tokens=12, eos_token_id=eos, pad_token_id=63))
    first = [s[0] for s in steps].index(eos)
    assert out[0, 4 + first].item() == eos
    assert (out[0, 5 + first:] == 63).all()
    if eos not in [s[1] for s in steps]:
        assert out[1, 4:].tolist() == [s[1] for s in steps][:out.shape[1] - 4]
    # Once every row has ended, generation stops.
    single = model.generate(ids[:1], max_new_tokens=12, eos_token_id=eos)
    assert single.shape[1] == 4 + first + 1


class CharTokenizer:
    """Token i is the character chr(ord('a') + i % 26): enough for stop strings."""

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(ord("a") + i % 26) for i in ids)


def test_stop_strings(model) -> None:
    ids = genesis.tensor([[1, 2, 3]], dtype=genesis.int64, device=DEVICE)
    free = to_torch(model.generate(ids, max_new_tokens=15, eos_token_id=None))[0, 3:].tolist()
    text = CharTokenizer().decode(free)
    stop = text[5:7]
    out = model.generate(ids, max_new_tokens=15, eos_token_id=None, stop_strings=[stop], tokenizer=CharTokenizer())
    generated = CharTokenizer().decode(to_torch(out)[0, 3:].tolist())
    assert generated == text[:text.index(stop) + len(stop)]


def test_sampling_seed_and_filters(model) -> None:
    ids = genesis.tensor([[1, 2, 3]], dtype=genesis.int64, device=DEVICE)
    a = model.generate(ids, max_new_tokens=10, do_sample=True, seed=7, eos_token_id=None)
    b = model.generate(ids, max_new_tokens=10, do_sample=True, seed=7, eos_token_id=None)
    c = model.generate(ids, max_new_tokens=10, do_sample=True, seed=8, eos_token_id=None)
    assert to_torch(a).tolist() == to_torch(b).tolist() != to_torch(c).tolist()
    # top_k=1 and a tiny top_p both reduce sampling to greedy decoding.
    greedy = to_torch(model.generate(ids, max_new_tokens=10, eos_token_id=None)).tolist()
    for filters in (dict(top_k=1), dict(top_p=1e-6), dict(min_p=1.0)):
        sampled = model.generate(ids, max_new_tokens=10, do_sample=True, seed=1, eos_token_id=None, **filters)
        assert to_torch(sampled).tolist() == greedy, filters


def test_hf_logits_processors_match() -> None:
    transformers = pytest.importorskip("transformers")
    lp = transformers.generation.logits_process
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 50, generator=g) * 3
    seen = torch.randint(0, 50, (4, 7), generator=g)
    expected = lp.RepetitionPenaltyLogitsProcessor(1.3)(seen, logits.clone())
    got = apply_repetition_penalty(to_genesis(logits), to_genesis(seen), 1.3)
    torch.testing.assert_close(to_torch(got), expected)
    for temperature, top_k, top_p, min_p in [(0.7, 10, 1.0, 0.0), (1.0, 0, 0.8, 0.0), (1.3, 0, 1.0, 0.1),
                                             (0.9, 20, 0.9, 0.05)]:
        expected = logits.clone()
        for proc in [lp.TemperatureLogitsWarper(temperature), lp.TopKLogitsWarper(top_k) if top_k else None,
                     lp.TopPLogitsWarper(top_p) if top_p < 1 else None, lp.MinPLogitsWarper(min_p) if min_p else None]:
            if proc is not None:
                expected = proc(seen, expected)
        got = to_torch(warp_logits(to_genesis(logits), temperature, top_k, top_p, min_p))
        assert torch.equal(torch.isinf(got), torch.isinf(expected)), (temperature, top_k, top_p, min_p)
        finite = ~torch.isinf(expected)
        torch.testing.assert_close(got[finite], expected[finite])


def test_sampler_follows_the_distribution() -> None:
    probs = torch.tensor([0.1, 0.2, 0.3, 0.4])
    logits = to_genesis(probs.log().repeat(20000, 1))
    ids = to_torch(sample_from_logits(logits, genesis.Generator(DEVICE).manual_seed(0)))
    freq = np.bincount(ids.numpy(), minlength=4) / ids.numel()
    np.testing.assert_allclose(freq, probs.numpy(), atol=0.015)
    # Masked tokens are never drawn.
    masked = to_genesis(torch.tensor([[0.0, float("-inf"), 0.0, float("-inf")]]).repeat(2000, 1))
    drawn = set(to_torch(sample_from_logits(masked, genesis.Generator(DEVICE).manual_seed(1))).tolist())
    assert drawn == {0, 2}


def test_bad_generation_inputs(model) -> None:
    ids = genesis.tensor([[1, 2]], dtype=genesis.int64, device=DEVICE)
    with pytest.raises(ValueError, match="input_ids"):
        model.generate(genesis.tensor([1, 2], dtype=genesis.int64, device=DEVICE))
    with pytest.raises(ValueError, match="input_ids"):
        model.generate(ids.float())
    with pytest.raises(ValueError, match="attention_mask shape"):
        model.generate(ids, attention_mask=genesis.ones(1, 3, dtype=genesis.int64, device=DEVICE))
    with pytest.raises(ValueError, match="empty"):
        model.generate(genesis.zeros(1, 0, dtype=genesis.int64, device=DEVICE))
    with pytest.raises(ValueError, match="stop_strings"):
        model.generate(ids, stop_strings=[""], tokenizer=CharTokenizer())
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model.new_cache(1, 49)
    assert to_torch(model.generate(ids, max_new_tokens=0)).tolist() == [[1, 2]]
