"""Activation checkpointing as training code uses it: a pre-norm residual stack whose blocks run through
``torch.utils.checkpoint.checkpoint`` with both variants and ``checkpoint_sequential``, the same gradients as the
plain model; the non-reentrant variant's plain graph (``autograd.grad`` leaves ``.grad`` alone, ``backward(inputs=)``,
a gradient penalty's double backward, keyword arguments, outputs with their own nodes, parameters trained when no
input requires grad, a second pass after ``retain_graph``, nested checkpoints); the reentrant variant's refusals of
``.grad()`` and ``inputs=`` in torch's words; dropout masks replayed with ``preserve_rng_state``; the determinism
check of the saved tensors; an input changed in place after the forward."""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

losses = []


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.calls = 0

    def forward(self, x, scale=1.0):
        self.calls += 1
        return x + scale * self.fc2(F.gelu(self.fc1(self.ln(x))))


class Model(nn.Module):
    def __init__(self, d=8, n=3, mode="none"):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d) for _ in range(n))
        self.head = nn.Linear(d, 2)
        self.mode = mode

    def forward(self, x):
        for b in self.blocks:
            if self.mode == "none" or not self.training:
                x = b(x, 0.5)
            else:
                x = checkpoint(b, x, 0.5, use_reentrant=self.mode == "reentrant")
        return self.head(x)


def init(m):
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float64) * (0.29 + 0.05 * i)).reshape(p.shape) * 0.4)
    return m


x = torch.cos(torch.arange(6 * 8, dtype=torch.float64).reshape(6, 8) * 0.13)
y = torch.arange(6) % 2
grads = {}
for mode in ("none", "reentrant", "non_reentrant"):
    m = init(Model(mode=mode).double())
    xin = x.clone().requires_grad_(True)
    loss = F.cross_entropy(m(xin), y)
    loss.backward()
    losses += [loss.item(), sum(b.calls for b in m.blocks), xin.grad.abs().sum().item()]
    grads[mode] = torch.cat([p.grad.flatten() for p in m.parameters()])
losses += [torch.allclose(grads["reentrant"], grads["none"], rtol=1e-12),
           torch.allclose(grads["non_reentrant"], grads["none"], rtol=1e-12)]

# no input requires grad: the reentrant variant warns and trains nothing, the non-reentrant one trains the block
for reentrant in (True, False):
    m = init(Model().double())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = checkpoint(m.blocks[0], x, use_reentrant=reentrant)
    losses += [out.requires_grad, any("requires_grad=True" in str(w.message) for w in caught)]
    if out.requires_grad:
        out.sum().backward()
        losses.append(m.blocks[0].fc1.weight.grad.sum().item())

REENTRANT = ("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an `inputs` "
             "parameter to .backward(). To resolve this error, you can either set use_reentrant=False, or call "
             ".backward() without passing the `inputs` argument.")
lin = init(nn.Linear(4, 4).double())
xs = torch.linspace(-1, 1, 8, dtype=torch.float64).reshape(2, 4).requires_grad_(True)
for reentrant in (False, True):
    out = checkpoint(lambda t: torch.tanh(lin(t)) ** 3, xs, use_reentrant=reentrant)
    try:
        gw, gx = torch.autograd.grad(out.sum(), [lin.weight, xs])
        losses += [gw.abs().sum().item(), gx.abs().sum().item(), lin.weight.grad is None]
    except RuntimeError as e:
        losses.append(str(e) == REENTRANT)
    out = checkpoint(lambda t: torch.tanh(lin(t)) ** 3, xs, use_reentrant=reentrant)
    try:
        out.sum().backward(inputs=[xs])
        losses += [xs.grad.abs().sum().item(), lin.weight.grad is None]
        xs.grad = None
    except RuntimeError as e:
        losses.append(str(e) == REENTRANT)
    out = checkpoint(lambda t: lin(t).view(8), xs, use_reentrant=reentrant)
    losses.append(out.grad_fn.name() == ("CheckpointFunctionBackward" if reentrant else "ViewBackward0"))

