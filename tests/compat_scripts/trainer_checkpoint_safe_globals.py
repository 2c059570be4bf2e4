"""A small trainer's infrastructure: an `argparse.Namespace` config saved inside the checkpoint (loaded with
`weights_only=True` through `torch.serialization.safe_globals`, refused without), state-dict `_metadata` versions
that survive `torch.save` to a BytesIO, plain SGD for a frozen-then-thawed head (no state without momentum) beside
momentum SGD, `ReduceLROnPlateau` over a parameter group added mid-run, the `get_lr()` warning, a sampling
generator decorated with `@torch.no_grad()`, a full backward hook on a module with an unused output, and
parametrizations moved to a fresh copy of a layer with `transfer_parametrizations_and_params`."""
import argparse
import io
import pickle
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize

losses = []
args = argparse.Namespace(lr=0.2, hidden=8, epochs=4, run_name="toy")


class Symmetric(nn.Module):
    def forward(self, w):
        return w.triu() + w.triu(1).transpose(0, 1)


class TwoHeads(nn.Module):
    """Returns logits and an auxiliary score; the loss may use only the first."""

    def __init__(self, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, hidden, bias=False), nn.BatchNorm1d(hidden), nn.Tanh())
        self.mix = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 3)
        self.aux = nn.Linear(hidden, 1)
        with torch.no_grad():
            for i, p in enumerate(self.parameters()):
                p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.9 + i).reshape(p.shape) * 0.4)
        parametrize.register_parametrization(self.mix, "weight", Symmetric())

    def forward(self, x):
        h = self.mix(self.body(x))
        return self.head(h), self.aux(h)


x = torch.linspace(-2, 2, 48).reshape(12, 4)
y = torch.arange(12) % 3
model = TwoHeads(args.hidden)
grad_seen = []
model.register_full_backward_hook(lambda m, gin, gout: grad_seen.append([g is None for g in gout]))
head_params = list(model.head.parameters())
opt = torch.optim.SGD([p for n, p in model.named_parameters() if not n.startswith(("head.", "aux."))], lr=args.lr,
                      momentum=0.9)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0, min_lr=0.01)
for p in head_params:
    p.requires_grad_(False)
for epoch in range(args.epochs):
    if epoch == 2:  # thaw the head with plain SGD: torch keeps no state for it
        for p in head_params:
            p.requires_grad_(True)
        opt.add_param_group({"params": head_params, "momentum": 0.0, "lr": 0.1})
    logits, _ = model(x)
    loss = F.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    plateau.step(round(loss.item(), 1))
    losses += [loss.item(), len(opt.state), plateau.in_cooldown] + plateau.get_last_lr()
losses += grad_seen[-1]  # the auxiliary output got no gradient: None
losses.append(sorted(len(s) for s in opt.state_dict()["state"].values()) == [1] * len(opt.state))

buf = io.BytesIO()
torch.save({"args": args, "model": model.state_dict(), "optimizer": opt.state_dict(),
            "scheduler": plateau.state_dict()}, buf)
buf.seek(0)
try:
    torch.load(buf)
except pickle.UnpicklingError:
    losses.append(True)
buf.seek(0)
with torch.serialization.safe_globals([argparse.Namespace]):
    ckpt = torch.load(buf)
losses += [ckpt["args"].run_name == "toy", ckpt["args"].lr, ckpt["model"]._metadata["body.1"]["version"]]
losses.append(argparse.Namespace in torch.serialization.get_safe_globals())
restored = TwoHeads(ckpt["args"].hidden)
restored.load_state_dict(ckpt["model"])
restored.eval()
model.eval()
losses.append(torch.allclose(restored(x)[0], model(x)[0]))

# a fresh layer takes over the parametrized weight, sharing its original tensor
fresh = nn.Linear(args.hidden, args.hidden)
parametrize.transfer_parametrizations_and_params(model.mix, fresh, "weight")
losses.append(fresh.parametrizations.weight.original is model.mix.parametrizations.weight.original)
losses.append(torch.equal(fresh.weight, fresh.weight.T))

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)
    cosine.get_lr()
losses += [len(caught), "`get_last_lr()`" in str(caught[0].message), len(str(caught[0].message))]


@torch.no_grad()
def sample(net, start, steps):
    h = start
    for _ in range(steps):
        logits, _ = net(h)
        h = h + 0.1 * logits.sum(1, keepdim=True)
        yield h, torch.is_grad_enabled()


outs = list(sample(model, x[:2], 3))
losses += [outs[-1][0].sum().item(), outs[0][1], outs[-1][0].requires_grad, torch.is_grad_enabled()]
with torch.autograd.set_multithreading_enabled(False):
    logits, aux = model(x)
    (aux.sum() + logits.sum()).backward()
losses.append(torch.autograd.is_multithreading_enabled())
