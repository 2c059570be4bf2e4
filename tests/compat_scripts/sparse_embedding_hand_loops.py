"""Sparse embedding gradients handled by hand, as recommender and word2vec code does: a skip-gram model updated
with ``p.data.add_(p.grad.data, alpha=-lr)``, sparse gradients scaled, summed and measured in place
(``mul_``, ``div_``, ``+=``, ``norm``), added into strided tensors (``torch.add``, ``sub_``, ``-=``), a sparse
Adagrad written with ``index_add_``, and GradScaler unscaling sparse gradients under CPU autocast (skipping the step
after an inf)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

V, D = 30, 6
losses = []


class SkipGram(nn.Module):
    def __init__(self):
        super().__init__()
        self.u_embeddings = nn.Embedding(V, D, sparse=True)
        self.v_embeddings = nn.Embedding(V, D, sparse=True)
        with torch.no_grad():
            self.u_embeddings.weight.copy_(torch.sin(torch.arange(V * D, dtype=torch.float).view(V, D)) / D)
            self.v_embeddings.weight.copy_(torch.cos(torch.arange(V * D, dtype=torch.float).view(V, D)) / D)

    def forward(self, pos_u, pos_v, neg_v):
        emb_u = self.u_embeddings(pos_u)
        score = torch.clamp(torch.sum(emb_u * self.v_embeddings(pos_v), dim=1), max=10, min=-10)
        neg_score = torch.bmm(self.v_embeddings(neg_v), emb_u.unsqueeze(2)).squeeze()
        neg_score = torch.clamp(neg_score, max=10, min=-10)
        return torch.mean(-F.logsigmoid(score) - torch.sum(F.logsigmoid(-neg_score), dim=1))


model = SkipGram()
pos_u = torch.arange(12) % V
pos_v = (pos_u * 3 + 1) % V
neg_v = torch.stack([(pos_u * k + 7) % V for k in range(2, 5)], dim=1)
lr = 0.5
for _ in range(4):
    model.zero_grad()
    loss = model(pos_u, pos_v, neg_v)
    loss.backward()
    losses.append(loss.item())
    for p in model.parameters():
        grad = p.grad.data
        losses.append(grad.is_sparse and not grad.requires_grad)
        losses.append(grad.norm().item())
        p.data.add_(grad, alpha=-lr)
    lr *= 0.9
losses.append(model.u_embeddings.weight.sum().item())

# in-place arithmetic on a sparse gradient, and strided tensors taking one
g = model.u_embeddings.weight.grad
d = torch.zeros(V, D)
losses += [torch.add(d, g, alpha=2.0).sum().item(), torch.sub(d, g).sum().item(), (d - g).abs().sum().item()]
losses.append(torch.mul(d + 1, g).is_sparse)
g2 = g.clone()
g2.mul_(0.5)
losses.append(g2.is_coalesced())
g2.div_(2)
g2 += g
g2 *= 2
losses += [g2.to_dense().sum().item(), g2.coalesce().values().abs().sum().item(), len(g2), g2.nelement()]
with torch.no_grad():
    for p in model.parameters():
        p.sub_(p.grad)
        p -= 0.5 * p.grad
        p += p.grad
losses.append(model.v_embeddings.weight.sum().item())

# gradient accumulation over micro-batches, then a sparse Adagrad step by hand
model.zero_grad()
for m in range(3):
    (model(pos_u[m * 4:(m + 1) * 4], pos_v[m * 4:(m + 1) * 4], neg_v[m * 4:(m + 1) * 4]) / 3).backward()
acc = model.u_embeddings.weight.grad.coalesce()
idx, vals = acc.indices(), acc.values()
state = torch.zeros(V, D).index_add_(0, idx[0], vals.pow(2))
std = state[idx[0]].sqrt().add_(1e-10)
model.u_embeddings.weight.data.index_add_(0, idx[0], -0.1 * vals / std)
losses += [acc._nnz(), model.u_embeddings.weight.sum().item()]

# GradScaler over a sparse embedding and a dense head, CPU autocast; an inf skips the sparse step
emb = nn.Embedding(10, 4, sparse=True)
head = nn.Linear(4, 1)
with torch.no_grad():
    emb.weight.copy_(torch.sin(torch.arange(40.)).view(10, 4))
    head.weight.copy_(torch.cos(torch.arange(4.)).view(1, 4))
    head.bias.fill_(0.1)
opt_sparse = torch.optim.SparseAdam(list(emb.parameters()), lr=0.05)
opt_dense = torch.optim.SGD(head.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cpu", init_scale=256.0, growth_interval=2)
for step in range(5):
    opt_sparse.zero_grad()
    opt_dense.zero_grad()
    x = torch.tensor([[step % 10, (step * 3) % 10], [(step + 5) % 10, 1]])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logit = head(emb(x).mean(1)).squeeze(1)
    loss = F.binary_cross_entropy_with_logits(logit.float(), torch.tensor([1.0, 0.0]))
    scaler.scale(loss).backward()
    scaler.unscale_(opt_sparse)
    scaler.unscale_(opt_dense)
    losses.append(emb.weight.grad.coalesce().values().abs().sum().item())
    scaler.step(opt_sparse)
    scaler.step(opt_dense)
    scaler.update()
    losses += [loss.item(), scaler.get_scale()]
opt_sparse.zero_grad()
scaler.scale(emb(torch.tensor([1, 2])).sum() * float("inf")).backward()
before = emb.weight.detach().clone()
scaler.step(opt_sparse)
scaler.update()
losses += [torch.equal(before, emb.weight), scaler.get_scale(), emb.weight.sum().item()]
