"""Module surgery around hooks and checkpoints: full backward hooks on modules returning a tuple with a number, a
named tuple or a dict (hooked only for tensors and tuples), a GAN discriminator with hook-based spectral
normalization whose state dict records its layout version and loads a checkpoint of the layout before it, flat
parameter vectors written back into a model, and a whole model saved with a shared submodule and a hook function."""

import collections
import io
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, spectral_norm, vector_to_parameters

losses = []


def fill(module, scale=0.5):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel()) * 0.37 + i).reshape(p.shape) * scale)


# ---------------------------------------------------------------- backward hooks by output kind
Heads = collections.namedtuple("Heads", "logits aux")


class Encoder(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.proj = nn.Linear(3, 4)

    def forward(self, x, mask=None):
        h = torch.tanh(self.proj(x))
        if self.kind == "tuple":
            return h, h.shape[-1]  # a tensor and its width, as many encoders return
        if self.kind == "named":
            return Heads(h, h.sum(-1))
        return {"hidden": h}


x = torch.cos(torch.arange(6.0).reshape(2, 3)).requires_grad_()
for kind in ("tuple", "named", "dict"):
    enc = Encoder(kind)
    fill(enc)
    seen = []

    def pre_hook(module, grad_output, seen=seen):
        seen.append([g is None for g in grad_output])

    def full_hook(module, grad_input, grad_output, seen=seen):
        seen.append([None if g is None else g.abs().sum().item() for g in grad_input])

    enc.register_full_backward_pre_hook(pre_hook)
    enc.register_full_backward_hook(full_hook)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = enc(x, torch.ones(2, 3))
    hidden = out["hidden"] if kind == "dict" else out[0]
    (hidden ** 2).sum().backward()
    losses.append(len(caught))
    losses.append(isinstance(out, Heads))
    losses.append(len(seen))
    losses.extend(v for entry in seen for v in entry if v is not None)
    losses.append(x.grad.sum().item())
    x.grad = None

enc = Encoder("tuple")
enc.register_full_backward_pre_hook(lambda m, go: (go[0],))  # grad_output has an entry for the width too
try:
    enc(x)[0].sum().backward()
except RuntimeError as e:
    losses.append(str(e) == "Backward pre hook returned an invalid number of grad_output, got 1, but expected 2")


# ---------------------------------------------------------------- spectral norm: versions in the state dict
class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = spectral_norm(nn.Conv2d(1, 4, 3, stride=2))
        self.fc = spectral_norm(nn.Linear(64, 1))

    def forward(self, img):
        return self.fc(F.leaky_relu(self.conv(img), 0.2).flatten(1))


disc = Discriminator()
fill(disc)
with torch.no_grad():
    for buf in disc.buffers():
        buf.copy_(F.normalize(torch.cos(torch.arange(buf.numel()) + 1.0), dim=0))
img = torch.sin(torch.arange(2 * 81.0).reshape(2, 1, 9, 9) * 0.1)
for _ in range(3):
    disc(img)  # power iterations move weight_u and weight_v
state = disc.state_dict()
losses.append(state._metadata["conv"]["spectral_norm"]["weight.version"])
losses.append(sorted(state._metadata["fc"]["spectral_norm"].items()) == [("weight.version", 1)])
disc.eval()
reference = disc(img)
# A checkpoint of the layout before version 1: the normalized "weight" saved, no "weight_v", no version.
old = collections.OrderedDict((k, v) for k, v in state.items() if not k.endswith("weight_v"))
old["conv.weight"] = disc.conv.weight.detach()
old["fc.weight"] = disc.fc.weight.detach()
restored = Discriminator()
result = restored.load_state_dict(old)
losses.append(len(result.missing_keys) + len(result.unexpected_keys))
restored.eval()
losses.append((restored(img) - reference).abs().max().item() < 1e-4)
losses.append(restored.fc.weight_v.norm().item())

# ---------------------------------------------------------------- flat parameter vectors
vec = parameters_to_vector(disc.parameters())
losses.append(vec.numel())
padded = torch.cat([vec * 0.5, torch.ones(7)])  # a longer buffer: the tail is left unused
vector_to_parameters(padded, disc.parameters())
losses.append(disc.fc.bias.item())
losses.append(parameters_to_vector(disc.parameters()).sum().item())


# ---------------------------------------------------------------- a whole model with a shared block and a hook
def clamp_output(module, args, output):
    return output.clamp(-0.5, 0.5)


block = nn.Linear(4, 4)
model = nn.Sequential(block, nn.GELU(), block, nn.Linear(4, 2))
fill(model)
model[1].register_forward_hook(clamp_output)
inp = torch.cos(torch.arange(8.0).reshape(2, 4))
buffer = io.BytesIO()
torch.save({"model": model, "step": 7}, buffer)
buffer.seek(0)
checkpoint = torch.load(buffer, weights_only=False)
copy = checkpoint["model"]
losses.append(checkpoint["step"])
losses.append(copy[0] is copy[2])
losses.append(len(list(copy.parameters())))
losses.append(list(copy[1]._forward_hooks.values())[0] is clamp_output)
losses.append(copy(inp).sum().item())
losses.append((copy(inp) - model(inp)).abs().max().item())
