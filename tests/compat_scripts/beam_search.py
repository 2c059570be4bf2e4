"""Beam search over a tiny GRU LM with topk/gather/sort/index_select, length penalty."""
import torch
import torch.nn as nn
import torch.nn.functional as F

V, H, BEAM, EOS = 9, 12, 3, 8


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, H)
        self.cell = nn.GRUCell(H, H)
        self.out = nn.Linear(H, V)

    def step(self, tok, h):
        h = self.cell(self.emb(tok), h)
        return F.log_softmax(self.out(h), -1), h


lm = LM()
with torch.no_grad():
    for i, p in enumerate(lm.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 1.31 + i).view_as(p) * 0.8)
losses = []
B = 2
h = torch.zeros(B * BEAM, H)
tokens = torch.zeros(B * BEAM, 1, dtype=torch.long)
scores = torch.zeros(B, BEAM)
scores[:, 1:] = float("-inf")
finished = torch.zeros(B * BEAM, dtype=torch.bool)
with torch.no_grad():
    for _ in range(5):
        logp, h = lm.step(tokens[:, -1], h)
        logp = logp.masked_fill(finished.unsqueeze(1), float("-inf"))
        logp[:, EOS] = torch.where(finished, torch.zeros(B * BEAM), logp[:, EOS])
        cand = (scores.view(-1, 1) + logp).view(B, BEAM * V)
        top_s, top_i = cand.topk(BEAM, dim=1, largest=True, sorted=True)
        beam_idx = torch.div(top_i, V, rounding_mode="floor")
        tok_idx = top_i % V
        base = (torch.arange(B) * BEAM).unsqueeze(1)
        sel = (base + beam_idx).view(-1)
        h = h.index_select(0, sel)
        tokens = torch.cat([tokens[sel], tok_idx.view(-1, 1)], 1)
        finished = finished[sel] | (tok_idx.view(-1) == EOS)
        scores = top_s
        losses.append(scores.sum().item())
    lengths = (tokens != EOS).sum(1).float().view(B, BEAM)
    normed = scores / lengths.pow(0.7)
    sorted_s, order = normed.sort(dim=1, descending=True)
    best = tokens.view(B, BEAM, -1).gather(1, order[:, :1].unsqueeze(-1).expand(-1, -1, tokens.size(1)))
    losses += sorted_s.flatten().tolist()
    losses += best.flatten().float().tolist()
    vals, idx = torch.sort(torch.tensor([3.0, 1.0, 3.0, 2.0, 1.0]), stable=True, descending=True)
    losses += idx.float().tolist()
    k = torch.kthvalue(torch.tensor([5.0, 2.0, 8.0, 1.0]), 2)
    losses += [k.values.item(), float(k.indices)]
    am = torch.argsort(torch.tensor([[2, 9, 4], [7, 1, 3]]), dim=1, descending=True)
    losses += am.flatten().float().tolist()
print(losses)
