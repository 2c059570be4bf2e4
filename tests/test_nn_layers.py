"""Layers against torch with identical weights (copied through state_dict): outputs, input and parameter grads."""

import inspect

import pytest
import torch

import genesis
import genesis.nn as nn
from tests.helpers import DEVICE, check, check_module, expected_repr, rand, to_genesis, to_torch


def pair(make):
    t = make(torch).double()
    g = make(genesis).to(DEVICE, genesis.float64)
    assert list(g.state_dict()) == list(t.state_dict())
    assert repr(g) == expected_repr(t)
    return g, t


@pytest.mark.parametrize("make,shape", [
    (lambda lib: lib.nn.Linear(5, 3), (4, 5)),
    (lambda lib: lib.nn.Linear(5, 3, bias=False), (2, 4, 5)),
    (lambda lib: lib.nn.Identity(), (2, 3)),
    (lambda lib: lib.nn.Flatten(), (2, 3, 4)),
    (lambda lib: lib.nn.Flatten(0, 1), (2, 3, 4)),
    (lambda lib: lib.nn.Unflatten(1, (2, 3)), (4, 6)),
    (lambda lib: lib.nn.LayerNorm(5), (3, 4, 5)),
    (lambda lib: lib.nn.LayerNorm((4, 5), elementwise_affine=False), (3, 4, 5)),
    (lambda lib: lib.nn.LayerNorm(5, bias=False), (3, 5)),
    (lambda lib: lib.nn.RMSNorm(5), (3, 4, 5)),
    (lambda lib: lib.nn.RMSNorm([4, 5], eps=1e-6), (3, 4, 5)),
    (lambda lib: lib.nn.GroupNorm(2, 4), (3, 4, 5)),
    (lambda lib: lib.nn.GroupNorm(1, 4, affine=False), (2, 4, 3, 3)),
    (lambda lib: lib.nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
    (lambda lib: lib.nn.LocalResponseNorm(3), (2, 5, 4)),
    (lambda lib: lib.nn.ReLU(), (3, 4)), (lambda lib: lib.nn.LeakyReLU(0.2), (3, 4)),
    (lambda lib: lib.nn.GELU(), (3, 4)), (lambda lib: lib.nn.GELU("tanh"), (3, 4)), (lambda lib: lib.nn.SiLU(), (3, 4)),
    (lambda lib: lib.nn.Sigmoid(), (3, 4)), (lambda lib: lib.nn.Tanh(), (3, 4)),
    (lambda lib: lib.nn.Softplus(beta=2.0), (3, 4)), (lambda lib: lib.nn.Mish(), (3, 4)),
    (lambda lib: lib.nn.Softmax(dim=1), (3, 4)), (lambda lib: lib.nn.LogSoftmax(dim=-1), (3, 4)),
    (lambda lib: lib.nn.ELU(), (3, 4)), (lambda lib: lib.nn.PReLU(4), (3, 4)), (lambda lib: lib.nn.GLU(), (3, 4)),
    (lambda lib: lib.nn.Hardswish(), (3, 4)), (lambda lib: lib.nn.ReLU6(), (3, 4)),
    (lambda lib: lib.nn.Dropout(0.3).eval(), (3, 4)),
])
def test_layer_parity(make, shape):
    g, t = pair(make)
    check_module(g, t, rand(*shape, low=-3, high=3))


def test_bilinear():
    g, t = pair(lambda lib: lib.nn.Bilinear(3, 4, 5))
    check_module(g, t, rand(2, 3), rand(2, 4, seed=1))


@pytest.mark.parametrize("make,shape", [
    (lambda lib: lib.nn.BatchNorm1d(4), (6, 4)),
    (lambda lib: lib.nn.BatchNorm1d(4, momentum=None), (6, 4, 3)),
    (lambda lib: lib.nn.BatchNorm2d(3, momentum=0.3, eps=1e-3), (4, 3, 5, 5)),
    (lambda lib: lib.nn.BatchNorm2d(3, affine=False), (4, 3, 2, 2)),
    (lambda lib: lib.nn.BatchNorm2d(3, track_running_stats=False), (4, 3, 2, 2)),
    pytest.param(lambda lib: lib.nn.BatchNorm1d(4, bias=False), (6, 4), marks=pytest.mark.skipif(
        "bias" not in inspect.signature(torch.nn.BatchNorm1d).parameters,
        reason="this torch's BatchNorm1d has no bias= keyword (torch 2.13 has it)")),
])
def test_batch_norm_train_then_eval(make, shape):
    g, t = pair(make)
    for step in range(3):
        # Training: batch statistics, running stats and num_batches_tracked updated (compared by check_module).
        check_module(g, t, rand(*shape, seed=step))
        g.load_state_dict({k: to_genesis(v) for k, v in t.state_dict().items()})
    g.eval()
    t.eval()
    check_module(g, t, rand(*shape, seed=10))


def test_batch_norm_errors():
    bn = nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match="more than 1 value per channel") as info:
        bn(genesis.ones(1, 3))
    with pytest.raises(ValueError) as torch_info:
        torch.nn.BatchNorm1d(3)(torch.ones(1, 3))
    # The size printed as torch prints it: genesis.Size([1, 3]) where torch has torch.Size([1, 3]).
    assert str(info.value).replace("genesis.", "torch.") == str(torch_info.value)
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        bn(genesis.ones(1, 3, 2, 2))
    bn.eval()
    assert bn(genesis.ones(1, 3)).shape == (1, 3)


