"""torchvision's detection internals written out in user code: FrozenBatchNorm2d dropping num_batches_tracked in
_load_from_state_dict, IntermediateLayerGetter, Conv2dNormActivation and SqueezeExcitation blocks, the
jit/onnx export guards (torch.jit.is_scripting, torch.onnx.is_in_onnx_export), the MultiScaleRoIAlign level mapper
and RoI format with full_like, and half-precision box IoU whose gradients stay finite for large boxes (the
denominator's gradient staged as torch's), trained under bfloat16 autocast."""
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class FrozenBatchNorm2d(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        num_batches_tracked_key = prefix + "num_batches_tracked"
        if num_batches_tracked_key in state_dict:
            del state_dict[num_batches_tracked_key]
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def forward(self, x: Tensor) -> Tensor:
        w = self.weight.reshape(1, -1, 1, 1)
        b = self.bias.reshape(1, -1, 1, 1)
        rv = self.running_var.reshape(1, -1, 1, 1)
        rm = self.running_mean.reshape(1, -1, 1, 1)
        scale = w * (rv + self.eps).rsqrt()
        bias = b - rm * scale
        return x * scale + bias


class Conv2dNormActivation(nn.Sequential):
    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, groups=1, norm_layer=nn.BatchNorm2d,
                 activation_layer=nn.ReLU, dilation=1):
        padding = (kernel_size - 1) // 2 * dilation
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation, groups=groups,
                            bias=norm_layer is None)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer(inplace=True))
        super().__init__(*layers)


class SqueezeExcitation(nn.Module):
    def __init__(self, input_channels, squeeze_channels):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)

    def forward(self, x: Tensor) -> Tensor:
        return torch.sigmoid(self.fc2(F.relu(self.fc1(self.avgpool(x))))) * x


class IntermediateLayerGetter(nn.ModuleDict):
    def __init__(self, model: nn.Module, return_layers: dict[str, str]) -> None:
        if not set(return_layers).issubset([name for name, _ in model.named_children()]):
            raise ValueError("return_layers are not present in model")
        orig_return_layers = return_layers
        return_layers = {str(k): str(v) for k, v in return_layers.items()}
        layers = OrderedDict()
        for name, module in model.named_children():
            layers[name] = module
            if name in return_layers:
                del return_layers[name]
            if not return_layers:
                break
        super().__init__(layers)
        self.return_layers = orig_return_layers

    def forward(self, x):
        out = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out


@torch.jit.script
def _box_area(boxes: Tensor) -> Tensor:
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _upcast(t: Tensor) -> Tensor:
    if t.is_floating_point():
        return t if t.dtype in (torch.float32, torch.float64) else t.float()
    return t if t.dtype in (torch.int32, torch.int64) else t.int()


def box_iou_raw(b1: Tensor, b2: Tensor) -> Tensor:
    lt = torch.max(b1[:, None, :2], b2[:, :2])
    rb = torch.min(b1[:, None, 2:], b2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (_box_area(b1)[:, None] + _box_area(b2) - inter)


def level_mapper(boxlists: list[Tensor], k_min: int = 2, k_max: int = 5, canonical_scale: int = 224,
                 canonical_level: int = 4, eps: float = 1e-6) -> Tensor:
    s = torch.sqrt(torch.cat([_box_area(_upcast(b)) for b in boxlists]))
    target_lvls = torch.floor(canonical_level + torch.log2(s / canonical_scale) + torch.tensor(eps, dtype=s.dtype))
    target_lvls = torch.clamp(target_lvls, min=k_min, max=k_max)
    return (target_lvls.to(torch.int64) - k_min).to(torch.int64)


def convert_to_roi_format(boxes: list[Tensor]) -> Tensor:
    concat_boxes = torch.cat(boxes, dim=0)
    device, dtype = concat_boxes.device, concat_boxes.dtype
    ids = torch.cat([torch.full_like(b[:, :1], i, dtype=dtype, device=device)
                     for i, b in enumerate(boxes)], dim=0)
    return torch.cat([ids, concat_boxes], dim=1)


def postprocess(scores: Tensor, boxes: Tensor, score_thresh: float) -> Tensor:
    if torch.jit.is_scripting() or torch.onnx.is_in_onnx_export():
        return boxes  # the export path keeps every box
    keep = torch.where(scores > score_thresh)[0]
    return boxes[keep]


def init(m):
    with torch.no_grad():
        for i, (_, p) in enumerate(m.named_parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.41 + i).view_as(p) * 0.3)


