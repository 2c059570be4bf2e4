"""Metric learning and relational distillation: a Siamese head trained with CosineEmbeddingLoss on mined pairs whose
label 0 marks a pair to ignore, weighted multi-margin and triplet losses, RKD (reduction='elementwise_mean', as the
RepDistiller code passes it), soft-target cross-entropy with class weights, and the warnings and refusals torch gives
for the legacy reduction flags, 'mean' KL divergence and operands of mixed dtypes."""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

losses = []


def det_(module, k):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.53 + k + i).view_as(p) * 0.4)


def warned(caught, *starts):
    """Whether each of ``starts`` begins one of the caught warnings' messages."""
    return [any(str(w.message).startswith(start) for w in caught) for start in starts]


class Embedder(nn.Module):
    def __init__(self, dim=6):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, dim))
        self.head = nn.Linear(dim, 4)

    def forward(self, x):
        emb = self.body(x)
        return emb, self.head(emb)


def rkd_pdist(e, eps=1e-12):
    e_square = e.pow(2).sum(dim=1)
    res = (e_square.unsqueeze(1) + e_square.unsqueeze(0) - 2 * e @ e.t()).clamp(min=eps).sqrt().clone()
    res[range(len(e)), range(len(e))] = 0
    return res


def rkd(student, teacher):
    with torch.no_grad():
        t_d = rkd_pdist(teacher)
        t_d = t_d / t_d[t_d > 0].mean()
        td = F.normalize(teacher.unsqueeze(0) - teacher.unsqueeze(1), p=2, dim=2)
        t_angle = torch.bmm(td, td.transpose(1, 2)).view(-1)
    d = rkd_pdist(student)
    d = d / d[d > 0].mean()
    sd = F.normalize(student.unsqueeze(0) - student.unsqueeze(1), p=2, dim=2)
    s_angle = torch.bmm(sd, sd.transpose(1, 2)).view(-1)
    return 25 * F.smooth_l1_loss(d, t_d, reduction="elementwise_mean") + \
        50 * F.smooth_l1_loss(s_angle, t_angle, reduction="elementwise_mean")


x = torch.cos(torch.arange(12 * 8, dtype=torch.float32).view(12, 8) * 0.19)
y = torch.arange(12) % 4
teacher, student = Embedder(), Embedder()
det_(teacher, 0.0)
det_(student, 1.0)
teacher.eval()
class_w = torch.tensor([1.0, 2.0, 0.5, 1.5])
opt = torch.optim.SGD(student.parameters(), lr=0.02, momentum=0.9)
idx = torch.arange(8)
partner = torch.where(idx % 2 == 0, idx + 4, idx + 1)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(4):
        emb, logits = student(x)
        with torch.no_grad():
            t_emb, t_logits = teacher(x)
        # Pairs (i, partner): 1 for the same class, -1 for another, 0 where the miner gave up (no loss).
        same = (y[idx] == y[partner]).long() * 2 - 1
        pair_label = torch.where(idx % 3 == 2, torch.zeros_like(same), same)
        l_pair = nn.CosineEmbeddingLoss(margin=0.2)(emb[idx], emb[partner], pair_label)
        l_margin = nn.MultiMarginLoss(p=2, margin=0.5, weight=class_w)(logits, y)
        l_triplet = F.triplet_margin_loss(emb, emb.roll(4, 0), emb.roll(1, 0), margin=0.3, swap=True)
        l_rkd = rkd(emb, t_emb)
        l_kd = F.kl_div(F.log_softmax(logits / 2, 1), F.softmax(t_logits / 2, 1)) * 4
        loss = l_pair + l_margin + l_triplet + l_rkd + l_kd
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses += [l.item() for l in (l_pair, l_margin, l_triplet, l_rkd, l_kd)]
losses += warned(caught, "reduction: 'mean' divides the total loss by both the batch size and the support size.",
                 "reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.")

# Per-pair losses: ignored pairs are exact zeros; unbatched pairs take a 0-d label.
per_pair = F.cosine_embedding_loss(emb[idx], emb[partner], pair_label, reduction="none")
losses += [per_pair[2].item(), per_pair[5].item(), (per_pair != 0).sum().item()]
losses.append(F.cosine_embedding_loss(emb[0], emb[1], torch.tensor(-1), margin=-1.0).item())

# Soft targets with float64 class weights promote the loss to float64, as torch's.
soft = F.softmax(t_logits, 1)
ce = F.cross_entropy(logits, soft, weight=class_w.double(), label_smoothing=0.1)
losses += [ce.item(), ce.dtype == torch.float64]

# The legacy flags and the old reduction name, in torch's words.
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    legacy = nn.TripletMarginLoss(size_average=False)
    losses.append(legacy.reduction == "sum")
    losses.append(F.margin_ranking_loss(emb[:, 0], emb[:, 1], torch.ones(12), reduce=False).shape[0])
    losses.append(F.mse_loss(emb, t_emb, reduction="elementwise_mean").item())
losses += warned(caught, "size_average and reduce args will be deprecated, please use reduction='sum' instead.",
                 "size_average and reduce args will be deprecated, please use reduction='none' instead.")

# Refusals: kernels that read one dtype, class-weight sizes, targets that must be int64, pairs of the wrong rank.
for bad, error, message in (
        (lambda: F.cross_entropy(logits, y, weight=class_w.double()), RuntimeError,
         "expected scalar type Float but found Double"),
        (lambda: F.nll_loss(F.log_softmax(logits.double(), 1), y, weight=class_w), RuntimeError,
         "expected scalar type Double but found Float"),
        (lambda: F.multi_margin_loss(logits, y, weight=torch.ones(3)), RuntimeError,
         "inconsistent weight size, expected 4 but got [3]"),
        (lambda: F.multi_margin_loss(logits, y.int()), RuntimeError, "expected scalar type Long but found Int"),
        (lambda: F.cosine_embedding_loss(emb[idx], emb[partner], pair_label.view(1, -1)), RuntimeError,
         "0D or 1D target tensor expected, multi-target not supported"),
        (lambda: F.cosine_embedding_loss(emb[0], emb[1], torch.tensor([1])), RuntimeError,
         "1D target tensor expects 2D input tensors, but found inputs with sizes [6] and [6]."),
        (lambda: torch.cdist(emb, t_emb.double()), RuntimeError, "expected scalar type Float but found Double"),
        (lambda: F.poisson_nll_loss(logits, soft, reduction="elementwise_mean"), ValueError,
         "elementwise_mean is not a valid value for reduction")):
    try:
        bad()
        losses.append(False)
    except error as e:
        losses.append(str(e) == message)
