"""A DDPM/DDIM toolkit in the style of popular public repositories: a cosine beta schedule (float64, cumprod,
gather by timestep and view(-1, 1, 1, 1)), a small UNet-style denoiser with sinusoidal timestep embeddings,
GroupNorm, SiLU and spatial self-attention through bmm; noise-prediction training; DDIM sampling with
classifier-free guidance (cat / chunk) and x0 clamping; a VQ codebook (expanded squared distances, argmin,
straight-through estimator, EMA updates with index_add_ / scatter_add_); the image-saving math."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

losses = []
torch.manual_seed(0)


def cosine_beta_schedule(timesteps, s=0.008):
    x = torch.linspace(0, timesteps, timesteps + 1, dtype=torch.float64)
    alphas_cumprod = torch.cos(((x / timesteps) + s) / (1 + s) * math.pi * 0.5) ** 2
    alphas_cumprod = alphas_cumprod / alphas_cumprod[0]
    return torch.clip(1 - (alphas_cumprod[1:] / alphas_cumprod[:-1]), 0, 0.999)


def extract(a, t, x_shape):
    return a.gather(-1, t).reshape(t.shape[0], *((1,) * (len(x_shape) - 1)))


def timestep_embedding(t, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class AttnBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = nn.GroupNorm(2, c)
        self.qkv = nn.Conv2d(c, 3 * c, 1)
        self.proj_out = nn.Conv2d(c, c, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, h * w).unbind(1)
        w_ = torch.softmax(torch.bmm(q.permute(0, 2, 1), k) * (int(c) ** (-0.5)), dim=2)
        return x + self.proj_out(torch.bmm(v, w_.permute(0, 2, 1)).reshape(b, c, h, w))


class Denoiser(nn.Module):
    def __init__(self, ch=8, num_classes=3):
        super().__init__()
        self.ch = ch
        self.temb = nn.Sequential(nn.Linear(ch, ch), nn.SiLU(), nn.Linear(ch, ch))
        self.label_emb = nn.Embedding(num_classes + 1, ch)
        self.conv_in = nn.Conv2d(2, ch, 3, padding=1)
        self.down = nn.Conv2d(ch, ch, 3, stride=2, padding=1)
        self.attn = AttnBlock(ch)
        self.norm_out = nn.GroupNorm(4, 2 * ch)
        self.conv_out = nn.Conv2d(2 * ch, 2, 3, padding=1)

    def forward(self, x, t, y):
        emb = self.temb(timestep_embedding(t, self.ch)) + self.label_emb(y)
        h0 = F.silu(self.conv_in(x) + emb[:, :, None, None])
        h = self.attn(F.silu(self.down(h0)))
        h = F.interpolate(h, scale_factor=2.0, mode="nearest")
        return self.conv_out(F.silu(self.norm_out(torch.cat([h, h0], dim=1))))


T = 100
betas = cosine_beta_schedule(T).float()
alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
sqrt_ac, sqrt_1m_ac = alphas_cumprod.sqrt(), (1.0 - alphas_cumprod).sqrt()
losses += [betas.sum().item(), alphas_cumprod[-1].item()]

model = Denoiser()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i).view_as(p) * 0.2)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
x0 = torch.cos(torch.arange(4 * 2 * 8 * 8).float() * 0.1).view(4, 2, 8, 8)
noise = torch.sin(torch.arange(4 * 2 * 8 * 8).float() * 0.7).view(4, 2, 8, 8)
y = torch.tensor([0, 1, 2, 1])
for step in range(3):
    t = torch.tensor([3, 17, 61, 99]) - step
    x_t = extract(sqrt_ac, t, x0.shape) * x0 + extract(sqrt_1m_ac, t, x0.shape) * noise
    loss = F.mse_loss(model(x_t, t, y), noise)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    losses.append(loss.item())
t_rand = torch.randint(0, T, (8,), generator=torch.Generator().manual_seed(3))
losses += [float(t_rand.dtype == torch.int64), float(((t_rand >= 0) & (t_rand < T)).all())]

model.eval()
x = torch.cos(torch.arange(2 * 2 * 8 * 8, dtype=torch.float32) * 0.3).reshape(2, 2, 8, 8)
labels, null = torch.tensor([0, 2]), torch.full((2,), 3)
timesteps = torch.linspace(T - 1, 0, 6).long()
for i, t in enumerate(timesteps):
    t_b = torch.full((x.shape[0],), int(t), dtype=torch.long)
    with torch.no_grad():
        eps_cond, eps_uncond = model(torch.cat([x, x]), torch.cat([t_b, t_b]), torch.cat([labels, null])).chunk(2)
    eps = eps_uncond + 3.0 * (eps_cond - eps_uncond)
    a_t = alphas_cumprod.gather(0, t_b).view(-1, 1, 1, 1)
    a_prev = alphas_cumprod[timesteps[i + 1]] if i + 1 < len(timesteps) else torch.tensor(1.0)
    pred_x0 = ((x - (1 - a_t).sqrt() * eps) / a_t.sqrt()).clamp(-1.0, 1.0)
    x = a_prev.sqrt() * pred_x0 + (1 - a_prev).sqrt() * eps
    losses.append(x.mean().item())
img = (x.clamp(-1, 1) + 1) / 2
arr = img.mul(255).add_(0.5).clamp_(0, 255).permute(0, 2, 3, 1).to("cpu", torch.uint8).numpy()
losses += [float(arr.astype("int64").sum()), float(arr.shape[-1])]

# VQ codebook: expanded distances, straight-through estimator, commitment loss, EMA update.
K, D = 6, 2
codebook = nn.Embedding(K, D)
with torch.no_grad():
    codebook.weight.copy_(torch.cos(torch.arange(K * D).float()).view(K, D))
z = x.detach().requires_grad_(True)
flat = z.permute(0, 2, 3, 1).reshape(-1, D)
dist = flat.pow(2).sum(1, keepdim=True) - 2 * flat @ codebook.weight.t() + codebook.weight.pow(2).sum(1)
idx = dist.argmin(dim=1)
quant = codebook(idx).view(2, 8, 8, D).permute(0, 3, 1, 2)
vq_loss = F.mse_loss(quant, z.detach()) + 0.25 * F.mse_loss(quant.detach(), z)
quant_st = z + (quant - z).detach()
(vq_loss + quant_st.square().mean()).backward()
losses += [vq_loss.item(), z.grad.abs().sum().item(), codebook.weight.grad.abs().sum().item()]
counts = torch.zeros(K).scatter_add_(0, idx, torch.ones_like(idx, dtype=torch.float))
embed_sum = torch.zeros(K, D).index_add_(0, idx, flat.detach())
cluster_size = torch.ones(K).mul_(0.99).add_(counts, alpha=0.01)
embed_avg = codebook.weight.detach().clone().mul_(0.99).add_(embed_sum, alpha=0.01)
n = cluster_size.sum()
new_codebook = embed_avg / ((cluster_size + 1e-5) / (n + K * 1e-5) * n).unsqueeze(1)
onehot = F.one_hot(idx, K).float()
perplexity = torch.exp(-(onehot.mean(0) * torch.log(onehot.mean(0) + 1e-10)).sum())
losses += counts.tolist() + [new_codebook.sum().item(), perplexity.item()]
