"""Picking a device with torch.accelerator, creating under `with torch.device(...)`, legacy constructors and a
tensor from a deque; then a small regression with SGD and momentum, saved and loaded back."""

import os
import sys
import tempfile
from collections import deque

import torch
from torch import nn

device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
print(f"Using {device} device, {torch.accelerator.device_count()} accelerator(s)")

history = deque([0.5, -1.0, 2.0, 0.25], maxlen=4)
with torch.device(device):
    x = torch.linspace(-1, 1, 32).unsqueeze(1) * torch.tensor(history)
    y = (x * torch.tensor([1.0, -2.0, 0.5, 3.0])).sum(1, keepdim=True) + 0.1
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) + i).reshape(p.shape) * 0.5)
weights = torch.FloatTensor([1.0] * 32).to(device)
labels = torch.LongTensor([0, 1])
assert labels.dtype == torch.int64 and isinstance(weights.cpu(), torch.FloatTensor)

optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
losses = []
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 20):
    optimizer.zero_grad()
    loss = (weights.unsqueeze(1) * (model(x) - y) ** 2).mean()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "model.pt")
    torch.save(model.state_dict(), path)
    restored = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).to(device)
    restored.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    losses.append(nn.functional.mse_loss(restored(x), y).item())
print("final loss", losses[-1])
