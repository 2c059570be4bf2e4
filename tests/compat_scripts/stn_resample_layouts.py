"""A spatial transformer and a resize/augment pipeline in plain torch: image registration where one affine_grid
serves two losses, each differentiated with its own autograd.grad call; antialiased Lanczos resizes of float and
uint8 images next to bilinear/bicubic; sizes given as torch.Size slices and numpy integers; a U-Net decoder in
channels_last with constant padding, flips and max-unpooling; adaptive pools down to an empty map; trunc_normal_
on a narrow interval; the errors torch raises for bad resize arguments and integer im2col."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

losses = []
N, C, H, W = 2, 3, 12, 16
yy, xx = torch.meshgrid(torch.arange(H, dtype=torch.float32), torch.arange(W, dtype=torch.float32), indexing="ij")
img = torch.stack([torch.sin(xx * 0.5 + yy * 0.3), torch.cos(xx * 0.2 - yy * 0.6), torch.sin(xx * yy * 0.04)])
img = torch.stack([img, img.flip(-1)])


class STN(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d((3, 4)), nn.Flatten(),
                                 nn.Linear(48, 6))
        for i, p in enumerate(self.loc.parameters()):
            with torch.no_grad():
                p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.9 + i).view_as(p) * 0.05)
        with torch.no_grad():
            self.loc[-1].bias.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]))

    def forward(self, x):
        theta = self.loc(x).view(-1, 2, 3)
        grid = F.affine_grid(theta, list(x.shape[:2]) + [8, 10], align_corners=False)
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


stn = STN()
warped = stn(img)
warped.pow(2).mean().backward()
losses += [warped.sum().item(), sum(p.grad.abs().sum().item() for p in stn.parameters())]

# Image registration: a learnable affine map per image; one grid serves two losses, each differentiated on its own
# (affine_grid's node keeps no saved tensor to free)
theta = nn.Parameter(torch.tensor([[[1.05, 0.1, 0.05], [-0.08, 0.95, 0.0]]]).repeat(N, 1, 1))
opt = torch.optim.SGD([theta], lr=0.05)
target = img.roll(1, -1)
for _ in range(3):
    grid = F.affine_grid(theta, img.shape, align_corners=True)
    moved = F.grid_sample(img, grid, padding_mode="reflection", align_corners=True)
    (g_sim,) = torch.autograd.grad(F.mse_loss(moved, target), theta)
    (g_reg,) = torch.autograd.grad((grid[..., 1:, :, :] - grid[..., :-1, :, :]).pow(2).mean(), theta)
    theta.grad = g_sim + 0.1 * g_reg
    opt.step()
    losses += [g_sim.abs().sum().item(), g_reg.abs().sum().item()]
losses.append(float(grid.grad_fn.name() == "AffineGridGeneratorBackward0"))

# Resizes: antialiased Lanczos (float and uint8), next to bilinear and bicubic
for size in ((6, 8), (20, 9), img.shape[-2:], (np.int64(5), np.int32(21))):
    for mode in ("bilinear", "bicubic", "lanczos"):
        out = F.interpolate(img, size=size, mode=mode, antialias=True)
        losses.append(out.abs().sum().item())
u8 = ((img * 0.5 + 0.5) * 255).round().to(torch.uint8)
for size in ((5, 7), (24, 30)):
    losses.append(F.interpolate(u8, size=size, mode="lanczos", antialias=True).double().sum().item())
x = img.clone().requires_grad_(True)
y = F.interpolate(x, scale_factor=(0.5, 0.75), mode="lanczos", antialias=True)
(gx,) = torch.autograd.grad((y * torch.arange(y.shape[-1], dtype=torch.float32)).sum(), x)
losses += [float(y.shape[-2] * 100 + y.shape[-1]), gx.abs().sum().item()]
up = nn.Upsample(scale_factor=(1, 2), mode="bilinear")
losses.append(float(isinstance(up.scale_factor[0], float)))
losses.append(up(img).sum().item())
for kwargs, exc in ((dict(scale_factor=(2, 2, 2)), ValueError), (dict(size=(4, 4), recompute_scale_factor=True),
                                                                  ValueError), (dict(), ValueError),
                    (dict(size=(4.0, 4)), TypeError), (dict(size=4, mode="linear"), NotImplementedError),
                    (dict(size=4, mode="lanczos"), ValueError)):
    try:
        F.interpolate(img, **kwargs)
        losses.append(0.0)
    except exc:
        losses.append(1.0)


# A channels_last U-Net decoder: unpool, pad to the skip's size, concatenate, flip test-time augmentation
class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2, return_indices=True, ceil_mode=True)
        self.unpool = nn.MaxUnpool2d(2)
        self.dec = nn.Conv2d(16, 4, 3, padding=1)
        for i, p in enumerate(self.parameters()):
            with torch.no_grad():
                p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.7 + i).view_as(p) * 0.2)

    def forward(self, x):
        skip = F.relu(self.enc(x))
        pooled, idx = self.pool(skip)
        up = self.unpool(pooled, idx)
        up = F.pad(up, [0, skip.shape[-1] - up.shape[-1], 0, skip.shape[-2] - up.shape[-2]])
        return self.dec(torch.cat([skip, up], dim=1)), up


dec = Decoder().to(memory_format=torch.channels_last)
xin = img[..., :11, :15].contiguous(memory_format=torch.channels_last)  # odd sizes: ceil_mode pools, pads
out, up = dec(xin)
tta = (out + dec(xin.flip(3))[0].flip(3)) / 2
losses += [out.sum().item(), tta.abs().sum().item()]
for t in (up, xin.flip(3), F.pad(xin, (1, 1, 2, 0), value=0.5), out):
    losses.append(float(t.is_contiguous(memory_format=torch.channels_last)))

# Adaptive pools down to an empty map, and of odd sizes
for size in ((0, 4), (5, 7), (1, None)):
    a = F.adaptive_avg_pool2d(img, size)
    m, i = F.adaptive_max_pool2d(img, size, return_indices=True)
    losses += [float(a.numel()), a.sum().item(), m.sum().item(), float(i.sum())]

# trunc_normal_ on a narrow interval (a sliver of the normal's mass): inside its bounds, with the right mean
w = torch.empty(64, 32)
nn.init.trunc_normal_(w, mean=0.0, std=1.0, a=1.9, b=2.0)
losses.append(float(bool((w >= 1.9).all() and (w <= 2.0).all())))
alpha, beta = 1.9, 2.0
mass = (math.erf(beta / math.sqrt(2)) - math.erf(alpha / math.sqrt(2))) / 2
pdf = [math.exp(-v * v / 2) / math.sqrt(2 * math.pi) for v in (alpha, beta)]
losses.append(float(abs(w.mean().item() - (pdf[0] - pdf[1]) / mass) < 0.02))

# im2col exists for floating and bool tensors only
losses.append(F.unfold(img > 0, 3).sum().item())
try:
    F.unfold(u8, 3)
    losses.append(0.0)
except NotImplementedError:
    losses.append(1.0)
losses = [float(v) for v in losses]
print(losses)
