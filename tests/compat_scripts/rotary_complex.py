"""The rotary position embedding of the reference LLaMA implementation, written with complex numbers: frequencies
as unit complex numbers from torch.polar, query/key pairs viewed as complex, rotated by a product, viewed back as
real. A small attention score on the rotated queries and keys gives the loss; it is minimized for a few SGD steps,
so the gradients through view_as_complex / view_as_real / polar reach the projections."""

import torch
import torch.nn as nn


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    assert freqs_cis.shape == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


batch, seq, heads, head_dim = 2, 6, 2, 8
dim = heads * head_dim
wq = nn.Linear(dim, dim, bias=False)
wk = nn.Linear(dim, dim, bias=False)
with torch.no_grad():
    for i, p in enumerate([wq.weight, wk.weight]):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i).reshape(p.shape) * 0.3)
x = torch.cos(torch.arange(batch * seq * dim, dtype=torch.float32) * 0.11).reshape(batch, seq, dim)
freqs_cis = precompute_freqs_cis(head_dim, seq)
assert freqs_cis.dtype == torch.complex64 and freqs_cis.is_complex()
optimizer = torch.optim.SGD(list(wq.parameters()) + list(wk.parameters()), lr=0.05)
losses = []
for _ in range(3):
    xq = wq(x).view(batch, seq, heads, head_dim)
    xk = wk(x).view(batch, seq, heads, head_dim)
    xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
    scores = torch.einsum("bqhd,bkhd->bhqk", xq, xk) / head_dim ** 0.5
    loss = (scores.softmax(dim=-1) * scores).sum() / batch + 0.01 * (xq ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
# The rotation keeps norms: a check on the complex path itself.
z = torch.view_as_complex(xq.detach().float().reshape(*xq.shape[:-1], -1, 2))
losses.append((z.abs() ** 2).sum().item() / (xq.detach() ** 2).sum().item())
losses.append((z * freqs_cis.view(1, seq, 1, -1)).angle().mean().item())
# Gradients with respect to xq itself, through the complex product.
xq_leaf = x.view(batch, seq, heads, head_dim).clone().requires_grad_()
xq_out, xk_out = apply_rotary_emb(xq_leaf, xq_leaf * 0.5, freqs_cis)
weights = torch.cos(torch.arange(xq_out.numel(), dtype=torch.float32) * 0.3).reshape(xq_out.shape)
((xq_out * weights).sum() + (xk_out ** 2).sum()).backward()
losses.extend(xq_leaf.grad.reshape(-1)[::7].tolist())
print("losses", losses)
