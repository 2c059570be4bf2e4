"""Word vectors the pre-transformer way: GloVe over a co-occurrence matrix with sparse embeddings trained by Adagrad
and plain SGD, skip-gram with negative sampling under SparseAdam, an LBFGS refinement on sparse gradients, the
optimizers' refusals of sparse gradients (Adam points to SparseAdam; weight decay and fused steps are refused), and
embedding max_norm renormalization as torch rounds it (float32 and bfloat16)."""
import collections

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.sparse.check_sparse_tensor_invariants.disable()
corpus = "a b c a b d e a c d b e f a b c f e d a".split()
vocab = sorted(set(corpus))
w2i = {w: i for i, w in enumerate(vocab)}
V, D, WIN = len(vocab), 5, 3
cooc = collections.defaultdict(float)
for i, w in enumerate(corpus):
    for j in range(max(0, i - WIN), i):
        cooc[(w2i[w], w2i[corpus[j]])] += 1.0 / (i - j)
        cooc[(w2i[corpus[j]], w2i[w])] += 1.0 / (i - j)
keys = sorted(cooc)
rows = torch.tensor([k[0] for k in keys])
cols = torch.tensor([k[1] for k in keys])
vals = torch.tensor([cooc[k] for k in keys])
losses = [torch.sparse_coo_tensor(torch.stack([rows, cols]), vals, (V, V)).coalesce().to_dense().sum().item()]


class GloVe(nn.Module):
    def __init__(self):
        super().__init__()
        self.wi, self.wj = nn.Embedding(V, D, sparse=True), nn.Embedding(V, D, sparse=True)
        self.bi, self.bj = nn.Embedding(V, 1, sparse=True), nn.Embedding(V, 1, sparse=True)
        with torch.no_grad():
            for k, e in enumerate([self.wi, self.wj, self.bi, self.bj]):
                e.weight.copy_(torch.sin(torch.arange(e.weight.numel(), dtype=torch.float) * (0.3 + k)).view_as(
                    e.weight) * 0.1)

    def forward(self, i, j, x):
        weight = torch.where(x < 10, (x / 10) ** 0.75, torch.ones_like(x))
        pred = (self.wi(i) * self.wj(j)).sum(1) + self.bi(i).squeeze(1) + self.bj(j).squeeze(1)
        return (weight * (pred - torch.log(x)) ** 2).sum()


def batches():
    for s in range(0, len(keys), 16):
        yield rows[s:s + 16], cols[s:s + 16], vals[s:s + 16]


for name in ("adagrad", "sgd"):
    model = GloVe()
    if name == "adagrad":
        opt = torch.optim.Adagrad(model.parameters(), lr=0.05, initial_accumulator_value=0.1, lr_decay=0.01)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    for _ in range(4):
        for i, j, x in batches():
            opt.zero_grad()
            loss = model(i, j, x)
            loss.backward()
            opt.step()
        losses.append(loss.item())
    losses.append((model.wi.weight + model.wj.weight).sum().item())


def closure():
    lbfgs.zero_grad()
    loss = model(rows, cols, vals)
    loss.backward()
    return loss


lbfgs = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5, history_size=4)
losses.append(lbfgs.step(closure).item())
losses.append(closure().item())

# the refusals, each in torch's words
ADAM = "Adam does not support sparse gradients, please consider SparseAdam instead"
for make, message in ((lambda p: torch.optim.Adam(p), ADAM), (lambda p: torch.optim.AdamW(p), ADAM),
                      (lambda p: torch.optim.RMSprop(p), "RMSprop does not support sparse gradients"),
                      (lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=1e-4),
                       "add(sparse, dense) is not supported. Use add(dense, sparse) instead."),
                      (lambda p: torch.optim.SGD(p, fused=True), "`_fused_sgd` does not support sparse gradients"),
                      (lambda p: torch.optim.Adagrad(p, weight_decay=1e-4),
                       "weight_decay option is not compatible with sparse gradients"),
                      (lambda p: torch.optim.Adagrad(p, fused=True),
                       "`fused` does not support sparse grad or complex param")):
    probe = GloVe()
    opt = make(probe.parameters())
    probe(rows[:4], cols[:4], vals[:4]).backward()
    try:
        opt.step()
        losses.append(False)
    except RuntimeError as e:
        losses.append(str(e) == message)
    losses.append(probe.wi.weight.sum().item())  # nothing changed

# skip-gram with negative sampling (deterministic negatives from the unigram table) under SparseAdam
ids = torch.tensor([w2i[w] for w in corpus])
pairs = [(ids[i].item(), ids[j].item()) for i in range(len(ids))
         for j in range(max(0, i - 2), min(len(ids), i + 3)) if i != j]
centers, contexts = torch.tensor([p[0] for p in pairs]), torch.tensor([p[1] for p in pairs])
unigram = torch.bincount(ids, minlength=V).float().pow(0.75)
cdf = torch.cumsum(unigram / unigram.sum(), 0)
negs = torch.searchsorted(cdf, (torch.arange(len(pairs) * 3, dtype=torch.float) * 0.618034) % 1.0).clamp(
    max=V - 1).view(-1, 3)
inp, out = nn.Embedding(V, D, sparse=True), nn.Embedding(V, D, sparse=True, max_norm=1.5)
with torch.no_grad():
    inp.weight.copy_(torch.cos(torch.arange(V * D, dtype=torch.float).view(V, D) * 0.7))
    out.weight.copy_(torch.sin(torch.arange(V * D, dtype=torch.float).view(V, D) * 0.9))
opt = torch.optim.SparseAdam(list(inp.parameters()) + list(out.parameters()), lr=0.05)
for s in range(0, len(pairs), 32):
    vc, uo, un = inp(centers[s:s + 32]), out(contexts[s:s + 32]), out(negs[s:s + 32])
    loss = -(F.logsigmoid((vc * uo).sum(1)) + F.logsigmoid(-torch.bmm(un, vc.unsqueeze(2)).squeeze(2)).sum(1)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
losses.extend(out.weight.norm(dim=1).tolist())
emb = F.normalize(inp.weight.detach(), dim=1)
losses.extend((emb @ emb[w2i["a"]]).topk(3).indices.tolist())

# max_norm renormalization, bit for bit
for dtype in (torch.float32, torch.bfloat16):
    table = (torch.arange(40, dtype=torch.float64).view(10, 4) / 7 + 0.13).to(dtype)
    looked_up = F.embedding(torch.tensor([[1, 2, 9], [1, 7, 3]]), table, max_norm=1.7, norm_type=1.0)
    losses.extend(table.double().flatten().tolist())
    losses.append(looked_up.double().sum().item())
