"""Decoding over a KV cache: ``F.kv_cache_write_``, ``F.rope_kv_cache_write_`` and ``F.decode_attention`` against
torch, CUDA graph capture, and captured decoding in ``generate`` against eager decoding.

The op tests run on every device through the switch; the graph tests need a GPU. The decoding kernels also compile
ahead of time for sm_90 on machines without one.
"""

from __future__ import annotations

import pytest
import torch

import genesis
import genesis.nn.functional as F
from genesis.models import Qwen2Config, Qwen2ForCausalLM
from tests.helpers import DEVICE, TORCH_DTYPE, assert_same, requires_cuda, to_genesis, to_torch

DTYPES = [genesis.float32, genesis.bfloat16, genesis.float16]


def _tolerance(dtype: genesis.dtype) -> tuple[float, float]:
    return (1e-5, 1e-5) if dtype is genesis.float32 else (2e-2, 2e-2)


def _reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, length: int,
               key_mask: torch.Tensor | None) -> torch.Tensor:
    """torch's SDPA in float64 over the first ``length`` keys, grouped-query heads repeated."""
    group = q.shape[1] // k.shape[1]
    k = k[:, :, :length].double().repeat_interleave(group, 1)
    v = v[:, :, :length].double().repeat_interleave(group, 1)
    mask = None if key_mask is None else key_mask[:, None, None, :length].bool()
    return torch.nn.functional.scaled_dot_product_attention(q.double(), k, v, attn_mask=mask)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("B,H,HK,S,D,length", [(1, 14, 2, 300, 64, 1), (1, 14, 2, 300, 64, 129),
                                                (2, 4, 4, 256, 128, 256), (3, 8, 2, 40, 32, 17),
                                                (1, 2, 1, 1000, 64, 777)])
def test_decode_attention_matches_sdpa(dtype, B, H, HK, S, D, length) -> None:
    torch.manual_seed(0)
    td = TORCH_DTYPE[dtype]
    q, k, v = torch.randn(B, H, 1, D, dtype=td), torch.randn(B, HK, S, D, dtype=td), torch.randn(B, HK, S, D, dtype=td)
    out = F.decode_attention(to_genesis(q, False), to_genesis(k, False), to_genesis(v, False),
                             genesis.tensor([length], device=DEVICE))
    assert out.shape == (B, H, 1, D) and out.dtype is dtype
    rtol, atol = _tolerance(dtype)
    assert_same(out.float(), _reference(q, k, v, length, None).float(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16])
