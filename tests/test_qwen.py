"""Qwen2 / Qwen3 in Genesis against transformers' implementation with the same weights.

Tiny random-weight models are written by transformers' ``save_pretrained`` (sharded and unsharded), loaded by
Genesis, and compared: logits of a left-padded batch, greedy generation, the gradients of one training step, and
Genesis's ``save_pretrained`` read back by transformers. Bad checkpoints must raise errors that name the file.
"""

from __future__ import annotations

import copy
import json
import shutil

import pytest
import torch

from tests.helpers import DEVICE, to_genesis, to_torch

transformers = pytest.importorskip("transformers")

import genesis  # noqa: E402
from genesis.models import AutoModelForCausalLM, Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM  # noqa: E402

VOCAB = 96
COMMON = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6)


def hf_config(kind: str, tied: bool) -> transformers.PretrainedConfig:
    if kind == "qwen2":
        return transformers.Qwen2Config(**COMMON, rope_theta=10000.0, tie_word_embeddings=tied)
    return transformers.Qwen3Config(**COMMON, head_dim=16, rope_theta=1e6, tie_word_embeddings=tied)


def hf_model(kind: str, tied: bool, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(hf_config(kind, tied), attn_implementation="eager")
    with torch.no_grad():
        for name, p in model.named_parameters():
            # Non-trivial norms and biases, so a mix-up of either shows in the logits.
            if "norm" in name or name.endswith("bias"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p) if "norm" in name else 0.1 * torch.randn_like(p))
    return model.eval()


CASES = [("qwen2", False, None), ("qwen2", True, "20KB"), ("qwen3", False, "20KB"), ("qwen3", True, None)]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{'tied' if c[1] else 'untied'}-"
                f"{'sharded' if c[2] else 'single'}")
def pair(request, tmp_path_factory):
    kind, tied, shard = request.param
    ref = hf_model(kind, tied)
    path = tmp_path_factory.mktemp(kind)
    ref.save_pretrained(path, max_shard_size=shard) if shard else ref.save_pretrained(path)
    assert (path / "model.safetensors.index.json").exists() == bool(shard)
    model = AutoModelForCausalLM.from_pretrained(path, device=DEVICE)
    return ref, model, path


def padded_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Three prompts of lengths 12, 7 and 3, left-padded to 12."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, VOCAB, (3, 12), generator=g)
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[1, :5] = 0
    mask[2, :9] = 0
    ids[mask == 0] = 0
    return ids, mask


def test_class_and_config(pair) -> None:
    ref, model, _ = pair
    expected = Qwen2ForCausalLM if ref.config.model_type == "qwen2" else Qwen3ForCausalLM
    assert type(model) is expected
    expected_head_dim = getattr(ref.config, "head_dim", None) or COMMON["hidden_size"] // COMMON["num_attention_heads"]
    assert model.config.head_dim == expected_head_dim
    assert model.config.attention_bias == (ref.config.model_type == "qwen2")
    assert (model.lm_head.weight is model.model.embed_tokens.weight) == ref.config.tie_word_embeddings
    names = {n for n, _ in model.named_parameters()}
    assert names == {n for n, _ in ref.named_parameters()}


def test_logits_match_padded_batch(pair) -> None:
    ref, model, _ = pair
    ids, mask = padded_batch()
    with torch.no_grad():
        expected = ref(input_ids=ids, attention_mask=mask).logits
    got = model(to_genesis(ids), attention_mask=to_genesis(mask)).logits
    assert tuple(got.shape) == (3, 12, VOCAB) and got.dtype is genesis.float32
    valid = mask.bool()  # padded positions are not defined outputs
    torch.testing.assert_close(to_torch(got)[valid], expected[valid], rtol=1e-4, atol=1e-5)
    # Without a mask every position counts.
    with torch.no_grad():
        expected = ref(input_ids=ids).logits
    torch.testing.assert_close(to_torch(model(to_genesis(ids)).logits), expected, rtol=1e-4, atol=1e-5)


def test_greedy_generation_matches(pair) -> None:
    ref, model, _ = pair
    ids, mask = padded_batch()
    with torch.no_grad():
        expected = ref.generate(input_ids=ids, attention_mask=mask, max_new_tokens=32, do_sample=False,
                                pad_token_id=0, eos_token_id=None)
    got = model.generate(to_genesis(ids), attention_mask=to_genesis(mask), max_new_tokens=32, eos_token_id=None,
                         pad_token_id=0)
    assert tuple(got.shape) == (3, 44)
    assert torch.equal(to_torch(got), expected)


