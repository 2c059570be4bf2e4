"""SimCLR pre-training with hand-written LARS and LAMB optimizers (the reference repositories' code): NT-Xent over a
2N batch, trust ratios kept as 0-d tensors and passed as ``alpha``, per-parameter norms kept in the optimizer state,
a checkpoint of the optimizer reloaded into a fresh one, warmup + cosine through SequentialLR, and a tied projector
listed twice in a parameter group."""
import io
import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.optimizer import Optimizer, required

losses = []


class LARS(Optimizer):
    """facebookresearch/barlowtwins: biases and norms (1-D) skip weight decay and adaptation."""

    def __init__(self, params, lr=required, weight_decay=0.0, momentum=0.9, eta=0.001):
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum, eta=eta))

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            for p in g["params"]:
                dp = p.grad
                if dp is None:
                    continue
                if p.ndim != 1:
                    dp = dp.add(p, alpha=g["weight_decay"])
                    param_norm, update_norm = torch.norm(p), torch.norm(dp)
                    one = torch.ones_like(param_norm)
                    q = torch.where(param_norm > 0.0,
                                    torch.where(update_norm > 0, (g["eta"] * param_norm / update_norm), one), one)
                    dp = dp.mul(q)
                state = self.state[p]
                if "mu" not in state:
                    state["mu"] = torch.zeros_like(p)
                mu = state["mu"]
                mu.mul_(g["momentum"]).add_(dp)
                p.add_(mu, alpha=-g["lr"])


class Lamb(Optimizer):
    """cybertronai/pytorch-lamb: the trust ratio stays a 0-d tensor and scales ``alpha``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.data
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p.data)
                    state["exp_avg_sq"] = torch.zeros_like(p.data)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                beta1, beta2 = group["betas"]
                state["step"] += 1
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                weight_norm = p.data.pow(2).sum().sqrt().clamp(0, 10)
                adam_step = exp_avg / exp_avg_sq.sqrt().add(group["eps"])
                if group["weight_decay"] != 0:
                    adam_step.add_(p.data, alpha=group["weight_decay"])
                adam_norm = adam_step.pow(2).sum().sqrt()
                trust_ratio = 1 if weight_norm == 0 or adam_norm == 0 else weight_norm / adam_norm
                state["weight_norm"], state["adam_norm"], state["trust_ratio"] = weight_norm, adam_norm, trust_ratio
                p.data.add_(adam_step, alpha=-group["lr"] * trust_ratio)


class SimCLR(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(10, 24), nn.BatchNorm1d(24), nn.ReLU(), nn.Linear(24, 16))
        self.projector = nn.Sequential(nn.Linear(16, 16, bias=False), nn.BatchNorm1d(16), nn.ReLU(),
                                       nn.Linear(16, 8, bias=False))
        with torch.no_grad():
            for i, p in enumerate(self.parameters()):
                p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i).view_as(p) * 0.3 + 0.05)

    def forward(self, x):
        return self.projector(self.backbone(x))


def nt_xent(z1, z2, temperature=0.5):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = z1.shape[0]
    sim = (z @ z.T / temperature).masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    return F.cross_entropy(sim, torch.cat([torch.arange(n, 2 * n), torch.arange(n)]))


data = torch.sin(torch.linspace(-3, 3, 12 * 10).view(12, 10) * 2) + 0.3 * torch.cos(torch.arange(120.0).view(12, 10))


def views(step):
    noise = 0.05 * torch.cos(torch.arange(120.0).view(12, 10) * (step + 1))
    return data * 1.1 + noise, data.flip(1) * 0.9 - noise


def train(model, opt, sched, steps):
    for step in range(steps):
        a, b = views(step)
        loss = nt_xent(model(a), model(b))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        losses.append(opt.param_groups[0]["lr"])


def schedule(opt):
    return torch.optim.lr_scheduler.SequentialLR(opt, [
        torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=2),
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=1e-4)], milestones=[2])


model = SimCLR()
lars = LARS(model.parameters(), lr=0.2, weight_decay=1e-5)
train(model, lars, schedule(lars), 5)

model = SimCLR()
lamb = Lamb(model.parameters(), lr=0.02, weight_decay=0.01)
lamb_sched = schedule(lamb)
train(model, lamb, lamb_sched, 3)
state = lamb.state[model.backbone[0].weight]
losses += [state["step"], state["trust_ratio"].item(), tuple(state["adam_norm"].shape) == ()]

# A checkpoint of the LAMB run, resumed in a fresh model and optimizer: the 0-d norms load as they are.
buf = io.BytesIO()
torch.save({"model": model.state_dict(), "opt": lamb.state_dict(), "sched": lamb_sched.state_dict()}, buf)
buf.seek(0)
ckpt = torch.load(buf)
resumed = SimCLR()
resumed.load_state_dict(ckpt["model"])
lamb2 = Lamb(resumed.parameters(), lr=0.02, weight_decay=0.01)
sched2 = schedule(lamb2)
lamb2.load_state_dict(ckpt["opt"])
sched2.load_state_dict(ckpt["sched"])
state = lamb2.state[resumed.backbone[0].weight]
losses += [state["step"], state["weight_norm"].item(), lamb2.param_groups[0]["lr"]]
train(resumed, lamb2, sched2, 2)

# The deprecated scale-first overload next to a 0-d alpha: both still step.
p = torch.ones(3)
p.add_(torch.full((3,), 2.0), alpha=torch.tensor(-0.25))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    p.add_(-0.25, torch.ones(3))
losses += p.tolist() + ["This overload of add_ is deprecated" in str(caught[0].message)]
try:
    p.add_(torch.ones(3), alpha=torch.tensor([1.0, 2.0, 3.0]))
except TypeError as e:
    losses.append(str(e) == "add_(): argument 'alpha' must be Number, not Tensor")

# A projector tied to the backbone's last layer, gathered twice: torch warns and steps it once per appearance.
model = SimCLR()
params = list(model.backbone.parameters()) + list(model.projector.parameters()) + list(model.backbone[3].parameters())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    adam = torch.optim.Adam(params, lr=1e-2)
losses.append("duplicate parameters" in str(caught[0].message))
for step in range(3):
    a, b = views(step)
    loss = nt_xent(model(a), model(b))
    adam.zero_grad()
    loss.backward()
    adam.step()
    losses.append(loss.item())
losses += adam.state_dict()["param_groups"][0]["params"][-2:]
losses.append(float(adam.state[model.backbone[3].weight]["step"]))
losses.append(math.isfinite(model.backbone[3].weight.sum().item()))
