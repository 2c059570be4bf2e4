"""A two-layer graph convolutional network (Kipf & Welling) on a small ring graph with chords, in the style of the
popular pygcn code: a symmetric-normalized sparse adjacency, `torch.sparse.mm` / `torch.spmm` for propagation,
gradients for the weights and the node features, Adam steps."""

import torch
import torch.nn as nn
import torch.nn.functional as F

N, F_IN, HIDDEN, CLASSES = 12, 5, 8, 3
src = [i for i in range(N)] + [i for i in range(0, N, 3)]
dst = [(i + 1) % N for i in range(N)] + [(i + 5) % N for i in range(0, N, 3)]
edge_index = torch.tensor([src + dst + list(range(N)), dst + src + list(range(N))])  # both directions, self loops
degree = torch.zeros(N).index_add_(0, edge_index[0], torch.ones(edge_index.shape[1]))
edge_weight = degree[edge_index[0]].rsqrt() * degree[edge_index[1]].rsqrt()
adj = torch.sparse_coo_tensor(edge_index, edge_weight, (N, N))
assert adj.is_sparse and adj.layout == torch.sparse_coo and adj._nnz() == edge_index.shape[1]
adj = adj.coalesce()
assert torch.allclose(adj.to_dense().sum(), edge_weight.sum())
dense_adj = adj.to_dense()


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.empty(out_features))

    def forward(self, x, adj):
        support = x @ self.weight
        return torch.spmm(adj, support) + self.bias


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.gc1 = GraphConvolution(F_IN, HIDDEN)
        self.gc2 = GraphConvolution(HIDDEN, CLASSES)

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        return F.log_softmax(self.gc2(x, adj), dim=1)


model = GCN()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.9 + i).reshape(p.shape) * 0.5)
x = (torch.cos(torch.arange(N * F_IN, dtype=torch.float32) * 0.37).reshape(N, F_IN)).requires_grad_()
labels = torch.arange(N) % CLASSES
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
losses = []

# The layer of the issue: gradients of W and x through torch.sparse.mm.
W = model.gc1.weight
h = torch.sparse.mm(adj, x @ W)
loss = h.relu().sum()
loss.backward()
assert torch.allclose(h, dense_adj @ (x @ W), atol=1e-5)
losses += [loss.item(), W.grad.abs().sum().item(), x.grad.abs().sum().item()]
x.grad = None

for _ in range(6):
    optimizer.zero_grad()
    out = model(x, adj)
    loss = F.nll_loss(out, labels)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
losses.append(x.grad.abs().sum().item())
losses.append(torch.sparse.sum(adj).item())
print("losses", losses)