def test_bfloat16_logits_within_bfloat16_error(pair) -> None:
    """In bfloat16 Genesis's logits are as close to the float32 reference as transformers' own bfloat16 ones."""
    ref, _, path = pair
    ids, mask = padded_batch()
    with torch.no_grad():
        exact = ref(input_ids=ids, attention_mask=mask).logits.double()  # float64 would overflow HF's mask
        theirs = copy.deepcopy(ref).to(torch.bfloat16)(input_ids=ids, attention_mask=mask).logits.double()
    model = AutoModelForCausalLM.from_pretrained(path, dtype="bfloat16", device=DEVICE)
    with genesis.no_grad():
        ours = to_torch(model(to_genesis(ids), attention_mask=to_genesis(mask)).logits.double())
    valid = mask.bool()

    def error(x: torch.Tensor) -> float:
        return float((x[valid] - exact[valid]).norm() / exact[valid].norm())

    assert error(ours) < max(2 * error(theirs), 1e-2), (error(ours), error(theirs))
    out = model.generate(to_genesis(ids), attention_mask=to_genesis(mask), max_new_tokens=8, eos_token_id=None,
                         pad_token_id=0)
    assert tuple(out.shape) == (3, 20) and int(out.max()) < VOCAB


def test_training_step_gradients_match(pair) -> None:
    ref, model, _ = pair
    ids, _ = padded_batch()
    labels = ids.clone()
    labels[0, :4] = -100
    ref.train()
    ref.zero_grad()
    out = ref(input_ids=ids, labels=labels)
    out.loss.backward()
    ref.eval()
    model.train()
    got = model(to_genesis(ids), labels=to_genesis(labels))
    got.loss.backward()
    model.eval()
    torch.testing.assert_close(to_torch(got.loss), out.loss.detach(), rtol=1e-5, atol=1e-6)
    grads = dict(ref.named_parameters())
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        torch.testing.assert_close(to_torch(p.grad), grads[name].grad, rtol=1e-4, atol=1e-6, msg=lambda m, n=name:
                                   f"{n}: {m}")
    model.zero_grad()


def test_save_pretrained_loads_in_transformers(pair, tmp_path) -> None:
    ref, model, _ = pair
    model.save_pretrained(tmp_path)
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, attn_implementation="eager").eval()
    assert type(back) is type(ref)
    ids, mask = padded_batch()
    with torch.no_grad():
        expected = ref(input_ids=ids, attention_mask=mask).logits
        got = back(input_ids=ids, attention_mask=mask).logits
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    again = AutoModelForCausalLM.from_pretrained(tmp_path, device=DEVICE)
    torch.testing.assert_close(to_torch(again(to_genesis(ids)).logits), to_torch(model(to_genesis(ids)).logits),
                               rtol=0, atol=0)


def test_sharded_save_and_bfloat16_load(pair, tmp_path) -> None:
    ref, model, _ = pair
    model.save_pretrained(tmp_path, max_shard_size="10KB")
    assert (tmp_path / "model.safetensors.index.json").exists()
    assert len(list(tmp_path.glob("model-*-of-*.safetensors"))) > 1
    back = AutoModelForCausalLM.from_pretrained(tmp_path, device=DEVICE)
    ids, _ = padded_batch()
    torch.testing.assert_close(to_torch(back(to_genesis(ids)).logits), to_torch(model(to_genesis(ids)).logits),
                               rtol=0, atol=0)
    # A bfloat16 checkpoint (as Qwen ships) loads in bfloat16 with its exact values.
    ref_bf16 = hf_model(ref.config.model_type, ref.config.tie_word_embeddings).to(torch.bfloat16)
    ref_bf16.save_pretrained(tmp_path / "bf16")
    model_bf16 = AutoModelForCausalLM.from_pretrained(tmp_path / "bf16", dtype="auto", device=DEVICE)
    assert model_bf16.dtype is genesis.bfloat16
    weight = model_bf16.model.layers[0].mlp.up_proj.weight
    assert torch.equal(to_torch(weight), ref_bf16.model.layers[0].mlp.up_proj.weight)


def test_sampling_is_seeded_and_valid(pair) -> None:
    _, model, _ = pair
    ids, mask = padded_batch()
    kwargs = dict(attention_mask=to_genesis(mask), max_new_tokens=8, do_sample=True, temperature=0.8, top_k=20,
                  top_p=0.9, min_p=0.05, repetition_penalty=1.2, eos_token_id=None, seed=3)
    a = model.generate(to_genesis(ids), **kwargs)
    b = model.generate(to_genesis(ids), **kwargs)
    assert torch.equal(to_torch(a), to_torch(b))
    assert torch.equal(to_torch(a)[:, :12], ids)
    assert int(to_torch(a).max()) < VOCAB


def write_tiny(path, kind: str = "qwen2") -> None:
    hf_model(kind, False).save_pretrained(path, max_shard_size="20KB")