@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 1}, {"padding_idx": -1}, {"scale_grad_by_freq": True}])
def test_embedding(kwargs):
    g, t = pair(lambda lib: lib.nn.Embedding(6, 3, **kwargs))
    idx = torch.tensor([[0, 1, 5], [1, 1, 2]])
    check_module(g, t, idx)
    if "padding_idx" in kwargs:
        fresh = nn.Embedding(6, 3, **kwargs)
        assert float(fresh.weight[kwargs["padding_idx"]].abs().sum()) == 0.0


def test_embedding_from_pretrained():
    w = genesis.randn(4, 3)
    emb = nn.Embedding.from_pretrained(w)
    assert not emb.weight.requires_grad and emb.weight.data_ptr() == w.data_ptr()
    emb2 = nn.Embedding.from_pretrained(w, freeze=False, padding_idx=0)
    assert emb2.weight.requires_grad and emb2.padding_idx == 0
    t = torch.nn.Embedding.from_pretrained(to_torch(w), padding_idx=0)
    assert repr(emb2) == repr(t)
    with pytest.raises(AssertionError):
        nn.Embedding.from_pretrained(genesis.ones(3))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bias,add_bias_kv,add_zero_attn", [(True, False, False), (False, False, False),
                                                           (True, True, True)])
def test_multihead_attention(batch_first, bias, add_bias_kv, add_zero_attn):
    def make(lib):
        return lib.nn.MultiheadAttention(8, 2, bias=bias, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn,
                                         batch_first=batch_first)
    g, t = pair(make)
    shape_q, shape_k = ((2, 5, 8), (2, 6, 8)) if batch_first else ((5, 2, 8), (6, 2, 8))
    q, k, v = rand(*shape_q), rand(*shape_k, seed=1), rand(*shape_k, seed=2)
    check_module(g, t, q, k, v)
    kpm = torch.zeros(2, 6, dtype=torch.bool)
    kpm[0, -2:] = True
    attn_mask = torch.zeros(5, 6, dtype=torch.bool)
    attn_mask[:, 3] = True
    check_module(g, t, q, k, v, kpm, attn_mask,
                 call=lambda m, q, k, v, kpm, am: m(q, k, v, key_padding_mask=kpm, attn_mask=am))
    check_module(g, t, q, k, v, call=lambda m, q, k, v: m(q, k, v, need_weights=False)[0])
    check_module(g, t, q, k, v, call=lambda m, q, k, v: m(q, k, v, average_attn_weights=False))
    check_module(g, t, q, k, v, rand(5, 6, seed=3, requires_grad=False),
                 call=lambda m, q, k, v, am: m(q, k, v, attn_mask=am))