# a gradient penalty through the non-reentrant variant (double backward)
z = xs.detach().clone().requires_grad_(True)
h = checkpoint(lambda t: (torch.sigmoid(lin(t)) ** 2).sum(), z, use_reentrant=False)
g, = torch.autograd.grad(h, z, create_graph=True)
(g.pow(2).sum() + h).backward()
losses += [z.grad.abs().sum().item(), lin.weight.grad.abs().sum().item()]
lin.zero_grad()

# keyword arguments, tuples and non-tensor outputs (non-reentrant only)
def two(a, b, *, k=2.0):
    return a * k + b, (a - b).sum(), "tag"

a = x[:2].clone().requires_grad_(True)
b = (x[:2] * 0.5).requires_grad_(True)
o1, o2, tag = checkpoint(two, a, b, k=3.0, use_reentrant=False)
(o1.sum() + o2).backward()
losses += [tag == "tag", a.grad.sum().item(), b.grad.sum().item()]
try:
    checkpoint(two, a, b, k=3.0, use_reentrant=True)
except ValueError as e:
    losses.append(str(e) == "Unexpected keyword arguments: k")

# a second pass recomputes again; the graph is then freed
calls = []

def counted(t):
    calls.append(1)
    return (t @ lin.weight).tanh() @ lin.weight

out = checkpoint(counted, xs, use_reentrant=False)
out.sum().backward(retain_graph=True)
first = lin.weight.grad.clone()
out.sum().backward()
losses += [len(calls), torch.allclose(lin.weight.grad, 2 * first, rtol=1e-12)]
try:
    out.sum().backward()
except RuntimeError as e:
    losses.append("second time" in str(e))
lin.zero_grad()
nested = checkpoint(lambda t: checkpoint(counted, t, use_reentrant=False).sin(), xs, use_reentrant=False)
nested.sum().backward()
losses.append(lin.weight.grad.abs().sum().item())

# checkpoint_sequential with both variants
seq = init(nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(6)]).double())
for reentrant in (True, False):
    seq.zero_grad()
    xin = x.clone().requires_grad_(True)
    out = checkpoint_sequential(seq, 3, xin, use_reentrant=reentrant)
    out.pow(2).mean().backward()
    losses += [out.sum().item(), seq[0][0].weight.grad.sum().item(), xin.grad.sum().item()]

# dropout masks replayed in the recomputation
drop = init(nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 1)).double())
for reentrant in (True, False):
    drop.zero_grad()
    torch.manual_seed(123)
    out = checkpoint(drop, x.clone().requires_grad_(True), use_reentrant=reentrant, preserve_rng_state=True)
    out.sum().backward()
    g1 = drop[0].weight.grad.clone()
    drop.zero_grad()
    torch.manual_seed(123)
    out2 = drop(x.clone().requires_grad_(True))
    out2.sum().backward()
    losses += [torch.equal(out, out2), torch.allclose(g1, drop[0].weight.grad)]

# the determinism check compares the tensors saved for backward
for variant, message in (("reshaped", "Recomputed values for the following tensors have different metadata than "
                                       "during the forward pass."),
                         ("fewer", "A different number of tensors was saved during the original forward and "
                                   "recomputation.")):
    seen = []

    def block(t, seen=seen, variant=variant):
        seen.append(1)
        if variant == "fewer":
            return t.exp().exp() if len(seen) == 1 else t.exp()
        part = t[: len(seen)]
        return part * part

    out = checkpoint(block, torch.ones(3, dtype=torch.float64, requires_grad=True), use_reentrant=False)
    try:
        out.sum().backward()
    except torch.utils.checkpoint.CheckpointError as e:
        losses.append(str(e).splitlines()[0] == "torch.utils.checkpoint: " + message)

# an input changed in place after the forward
for reentrant in (False, True):
    w = xs * 1
    out = checkpoint(lambda t: (t * t).sum(), w, use_reentrant=reentrant)
    with torch.no_grad():
        w.mul_(2)
    try:
        out.backward()
    except RuntimeError as e:
        losses.append(str(e).startswith("one of the variables needed for gradient computation"))
