"""Research-code autograd idioms: per-sample gradients with vmap(grad(functional_call)), a MAML inner loop with
create_graph, a WGAN-GP gradient penalty, a PINN residual with a Laplacian by nested autograd.grad, module backward
hooks on a module taking a constant tensor, vmap's randomness modes, and inference tensors refusing in-place updates
outside inference_mode. ``losses`` collects values, gradients and 1.0/0.0 flags."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

losses = []


def init_(module, shift=0.0):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i + shift).reshape(p.shape) * 0.5)
    return module


# Per-sample gradients (Opacus / the torch.func tutorial)
model = init_(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)))
params = {k: v.detach() for k, v in model.named_parameters()}
X = torch.linspace(-2, 2, 24).reshape(6, 4)
Y = torch.tensor([0, 1, 2, 0, 1, 2])


def sample_loss(params, x, y):
    return F.cross_entropy(functional_call(model, params, (x.unsqueeze(0),)), y.unsqueeze(0))


per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0))(params, X, Y)
losses += [per_sample[k].abs().sum().item() for k in sorted(per_sample)]
model.zero_grad()
F.cross_entropy(model(X[2:3]), Y[2:3]).backward()
losses.append(float(torch.allclose(model[0].weight.grad, per_sample["0.weight"][2], atol=1e-6)))

# MAML: two inner steps with create_graph, then a meta step
meta_opt = torch.optim.Adam(model.parameters(), lr=1e-2)
xs = torch.linspace(-1, 1, 8).unsqueeze(1).expand(8, 4)
for _ in range(2):
    meta_opt.zero_grad()
    fast = list(model.parameters())
    for _ in range(2):
        inner = F.cross_entropy(torch.func.functional_call(model, dict(zip(params, fast)), (xs,)), Y[:1].expand(8))
        grads = torch.autograd.grad(inner, fast, create_graph=True)
        fast = [p - 0.1 * g for p, g in zip(fast, grads)]
    outer = F.cross_entropy(functional_call(model, dict(zip(params, fast)), (xs + 0.5,)), Y[1:2].expand(8))
    outer.backward()
    meta_opt.step()
    losses.append(outer.item())

# WGAN-GP gradient penalty
critic = init_(nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1)), 1.0)
real, fake = torch.linspace(-1, 1, 12).reshape(4, 3), torch.linspace(1, -0.5, 12).reshape(4, 3)
alpha = torch.tensor([0.1, 0.4, 0.6, 0.9]).unsqueeze(1)
mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
score = critic(mixed)
g, = torch.autograd.grad(score, mixed, grad_outputs=torch.ones_like(score), create_graph=True)
penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
penalty.backward()
losses += [penalty.item(), critic[0].weight.grad.abs().sum().item()]

# PINN: Burgers residual and a Laplacian by nested autograd.grad
u_net = init_(nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1)), 2.0)
x = torch.linspace(-1, 1, 8).reshape(-1, 1).requires_grad_(True)
t = torch.linspace(0, 1, 8).reshape(-1, 1).requires_grad_(True)
u = u_net(torch.cat([x, t], dim=1))
u_x, u_t = torch.autograd.grad(u, (x, t), torch.ones_like(u), create_graph=True)
u_xx, = torch.autograd.grad(u_x, x, torch.ones_like(u_x), create_graph=True)
residual = (u_t + u * u_x - 0.01 / torch.pi * u_xx).pow(2).mean()
residual.backward()
losses += [residual.item(), u_net[0].weight.grad.abs().sum().item()]
xy = torch.linspace(0, 1, 8).reshape(4, 2).requires_grad_(True)
gxy = torch.autograd.grad(u_net(xy).sum(), xy, create_graph=True)[0]
laplacian = sum(torch.autograd.grad(gxy[:, d].sum(), xy, create_graph=True)[0][:, d] for d in range(2))
losses += laplacian.tolist()


# A full backward hook on a module called with a tensor that needs no gradient: its entry is zeros, not None
class Gate(nn.Module):
    def forward(self, a, mask):
        return a * mask


seen = []
gate = Gate()
gate.register_full_backward_hook(lambda m, gi, go: seen.append([-1.0 if g is None else g.sum().item() for g in gi]))
a = torch.ones(3, requires_grad=True)
gate(a, torch.tensor([1.0, 0.0, 2.0])).sum().backward()
gate(a, 3.0).sum().backward()
losses += seen[0] + seen[1] + a.grad.tolist()

# vmap's randomness modes: the default refuses a random draw
try:
    vmap(lambda r: r + torch.rand(3))(torch.zeros(2, 3))
    losses.append(0.0)
except RuntimeError as e:
    losses.append(float("randomness error mode" in str(e)))
same = vmap(lambda r: torch.rand(3) + r, randomness="same")(torch.zeros(4, 3))
losses.append(float(all(torch.equal(same[i], same[0]) for i in range(4))))
losses.append(float(vmap(lambda r: F.dropout(r, 0.0, training=True))(torch.ones(2, 3)).sum()))

# Inference tensors: readable anywhere, written in place only inside inference_mode
with torch.inference_mode():
    cache = torch.zeros(2, 3)
    cache.add_(1.0)
for write in (lambda c: c.add_(1.0), lambda c: c[0].zero_(), lambda c: c.copy_(torch.ones(2, 3))):
    try:
        write(cache)
        losses.append(0.0)
    except RuntimeError as e:
        losses.append(float(str(e).startswith("Inplace update to inference tensor outside InferenceMode")))
losses += [float(cache.is_inference()), float(cache.clone().add_(1.0).sum()), float(cache.sum())]