def test_multihead_attention_fully_padded_sequence():
    # Without the weights, a query that may attend no key gets zero attention (torch's scaled_dot_product_attention);
    # the returned weights of such a row are NaN in both.
    g, t = pair(lambda lib: lib.nn.MultiheadAttention(8, 2, batch_first=True))
    x = rand(2, 3, 8)
    kpm = torch.tensor([[True, True, True], [False, False, True]])
    check_module(g, t, x, kpm, call=lambda m, x, p: m(x, x, x, key_padding_mask=p, need_weights=False)[0])
    tg, tt = pair(lambda lib: lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True))
    check_module(tg, tt, x, kpm, call=lambda m, x, p: m(x, src_key_padding_mask=p))


def test_multihead_attention_self_and_kdim_and_unbatched():
    g, t = pair(lambda lib: lib.nn.MultiheadAttention(6, 3, kdim=4, vdim=5))
    check_module(g, t, rand(3, 2, 6), rand(4, 2, 4, seed=1), rand(4, 2, 5, seed=2))
    g, t = pair(lambda lib: lib.nn.MultiheadAttention(6, 2))
    x = rand(4, 6)
    check_module(g, t, x, call=lambda m, x: m(x, x, x))
    causal = torch.ones(4, 4, dtype=torch.bool).triu(1)
    check_module(g, t, rand(4, 2, 6), causal, call=lambda m, x, c: m(x, x, x, attn_mask=c, is_causal=True))


def _mha_error(lib, call) -> tuple[type, str]:
    mha = lib.nn.MultiheadAttention(8, 2)
    q, k = lib.ones(4, 2, 8), lib.ones(5, 2, 8)
    with pytest.raises((AssertionError, RuntimeError)) as info:
        call(lib, mha, q, k)
    return type(info.value), str(info.value).replace("torch.Size", "genesis.Size")


@pytest.mark.parametrize("call", [
    lambda lib, m, q, k: m(q, k, k, attn_mask=lib.zeros(3, 4, 5)),  # 3-D mask not (N * H, L, S)
    lambda lib, m, q, k: m(q, k, k, attn_mask=lib.zeros(4, 6)),
    lambda lib, m, q, k: m(q, k, k, attn_mask=lib.zeros(1, 1, 4, 5)),
    lambda lib, m, q, k: m(q, k, k, key_padding_mask=lib.zeros(2, 4, dtype=lib.bool)),
    lambda lib, m, q, k: m(q, k, k, key_padding_mask=lib.zeros(3, 5, dtype=lib.bool)),
    lambda lib, m, q, k: m(q, k, k, key_padding_mask=lib.zeros(2, 5, 1, dtype=lib.bool)),
    lambda lib, m, q, k: m(q, k, k[:4]),
    lambda lib, m, q, k: m(q, k[0], k[0]),
    lambda lib, m, q, k: m(q[:, 0], k[:, 0], k[:, 0], attn_mask=lib.zeros(3, 4, 5)),
    lambda lib, m, q, k: m(q[0], k, k),
    lambda lib, m, q, k: m(q, k, k, attn_mask=lib.zeros(4, 5, dtype=lib.long)),
    lambda lib, m, q, k: m(q, k, k, key_padding_mask=lib.zeros(2, 5, dtype=lib.int32)),
])
def test_multihead_attention_checks_shapes_and_mask_types_as_torch(call):
    # torch's exception types and messages (sizes printed as a Size of each library).
    assert _mha_error(genesis, call) == _mha_error(torch, call)


