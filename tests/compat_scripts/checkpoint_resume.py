"""Checkpoint and resume as trainers write it: a full checkpoint dict (model, optimizer, warmup-then-cosine
SequentialLR, epoch, the global, numpy and Python RNG states) saved to a BytesIO and to a file mid-training; the
resumed run reproduces the uninterrupted one loss for loss. SGD with Nesterov momentum and weight decay, named
parameter groups, a BatchNorm whose running statistics travel in the state dict."""
import io
import os
import random
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR, SequentialLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        return self.fc(torch.flatten(F.max_pool2d(F.relu(self.bn(self.conv(x))), 2), 1))


def build():
    model = Net()
    with torch.no_grad():
        for i, (_, p) in enumerate(sorted(model.named_parameters())):
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * (0.3 + 0.01 * i)).reshape(p.shape) * 0.2)
    decay = [(n, p) for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [(n, p) for n, p in model.named_parameters() if p.ndim <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 5e-4}, {"params": no_decay, "weight_decay": 0.0}],
                          lr=0.05, momentum=0.9, nesterov=True)
    sched = SequentialLR(opt, [LinearLR(opt, start_factor=0.2, total_iters=3), CosineAnnealingLR(opt, T_max=9)],
                         milestones=[3])
    return model, opt, sched


X = torch.sin(torch.arange(16 * 64, dtype=torch.float32).reshape(16, 1, 8, 8) * 0.071)
Y = torch.arange(16) % 3
dataset = TensorDataset(X, Y)


def train(model, opt, sched, loader, steps, out):
    model.train()
    done = 0
    while done < steps:
        for xb, yb in loader:
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xb), yb, label_smoothing=0.1)
            loss.backward()
            opt.step()
            sched.step()
            out.append(loss.item())
            done += 1
            if done == steps:
                return


loader = DataLoader(dataset, batch_size=4, drop_last=True)
model, opt, sched = build()
straight = []
train(model, opt, sched, loader, 12, straight)

model, opt, sched = build()
first = []
train(model, opt, sched, loader, 8, first)
random.seed(123)
np.random.seed(7)
checkpoint = {"epoch": 2, "model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
              "rng_state": torch.get_rng_state(), "np_rng": np.random.get_state(), "py_rng": random.getstate()}
buffer = io.BytesIO()
torch.save(checkpoint, buffer)
buffer.seek(0)
with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "last.pt")
    torch.save(torch.load(buffer, weights_only=False), path)
    loaded = torch.load(path, map_location="cpu", weights_only=False)

draws = [random.random(), float(np.random.rand()), torch.rand(3)]
random.setstate(loaded["py_rng"])
np.random.set_state(loaded["np_rng"])
torch.set_rng_state(loaded["rng_state"])
losses = [random.random() == draws[0], float(np.random.rand()) == draws[1], torch.equal(torch.rand(3), draws[2]),
          loaded["epoch"]]
model, opt, sched = build()
model.load_state_dict(loaded["model"])
opt.load_state_dict(loaded["optimizer"])
sched.load_state_dict(loaded["scheduler"])
second = []
train(model, opt, sched, loader, 4, second)
losses += first + second
losses += [max(abs(a - b) for a, b in zip(straight, first + second)) == 0.0, sched.get_last_lr()[0],
           model.bn.num_batches_tracked.item(), model.bn.running_var.sum().item(),
           opt.state_dict()["state"][0]["momentum_buffer"].sum().item(), len(opt.param_groups[0]["param_names"])]
losses = [float(v) for v in losses]
print(losses)
