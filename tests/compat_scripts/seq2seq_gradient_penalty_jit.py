"""A translation model as research code writes it: a batch-first Transformer encoder (its padded inference path
switched by use_nested_tensor and torch.backends.mha), a GRU decoder with Luong attention over packed targets, and a
smoothness regularizer on the decoder's input embeddings: the squared norm of the loss's gradient, taken with
create_graph and backpropagated (double backward through the recurrent layers). TorchScript idioms of such code
(jit.isinstance over a beam cache, a legacy ScriptModule) run eagerly; mixed-dtype blends and cells called with a
lone state are refused in torch's words."""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

losses = []
V, D, PAD, BOS = 12, 8, 0, 1


def fill(module, k):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float) * (k + 0.02 * i) + i).view_as(p) * 0.4)


class Translator(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb = nn.Embedding(V, D, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(V, D, padding_idx=PAD)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            layer = nn.TransformerEncoderLayer(D, 2, 16, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2)
            # a sequence-first layer cannot take the nested-tensor path: torch says so when the stack is built
            self.side = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, 2, 16, dropout=0.0), 1)
        self.warnings = [str(w.message) for w in caught]
        self.decoder = nn.GRU(D, D, num_layers=2, batch_first=True)
        self.out = nn.Linear(2 * D, V)

    def forward(self, src, tgt_in, tgt_lens, tgt_embedded=None):
        src_pad = src == PAD
        memory = self.encoder(self.src_emb(src), src_key_padding_mask=src_pad)
        t = self.tgt_emb(tgt_in) if tgt_embedded is None else tgt_embedded
        packed = pack_padded_sequence(t, tgt_lens, batch_first=True, enforce_sorted=False)
        h, _ = self.decoder(packed)
        h, _ = pad_packed_sequence(h, batch_first=True, total_length=tgt_in.size(1))
        scores = torch.bmm(h, memory.transpose(1, 2)).masked_fill(src_pad.unsqueeze(1), float("-inf"))
        context = torch.bmm(scores.softmax(-1), memory)
        return self.out(torch.cat([h, context], -1))


src = torch.tensor([[5, 6, 7, 8, 2], [9, 4, 2, 0, 0], [3, 10, 11, 2, 0]])
tgt = torch.tensor([[1, 8, 7, 6, 5, 2], [1, 4, 9, 2, 0, 0], [1, 11, 10, 3, 2, 0]])
tgt_lens = (tgt[:, 1:] != PAD).sum(1)
model = Translator()
fill(model, 0.9)
losses.append(model.encoder.use_nested_tensor is True and model.side.use_nested_tensor is False)
losses.append(model.warnings == ["enable_nested_tensor is True, but self.use_nested_tensor is False because "
                                 "encoder_layer.self_attn.batch_first was not True(use batch_first for better "
                                 "inference performance)"])
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for _ in range(3):
    embedded = model.tgt_emb(tgt[:, :-1])
    logits = model(src, tgt[:, :-1], tgt_lens, tgt_embedded=embedded)
    nll = F.cross_entropy(logits.transpose(1, 2), tgt[:, 1:], ignore_index=PAD, label_smoothing=0.1)
    (grad_emb,) = torch.autograd.grad(nll, embedded, create_graph=True)
    penalty = grad_emb.pow(2).sum(-1).mean()
    loss = nll + 0.5 * penalty
    opt.zero_grad()
    loss.backward()
    losses.append(nll.item())
    losses.append(penalty.item())
    losses.append(model.decoder.weight_hh_l1.grad.abs().sum().item())
    opt.step()

# A hidden-state penalty straight through the decoder's recurrent layers.
x = torch.cos(torch.arange(3 * 4 * D, dtype=torch.float).reshape(3, 4, D)).requires_grad_()
out, h_n = model.decoder(x)
(g,) = torch.autograd.grad((out * out.sin()).sum() + h_n.sum(), x, create_graph=True)
g.pow(2).sum().backward()
losses.append(x.grad.abs().sum().item())
losses.append(model.decoder.bias_hh_l0.grad.abs().sum().item())

# Inference on the padded batch: torch's nested-tensor path leaves zeros at padded source positions, unless the
# stack's use_nested_tensor or the global fast-path switch turns it off.
model.eval()
with torch.no_grad():
    s = model.src_emb(src)
    pad = src == PAD
    losses.append(model.encoder(s, src_key_padding_mask=pad)[1, 3:].abs().sum().item())
    model.encoder.use_nested_tensor = False
    losses.append(model.encoder(s, src_key_padding_mask=pad)[1, 3:].abs().sum().item())
    model.encoder.use_nested_tensor = True
    torch.backends.mha.set_fastpath_enabled(False)
    losses.append(torch.backends.mha.get_fastpath_enabled())
    losses.append(model.encoder(s, src_key_padding_mask=pad)[1, 3:].abs().sum().item())
    torch.backends.mha.set_fastpath_enabled(True)
    best = model(src, tgt[:, :-1], tgt_lens).argmax(-1)
    losses.append((best * torch.arange(1, best.numel() + 1).view_as(best)).sum().item())  # position-weighted


# TorchScript idioms: container refinement of a beam cache, a legacy ScriptModule.
@torch.jit.script
def cache_size(cache: dict[str, list[torch.Tensor]]) -> int:
    return sum(len(v) for v in cache.values())


cache = {"keys": [torch.ones(2, D)], "values": [torch.ones(2, D), torch.ones(2, D)]}
losses.append(torch.jit.isinstance(cache, dict[str, list[torch.Tensor]]))
losses.append(torch.jit.isinstance({"keys": [1]}, dict[str, list[torch.Tensor]]))
losses.append(torch.jit.isinstance((1, "a"), (list[int], tuple[int, str])))
losses.append(cache_size(cache))


class LengthPenalty(torch.jit.ScriptModule):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    @torch.jit.script_method
    def forward(self, scores, lengths):
        return scores / ((5.0 + lengths) / 6.0) ** self.alpha


lp = LengthPenalty(0.6)
losses.append(isinstance(lp, torch.jit.ScriptModule) and isinstance(lp, nn.Module))
losses.append(lp(torch.tensor([-2.0, -3.0]), torch.tensor([3.0, 5.0])).sum().item())

# Refusals in torch's words.
checks = [
    (lambda: torch.baddbmm(torch.zeros(2, 3, 3), torch.ones(2, 3, 4, dtype=torch.float64),
                           torch.ones(2, 4, 3, dtype=torch.float64)),
     "Input dtypes must be the same, got: input float, batch1: double, batch2: double"),
    (lambda: torch.addmm(torch.zeros(3), torch.ones(2, 4), torch.ones(4, 3, dtype=torch.float64)),
     "self and mat2 must have the same dtype, but got Float and Double"),
    (lambda: nn.LSTMCell(D, D)(torch.ones(2, D), torch.zeros(2, D)),
     "lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, not Tensor"),
    (lambda: F.cross_entropy(torch.zeros(2, 3), torch.full((2, 3), 1 / 3), ignore_index=0),
     "ignore_index is not supported for floating point target"),
]
for fn, message in checks:
    try:
        fn()
        losses.append(False)
    except (RuntimeError, TypeError) as e:
        losses.append(str(e) == message)
