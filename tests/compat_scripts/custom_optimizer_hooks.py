"""A fairseq/timm-style training loop around a user's Optimizer subclass (Lion): step and state-dict hooks, an int
step count kept through a state dict, manual loss scaling with overflow skips, flat parameter vectors, a scheduler
stepped after the optimizer, and a validation confusion matrix counted with 0-d tensor indices."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters


class Lion(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.data.mul_(1 - group["lr"] * group["weight_decay"])
                state = self.state[p]
                if len(state) == 0:
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["step"] = 0
                exp_avg = state["exp_avg"]
                beta1, beta2 = group["betas"]
                update = exp_avg * beta1 + p.grad * (1 - beta1)
                p.add_(torch.sign(update), alpha=-group["lr"])
                exp_avg.mul_(beta2).add_(p.grad, alpha=1 - beta2)
                state["step"] += 1
        return loss


model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.41 + i).reshape(p.shape) * 0.25)
X = torch.sin(torch.arange(40, dtype=torch.float32).reshape(10, 4))
Y = torch.arange(10) % 3
opt = Lion(model.parameters(), lr=1e-2, weight_decay=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
losses = []

calls = []
pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(len(o.state)))
post = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(-len(o.state)))
for _ in range(4):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), Y)
    loss.backward()
    opt.step()
    sched.step()
    losses += [loss.item(), sched.get_last_lr()[0]]
losses += calls
pre.remove()
post.remove()
opt.zero_grad()
F.cross_entropy(model(X), Y).backward()
opt.step()
losses += [len(calls), opt.state[model[0].weight]["step"]]

# State-dict hooks, and the user's int step count kept through a load.
opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
saved = copy.deepcopy(opt.state_dict())
losses += ["extra" in saved, saved["state"][0]["step"]]
resumed = Lion(model.parameters(), lr=1.0)
resumed.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
resumed.load_state_dict(saved)
losses += [resumed.param_groups[0]["lr"], isinstance(resumed.state[model[0].weight]["step"], int)]

# Manual loss scaling: an overflowing step is skipped and the scale halved.
scale = 2.0 ** 7
params = list(model.parameters())
for it in range(3):
    opt.zero_grad(set_to_none=True)
    (F.cross_entropy(model(X), Y) * scale).backward()
    if it == 1:
        params[0].grad[0, 0] = float("inf")
    for p in params:
        p.grad.data.mul_(1.0 / scale)
    gnorm = torch.nn.utils.clip_grad_norm_(params, max_norm=1.0)
    if not torch.isfinite(gnorm):
        scale /= 2
        losses.append(-1.0)
        continue
    losses.append(gnorm.item())
    opt.step()
losses.append(scale)

# Flat parameter vectors.
vec = parameters_to_vector(model.parameters())
losses += [vec.numel(), vec.sum().item()]
vector_to_parameters(vec * 0.5, model.parameters())
losses.append(parameters_to_vector(model.parameters()).sum().item())

# Validation: accuracy and a confusion matrix counted element by element.
model.eval()
with torch.no_grad():
    preds = model(X).argmax(dim=1)
conf = torch.zeros(3, 3, dtype=torch.long)
for t, p in zip(Y, preds):
    conf[t, p] += 1
losses += conf.flatten().tolist()
losses += [preds.eq(Y).sum().item(), torch.equal(conf, torch.bincount(Y * 3 + preds, minlength=9).reshape(3, 3))]
losses = [float(v) for v in losses]
print(losses)
