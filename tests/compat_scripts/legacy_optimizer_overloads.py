"""Hand-written optimizers in the pre-1.5 style (the deprecated scale-first add_/addcmul_/addcdiv_ overloads),
set_default_tensor_type, and a replay buffer's numpy scalars on the left of tensor arithmetic; older scripts'
``loss.data[0]`` on a 0-dim tensor."""
import math
import warnings

import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable
from torch.optim.optimizer import Optimizer, required

warnings.simplefilter("ignore")
losses = []


class OldAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.data
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = grad.new().resize_as_(grad).zero_()
                    state["exp_avg_sq"] = torch.zeros_like(p.data)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                beta1, beta2 = group["betas"]
                state["step"] += 1
                if group["weight_decay"] != 0:
                    grad = grad.add(group["weight_decay"], p.data)
                exp_avg.mul_(beta1).add_(1 - beta1, grad)
                exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
                denom = exp_avg_sq.sqrt().add_(group["eps"])
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                step_size = group["lr"] * math.sqrt(bias_correction2) / bias_correction1
                p.data.addcdiv_(-step_size, exp_avg, denom)
        return loss


class OldSGD(Optimizer):
    def __init__(self, params, lr=required, momentum=0, dampening=0, weight_decay=0, nesterov=False):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d_p = p.grad.data
                if group["weight_decay"] != 0:
                    d_p.add_(group["weight_decay"], p.data)
                if group["momentum"] != 0:
                    param_state = self.state[p]
                    if "momentum_buffer" not in param_state:
                        buf = param_state["momentum_buffer"] = torch.clone(d_p).detach()
                    else:
                        buf = param_state["momentum_buffer"]
                        buf.mul_(group["momentum"]).add_(1 - group["dampening"], d_p)
                    if group["nesterov"]:
                        d_p = d_p.add(group["momentum"], buf)
                    else:
                        d_p = buf
                p.data.add_(-group["lr"], d_p)


def make_model(k):
    m = nn.Sequential(nn.Linear(3, 8), nn.Sigmoid(), nn.Linear(8, 1))
    for i, p in enumerate(m.parameters()):
        p.data.copy_(torch.sin(torch.arange(p.numel()).float() * 0.9 + i + k).view(p.size()) * 0.5)
    return m


X = Variable(torch.cos(torch.arange(60).float().view(20, 3) * 0.21))
Y = Variable((X ** 2).sum(1, keepdim=True) - 0.5)
for cls, kw in ((OldAdam, dict(lr=1e-2, weight_decay=1e-3)), (OldSGD, dict(lr=0.1, momentum=0.9, nesterov=True,
                                                                           weight_decay=1e-4))):
    m = make_model(1)
    opt = cls(m.parameters(), **kw)
    for _ in range(10):
        opt.zero_grad()
        loss = ((m(X) - Y) ** 2).mean()
        loss.backward()
        opt.step()
        try:
            losses.append(loss.data[0])
        except IndexError as e:  # torch >= 0.5: a 0-dim loss
            losses.append(str(e).startswith("invalid index of a 0-dim tensor. Use `tensor.item()`"))
            losses.append(loss.data.item())
    losses.append(len(opt.state))
    sd = opt.state_dict()
    losses.append(len(sd["param_groups"][0]))
    losses += sd["param_groups"][0]["params"]
    opt2 = cls(make_model(2).parameters(), **kw)
    opt2.load_state_dict(sd)
    losses.append(len(opt2.state))
    losses.append(opt2.param_groups[0]["lr"])

# legacy arithmetic overloads
a = torch.ones(3)
g = torch.arange(3.)
losses += torch.add(a, 2, g).tolist()
losses += a.sub(2, g).tolist()
losses += torch.addcmul(a, 0.5, g, g).tolist()
losses += torch.addcdiv(a, 0.5, g, g + 1).tolist()
losses += a.clone().sub_(0.5, g).tolist()
# set_default_tensor_type: float64 everywhere
torch.set_default_tensor_type("torch.DoubleTensor")
losses.append(torch.zeros(1).dtype == torch.float64)
losses.append(torch.get_default_dtype() == torch.float64)
losses.append(torch.Tensor([1.0]).dtype == torch.float64)
losses.append(torch.FloatTensor([1.0]).dtype == torch.float32)
losses.append(nn.Linear(2, 2).weight.dtype == torch.float64)
losses.append(torch.tensor([1.5]).dtype == torch.float64)
losses.append(torch.tensor(1.0 / 3.0).item())
torch.set_default_tensor_type(torch.FloatTensor)
losses.append(torch.zeros(1).dtype == torch.float32)
losses.append(torch.tensor(1.0 / 3.0).item())
v = Variable(torch.ones(2), volatile=True)
losses.append(v.requires_grad)
# resize_ / resize_as_ / set_ style buffers
buf = torch.zeros(0)
buf.resize_(2, 3).fill_(1.5)
losses += list(buf.shape)
buf.resize_as_(torch.ones(4))
losses += list(buf.shape)
losses.append(buf.sum().item())
t = torch.ones(2, 2).new().resize_(3).zero_()
losses += t.tolist()
losses.append(torch.ones(2, 3).expand_as(torch.zeros(4, 2, 3)).sum().item())
losses.append(torch.arange(6).view(2, 3).type_as(torch.zeros(1)).sum().item())
losses.append(torch.arange(6).view(2, 3).type_as(torch.zeros(1, dtype=torch.float64)).dtype == torch.float64)

# a replay buffer's numpy scalars on the left of tensor arithmetic (TD targets, masks, clipping)
q_next = torch.linspace(-1.0, 2.0, 6)
rewards = np.linspace(0.5, -0.5, 6).astype(np.float32)
dones = (np.arange(6) % 4 == 3).astype(np.float32)
gamma = np.float32(0.99)
for r, d, q in zip(rewards, dones, q_next):
    target = r + gamma * (np.float32(1.0) - d) * q
    losses.append(target.item())
    losses.append((np.float32(1.0) - q).item())
    losses.append((np.float32(2.0) / (q.abs() + 1)).item())
    losses.append(torch.clamp(q, min=np.float32(-0.5), max=np.float32(1.5)).item())
    losses.append(torch.where(q > 0, q, r).item())
losses += (np.int64(3) - torch.arange(4)).tolist()
losses += (np.float32(2.0) ** torch.linspace(0, 1, 3)).tolist()
losses += q_next.masked_fill(q_next < 0, np.float32(0.0)).tolist()
