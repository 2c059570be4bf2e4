"""fairseq- and AllenNLP-era sequence pieces: a ConvS2S encoder over torch.conv_tbc with GLU and weight-normalized
ConvTBC layers, a recurrent loop written over torch's cell functions (lstm_cell, gru_cell, rnn_relu_cell), a
projection applied to a PackedSequence's data and rewrapped by hand (unsorted_indices from invert_permutation), an
LSTM subclass that overrides check_forward_args, padding sequences of mixed dtypes, torch.embedding_renorm_."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import (
    PackedSequence,
    invert_permutation,
    pack_padded_sequence,
    pad_packed_sequence,
    pad_sequence,
)

losses = []


def fill(module, k):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float) * (k + 0.02 * i) + i).view_as(p) * 0.5)


class ConvTBC(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding=0):
        super().__init__()
        self.kernel_size = (kernel_size,)
        self.padding = (padding,)
        self.weight = nn.Parameter(torch.Tensor(kernel_size, in_channels, out_channels))
        self.bias = nn.Parameter(torch.Tensor(out_channels))

    def forward(self, input):
        return torch.conv_tbc(input.contiguous(), self.weight, self.bias, self.padding[0])


class ConvEncoder(nn.Module):
    def __init__(self, V=12, E=6, layers=((8, 3), (8, 3), (12, 3))):
        super().__init__()
        self.embed = nn.Embedding(V, E, padding_idx=0)
        self.fc1 = nn.Linear(E, layers[0][0])
        self.convs, self.projections = nn.ModuleList(), nn.ModuleList()
        c_in = layers[0][0]
        for c_out, k in layers:
            self.projections.append(nn.Linear(c_in, c_out) if c_in != c_out else None)
            self.convs.append(nn.utils.weight_norm(ConvTBC(c_in, c_out * 2, k, padding=k // 2), dim=2))
            c_in = c_out
        self.fc2 = nn.Linear(c_in, E)

    def forward(self, src_tokens):
        x = self.fc1(self.embed(src_tokens))
        input_embedding = self.embed(src_tokens)
        pad_mask = src_tokens.eq(0).t()
        x = x.transpose(0, 1)  # B x T x C -> T x B x C
        for proj, conv in zip(self.projections, self.convs):
            residual = x if proj is None else proj(x)
            x = conv(x.masked_fill(pad_mask.unsqueeze(-1), 0))
            x = (F.glu(x, dim=2) + residual) * math.sqrt(0.5)
        x = self.fc2(x.transpose(1, 0)).masked_fill(pad_mask.t().unsqueeze(-1), 0)
        return x, (x + input_embedding) * math.sqrt(0.5)


enc = ConvEncoder()
fill(enc, 0.41)
losses.append(sorted(n for n, _ in enc.named_parameters() if "convs.0" in n) == ["convs.0.bias", "convs.0.weight_g",
                                                                                 "convs.0.weight_v"])
src = torch.tensor([[3, 4, 5, 6, 0], [7, 8, 9, 0, 0]])
opt = torch.optim.NAdam(enc.parameters(), lr=0.01)
for _ in range(4):
    x, y = enc(src)
    loss = (x.pow(2).mean() - y.mean()).abs() + x.std()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
losses.append(enc.convs[1].weight_g.grad.abs().sum().item())
xt = torch.sin(torch.arange(7 * 2 * 3, dtype=torch.float).view(7, 2, 3)).requires_grad_()
w = torch.cos(torch.arange(3 * 3 * 4, dtype=torch.float).view(3, 3, 4)).requires_grad_()
b = torch.linspace(-1, 1, 4).requires_grad_()
for pad in (0, 1, 2, -1):
    out = torch.conv_tbc(xt, w, b, pad)
    losses.extend([out.shape[0], out.sum().item()])
(F.conv_tbc(xt, w, b, 1) ** 2).sum().backward()
losses.extend([xt.grad.abs().sum().item(), w.grad.abs().sum().item(), b.grad.sum().item()])
losses.extend(torch.conv_tbc(xt[:2], w, b).shape)  # no output steps
try:
    torch.conv_tbc(xt, w[:, :2], b)
except RuntimeError as e:
    losses.append(str(e) == "Input dim 2 (input channels) is not == dim 1 in the weight tensor")

# a decoder loop over torch's cell functions, as custom-RNN code writes it
I, H = 3, 4
cell, gru, rnn = nn.LSTMCell(I, H), nn.GRUCell(I, H), nn.RNNCell(I, H, nonlinearity="relu")
for k, m in enumerate((cell, gru, rnn)):
    fill(m, 0.7 + 0.1 * k)
xs = torch.sin(torch.arange(5 * 2 * I, dtype=torch.float).view(5, 2, I))
h = c = hg = hr = torch.zeros(2, H)
for t in range(5):
    h, c = torch.lstm_cell(xs[t], (h, c), cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    hg = torch.gru_cell(xs[t], hg, gru.weight_ih, gru.weight_hh, gru.bias_ih, gru.bias_hh)
    hr = torch.rnn_relu_cell(xs[t], hr, rnn.weight_ih, rnn.weight_hh, rnn.bias_ih, rnn.bias_hh)
losses.extend([h.sum().item(), c.sum().item(), hg.sum().item(), hr.sum().item()])
losses.append(torch.rnn_tanh_cell(xs[0], torch.ones(2, H), rnn.weight_ih, rnn.weight_hh).sum().item())
(h.sum() + hg.sum()).backward()
losses.extend([cell.weight_hh.grad.abs().sum().item(), gru.bias_ih.grad.abs().sum().item()])


# an LSTM whose subclass hooks the argument checks (as wrappers that log or relax them do)
class CheckedLSTM(nn.LSTM):
    def check_forward_args(self, input, hidden, batch_sizes):
        seen.append((tuple(input.shape), tuple(hidden[0].shape), self.get_expected_cell_size(input, batch_sizes)))
        super().check_forward_args(input, hidden, batch_sizes)


seen = []
lstm = CheckedLSTM(3, 4, bidirectional=True, proj_size=2)
fill(lstm, 0.3)
seq = torch.cos(torch.arange(5 * 3 * 3, dtype=torch.float).view(5, 3, 3))
out, (hn, cn) = lstm(seq)
losses.append(seen == [((5, 3, 3), (2, 3, 2), (2, 3, 4))])
losses.extend([out.sum().item(), hn.sum().item(), cn.sum().item()])
try:
    lstm(seq, (torch.zeros(2, 3, 4), torch.zeros(2, 3, 4)))
except RuntimeError as e:
    losses.append(str(e) == "Expected hidden[0] size (2, 3, 2), got [2, 3, 4]")
try:
    lstm(seq[:0])
except RuntimeError as e:
    losses.append(str(e) == "Expected sequence length to be larger than 0 in RNN")

# a projection applied to packed data, rewrapped by hand
packed = pack_padded_sequence(seq, torch.tensor([2, 5, 3]), enforce_sorted=False)
lin = nn.Linear(3, 2)
fill(lin, 0.5)
projected = PackedSequence(lin(packed.data), packed.batch_sizes, packed.sorted_indices)
losses.extend(projected.unsorted_indices.tolist())
padded, lens = pad_packed_sequence(projected, batch_first=True)
losses.append(padded.sum().item())
losses.extend(lens.tolist())
pair = PackedSequence((packed.data, packed.batch_sizes))
losses.append(pair.sorted_indices is None)
losses.extend(invert_permutation(torch.tensor([2, 0, 3, 1])).tolist())
losses.append(type(projected._replace(data=torch.tanh(projected.data))).__name__ == "PackedSequence")
out, _ = lstm(packed)
losses.append(pad_packed_sequence(out)[0].sum().item())
# pad_sequence keeps the first sequence's dtype; lengths must be 1-D
mixed = pad_sequence([torch.tensor([1, 2]), torch.tensor([3.7])], padding_value=0.5)
losses.append(mixed.dtype == torch.int64)
losses.extend(mixed.flatten().tolist())
try:
    pack_padded_sequence(seq, torch.tensor([[5, 3, 2]]))
except RuntimeError as e:
    losses.append(str(e) == "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor")
W = torch.arange(12, dtype=torch.float).view(4, 3)
losses.append(torch.embedding_renorm_(W, torch.tensor([1, 3, 3]), 2.0, 2.0) is W)
losses.extend(W.flatten().tolist())
