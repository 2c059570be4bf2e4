"""A REINFORCE update as in PyTorch's reinforcement-learning example: a policy network, a Categorical over its
action probabilities, discounted returns, one Adam step per episode. The episodes replay recorded actions."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 16)
        self.affine2 = nn.Linear(16, 2)

    def forward(self, x):
        return F.softmax(self.affine2(F.relu(self.affine1(x))), dim=1)


policy = Policy()
with torch.no_grad():
    for i, p in enumerate(policy.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.7 + i).reshape(p.shape) * 0.4)
optimizer = optim.Adam(policy.parameters(), lr=1e-2)
gamma = 0.99
eps = torch.finfo(torch.float32).eps
losses = []
for episode in range(3):
    log_probs, rewards, entropies = [], [], []
    for step in range(8):
        state = torch.tensor([[step * 0.1, -episode * 0.2, 0.3, (step % 3) - 1.0]])
        m = Categorical(policy(state))
        assert m.sample().shape == (1,)
        action = torch.tensor([(step + episode) % 2])  # the recorded action
        log_probs.append(m.log_prob(action))
        entropies.append(m.entropy())
        rewards.append(1.0 if action.item() == 1 else 0.5)
    R, returns = 0.0, []
    for r in rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    policy_loss = torch.cat([-lp * R for lp, R in zip(log_probs, returns)]).sum()
    loss = policy_loss - 0.01 * torch.cat(entropies).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("losses", losses)
