"""The network of PyTorch's MNIST example (smaller), in its own module beside the script that imports it."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, dropout: float = 0.25) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout2d(dropout)
        self.dropout2 = nn.Dropout(2 * dropout)
        self.fc1 = nn.Linear(16 * 5 * 5, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def deterministic_init_(model: nn.Module) -> None:
    """Weights from a formula, so that every framework starts from the same point."""
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            values = torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i)
            p.copy_(values.reshape(p.shape) / (p.shape[-1] ** 0.5))
