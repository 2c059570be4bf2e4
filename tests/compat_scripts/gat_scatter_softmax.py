"""A graph attention network written without PyTorch Geometric, torch_scatter style: the attention softmax over each
node's incoming edges is `scatter_reduce(..., "amax")` + `exp` + `index_add_`, messages are summed with
`index_add_`, and graphs of a batch are pooled with `scatter_reduce` (amax, amin, mean, include_self both ways);
a boolean flag spreads to neighbours through `scatter_reduce` on a bool tensor. Many edges share a target, as in a
real graph, with ties among the scores."""

import torch
import torch.nn as nn
import torch.nn.functional as F

GRAPHS, NODES, FIN, HEADS, HID, C = 4, 60, 5, 3, 4, 3
N = GRAPHS * NODES
nodes = torch.arange(N)
graph_of = nodes // NODES
local = nodes % NODES
# Each node receives edges from its ring neighbours and from a few hubs of its graph.
src = torch.cat([nodes, nodes, graph_of * NODES + (local * 7) % 5, graph_of * NODES + (local * 3 + 1) % NODES])
dst = torch.cat([graph_of * NODES + (local + 1) % NODES, nodes, nodes, nodes])
edge_index = torch.stack([src, dst])
losses = [edge_index.size(1)]


def scatter_softmax(scores, index, num_nodes):
    # scores: (E, H); the maximum of each target's scores, subtracted for stability.
    idx = index.view(-1, 1).expand_as(scores)
    top = torch.full((num_nodes, scores.size(1)), float("-inf")).scatter_reduce(0, idx, scores, "amax")
    out = (scores - top.index_select(0, index)).exp()
    denom = torch.zeros(num_nodes, scores.size(1)).index_add_(0, index, out)
    return out / (denom[index] + 1e-16)


class GATConv(nn.Module):
    def __init__(self, fin, fout, heads, concat=True):
        super().__init__()
        self.heads, self.fout, self.concat = heads, fout, concat
        self.lin = nn.Linear(fin, heads * fout, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, fout))
        self.att_dst = nn.Parameter(torch.empty(1, heads, fout))
        self.bias = nn.Parameter(torch.zeros(heads * fout if concat else fout))

    def forward(self, x, ei):
        x = self.lin(x).view(-1, self.heads, self.fout)  # (N, heads, fout)
        alpha = F.leaky_relu((x * self.att_src).sum(-1)[ei[0]] + (x * self.att_dst).sum(-1)[ei[1]], 0.2)
        alpha = scatter_softmax(alpha.round(decimals=2), ei[1], x.size(0))  # rounding makes ties
        self.alpha = alpha
        out = x.new_zeros(x.size(0), self.heads, self.fout).index_add_(0, ei[1], x[ei[0]] * alpha.unsqueeze(-1))
        out = out.reshape(-1, self.heads * self.fout) if self.concat else out.mean(dim=1)
        return out + self.bias


def pool(h, batch, size):
    idx = batch.view(-1, 1).expand_as(h)
    top = torch.zeros(size, h.size(1)).scatter_reduce(0, idx, h, "amax", include_self=False)
    low = torch.zeros(size, h.size(1)).scatter_reduce(0, idx, h, "amin", include_self=False)
    mean = torch.zeros(size, h.size(1)).scatter_reduce(0, idx, h, "mean", include_self=False)
    return torch.cat([top, low, mean], dim=-1)


class GAT(nn.Module):
    def __init__(self):
        super().__init__()
        self.g1 = GATConv(FIN, HID, HEADS)
        self.g2 = GATConv(HID * HEADS, C, 1, concat=False)
        self.head = nn.Linear(3 * C, 2)

    def forward(self, x, ei, batch):
        x = F.elu(self.g1(x, ei))
        node_logits = self.g2(x, ei)
        return F.log_softmax(node_logits, dim=-1), self.head(pool(node_logits, batch, GRAPHS))


model = GAT()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel()).float() * 0.73 + i * 0.5).view_as(p) * 0.4)
x = torch.sin(torch.arange(N * FIN).float() * 0.29).view(N, FIN)
y = (nodes * 2) % C
graph_y = torch.tensor([0, 1, 1, 0])
optimizer = torch.optim.AdamW(model.parameters(), lr=0.02)
for _ in range(6):
    optimizer.zero_grad()
    node_out, graph_out = model(x, edge_index, graph_of)
    loss = F.nll_loss(node_out, y) + F.cross_entropy(graph_out, graph_y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    losses.append(loss.item())
sums = torch.zeros(N, HEADS).index_add_(0, edge_index[1], model.g1.alpha)
losses.append(bool(torch.allclose(sums, torch.ones_like(sums))))
losses.append(model.g1.att_src.grad.abs().sum().item())

# A flag spreads one hop: a node is marked when any in-neighbour is (bool amax), cleared when any is not (amin).
flag = nodes % 11 == 0
reached = flag.scatter_reduce(0, edge_index[1], flag[edge_index[0]], "amax", include_self=True)
kept = flag.scatter_reduce(0, edge_index[1], flag[edge_index[0]], "amin", include_self=False)
losses += [reached.dtype == torch.bool, int(reached.sum()), int(kept.sum()), kept.dtype == torch.bool]
# Integer extremes per target, with the dtype's own limits among the values.
ids = torch.where(nodes % 5 == 0, torch.iinfo(torch.int64).max, nodes * 3 - N)
losses += torch.zeros(N, dtype=torch.long).scatter_reduce(0, edge_index[1], ids[edge_index[0]], "amin",
                                                          include_self=False)[:20].tolist()
