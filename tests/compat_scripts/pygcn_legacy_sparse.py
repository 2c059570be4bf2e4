"""A two-layer GCN in the style of the original pygcn code: numpy preprocessing, the deprecated
`torch.sparse.FloatTensor(indices, values, shape)` constructor and `Tensor.type()`, `torch.spmm`, masks over train /
val / test nodes; then the normalized adjacency cached with `torch.save` and read back, a CSR copy multiplied through
`torch.mm`, PageRank on a 1-D vector (`adj @ v`, `torch.mv`), a degree matrix from `torch.sparse.spdiags`, and
`torch.segment_reduce` pooling node features over graphs of a batch."""

import io
import math
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parameter import Parameter

warnings.filterwarnings("ignore", message=".*deprecated.*")
warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")

N, FEAT, NCLASS = 14, 7, 3
losses = []


def encode_onehot(labels):
    classes = sorted(set(labels))
    classes_dict = {c: np.identity(len(classes))[i, :] for i, c in enumerate(classes)}
    return np.array(list(map(classes_dict.get, labels)), dtype=np.int32)


def normalize(mx):
    rowsum = mx.sum(1)
    r_inv = np.power(rowsum, -1.0)
    r_inv[np.isinf(r_inv)] = 0.0
    return mx * r_inv[:, None]


def dense_to_torch_sparse_tensor(mx):
    row, col = np.nonzero(mx)
    indices = torch.from_numpy(np.vstack((row, col)).astype(np.int64))
    values = torch.from_numpy(mx[row, col].astype(np.float32))
    return torch.sparse.FloatTensor(indices, values, torch.Size(mx.shape))


labels_raw = [f"c{(i * 5) % NCLASS}" for i in range(N)]
features = ((np.arange(N * FEAT).reshape(N, FEAT) * 7) % 5 == 0).astype(np.float32)
adj = np.zeros((N, N), dtype=np.float32)
for i in range(N):
    adj[i, (i + 1) % N] = adj[(i + 1) % N, i] = 1.0
    adj[i, (i * 3) % N] = adj[(i * 3) % N, i] = 1.0
adj = normalize(adj + np.eye(N, dtype=np.float32))
features = torch.FloatTensor(normalize(features))
labels = torch.LongTensor(np.where(encode_onehot(labels_raw))[1])
adj = dense_to_torch_sparse_tensor(adj)
idx_train = torch.LongTensor(range(0, 6))
idx_val = torch.LongTensor(range(6, 10))
idx_test = torch.LongTensor(range(10, 14))
losses += [adj._nnz(), adj.type().endswith(".sparse.FloatTensor"), isinstance(adj, torch.sparse.FloatTensor),
           adj.numel()]


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        self.bias = Parameter(torch.FloatTensor(out_features))
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.weight.size(1))
        self.weight.data = torch.linspace(-stdv, stdv, self.weight.numel()).view(self.in_features, self.out_features)
        self.bias.data.fill_(0.01)

    def forward(self, input, adj):
        return torch.spmm(adj, torch.mm(input, self.weight)) + self.bias


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        return F.log_softmax(self.gc2(x, adj), dim=1)


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    return preds.eq(labels).double().sum() / len(labels)


model = GCN(nfeat=features.shape[1], nhid=8, nclass=labels.max().item() + 1, dropout=0.0)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
for _ in range(8):
    model.train()
    optimizer.zero_grad()
    output = model(features, adj)
    loss_train = F.nll_loss(output[idx_train], labels[idx_train])
    loss_train.backward()
    optimizer.step()
    model.eval()
    output = model(features, adj)
    losses += [loss_train.item(), F.nll_loss(output[idx_val], labels[idx_val]).item(),
               accuracy(output[idx_val], labels[idx_val]).item()]
losses.append(F.nll_loss(output[idx_test], labels[idx_test]).item())

# The preprocessed graph cached to a file and read back: a sparse tensor keeps its pattern and coalesced flag.
buffer = io.BytesIO()
torch.save({"adj": adj, "adj_coalesced": adj.coalesce(), "features": features}, buffer)
buffer.seek(0)
cached = torch.load(buffer)
losses += [cached["adj"].is_coalesced(), cached["adj_coalesced"].is_coalesced(),
           bool(torch.equal(cached["adj"].to_dense(), adj.to_dense()))]

# A CSR copy through torch.mm / torch.matmul, and PageRank on 1-D vectors.
csr = adj.coalesce().to_sparse_csr()
losses.append(bool(torch.allclose(torch.mm(csr, features), torch.spmm(adj, features), atol=1e-6)))
transition = adj.t().coalesce()
rank = torch.full((N,), 1.0 / N)
for _ in range(15):
    rank = 0.85 * (transition @ rank) + 0.15 / N
losses += rank.tolist()
losses.append(torch.mv(csr, rank).sum().item())
losses.append((rank @ transition).sum().item())

# D^-1/2 as a sparse diagonal matrix.
degree = torch.sparse.sum(adj, dim=1).to_dense()
d_inv_sqrt = torch.sparse.spdiags(degree.pow(-0.5).unsqueeze(0), torch.tensor([0]), (N, N))
sym = torch.sparse.mm(torch.sparse.mm(d_inv_sqrt, adj), d_inv_sqrt.to_dense())
losses += [d_inv_sqrt._nnz(), sym.sum().item(), torch.sparse_coo_tensor(size=(N, N))._nnz()]

# Graph-level readout: nodes of three graphs in consecutive runs, pooled with segment_reduce.
readout = GraphConvolution(FEAT, 8)
hidden = torch.tanh(readout(features, adj) * 10)
sizes = torch.tensor([5, 0, 9])
for reduce in ("sum", "mean", "max", "min"):
    losses += torch.segment_reduce(hidden, reduce, lengths=sizes, initial=0.0).flatten().tolist()
pooled = torch.segment_reduce(hidden, "max", offsets=torch.tensor([0, 5, 5, 14]), initial=-1.0)
pooled.sum().backward()
losses.append(readout.weight.grad.abs().sum().item())
