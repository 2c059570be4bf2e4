"""A long convolution through the FFT, its kernel from a diagonal state-space model with complex parameters (as S4's),
trained with Adam; checked against conv1d."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def fft_conv(u, k):
    L = u.shape[-1]
    n = 2 * L
    u_f = torch.fft.rfft(u, n=n)
    k_f = torch.fft.rfft(k, n=n)
    return torch.fft.irfft(u_f * k_f, n=n)[..., :L]


class LongConv(nn.Module):
    def __init__(self, H, L):
        super().__init__()
        self.log_dt = nn.Parameter(torch.linspace(-3, -1, H))
        self.A_re = nn.Parameter(-0.5 * torch.ones(H, 4))
        self.A_im = nn.Parameter(torch.arange(4, dtype=torch.float32).repeat(H, 1) * 3.14)
        self.C = nn.Parameter(torch.view_as_complex(torch.stack([torch.cos(torch.arange(H * 4.)),
                                                                 torch.sin(torch.arange(H * 4.))], -1)).view(H, 4))
        self.D = nn.Parameter(torch.ones(H) * 0.1)
        self.L = L

    def kernel(self):
        dt = self.log_dt.exp().unsqueeze(-1)
        A = torch.complex(self.A_re, self.A_im)
        dtA = A * dt
        pos = torch.arange(self.L, dtype=torch.float32)
        K = torch.exp(dtA.unsqueeze(-1) * pos)  # (H, N, L)
        C = self.C * (torch.exp(dtA) - 1.0) / A
        return 2 * torch.einsum("hn,hnl->hl", C, K).real

    def forward(self, u):
        return fft_conv(u, self.kernel()) + u * self.D.unsqueeze(-1)


H, L = 3, 16
u = torch.sin(torch.arange(2 * H * L, dtype=torch.float32).view(2, H, L) * 0.37)
target = torch.roll(u, 2, dims=-1) * 0.5
model = LongConv(H, L)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for _ in range(6):
    opt.zero_grad()
    loss = F.mse_loss(model(u), target)
    loss.backward()
    opt.step()
    losses.append(loss.item())
with torch.no_grad():
    k = model.kernel()
    direct = F.conv1d(F.pad(u, (L - 1, 0)), k.flip(-1).unsqueeze(1), groups=H)
    losses.append(float((direct - fft_conv(u, k)).abs().max().item() < 1e-4))
    losses.append(model.C.grad.abs().sum().item() if model.C.grad is not None else -1.0)
    spec = torch.fft.fft2(u)
    losses.append(spec.abs().sum().item())
    losses.append(torch.fft.ifftshift(torch.fft.fftshift(spec)).abs().sum().item())
    losses.append(torch.fft.irfftn(torch.fft.rfftn(u, dim=(-2, -1)), s=u.shape[-2:]).sum().item())
    losses.append(torch.fft.hfft(spec[0, 0, :5]).sum().item())
    z = torch.polar(torch.ones(4), torch.linspace(0, 3, 4))
    losses += [z.real.sum().item(), torch.view_as_real(z.conj().resolve_conj()).sum().item(), z.abs().sum().item()]
print(losses)