def test_decode_attention_key_mask(dtype) -> None:
    torch.manual_seed(1)
    B, H, HK, S, D, length = 3, 6, 3, 200, 64, 150
    td = TORCH_DTYPE[dtype]
    q, k, v = torch.randn(B, H, 1, D, dtype=td), torch.randn(B, HK, S, D, dtype=td), torch.randn(B, HK, S, D, dtype=td)
    mask = torch.ones(B, S, dtype=torch.int64)
    mask[1, :40] = 0  # left padding
    mask[2, 130:140] = 0  # a hole spanning a block boundary
    for key_mask in (mask, mask.bool()):
        out = F.decode_attention(to_genesis(q, False), to_genesis(k, False), to_genesis(v, False),
                                 genesis.tensor([length], device=DEVICE), to_genesis(key_mask, False), scale=0.1)
        ref = torch.nn.functional.scaled_dot_product_attention(
            q.double(), k[:, :, :length].double().repeat_interleave(2, 1),
            v[:, :, :length].double().repeat_interleave(2, 1),
            attn_mask=key_mask[:, None, None, :length].bool(), scale=0.1)
        rtol, atol = _tolerance(dtype)
        assert_same(out.float(), ref.float(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_kv_cache_write(dtype) -> None:
    td = TORCH_DTYPE[dtype]
    cache = torch.randn(2, 3, 20, 16, dtype=td)
    new = torch.randn(2, 5, 3, 16, dtype=td).transpose(1, 2)  # (2, 3, 5, 16), a strided view as in the model
    g_cache = to_genesis(cache, False)
    version = g_cache._version
    result = F.kv_cache_write_(g_cache, to_genesis(new, False), genesis.tensor([7], device=DEVICE))
    assert result is g_cache and g_cache._version > version
    expected = cache.clone()
    expected[:, :, 7:12] = new
    assert torch.equal(to_torch(g_cache), expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("B,H,HK,D,batch_tables", [(1, 14, 2, 64, True), (3, 4, 4, 128, True), (2, 6, 3, 32, False)])
def test_rope_kv_cache_write(dtype, B, H, HK, D, batch_tables) -> None:
    torch.manual_seed(2)
    td = TORCH_DTYPE[dtype]
    S, pos = 12, 5
    q = torch.randn(B, 1, H + 2, D, dtype=td)[:, :, 1:H + 1]  # strided head dim, as views of a projection
    k, v = torch.randn(B, 1, HK, D, dtype=td), torch.randn(B, 1, HK, D, dtype=td)
    angles = torch.rand(B if batch_tables else 1, 1, 1, D // 2, dtype=torch.float64) * 6
    cos, sin = torch.cat([angles, angles], -1).cos(), torch.cat([angles, angles], -1).sin()
    k_cache, v_cache = torch.randn(B, HK, S, D, dtype=td), torch.randn(B, HK, S, D, dtype=td)
    g_k, g_v = to_genesis(k_cache, False), to_genesis(v_cache, False)
    out = F.rope_kv_cache_write_(to_genesis(q, False), to_genesis(k, False), to_genesis(v, False),
                                 to_genesis(cos.float(), False), to_genesis(sin.float(), False), g_k, g_v,
                                 genesis.tensor([pos], device=DEVICE))
    c, s_ = cos.float().to(td).float(), sin.float().to(td).float()  # tables rounded to the input dtype, as rope

    def rope(x: torch.Tensor) -> torch.Tensor:
        x = x.transpose(1, 2).float()
        half = D // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return (x * c + rotated * s_).to(td)

    rtol, atol = _tolerance(dtype)
    assert out.shape == (B, H, 1, D) and out.dtype is dtype
    assert_same(out, rope(q), rtol=rtol, atol=atol)
    expected_k, expected_v = k_cache.clone(), v_cache.clone()
    expected_k[:, :, pos:pos + 1] = rope(k)
    expected_v[:, :, pos:pos + 1] = v.transpose(1, 2)
    assert_same(g_k, expected_k, rtol=rtol, atol=atol)
    assert torch.equal(to_torch(g_v), expected_v)


def test_decode_ops_bad_input() -> None:
    q = genesis.zeros(1, 4, 2, 8, device=DEVICE)
    k = genesis.zeros(1, 2, 10, 8, device=DEVICE)
    one = genesis.tensor([3], device=DEVICE)
    with pytest.raises(RuntimeError, match="decode_attention: expected one query"):
        F.decode_attention(q, k, k, one)
    with pytest.raises(RuntimeError, match="multiple of KV heads"):
        F.decode_attention(genesis.zeros(1, 3, 1, 8, device=DEVICE), k, k, one)
    with pytest.raises(RuntimeError, match="length must be a 1-element integer"):
        F.decode_attention(q[:, :, :1], k, k, genesis.tensor([1.0], device=DEVICE))
    with pytest.raises(RuntimeError, match="key_mask must be"):
        F.decode_attention(q[:, :, :1], k, k, one, genesis.ones(2, 10, device=DEVICE))
    cache = genesis.zeros(1, 2, 10, 8, device=DEVICE)
    with pytest.raises(RuntimeError, match="does not fit the cache"):
        F.kv_cache_write_(cache, genesis.ones(1, 2, 3, 4, device=DEVICE), one)
    with pytest.raises(RuntimeError, match="position must be"):
        F.kv_cache_write_(cache, genesis.ones(1, 2, 3, 8, device=DEVICE), genesis.tensor([1, 2], device=DEVICE))
    assert float(cache.abs().sum()) == 0.0  # nothing was written


# ---------------------------------------------------------------------------------------------------- CUDA graphs

@requires_cuda
def test_cuda_graph_capture_and_replay() -> None:
    x = genesis.ones(1000, device="cuda")
    w = genesis.full((1000,), 2.0, device="cuda")
    (x * w).sum()  # warm up the kernels before capturing
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        tmp = x * w  # allocated from the graph's pool and freed inside the capture
        y = tmp.sum() + 1
        del tmp
    assert g.num_nodes() >= 2
    for value in (3.0, -1.5):
        x.fill_(value)
        g.replay()
        assert float(y) == pytest.approx(value * 2 * 1000 + 1)
    g.reset()
    with pytest.raises(RuntimeError, match="replay"):
        g.replay()


@requires_cuda
def test_cuda_graph_keeps_memory_freed_during_capture() -> None:
    a = genesis.arange(256, device="cuda").float()
    b = a * 1.0
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        out = b + 1
        del b  # allocated before the capture, used by it: must not be handed out again while g lives
    others = [genesis.full((256,), 7.0, device="cuda") for _ in range(4)]  # would reuse b's block if it were free
    g.replay()
    assert torch.equal(to_torch(out).cpu(), torch.arange(256).float() + 1)
    assert all(float(o.sum()) == 7.0 * 256 for o in others)


@requires_cuda
def test_capture_refuses_host_reads() -> None:
    x = genesis.ones(8, device="cuda")
    g = genesis.cuda.CUDAGraph()
    with pytest.raises(RuntimeError):
        with genesis.cuda.graph(g):
            float(x.sum())
    # The failed capture left the device usable.
    assert float((x + 1).sum()) == 16.0


@requires_cuda
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16])
def test_graphed_generate_matches_eager(dtype) -> None:
    genesis.manual_seed(0)
    config = Qwen2Config(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    model = Qwen2ForCausalLM(config, device="cuda", dtype=dtype).eval()
    ids = genesis.randint(0, 128, (2, 9), device="cuda")
    mask = genesis.ones(2, 9, dtype=genesis.int64, device="cuda")
    mask[1, :4] = 0
    for attention_mask in (None, mask):
        eager = model.generate(ids, attention_mask=attention_mask, max_new_tokens=20, eos_token_id=None,
                               cuda_graph=False)
        graphed = model.generate(ids, attention_mask=attention_mask, max_new_tokens=20, eos_token_id=None)
        again = model.generate(ids, attention_mask=attention_mask, max_new_tokens=12, eos_token_id=None)
        assert torch.equal(to_torch(graphed), to_torch(eager))
        assert torch.equal(to_torch(again), to_torch(eager)[:, :21])
    assert len(model._graphed_decoders) == 2  # (batch, cache size, padded) reused across calls
    assert getattr(model, "_cuda_graph_error", None) is None
    sampled = [model.generate(ids, max_new_tokens=10, do_sample=True, seed=3, cuda_graph=flag) for flag in (0, 1)]
    assert torch.equal(to_torch(sampled[0]), to_torch(sampled[1]))


@requires_cuda
def test_graphed_prefill_buckets_match_eager() -> None:
    genesis.manual_seed(1)
    config = Qwen2Config(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024)
    model = Qwen2ForCausalLM(config, device="cuda").eval()
    for T in (64, 70, 1, 130):  # an exact bucket, padding to 128, a one-token prompt, padding to 192
        ids = genesis.randint(0, 96, (1, T), device="cuda")
        for new in (1, 5):
            eager = model.generate(ids, max_new_tokens=new, eos_token_id=None, cuda_graph=False)
            graphed = model.generate(ids, max_new_tokens=new, eos_token_id=None)
            assert torch.equal(to_torch(graphed), to_torch(eager)), (T, new)
    decoder = next(iter(model._graphed_decoders.values()))
    assert sorted(decoder.prefills) == [64, 128, 192]


def test_logits_to_keep_tensor() -> None:
    genesis.manual_seed(2)
    config = Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = Qwen2ForCausalLM(config, device=DEVICE).eval()
    ids = genesis.randint(0, 64, (2, 10), device=DEVICE)
    with genesis.no_grad():
        full = model(ids).logits
        picked = model(ids, logits_to_keep=genesis.tensor([3, 9], device=DEVICE)).logits
    assert picked.shape == (2, 2, 64)
    assert_same(picked, to_torch(full)[:, [3, 9]])


# ---------------------------------------------------------------------------------------------------- CI compile

def test_decode_kernels_compile_for_sm90() -> None:
    pytest.importorskip("triton", reason="Triton is not installed: kernel compile check skipped")
    from tests.kernel_modules import compile_for_sm90, kernel_modules

    dk = kernel_modules(["nn_decode"])["nn_decode"]
    bf, f32, i64 = "*bf16:16", "*fp32:16", "*i64:16"
    compile_for_sm90(dk.kv_write_kernel, (bf, bf, i64, "i32", "i32") + ("i64",) * 6 + ("i32",), (64,))
    partial = ("fp32", "i32", "i32", "i32") + ("i64",) * 9
    compile_for_sm90(dk.decode_attention_kernel, (bf, bf, bf, i64, "*i8", f32, f32, f32) + partial,
                     (7, 16, 64, 64, 128, True, False))
    compile_for_sm90(dk.decode_attention_kernel, (f32, f32, f32, i64, "*i8", f32, f32, f32) + partial,
                     (1, 16, 64, 128, 128, False, True))
    compile_for_sm90(dk.decode_combine_kernel, (f32, f32, f32, bf, "i32", "i32", "i64", "i64", "i32"), (32, 64))
    compile_for_sm90(dk.rope_cache_kernel, (bf,) * 3 + (f32, f32) + (bf,) * 3 + (i64,) + ("i64",) * 13 + ("i32",),
                     (32, 32))
