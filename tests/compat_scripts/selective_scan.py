"""A Mamba block: depthwise causal Conv1d, softplus time steps, and the selective scan written twice, as the
sequential reference loop over einsum-built decays and as a parallel form from cumsum, a masked segment sum and
exp; trained a few steps with RMSprop."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def selective_scan_ref(u, delta, A, B, C, D, z=None, delta_bias=None, delta_softplus=True):
    dtype_in = u.dtype
    u, delta = u.float(), delta.float()
    if delta_bias is not None:
        delta = delta + delta_bias[..., None].float()
    if delta_softplus:
        delta = F.softplus(delta)
    batch, dim, dstate = u.shape[0], A.shape[0], A.shape[1]
    x = A.new_zeros((batch, dim, dstate))
    ys = []
    deltaA = torch.exp(torch.einsum('bdl,dn->bdln', delta, A))
    deltaB_u = torch.einsum('bdl,bnl,bdl->bdln', delta, B, u)
    for i in range(u.shape[2]):
        x = deltaA[:, :, i] * x + deltaB_u[:, :, i]
        y = torch.einsum('bdn,bn->bd', x, C[:, :, i])
        ys.append(y)
    y = torch.stack(ys, dim=2)
    out = y + u * D[..., None]
    if z is not None:
        out = out * F.silu(z)
    return out.to(dtype=dtype_in)


def selective_scan_parallel(u, delta, A, B, C, D, z, delta_bias):
    delta = F.softplus(delta + delta_bias[..., None])
    dA = torch.einsum('bdl,dn->bdln', delta, A)                  # (b, d, l, n) log-decays
    cum = torch.cumsum(dA, dim=2)
    L = u.shape[2]
    # segsum: cum[t] - cum[s] for s <= t
    seg = cum.unsqueeze(3) - cum.unsqueeze(2)                      # (b, d, t, s, n)
    mask = torch.tril(torch.ones(L, L, dtype=torch.bool))
    decay = torch.exp(seg.masked_fill(~mask[None, None, :, :, None], float('-inf')))
    dBu = torch.einsum('bdl,bnl,bdl->bdln', delta, B, u)
    x = torch.einsum('bdtsn,bdsn->bdtn', decay, dBu)
    y = torch.einsum('bdtn,bnt->bdt', x, C)
    return (y + u * D[..., None]) * F.silu(z)


class MambaBlock(nn.Module):
    def __init__(self, d_model=8, d_state=4, d_conv=3, expand=2):
        super().__init__()
        self.d_inner = expand * d_model
        self.d_state = d_state
        self.dt_rank = math.ceil(d_model / 16)
        self.in_proj = nn.Linear(d_model, self.d_inner * 2, bias=False)
        self.conv1d = nn.Conv1d(self.d_inner, self.d_inner, bias=True, kernel_size=d_conv, groups=self.d_inner,
                                padding=d_conv - 1)
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + d_state * 2, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner, bias=True)
        A = torch.arange(1, d_state + 1, dtype=torch.float32).repeat(self.d_inner, 1).contiguous()
        self.A_log = nn.Parameter(torch.log(A))
        self.A_log._no_weight_decay = True
        self.D = nn.Parameter(torch.ones(self.d_inner))
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=False)

    def forward(self, hidden_states, parallel=False):
        batch, seqlen, dim = hidden_states.shape
        xz = self.in_proj(hidden_states).transpose(1, 2)          # (b, 2*d_inner, l)
        A = -torch.exp(self.A_log.float())
        x, z = xz.chunk(2, dim=1)
        x = F.silu(self.conv1d(x)[..., :seqlen])
        x_dbl = self.x_proj(x.transpose(1, 2).reshape(batch * seqlen, -1))
        dt, B, C = torch.split(x_dbl, [self.dt_rank, self.d_state, self.d_state], dim=-1)
        dt = self.dt_proj.weight @ dt.t()
        dt = dt.reshape(self.d_inner, batch, seqlen).permute(1, 0, 2)
        B = B.reshape(batch, seqlen, self.d_state).permute(0, 2, 1).contiguous()
        C = C.reshape(batch, seqlen, self.d_state).transpose(1, 2).contiguous()
        if parallel:
            y = selective_scan_parallel(x, dt, A, B, C, self.D.float(), z, self.dt_proj.bias.float())
        else:
            y = selective_scan_ref(x, dt, A, B, C, self.D.float(), z=z, delta_bias=self.dt_proj.bias.float())
        return self.out_proj(y.transpose(1, 2))


m = MambaBlock()
with torch.no_grad():
    for i, (n, p) in enumerate(m.named_parameters()):
        if n in ("A_log", "D"):
            continue
        p.copy_(torch.sin(torch.arange(p.numel()).float() * (0.9 + 0.17 * i)).view_as(p) * 0.4)
x = torch.cos(torch.arange(2 * 7 * 8).float() * 0.21).reshape(2, 7, 8)
losses = []
opt = torch.optim.RMSprop(m.parameters(), lr=1e-2, alpha=0.9)
for _step in range(4):
    y1 = m(x)
    y2 = m(x, parallel=True)
    losses.append((y1 - y2).abs().max().item() < 1e-5)
    loss = y1.pow(2).mean() + 0.1 * y2.square().sum(dim=(1, 2)).mean()
    opt.zero_grad()
    loss.backward()
    losses.append(loss.item())
    losses.append(m.A_log.grad.norm().item())
    opt.step()
losses.append(sum(p.numel() for p in m.parameters() if not getattr(p, "_no_weight_decay", False)))