losses = []
backbone = nn.Sequential(OrderedDict([
    ("stem", Conv2dNormActivation(3, 8, stride=2, norm_layer=FrozenBatchNorm2d)),
    ("layer1", nn.Sequential(Conv2dNormActivation(8, 8, groups=8, norm_layer=FrozenBatchNorm2d,
                                                  activation_layer=nn.Hardswish), SqueezeExcitation(8, 4))),
    ("layer2", Conv2dNormActivation(8, 16, stride=2, norm_layer=None, activation_layer=nn.SiLU)),
    ("layer3", Conv2dNormActivation(16, 16, dilation=2)),
    ("head", nn.Linear(4, 4)),
]))
init(backbone)
sd = backbone.state_dict()
sd["stem.1.num_batches_tracked"] = torch.tensor(5)
sd["stem.1.running_mean"] = torch.linspace(-0.1, 0.1, 8)
res = backbone.load_state_dict(sd, strict=True)
losses += [len(res.missing_keys), len(res.unexpected_keys), len(sd)]
getter = IntermediateLayerGetter(backbone, {"layer1": "0", "layer3": "1"})
losses.append(list(getter.keys()) == ["stem", "layer1", "layer2", "layer3"])
img = torch.cos(torch.arange(2 * 3 * 16 * 20, dtype=torch.float32) * 0.03).view(2, 3, 16, 20)
getter.eval()
with torch.no_grad():
    feats = getter(img)
losses += [v.sum().item() for v in feats.values()]
boxes = [torch.tensor([[0.0, 0, 50, 60], [10, 10, 300, 400]]), torch.tensor([[5.0, 5, 600, 500]])]
losses += level_mapper(boxes).tolist()
losses += convert_to_roi_format(boxes).flatten().tolist()
losses.append(len(postprocess(torch.tensor([0.9, 0.2, 0.6]), torch.arange(12.0).view(3, 4), 0.5)))
losses.append(torch.onnx.is_in_onnx_export())

# Half-precision IoU: a union of 15000 squared overflows float16, (inter / union) / union does not.
k = torch.arange(6, dtype=torch.float32)
big = torch.stack([k * 12, k * 9, k * 12 + 100, k * 9 + 80], 1)
for dt in (torch.float16, torch.bfloat16):
    bh = big.to(dt).requires_grad_()
    gtb = torch.tensor([[30.0, 20.0, 130.0, 110.0]], dtype=dt)
    iou = box_iou_raw(bh, gtb)
    iou.sum().backward()
    losses += [iou.float().sum().item(), bh.grad.isfinite().all().item(), bh.grad.float().abs().sum().item()]
    losses += bh.grad.float().flatten().tolist()
x = torch.tensor([300.0, 500.0, 1000.0], dtype=torch.float16, requires_grad=True)
torch.div(2.0, x).sum().backward()
losses += x.grad.float().tolist()

# A detection head trained under bfloat16 autocast on the CPU.
head = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU(), nn.Conv2d(8, 5, 1))
init(head)
tgt = torch.arange(2 * 20 * 20).view(2, 20, 20)[:, :16] % 5
opt = torch.optim.SGD(head.parameters(), lr=0.05, momentum=0.9)
for _ in range(3):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = head(img)
        ce = F.cross_entropy(out, tgt)
        bce = F.binary_cross_entropy_with_logits(out[:, 0], (tgt == 0).float())
    losses += [out.dtype == torch.bfloat16, ce.dtype == torch.float32, ce.item(), bce.item()]
    opt.zero_grad()
    (ce + bce).backward()
    opt.step()
    losses.append(head[0].weight.grad.dtype == torch.float32)
print(losses)
