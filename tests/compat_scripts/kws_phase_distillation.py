"""Keyword spotting on log-mel + phase features with MobileNetV3-style blocks (hard-swish, hard-sigmoid squeeze
excitation, ReLU6), zero-padded clips, knowledge distillation from a teacher with KL divergence."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

losses = []
SR, N_FFT, HOP, N_MELS = 4000, 64, 16, 12


def mel_fb(n_freqs, n_mels, sr):
    hz = torch.linspace(0, sr // 2, n_freqs)
    def mel(f):
        return 2595.0 * torch.log10(1.0 + f / 700.0)

    edges = torch.linspace(mel(torch.tensor(0.0)), mel(torch.tensor(sr / 2)), n_mels + 2)
    pts = 700.0 * (10 ** (edges / 2595.0) - 1)
    diff = pts[1:] - pts[:-1]
    slopes = pts.unsqueeze(0) - hz.unsqueeze(1)
    down = -slopes[:, :-2] / diff[:-1]
    up = slopes[:, 2:] / diff[1:]
    return torch.clamp(torch.min(down, up), min=0.0)


def features(wave, lengths):
    win = torch.hann_window(N_FFT)
    spec = torch.stft(wave, N_FFT, HOP, window=win, center=True, pad_mode="constant", return_complex=True)
    power = spec.real.pow(2) + spec.imag.pow(2)
    logmel = torch.log(torch.matmul(power.transpose(1, 2), FB).transpose(1, 2) + 1e-6)
    phase = torch.atan2(spec.imag, spec.real)  # exactly 0/0 on silent (zero-padded) frames
    ipd = torch.diff(phase, dim=-1, prepend=phase[..., :1])
    frames = torch.div(lengths, HOP, rounding_mode="floor") + 1
    mask = torch.arange(logmel.shape[-1]).unsqueeze(0) < frames.unsqueeze(1)
    logmel = logmel.masked_fill(~mask.unsqueeze(1), 0.0)
    weight = (power / (power + 1e-2))[:, :N_MELS]  # phase of near-silent bins is noise
    return torch.stack([logmel, torch.cos(ipd[:, :N_MELS]) * weight * mask.unsqueeze(1)], 1), mask


class SqueezeExcite(nn.Module):
    def __init__(self, ch, rd=4):
        super().__init__()
        self.fc1 = nn.Conv2d(ch, ch // rd, 1)
        self.fc2 = nn.Conv2d(ch // rd, ch, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))), inplace=True)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cexp, cout, stride, act):
        super().__init__()
        self.use_res = stride == 1 and cin == cout
        self.block = nn.Sequential(
            nn.Conv2d(cin, cexp, 1, bias=False), nn.BatchNorm2d(cexp), act(),
            nn.Conv2d(cexp, cexp, 3, stride, 1, groups=cexp, bias=False), nn.BatchNorm2d(cexp), act(),
            SqueezeExcite(cexp),
            nn.Conv2d(cexp, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class KWSNet(nn.Module):
    def __init__(self, n_classes=4, width=8):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(2, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.Hardswish())
        self.blocks = nn.Sequential(InvertedResidual(width, 16, width, 1, nn.ReLU6),
                                    InvertedResidual(width, 24, 12, 2, nn.Hardswish),
                                    InvertedResidual(12, 24, 12, 1, nn.Hardswish))
        self.head = nn.Sequential(nn.Linear(12, 16), nn.Hardswish(), nn.Dropout(0.0), nn.Linear(16, n_classes))

    def forward(self, x, mask):
        h = self.blocks(self.stem(x))
        m = F.interpolate(mask[:, None, None].float(), size=h.shape[-2:], mode="nearest")
        pooled = (h * m).sum((-2, -1)) / m.sum((-2, -1)).clamp_min(1.0)
        return self.head(F.hardtanh(pooled, -3.0, 3.0))


def det_init(model, scale):
    with torch.no_grad():
        for k, (name, p) in enumerate(model.named_parameters()):
            if p.dim() == 1 and "weight" in name:
                p.fill_(1.0)
            else:
                p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + k).view_as(p) * scale)


FB = mel_fb(N_FFT // 2 + 1, N_MELS, SR)
B, T = 6, 640
t = torch.arange(T, dtype=torch.float32) / SR
lengths = torch.tensor([640, 480, 320, 640, 400, 560])
labels = torch.tensor([0, 1, 2, 3, 1, 2])
wave = torch.stack([torch.sin(2 * math.pi * (300 + 150 * int(c)) * t) * (0.5 + 0.1 * i) for i, c in enumerate(labels)])
wave = wave * (torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1))  # silence after each clip
x, mask = features(wave, lengths)
losses += list(x.shape)
losses.append(x.abs().sum().item())

student, teacher = KWSNet(), KWSNet(width=12)
teacher.blocks[0] = InvertedResidual(12, 16, 12, 1, nn.ReLU6)
teacher.blocks[1] = InvertedResidual(12, 24, 12, 2, nn.Hardswish)
det_init(student, 0.3)
det_init(teacher, 0.25)
teacher.eval()
opt = torch.optim.AdamW(student.parameters(), lr=3e-3, weight_decay=1e-2)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=5e-3, total_steps=4)
T_kd = 2.0
for _ in range(4):
    with torch.no_grad():
        soft = F.softmax(teacher(x, mask) / T_kd, dim=-1)
    logits = student(x, mask)
    kd = F.kl_div(F.log_softmax(logits / T_kd, dim=-1), soft, reduction="batchmean") * T_kd ** 2
    ce = F.cross_entropy(logits, labels, label_smoothing=0.05)
    loss = 0.7 * kd + 0.3 * ce
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    losses.append(loss.item())
first_conv = student.stem[0].weight.grad
losses.append(first_conv.abs().sum().item())
losses.append(student.blocks[0].block[3].weight.grad.abs().sum().item())
losses.append(student.blocks[1].block[6].fc2.bias.grad.abs().sum().item())
losses.append(student.blocks[2].block[1].running_var.sum().item())
# phase-aware loss: its gradient reaches the waveform through atan2, also on the silent frames
w = wave.clone().requires_grad_()
spec = torch.stft(w, N_FFT, HOP, window=torch.hann_window(N_FFT), return_complex=True)
target_phase = torch.atan2(spec.imag.detach().roll(1, -1), spec.real.detach())
mag = spec.abs().detach()
phase_loss = (mag ** 2 / (mag ** 2 + 1e-2) * (1 - torch.cos(torch.atan2(spec.imag, spec.real) - target_phase))).mean()
phase_loss.backward()
losses.append(phase_loss.item())
losses.append(torch.isfinite(w.grad).all().item())
losses.append(w.grad.abs().sum().item())
student.eval()
with torch.no_grad():
    pred = student(x, mask).argmax(-1)
    losses += pred.tolist()