def test_multihead_attention_merge_masks_and_mixed_mask_warning():
    for lib in (torch, genesis):
        mha = lib.nn.MultiheadAttention(4, 2, batch_first=True)
        x = lib.ones(3, 5, 4)
        kpm = lib.tensor([[False, False, False, True, True]] * 3)
        causal = lib.ones(5, 5, dtype=lib.bool).triu(1)
        merged, kind = mha.merge_masks(causal, kpm, x)
        assert kind == 2 and tuple(merged.shape) == (3, 2, 5, 5) and merged.dtype == lib.bool
        assert merged.sum().item() == 3 * 2 * 13  # per head: the causal triangle (10) or a padded key (3 more)
        assert mha.merge_masks(None, kpm, x)[1] == 1 and mha.merge_masks(None, None, x) == (None, None)
        with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask is deprecated"):
            mha(x, x, x, key_padding_mask=kpm, attn_mask=lib.zeros(5, 5))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def hf_rope_reference(x: torch.Tensor, position_ids: torch.Tensor, theta: float) -> torch.Tensor:
    """HF Qwen2's rotary embedding: float32 inv_freq and angles, cos/sin cast to x's dtype, rotate_half."""
    dim = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    freqs = (inv_freq[None, :, None] @ position_ids[:, None, :].float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(x.dtype).unsqueeze(1), emb.sin().to(x.dtype).unsqueeze(1)
    return x * cos + rotate_half(x) * sin


def test_rotary_embedding_matches_hf_convention():
    rope = nn.RotaryEmbedding(8, max_position_embeddings=32, theta=1000.0).to(DEVICE)
    assert list(rope.state_dict()) == []  # tables are non-persistent buffers
    assert rope.cos_cached.shape == (32, 8)
    pos = torch.tensor([[0, 1, 2, 3, 4], [7, 9, 11, 13, 30]])
    x = rand(2, 3, 5, 8, dtype=torch.float32)
    want = hf_rope_reference(x, pos, 1000.0)
    got = rope.rotate(to_genesis(x), to_genesis(pos))
    torch.testing.assert_close(to_torch(got), want, rtol=1e-6, atol=1e-6)
    default = rope.rotate(to_genesis(x))
    torch.testing.assert_close(to_torch(default), hf_rope_reference(x, torch.arange(5).expand(2, 5), 1000.0),
                               rtol=1e-6, atol=1e-6)


def test_rope_function_layouts_and_gradient():
    cos, sin = nn.functional.rope_tables(6, 16, device=DEVICE)
    tcos, tsin = to_torch(cos).double(), to_torch(sin).double()
    pos = torch.tensor([[3, 4, 5, 6]])

    def f(lib, x):
        if lib is torch:
            c, s = tcos[pos].unsqueeze(2), tsin[pos].unsqueeze(2)
            return x * c + rotate_half(x) * s
        return lib.nn.functional.rope(x, cos.double(), sin.double(), to_genesis(pos), unsqueeze_dim=2)
    check(f, rand(1, 4, 2, 6))  # (B, T, H, D)
    check(lambda lib, x: x * tcos[:4].unsqueeze(0) + rotate_half(x) * tsin[:4].unsqueeze(0) if lib is torch else
          lib.nn.functional.rope(x, cos.double(), sin.double()), rand(2, 3, 4, 6))
    out = genesis.empty(2, 3, 4, 6, dtype=genesis.float64, device=DEVICE)
    x = to_genesis(rand(2, 3, 4, 6, requires_grad=False))
    assert nn.functional.rope(x, cos.double(), sin.double(), out=out) is out
    # Tables already broadcastable to x (as many dims) are used as they are.
    c4, s4 = tcos[pos].unsqueeze(1), tsin[pos].unsqueeze(1)  # (1, 1, T, D)
    check(lambda lib, x: x * c4 + rotate_half(x) * s4 if lib is torch else
          lib.nn.functional.rope(x, to_genesis(c4, False), to_genesis(s4, False)), rand(1, 3, 4, 6))


def test_feed_forward_swiglu_matches_hf_mlp():
    class HFMLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate_proj = torch.nn.Linear(6, 10, bias=False)
            self.up_proj = torch.nn.Linear(6, 10, bias=False)
            self.down_proj = torch.nn.Linear(10, 6, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))

    t = HFMLP().double()
    g = nn.FeedForwardSwiGLU(6, 10).to(DEVICE, genesis.float64)
    check_module(g, t, rand(2, 3, 6))


