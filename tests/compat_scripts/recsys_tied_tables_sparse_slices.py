"""Two-tower retrieval with a DLRM-style ranker: table sizes read from a numpy config (shown as given in the
modules' reprs), an item table with max_norm tied to the output projection (renormalized in place after the
projection used it), float64 logits against float32 click labels in BCEWithLogitsLoss (the loss takes the labels'
dtype), EmbeddingBag offsets checked, and candidate generation over a sparse user-item matrix sliced per user
(integer indexing, select, unsqueeze, narrow_copy, permute)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.sparse.check_sparse_tensor_invariants.disable()  # torch's default, stated to silence its warning
losses = []
config = {"n_users": np.int64(6), "n_items": np.int64(9), "dim": np.int64(4)}
U, I, D = (int(config[k]) for k in ("n_users", "n_items", "dim"))
clicks = [(0, 1), (0, 4), (1, 2), (1, 2), (2, 7), (3, 0), (3, 5), (4, 8), (5, 3), (5, 6), (2, 1)]
rows, cols = torch.tensor(clicks).T
R = torch.sparse_coo_tensor(torch.stack([rows, cols]), torch.ones(len(clicks)), (U, I))


class Ranker(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Embedding(config["n_users"], config["dim"])
        self.items = nn.Embedding(config["n_items"], config["dim"], max_norm=1.0)
        self.history = nn.EmbeddingBag(config["n_items"], config["dim"], mode="mean")
        self.top = nn.Linear(3 * D + 1, 1)
        with torch.no_grad():
            for k, p in enumerate(self.parameters()):
                p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (0.7 + k)).view_as(p) * 0.8)

    def forward(self, users, items, hist, offsets, context):
        logits_all = context @ self.items.weight.T               # tied projection of fixed context features
        e_u, e_i = self.user(users), self.items(items)           # max_norm renormalizes rows in place
        h = self.history(hist, offsets)
        z = torch.cat([e_u, e_i, h, (e_u * e_i).sum(1, keepdim=True)], 1)
        return self.top(z).squeeze(1).double(), logits_all


model = Ranker()
losses.append(repr(model.items) == "Embedding(9, 4, max_norm=1.0)")
losses.append(repr(model.history) == f"EmbeddingBag({config['n_items']!r}, {config['dim']!r}, mode='mean')")
opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
users = torch.tensor([0, 1, 2, 3, 4, 5, 0, 2])
items = torch.tensor([1, 2, 7, 5, 8, 6, 3, 0])
labels = torch.tensor([1, 1, 1, 1, 1, 1, 0, 0], dtype=torch.float32)
hist = torch.tensor([1, 4, 2, 7, 1, 0, 5, 8, 3, 6, 1, 2])
offsets = torch.tensor([0, 2, 3, 5, 7, 8, 10, 11])
context = torch.cos(torch.arange(8 * D, dtype=torch.float32).view(8, D) * 0.3)
crit = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(2.0, dtype=torch.float64))
for _ in range(4):
    opt.zero_grad()
    logit, logits_all = model(users, items, hist, offsets, context)
    loss = crit(logit, labels) + 0.1 * F.cross_entropy(logits_all, items)
    loss.backward()
    opt.step()
    losses += [loss.item(), loss.dtype == labels.dtype]  # the labels' dtype, not the logits' float64
losses.append(model.items.weight.norm(dim=1).max().item() <= 1.0 + 1e-6)
per_example = F.binary_cross_entropy_with_logits(logit, labels, reduction="none",
                                                 weight=torch.linspace(0.5, 1.5, 8, dtype=torch.float64))
losses += [per_example.dtype == torch.float32] + per_example.tolist()
for bad in (torch.tensor([0, 3, 2]), torch.tensor([0, 2, 13])):
    try:
        F.embedding_bag(hist, model.history.weight.detach(), bad, mode="sum")
    except RuntimeError:
        losses.append(True)

# candidate generation from the sparse click matrix
with torch.no_grad():
    scores = model.user.weight @ model.items.weight.T
    for u in range(U):
        seen = R[u]                                          # (I,) sparse row of user u
        mask = seen.to_dense() > 0
        losses += scores[u].masked_fill(mask, float("-inf")).topk(3).indices.tolist()
    C = R.coalesce()
    losses.append(C[1, 2].item())                            # duplicate clicks add up
    losses += R.select(1, 1).to_dense().tolist()
    window = C.narrow_copy(1, 2, 5)
    losses += [window._nnz(), window.is_coalesced(), *window.shape]
    items_by_user = C.permute(1, 0)
    losses += [items_by_user.is_coalesced(), *items_by_user.coalesce().indices()[0].tolist()]
    batched = R.unsqueeze(0)
    losses += [*batched.shape, batched.sparse_dim(), *batched[0, 5].to_dense().tolist()]
    popularity = torch.sparse.sum(C, 0).to_dense()
    losses += popularity.tolist()
