"""A one-dimensional Fourier neural operator layer (torch.fft.rfft, a complex weight on the lowest modes,
torch.fft.irfft) beside a pointwise convolution, fitted for a few SGD steps to a target signal under a waveform loss
plus a multi-resolution STFT magnitude loss (torch.stft with a Hann window written out). The frequency helpers and a
2-D transform add checks of their own to the losses."""

import math

import torch
import torch.fft
import torch.nn as nn
import torch.nn.functional as F


def hann(n: int) -> torch.Tensor:
    return 0.5 - 0.5 * torch.cos(2 * math.pi * torch.arange(n, dtype=torch.float32) / n)


class SpectralConv1d(nn.Module):
    def __init__(self, channels: int, modes: int):
        super().__init__()
        self.modes = modes
        w = torch.sin(torch.arange(channels * modes * 2, dtype=torch.float32) * 0.7).reshape(channels, modes, 2)
        self.weight = nn.Parameter(w * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, L)
        x_ft = torch.fft.rfft(x, norm="ortho")  # (B, C, L // 2 + 1)
        out_ft = x_ft[..., : self.modes] * torch.view_as_complex(self.weight)
        return torch.fft.irfft(out_ft, n=x.shape[-1], norm="ortho")


class FourierBlock(nn.Module):
    def __init__(self, channels: int, modes: int):
        super().__init__()
        self.spectral = SpectralConv1d(channels, modes)
        self.pointwise = nn.Conv1d(channels, channels, 1)
        with torch.no_grad():
            self.pointwise.weight.copy_(torch.cos(torch.arange(channels * channels, dtype=torch.float32)).reshape(
                channels, channels, 1) * 0.3)
            self.pointwise.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.spectral(x) + self.pointwise(x))


def stft_loss(y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    total = 0.0
    for n_fft in (16, 32):
        window = hann(n_fft)
        a = torch.stft(y.reshape(-1, y.shape[-1]), n_fft, n_fft // 4, window=window, return_complex=True).abs()
        b = torch.stft(target.reshape(-1, y.shape[-1]), n_fft, n_fft // 4, window=window, return_complex=True).abs()
        # The log offset keeps near-empty bins, whose float32 rounding differs between FFT algorithms, from
        # dominating the gradients.
        total = total + (a - b).norm() / b.norm() + F.l1_loss(torch.log(a + 0.1), torch.log(b + 0.1))
    return total


batch, channels, length = 2, 3, 64
t = torch.arange(length, dtype=torch.float32)
x = torch.stack([torch.sin(t * (0.2 + 0.05 * c) + b) for b in range(batch) for c in range(channels)])
x = x.reshape(batch, channels, length)
target = torch.sin(t * 0.3).expand(batch, channels, length) * 0.8
model = FourierBlock(channels, modes=8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
losses = []
for _ in range(4):
    y = model(x)
    loss = F.mse_loss(y, target) + 0.1 * stft_loss(y, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
# The frequency helpers, a centred spectrum and a 2-D transform of the output.
freqs = torch.fft.fftshift(torch.fft.fftfreq(length, d=0.5))
spectrum = torch.fft.fftshift(torch.fft.fft(x[0, 0]).abs())
losses.append((freqs * spectrum).sum().item())
losses.append(torch.fft.rfftfreq(length)[-1].item())
losses.append(torch.fft.fft2(model(x).detach()).abs().mean().item())
losses.extend(model.spectral.weight.grad.reshape(-1)[::5].tolist())
print("losses", losses)