def test_swiglu_causal_softmax_random_sample():
    check(lambda lib, x: (lib.nn.functional.silu(x[..., :4]) * x[..., 4:]) if lib is torch else
          lib.nn.functional.swiglu(x), rand(3, 8))
    scores = rand(2, 3, 5)
    mask = torch.ones(3, 5, dtype=torch.bool).tril(2)  # query i sees keys j <= i + (5 - 3)
    check(lambda lib, s: torch.softmax(s.masked_fill(~mask, float("-inf")), -1) if lib is torch else
          lib.nn.functional.causal_softmax(s), scores)
    logits = genesis.tensor([[0.0, 5.0, 1.0, -2.0], [3.0, 0.0, 0.0, 2.9]], device=DEVICE)
    assert nn.functional.random_sample(logits, temperature=0).tolist() == [1, 0]
    assert nn.functional.random_sample(logits, top_k=1).tolist() == [1, 0]
    gen = genesis.Generator().manual_seed(0)
    draws = nn.functional.random_sample(logits.expand(500, 2, 4).reshape(1000, 4), top_k=2, generator=gen)
    assert set(draws[0::2].tolist()) <= {1, 2} and set(draws[1::2].tolist()) <= {0, 3}
    nucleus = nn.functional.random_sample(logits.expand(200, 2, 4).reshape(400, 4), top_p=0.5, generator=gen)
    # Row 0 is dominated by token 1 (p > 0.9); row 1 needs tokens 0 (p = 0.498) and 3 to reach 0.5.
    assert set(nucleus[0::2].tolist()) == {1} and set(nucleus[1::2].tolist()) == {0, 3}
    counts = torch.bincount(torch.tensor(nn.functional.random_sample(
        genesis.zeros(4000, 4, device=DEVICE), generator=gen).tolist()), minlength=4)
    assert counts.min() > 850
    with pytest.raises(ValueError):
        nn.functional.random_sample(logits, top_p=0.0)


def test_module_default_init_distributions():
    genesis.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / 400 ** 0.5
    w = to_torch(lin.weight)
    assert w.abs().max() <= bound and w.abs().max() > 0.95 * bound
    assert abs(w.std().item() - bound / 3 ** 0.5) < 0.01 * bound
    conv = nn.Conv2d(16, 32, 3)
    cb = 1 / (16 * 9) ** 0.5
    assert to_torch(conv.weight).abs().max() <= cb and to_torch(conv.bias).abs().max() <= cb
    emb = to_torch(nn.Embedding(1000, 64).weight)
    assert abs(emb.mean().item()) < 0.02 and abs(emb.std().item() - 1) < 0.02
    ln = nn.LayerNorm(7)
    assert to_torch(ln.weight).eq(1).all() and to_torch(ln.bias).eq(0).all()
    mha = nn.MultiheadAttention(8, 2)
    assert to_torch(mha.in_proj_bias).eq(0).all() and to_torch(mha.out_proj.bias).eq(0).all()
    genesis.manual_seed(5)
    a = to_torch(nn.Linear(3, 3).weight)
    genesis.manual_seed(5)
    assert torch.equal(a, to_torch(nn.Linear(3, 3).weight))
    assert not nn.Linear(3, 3).weight.grad_fn


@pytest.mark.parametrize("make,exc", [
    (lambda lib: lib.nn.Embedding(4, 2, padding_idx=4), AssertionError),
    (lambda lib: lib.nn.Embedding(4, 2, padding_idx=-5), AssertionError),
    (lambda lib: lib.nn.GroupNorm(3, 4), ValueError),
    (lambda lib: lib.nn.Dropout(1.5), ValueError),
    (lambda lib: lib.nn.Conv2d(3, 4, 3, padding="full"), ValueError),
    (lambda lib: lib.nn.Conv2d(3, 4, 3, padding_mode="mirror"), ValueError),
    (lambda lib: lib.nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect"), ValueError),
    (lambda lib: lib.nn.MultiheadAttention(10, 3), AssertionError),
])
def test_bad_layer_arguments_raise_like_torch(make, exc):
    with pytest.raises(exc):
        make(torch)
    with pytest.raises(exc):
        make(genesis)


def test_layer_input_errors():
    with pytest.raises(RuntimeError, match="channels"):
        nn.Conv2d(3, 4, 3).to(DEVICE)(genesis.ones(1, 2, 5, 5, device=DEVICE))
    with pytest.raises(RuntimeError, match="normalized_shape"):
        nn.LayerNorm(4).to(DEVICE)(genesis.ones(2, 5, device=DEVICE))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3).to(DEVICE)(genesis.ones(2, 3, device=DEVICE))
