"""Convolutions (dilation, groups, padding="same", circular and reflect padding), normalization layers, pooling
(fractional too) and a dozen losses, trained in float64 as the default dtype."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def det(m, f=0.41):
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float64) * f + i).view_as(p) * 0.3)
    return m


torch.set_default_dtype(torch.float64)
net = det(nn.Sequential(
    nn.Conv1d(3, 6, 3, padding="same", dilation=2, padding_mode="circular"), nn.GroupNorm(2, 6), nn.Hardswish(),
    nn.Conv1d(6, 6, 3, groups=3, padding=1, padding_mode="reflect"),
    nn.InstanceNorm1d(6, affine=True, track_running_stats=True),
    nn.PReLU(6), nn.Conv1d(6, 4, 1), nn.LocalResponseNorm(2), nn.SELU(), nn.AdaptiveAvgPool1d(3), nn.Flatten(),
    nn.Linear(12, 5), nn.Hardtanh(-2, 2)))
x = torch.sin(torch.arange(4 * 3 * 10, dtype=torch.float64).view(4, 3, 10) * 0.21)
y = torch.tensor([0, 3, 1, 4])
opt = torch.optim.SGD(net.parameters(), lr=0.05)
losses = []
for _ in range(4):
    opt.zero_grad()
    out = net(x)
    yoh = F.one_hot(y, 5).double()
    terms = [
        F.multi_margin_loss(out, y, p=1, margin=1.0),
        F.multilabel_soft_margin_loss(out, yoh),
        F.multilabel_margin_loss(out, torch.tensor([[0, 3, -1, 0, 0]] * 4)),
        F.poisson_nll_loss(out, yoh, log_input=True),
        F.gaussian_nll_loss(out, yoh, torch.ones(4, 5) * 0.5),
        F.margin_ranking_loss(out[:, 0], out[:, 1], torch.tensor([1.0, -1.0, 1.0, -1.0])),
        F.hinge_embedding_loss(out, yoh * 2 - 1),
        F.soft_margin_loss(out, yoh * 2 - 1),
        F.binary_cross_entropy_with_logits(out, yoh, pos_weight=torch.linspace(0.5, 2, 5)),
        F.cross_entropy(out, yoh * 0.8 + 0.04),
        F.nll_loss(F.log_softmax(out, 1), y, reduction="sum"),
        F.l1_loss(out, yoh), F.huber_loss(out, yoh, delta=0.3),
    ]
    loss = sum(terms)
    loss.backward()
    opt.step()
    losses.append(loss.item())
losses += [t.item() for t in terms]
net.eval()
with torch.no_grad():
    losses.append(net(x).sum().item())
    losses.append(net[4].running_mean.sum().item() + net[4].running_var.sum().item())
img = torch.cos(torch.arange(2 * 2 * 7 * 7, dtype=torch.float64).view(2, 2, 7, 7) * 0.13)
c2 = det(nn.Conv2d(2, 4, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), bias=False))
losses.append(c2(img).sum().item())
c3 = det(nn.Conv3d(1, 2, 2, padding="same"))
losses.append(c3(img.unsqueeze(1)).sum().item())
ct = det(nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1, output_padding=1, groups=1, dilation=1))
losses.append(ct(x).sum().item())
losses.append(F.avg_pool2d(img, 3, stride=2, padding=1, count_include_pad=False, ceil_mode=True).sum().item())
mp, ind = F.max_pool2d(img, 2, return_indices=True)
losses.append(F.max_unpool2d(mp, ind, 2, output_size=img.shape[-2:]).sum().item())
losses.append(F.lp_pool1d(x, 2.0, 3).sum().item())
samples = torch.linspace(0.1, 0.9, 8).view(2, 2, 2)
losses.append(F.fractional_max_pool2d(img, 2, output_size=(3, 3), _random_samples=samples).sum().item())
losses.append(nn.LayerNorm([7, 7], elementwise_affine=False)(img).std().item())
losses.append(F.batch_norm(x, torch.zeros(3), torch.ones(3), training=True, momentum=0.1).sum().item())
losses.append(F.rms_norm(x, (10,), eps=1e-6).abs().sum().item())
torch.set_default_dtype(torch.float32)
print(losses)
