"""Fitting a curve with L-BFGS and a strong-Wolfe line search, as PyTorch's time-sequence example trains."""

import torch
import torch.nn as nn

torch.set_default_dtype(torch.float64)
t = torch.linspace(0, 3, 40).unsqueeze(1)
target = torch.sin(2 * t) * torch.exp(-0.3 * t)
model = nn.Sequential(nn.Linear(1, 12), nn.Tanh(), nn.Linear(12, 1))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel()) * 1.3 + i).reshape(p.shape))
criterion = nn.MSELoss()
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.8, history_size=10, max_iter=8,
                              line_search_fn="strong_wolfe")
losses = []
for _ in range(4):
    def closure():
        optimizer.zero_grad()
        loss = criterion(model(t), target)
        loss.backward()
        return loss

    losses.append(optimizer.step(closure).item())
torch.set_default_dtype(torch.float32)
print("losses", losses)
