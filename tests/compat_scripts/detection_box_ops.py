"""Detection utilities written in torch: IoU/GIoU, NMS, anchors with meshgrid, focal loss, smooth L1, RoI align."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def box_area(b):
    return (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])


def box_iou(a, b):
    area1, area2 = box_area(a), box_area(b)
    lt = torch.max(a[:, None, :2], b[:, :2])
    rb = torch.min(a[:, None, 2:], b[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    union = area1[:, None] + area2 - inter
    return inter / union, union


def generalized_box_iou(a, b):
    iou, union = box_iou(a, b)
    lt = torch.min(a[:, None, :2], b[:, :2])
    rb = torch.max(a[:, None, 2:], b[:, 2:])
    wh = (rb - lt).clamp(min=0)
    area = wh[..., 0] * wh[..., 1]
    return iou - (area - union) / area


def nms(boxes, scores, thr):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i.item())
        if order.numel() == 1:
            break
        ious, _ = box_iou(boxes[i].unsqueeze(0), boxes[order[1:]])
        order = order[1:][ious[0] <= thr]
    return torch.tensor(keep, dtype=torch.long)


def anchors(fh, fw, stride, sizes, ratios):
    ys, xs = torch.meshgrid(torch.arange(fh, dtype=torch.float32), torch.arange(fw, dtype=torch.float32), indexing="ij")
    centers = torch.stack([xs, ys, xs, ys], dim=-1).reshape(-1, 1, 4) * stride + stride / 2
    s = torch.tensor(sizes, dtype=torch.float32)
    r = torch.tensor(ratios, dtype=torch.float32)
    ws = (s[:, None] / r.sqrt()[None]).reshape(-1)
    hs = (s[:, None] * r.sqrt()[None]).reshape(-1)
    base = torch.stack([-ws, -hs, ws, hs], dim=1) / 2
    return (centers + base[None]).reshape(-1, 4)


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2.0):
    p = torch.sigmoid(inputs)
    ce = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * ((1 - p_t) ** gamma)
    alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
    return (alpha_t * loss).sum()


def roi_align(feat, rois, out_size):
    # rois: (K, 5) = (batch_idx, x1, y1, x2, y2) in pixel coordinates
    N, C, H, W = feat.shape
    K = rois.shape[0]
    x1, y1, x2, y2 = rois[:, 1], rois[:, 2], rois[:, 3], rois[:, 4]
    theta = torch.zeros(K, 2, 3)
    theta[:, 0, 0] = (x2 - x1) / (W - 1)
    theta[:, 0, 2] = (x1 + x2 - W + 1) / (W - 1)
    theta[:, 1, 1] = (y2 - y1) / (H - 1)
    theta[:, 1, 2] = (y1 + y2 - H + 1) / (H - 1)
    grid = F.affine_grid(theta, (K, C, out_size, out_size), align_corners=True)
    return F.grid_sample(feat[rois[:, 0].long()], grid, mode="bilinear", align_corners=True)


losses = []
anc = anchors(4, 5, 8, [16, 32], [0.5, 1.0, 2.0])
losses += [anc.shape[0], anc.sum().item(), anc[7].tolist()[0]]
gt = torch.tensor([[4.0, 6.0, 20.0, 30.0], [15.0, 2.0, 38.0, 20.0]])
iou, _ = box_iou(anc, gt)
giou = generalized_box_iou(anc, gt)
losses += [iou.sum().item(), giou.sum().item(), iou.max(dim=0).values.sum().item()]
max_iou, matched = iou.max(dim=1)
labels = (max_iou > 0.3).float()
losses += [labels.sum().item(), matched.sum().item()]
scores = torch.sin(torch.arange(anc.shape[0], dtype=torch.float32) * 1.3) * 0.5 + 0.5
keep = nms(anc, scores, 0.5)
losses += [keep.numel(), keep.sum().item()]
head = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 6 * 5, 1))
with torch.no_grad():
    for i, p in enumerate(head.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.3 + i).view_as(p) * 0.1)
feat = torch.sin(torch.arange(2 * 4 * 4 * 5, dtype=torch.float32).view(2, 4, 4, 5) * 0.2)
opt = torch.optim.Adam(head.parameters(), lr=1e-2)
targets = labels.view(1, -1).expand(2, -1)
box_t = (gt[matched] - anc) / 16.0
for _ in range(4):
    out = head(feat).permute(0, 2, 3, 1).reshape(2, -1, 5)
    cls = out[..., 0]
    reg = out[..., 1:]
    lcls = sigmoid_focal_loss(cls, targets) / labels.sum().clamp(min=1)
    lreg = F.smooth_l1_loss(reg[:, labels.bool()], box_t[labels.bool()].expand(2, -1, -1), beta=1 / 9)
    loss = lcls + lreg
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses += [lcls.item(), lreg.item()]
rois = torch.tensor([[0, 0.5, 0.5, 3.0, 2.5], [1, 1.0, 0.0, 4.0, 3.0], [0, 2.0, 1.0, 3.5, 3.0]])
pooled = roi_align(feat, rois, 3)
losses += [pooled.sum().item(), pooled[1].abs().sum().item()]
feat2 = feat.clone().requires_grad_(True)
roi_align(feat2, rois, 2).pow(2).sum().backward()
losses.append(feat2.grad.abs().sum().item())
gs = F.grid_sample(feat, torch.tanh(torch.sin(torch.arange(2 * 3 * 3 * 2, dtype=torch.float32).view(2, 3, 3, 2))) * 1.2,
                   mode="nearest", padding_mode="border", align_corners=False)
gs2 = F.grid_sample(feat, torch.sin(torch.arange(2 * 3 * 3 * 2, dtype=torch.float32).view(2, 3, 3, 2)) * 1.2,
                    mode="bilinear", padding_mode="reflection", align_corners=False)
gs3 = F.grid_sample(feat, torch.sin(torch.arange(2 * 3 * 3 * 2, dtype=torch.float32).view(2, 3, 3, 2)) * 1.2,
                    mode="bicubic", padding_mode="zeros", align_corners=True)
losses += [gs.sum().item(), gs2.sum().item(), gs3.sum().item()]
losses = [float(v) for v in losses]
print(losses)
