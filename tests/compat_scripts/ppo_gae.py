"""PPO with GAE on recorded rollouts: Categorical and diagonal-Normal (Independent) policies, entropy, clipped
surrogate, clipped value loss, advantage normalization, gradient clipping."""
import torch
import torch.nn as nn
from torch.distributions import Categorical, Independent, Normal


def layer_init(layer, k, std=1.0, bias_const=0.0):
    with torch.no_grad():
        layer.weight.copy_(torch.sin(torch.arange(layer.weight.numel(), dtype=torch.float32) * 0.7 + k)
                           .view_as(layer.weight) * 0.3 * std)
        layer.bias.fill_(bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim, act_dim, continuous):
        super().__init__()
        self.continuous = continuous
        self.critic = nn.Sequential(layer_init(nn.Linear(obs_dim, 32), 1), nn.Tanh(),
                                    layer_init(nn.Linear(32, 1), 2, std=1.0))
        self.actor = nn.Sequential(layer_init(nn.Linear(obs_dim, 32), 3), nn.Tanh(),
                                   layer_init(nn.Linear(32, act_dim), 4, std=0.01))
        if continuous:
            self.actor_logstd = nn.Parameter(torch.zeros(1, act_dim))

    def get_value(self, x):
        return self.critic(x)

    def dist(self, x):
        out = self.actor(x)
        if self.continuous:
            std = self.actor_logstd.expand_as(out).exp()
            return Independent(Normal(out, std), 1)
        return Categorical(logits=out)


def gae(rewards, values, dones, next_value, gamma=0.99, lam=0.95):
    T = rewards.shape[0]
    adv = torch.zeros_like(rewards)
    lastgaelam = 0
    for t in reversed(range(T)):
        nextnonterminal = 1.0 - dones[t]
        nextvalues = next_value if t == T - 1 else values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        adv[t] = lastgaelam = delta + gamma * lam * nextnonterminal * lastgaelam
    return adv, adv + values


losses = []
T, N, obs_dim = 16, 4, 6
obs = torch.sin(torch.arange(T * N * obs_dim, dtype=torch.float32).view(T, N, obs_dim) * 0.37)
rewards = torch.cos(torch.arange(T * N, dtype=torch.float32).view(T, N) * 0.9)
dones = (torch.arange(T * N).view(T, N) % 7 == 0).float()
for continuous in (False, True):
    act_dim = 2 if continuous else 3
    agent = Agent(obs_dim, act_dim, continuous)
    opt = torch.optim.Adam(agent.parameters(), lr=3e-4, eps=1e-5)
    if continuous:
        actions = torch.tanh(torch.sin(torch.arange(T * N * act_dim, dtype=torch.float32).view(T, N, act_dim)))
    else:
        actions = torch.arange(T * N).view(T, N) % act_dim
    with torch.no_grad():
        d = agent.dist(obs)
        logprobs = d.log_prob(actions)
        values = agent.get_value(obs).squeeze(-1)
        next_value = agent.get_value(obs[-1]).reshape(1, -1)
        adv, returns = gae(rewards, values, dones, next_value)
    losses += [adv.sum().item(), logprobs.sum().item()]
    b_obs = obs.reshape(-1, obs_dim)
    b_act = actions.reshape((-1, act_dim) if continuous else (-1,))
    b_logp, b_adv, b_ret, b_val = logprobs.reshape(-1), adv.reshape(-1), returns.reshape(-1), values.reshape(-1)
    inds = torch.arange(T * N)
    for epoch in range(3):
        perm = inds.flip(0) if epoch % 2 else inds
        for start in range(0, T * N, 32):
            mb = perm[start:start + 32]
            d = agent.dist(b_obs[mb])
            newlogprob, entropy = d.log_prob(b_act[mb]), d.entropy()
            newvalue = agent.get_value(b_obs[mb]).view(-1)
            logratio = newlogprob - b_logp[mb]
            ratio = logratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - logratio).mean()
                clipfrac = ((ratio - 1.0).abs() > 0.2).float().mean().item()
            mb_adv = b_adv[mb]
            mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
            pg_loss = torch.max(-mb_adv * ratio, -mb_adv * torch.clamp(ratio, 0.8, 1.2)).mean()
            v_unclipped = (newvalue - b_ret[mb]) ** 2
            v_clipped = b_val[mb] + torch.clamp(newvalue - b_val[mb], -0.2, 0.2)
            v_loss = 0.5 * torch.max(v_unclipped, (v_clipped - b_ret[mb]) ** 2).mean()
            loss = pg_loss - 0.01 * entropy.mean() + v_loss * 0.5
            opt.zero_grad()
            loss.backward()
            gn = nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
            opt.step()
            losses += [loss.item(), approx_kl.item(), clipfrac, gn.item()]
    y_pred, y_true = b_val, b_ret
    losses.append((1 - torch.var(y_true - y_pred) / torch.var(y_true)).item())
    d = agent.dist(b_obs[:3])
    losses += [list(d.batch_shape) == [3], list(d.event_shape) == ([act_dim] if continuous else [])]
    if not continuous:
        losses += [d.probs.sum().item(), d.logits.logsumexp(-1).sum().item(), d.mode.sum().item()]
    else:
        losses += [d.mean.sum().item(), d.stddev.sum().item(), d.variance.sum().item(),
                   d.base_dist.scale.sum().item()]
losses = [float(v) for v in losses]
print(losses)
