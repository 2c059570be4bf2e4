"""Lazy R1 regularization as StyleGAN2 runs it (the penalty in a backward pass of its own) over small discriminators
built with the piecewise-linear activations GAN code uses (ReLU and LeakyReLU in place, ReLU6, Hardtanh, Threshold,
Hardshrink, Softshrink): the penalty's backward reaches the biases under the activations as zero gradients, which
AdamW with weight decay still steps. Straight-through rounding (the node names of round / floor / ceil / trunc / sign,
an infinite gradient into the rounding), and smooth-L1 / Huber feature matching whose curvature enters a double
backward where the features coincide. ``losses`` collects values and True/False flags."""

import torch
import torch.nn as nn
import torch.nn.functional as F

losses = []

ACTIVATIONS = {
    "relu": lambda: nn.ReLU(inplace=True),
    "leaky": lambda: nn.LeakyReLU(0.2, inplace=True),
    "relu6": lambda: nn.ReLU6(),
    "hardtanh": lambda: nn.Hardtanh(-0.5, 0.5),
    "threshold": lambda: nn.Threshold(0.05, -0.1),
    "hardshrink": lambda: nn.Hardshrink(0.1),
    "softshrink": lambda: nn.Softshrink(0.1),
}


def make_discriminator(act):
    d = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), act(), nn.Conv2d(4, 4, 3, stride=2, padding=1), act(),
                      nn.Flatten(), nn.Linear(4 * 4 * 4, 1))
    with torch.no_grad():
        for i, p in enumerate(d.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.83 + i * 0.5).reshape(p.shape) * 0.4)
    return d


real = torch.tanh(torch.linspace(-2, 2, 4 * 64).reshape(4, 1, 8, 8))
fake = torch.cos(torch.linspace(-3, 3, 4 * 64).reshape(4, 1, 8, 8))
for act in ACTIVATIONS.values():
    d = make_discriminator(act)
    opt = torch.optim.AdamW(d.parameters(), lr=1e-2, betas=(0.0, 0.99), weight_decay=0.1)
    for _ in range(3):
        loss = F.softplus(d(fake)).mean() + F.softplus(-d(real)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        r = real.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(d(r).sum(), r, create_graph=True)
        r1 = g.pow(2).reshape(4, -1).sum(1).mean()
        opt.zero_grad()
        (5.0 * r1).backward()
        losses += [p.grad is None for p in d.parameters()]  # the last layer's bias gets none, the others zeros
        opt.step()
        losses += [loss.item(), r1.item()]
    losses.append(sum(p.abs().sum().item() for p in d.parameters()))
    if not getattr(d[1], "inplace", False):
        node = type(d[1](torch.linspace(-1, 1, 5, requires_grad=True)).grad_fn).__name__
        losses.append(node == type(d[1]).__name__.replace("ReLU6", "Hardtanh") + "Backward0")

# straight-through estimators over the rounding ops
z = torch.linspace(-2, 2, 9, requires_grad=True)
for op in (torch.round, torch.floor, torch.ceil, torch.trunc, torch.sign):
    q = op(z * 1.7)
    losses.append(type(q.grad_fn).__name__ == op.__name__.capitalize() + "Backward0")
    st = z + (q - z).detach()
    (gz,) = torch.autograd.grad((st * torch.arange(9.0)).sum() + (q * float("inf")).nan_to_num(0.0).sum(), z)
    losses += gz.tolist()

# feature matching where features coincide: the losses' curvature at a zero difference
feat = torch.tensor([0.0, 0.2, -0.4, 1.5], requires_grad=True)
fm = F.smooth_l1_loss(feat, torch.tensor([0.0, 0.0, 0.0, 1.5]), beta=0.5, reduction="sum")
(gf,) = torch.autograd.grad(fm, feat, create_graph=True)
(hf,) = torch.autograd.grad(gf.sum(), feat)
losses += gf.tolist() + hf.tolist()
hb = F.huber_loss(feat, torch.zeros(4), delta=0.3, reduction="sum")
(gh,) = torch.autograd.grad(hb, feat, create_graph=True)
losses += torch.autograd.grad(gh.sum(), feat)[0].tolist()
