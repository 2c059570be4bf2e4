"""LLaMA-style decoder from scratch (RMSNorm, rotary cos/sin caches with rotate_half, grouped-query attention via
expand and repeat_interleave, SwiGLU, tied causal mask), trained with AdamW and clipping; CUDA housekeeping calls
that a CPU run makes too."""
import gc
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, max_pos=64, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        t = torch.arange(max_pos, dtype=self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos()[None, None, :, :], persistent=False)
        self.register_buffer("sin_cached", emb.sin()[None, None, :, :], persistent=False)

    def forward(self, x, seq_len):
        cos, sin = self.cos_cached[:, :, :seq_len, ...], self.sin_cached[:, :, :seq_len, ...]
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids):
    cos = cos.squeeze(1).squeeze(0)
    sin = sin.squeeze(1).squeeze(0)
    cos = cos[position_ids].unsqueeze(1)
    sin = sin[position_ids].unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv):
        super().__init__()
        self.n_heads, self.n_kv, self.hd = n_heads, n_kv, dim // n_heads
        self.q_proj = nn.Linear(dim, n_heads * self.hd, bias=False)
        self.k_proj = nn.Linear(dim, n_kv * self.hd, bias=False)
        self.v_proj = nn.Linear(dim, n_kv * self.hd, bias=False)
        self.o_proj = nn.Linear(n_heads * self.hd, dim, bias=False)
        self.rotary_emb = RotaryEmbedding(self.hd)

    def forward(self, x, position_ids, mask):
        bsz, q_len, _ = x.size()
        q = self.q_proj(x).view(bsz, q_len, self.n_heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.n_kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.n_kv, self.hd).transpose(1, 2)
        cos, sin = self.rotary_emb(v, seq_len=q_len)
        q, k = apply_rotary_pos_emb(q, k, cos, sin, position_ids)
        k = repeat_kv(k, self.n_heads // self.n_kv)
        v = torch.repeat_interleave(v, dim=1, repeats=self.n_heads // self.n_kv)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        attn_weights = attn_weights + mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(attn_weights, v)
        out = out.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(out)


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, dim=32, n_heads=4, n_kv=2):
        super().__init__()
        self.self_attn = Attention(dim, n_heads, n_kv)
        self.mlp = MLP(dim, 64)
        self.input_layernorm = RMSNorm(dim)
        self.post_attention_layernorm = RMSNorm(dim)

    def forward(self, x, pos, mask):
        x = x + self.self_attn(self.input_layernorm(x), pos, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Model(nn.Module):
    def __init__(self, vocab=50, dim=32):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Block(dim) for _ in range(2)])
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        B, T = ids.shape
        pos = torch.arange(0, T, dtype=torch.long).unsqueeze(0).expand(B, -1)
        mask = torch.full((T, T), torch.finfo(torch.float32).min)
        mask = torch.triu(mask, diagonal=1)[None, None]
        h = self.embed_tokens(ids)
        for layer in self.layers:
            h = layer(h, pos, mask)
        return self.lm_head(self.norm(h))


torch.manual_seed(0)
model = Model()
with torch.no_grad():
    for i, (n, p) in enumerate(model.named_parameters()):
        p.copy_(0.2 * torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i).reshape(p.shape))
        if "norm" in n:
            p.fill_(1.0)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
ids = (torch.arange(2 * 12).reshape(2, 12) * 7) % 50
losses = []
for _ in range(6):
    logits = model(ids[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    losses.append(loss.item())
print(f"peak memory {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
gc.collect()
torch.cuda.empty_cache()
print(losses)
