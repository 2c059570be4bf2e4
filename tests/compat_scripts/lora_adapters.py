"""LoRA adapters through nn.utils.parametrize (enable/disable, remove with leave_parametrized) and as wrapper modules
over frozen base layers (requires_grad_ toggling, filtered optimizer parameters, merging into the base weight)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize


class LoRAParametrization(nn.Module):
    def __init__(self, fan_in, fan_out, rank=2, alpha=4):
        super().__init__()
        self.lora_A = nn.Parameter(torch.zeros((rank, fan_out)))
        self.lora_B = nn.Parameter(torch.zeros((fan_in, rank)))
        self.scale = alpha / rank
        self.enabled = True

    def forward(self, original_weights):
        if self.enabled:
            return original_weights + torch.matmul(self.lora_B, self.lora_A).view(original_weights.shape) * self.scale
        return original_weights


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r=2, alpha=8, dropout=0.0):
        super().__init__()
        self.base = base
        self.r = r
        self.scaling = alpha / r
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        self.lora_dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        nn.init.zeros_(self.lora_B.weight)
        self.merged = False

    def forward(self, x):
        out = self.base(x)
        if not self.merged:
            out = out + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling
        return out

    @torch.no_grad()
    def merge(self):
        self.base.weight.data += (self.lora_B.weight @ self.lora_A.weight) * self.scaling
        self.merged = True


def det_init(m, s=0.5):
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(s * torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.61 + i).view_as(p))


net = nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 3))
det_init(net)
for layer in [net[0], net[2]]:
    lora = LoRAParametrization(layer.weight.shape[0], layer.weight.shape[1])
    parametrize.register_parametrization(layer, "weight", lora)
with torch.no_grad():
    for n, p in net.named_parameters():
        if "lora_A" in n:
            p.copy_(0.1 * torch.sin(torch.arange(p.numel(), dtype=torch.float32)).view_as(p))
for n, p in net.named_parameters():
    if "lora" not in n:
        p.requires_grad = False
names = [n for n, p in net.named_parameters() if p.requires_grad]
x = torch.linspace(-1, 1, 30).view(5, 6)
y = torch.tensor([0, 1, 2, 1, 0])
opt = torch.optim.SGD([p for p in net.parameters() if p.requires_grad], lr=0.5, momentum=0.9)
losses = [float(len(names)), float(parametrize.is_parametrized(net[0])),
          float(parametrize.is_parametrized(net[0], "bias"))]
for _ in range(5):
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
losses.append(float(net[0].parametrizations.weight.original.grad is None))
for layer in [net[0], net[2]]:
    layer.parametrizations["weight"][0].enabled = False
losses.append(F.cross_entropy(net(x), y).item())
for layer in [net[0], net[2]]:
    layer.parametrizations["weight"][0].enabled = True
with torch.no_grad():
    before = net(x)
parametrize.remove_parametrizations(net[0], "weight", leave_parametrized=True)
with torch.no_grad():
    losses.append((net(x) - before).abs().max().item() < 1e-5)
losses.append(float(isinstance(net[0].weight, nn.Parameter)))
losses.append(len(list(net.state_dict().keys())))

# wrapper module LoRA
base = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
det_init(base, 0.4)
base.requires_grad_(False)
base[0] = LoRALinear(base[0])
base[2] = LoRALinear(base[2])
with torch.no_grad():
    for mod in base.modules():
        if isinstance(mod, LoRALinear):
            nn.init.constant_(mod.lora_A.weight, 0.05)
trainable = sum(p.numel() for p in base.parameters() if p.requires_grad)
total = sum(p.numel() for p in base.parameters())
losses += [trainable, total]
opt = torch.optim.AdamW(filter(lambda p: p.requires_grad, base.parameters()), lr=1e-2)
for _ in range(4):
    loss = F.cross_entropy(base(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
with torch.no_grad():
    ref = base(x)
    for mod in base.modules():
        if isinstance(mod, LoRALinear):
            mod.merge()
    losses.append(float(torch.allclose(base(x), ref, atol=1e-5)))
losses.append(float(base[0].base.weight.requires_grad))
print(losses)
