"""Tensors crossing boundaries: a checkpoint holding a fused weight with its split views, a transposed view, an
expanded view, complex128 storage, a namedtuple batch and a dataclass config (weights_only=False), plain Python
values (complex, bytes, torch.Size, sets), the UnpicklingError of a weights-only load, torch.utils.dlpack capsules
shared with numpy and back, and finfo's printed limits."""
import collections
import dataclasses
import io
import os
import pickle
import tempfile

import numpy as np
import torch
import torch.nn as nn
from torch.utils.dlpack import from_dlpack, to_dlpack

losses = []
Batch = collections.namedtuple("Batch", ["x", "y"])


@dataclasses.dataclass
class TrainConfig:
    lr: float = 0.1
    layers: int = 2


# A fused qkv projection saved with its per-head views: after loading they still share its memory.
qkv = torch.arange(24, dtype=torch.float64).reshape(6, 4)
q, k, v = qkv.split(2, dim=0)
z = torch.arange(6.0).to(torch.complex128).reshape(2, 3)
base = torch.tensor([1, 2, 3], dtype=torch.int32)
state = {"qkv": qkv, "parts": (q, k, v), "kT": k.t(), "z": z, "z1": z[1], "base": base, "wide": base.expand(2, 3),
         "batch": Batch(torch.ones(2), [1, 2]), "cfg": TrainConfig(), "shape": qkv.shape, "tag": b"v1",
         "phase": 1 - 2j, "seen": {3, 1, 2}}
path = os.path.join(tempfile.mkdtemp(), "fused.pt")
torch.save(state, path)
loaded = torch.load(path, map_location="cpu", weights_only=False)
loaded["qkv"].mul_(10)
loaded["z"][1, 2] = 1j
loaded["base"][0] = 7
losses += loaded["parts"][1].flatten().tolist() + loaded["kT"].flatten().tolist()
losses += [t.storage_offset() for t in loaded["parts"]] + list(loaded["kT"].stride())
losses += [loaded["z1"][2].real.item(), loaded["z1"][2].imag.item(), float(loaded["z1"].dtype == torch.complex128)]
losses += loaded["wide"].flatten().tolist() + list(loaded["wide"].stride())
losses += [float(type(loaded["batch"]) is Batch), loaded["batch"].x.sum().item(), sum(loaded["batch"].y)]
losses += [float(loaded["cfg"] == TrainConfig()), float(type(loaded["shape"]) is torch.Size), loaded["shape"].numel()]
losses += [float(loaded["tag"] == b"v1"), loaded["phase"].imag, float(loaded["seen"] == {1, 2, 3})]
try:
    torch.load(path)
    losses.append(0.0)
except pickle.UnpicklingError:
    losses.append(1.0)

# Parameters that are views of one flat buffer keep their values through a state_dict round trip.
flat = torch.linspace(-1, 1, 10)
layer = nn.Linear(2, 3)
layer.weight = nn.Parameter(flat[:6].view(3, 2))
layer.bias = nn.Parameter(flat[6:9])
buf = io.BytesIO()
torch.save(layer.state_dict(), buf)
buf.seek(0)
fresh = nn.Linear(2, 3)
fresh.load_state_dict(torch.load(buf))
losses.append(fresh(torch.ones(1, 2)).sum().item())

# DLPack capsules: zero-copy to numpy and back, views included.
t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
back = from_dlpack(to_dlpack(t.t()))
back[0, 1] = 50.0
losses += [t[1, 0].item()] + list(back.stride())
n = np.from_dlpack(t)
n[0, 2] = -3.0
losses.append(t[0, 2].item())
a = np.arange(4, dtype=np.int16)
w = torch.from_dlpack(a)
a[0] = 9
losses += w.tolist() + [float(w.dtype == torch.int16)]

# finfo prints six significant digits.
losses += [float(len(repr(torch.finfo(dt)))) for dt in (torch.float16, torch.bfloat16, torch.float32, torch.float64)]