def test_bad_checkpoints_name_the_file(tmp_path) -> None:
    good = tmp_path / "good"
    write_tiny(good)
    with pytest.raises(FileNotFoundError, match="config.json"):
        AutoModelForCausalLM.from_pretrained(tmp_path / "missing")
    cases = {}

    def variant(name: str):
        d = tmp_path / name
        shutil.copytree(good, d)
        cases[name] = d
        return d

    (variant("corrupt_config") / "config.json").write_text("{ nope")
    with pytest.raises(ValueError, match="config.json"):
        AutoModelForCausalLM.from_pretrained(cases["corrupt_config"])

    d = variant("llama")
    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, "model_type": "llama"}))
    with pytest.raises(ValueError, match="unsupported architecture.*llama"):
        AutoModelForCausalLM.from_pretrained(d)

    d = variant("sliding")
    (d / "config.json").write_text(json.dumps({**cfg, "use_sliding_window": True, "sliding_window": 16}))
    with pytest.raises(ValueError, match="sliding-window"):
        AutoModelForCausalLM.from_pretrained(d)

    d = variant("yarn")
    (d / "config.json").write_text(json.dumps({**cfg, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}))
    with pytest.raises(ValueError, match="rope scaling type 'yarn'"):
        AutoModelForCausalLM.from_pretrained(d)

    d = variant("truncated")
    shard = sorted(d.glob("model-*.safetensors"))[-1]
    shard.write_bytes(shard.read_bytes()[:-100])
    with pytest.raises(ValueError, match=f"{shard.name}.*truncated"):
        AutoModelForCausalLM.from_pretrained(d)

    d = variant("garbage")
    shard = sorted(d.glob("model-*.safetensors"))[0]
    shard.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}" + b"\x00" * 64)
    with pytest.raises(ValueError, match=f"{shard.name}.*corrupt"):
        AutoModelForCausalLM.from_pretrained(d)

    d = variant("missing_shard")
    shard = sorted(d.glob("model-*.safetensors"))[0]
    shard.unlink()
    with pytest.raises(FileNotFoundError, match=shard.name):
        AutoModelForCausalLM.from_pretrained(d)

    d = variant("wrong_shape")
    (d / "config.json").write_text(json.dumps({**cfg, "intermediate_size": 48}))
    with pytest.raises(ValueError, match="mlp.*shape"):
        AutoModelForCausalLM.from_pretrained(d)

    with pytest.raises(ValueError, match="Qwen2ForCausalLM, not a Qwen3ForCausalLM"):
        Qwen3ForCausalLM.from_pretrained(good)


def test_prompt_longer_than_positions_and_bad_sampling(pair) -> None:
    _, model, _ = pair
    long = genesis.zeros(1, 65, dtype=genesis.int64, device=DEVICE)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model.generate(long, max_new_tokens=1)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(long)
    ids = genesis.zeros(1, 4, dtype=genesis.int64, device=DEVICE)
    for bad in [dict(do_sample=True, temperature=0.0), dict(top_k=-1), dict(top_p=0.0), dict(top_p=1.5),
                dict(min_p=-0.1), dict(repetition_penalty=0.0), dict(max_new_tokens=-1),
                dict(stop_strings=["x"])]:
        with pytest.raises(ValueError):
            model.generate(ids, **bad)
    # Generation stops at the model's last position instead of overrunning it.
    out = model.generate(genesis.zeros(1, 60, dtype=genesis.int64, device=DEVICE), max_new_tokens=10,
                         eos_token_id=None)
    assert tuple(out.shape) == (1, 64)


QWEN25_CONFIG = {  # Qwen2.5-0.5B-Instruct's config.json as published (transformers 4.x spelling)
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
    "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 21, "model_type": "qwen2",
    "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1", "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
}
QWEN3_CONFIG = {  # Qwen3-0.6B's config.json as published
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
    "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 40960,
    "max_window_layers": 28, "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000,
    "sliding_window": None, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.51.0", "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
}


@pytest.mark.parametrize("published", [QWEN25_CONFIG, QWEN3_CONFIG], ids=["qwen2.5-0.5b", "qwen3-0.6b"])
def test_published_configs_parse_and_round_trip(published: dict) -> None:
    from genesis.models import QwenConfig

    config = QwenConfig.from_dict(published)
    assert isinstance(config, Qwen2Config if published["model_type"] == "qwen2" else Qwen3Config)
    assert config.head_dim == (64 if published["model_type"] == "qwen2" else 128)
    assert config.rope_theta == 1e6 and config.tie_word_embeddings and config.eos_token_id == 151645
    assert config.qk_norm == (published["model_type"] == "qwen3")
    assert config.attention_bias == (published["model_type"] == "qwen2")
    # What Genesis writes reads back the same in Genesis and in transformers.
    written = config.to_dict(genesis.bfloat16)
    assert QwenConfig.from_dict(written) == config
    ref = transformers.AutoConfig.for_model(**written)
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "vocab_size", "max_position_embeddings", "rms_norm_eps",
                "tie_word_embeddings"):
        assert getattr(ref, key) == getattr(config, key), key
    assert ref.rope_parameters["rope_theta"] == config.rope_theta


@pytest.mark.parametrize("field, value", [("tie_word_embeddings", "false"), ("head_dim", "8"),
                                          ("rope_scaling", "linear"), ("rms_norm_eps", "1e-6"),
                                          ("hidden_size", 64.0), ("num_hidden_layers", True),
                                          ("eos_token_id", [1, "2"])])
def test_config_field_types_checked_at_load(tmp_path, field, value) -> None:
    write_tiny(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, field: value}))
    with pytest.raises(ValueError, match=f"config.json: field '{field}' must be"):
        AutoModelForCausalLM.from_pretrained(tmp_path)
