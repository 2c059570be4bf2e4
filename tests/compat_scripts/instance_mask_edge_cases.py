"""Instance-mask utilities and the edge cases segmentation code runs into: masks_to_boxes with torch.where, mask IoU
by matmul, pasting masks with grid_sample, the Mask R-CNN loss on the target class's logits, a painter's canvas by
area, torch.where / nonzero(as_tuple=True) / masked_scatter on 0-d tensors, int32 index tensors (which torch takes)
and int16 ones (which it refuses), and the integer inputs adaptive pooling and grid_sample refuse."""
import torch
import torch.nn.functional as F


def masks_to_boxes(masks):
    if masks.numel() == 0:
        return torch.zeros((0, 4), device=masks.device, dtype=torch.float)
    bounding_boxes = torch.zeros((masks.shape[0], 4), device=masks.device, dtype=torch.float)
    for index, mask in enumerate(masks):
        y, x = torch.where(mask != 0)
        bounding_boxes[index, 0] = torch.min(x)
        bounding_boxes[index, 1] = torch.min(y)
        bounding_boxes[index, 2] = torch.max(x)
        bounding_boxes[index, 3] = torch.max(y)
    return bounding_boxes


def mask_iou(m1, m2):
    m1 = m1.flatten(1).float()
    m2 = m2.flatten(1).float()
    inter = m1 @ m2.T
    return inter / (m1.sum(1)[:, None] + m2.sum(1)[None, :] - inter)


def paste_masks(masks, boxes, img_h, img_w):
    n = masks.shape[0]
    x0, y0, x1, y1 = torch.split(boxes, 1, dim=1)
    img_y = (torch.arange(0, img_h, dtype=torch.float32) + 0.5 - y0) / (y1 - y0) * 2 - 1
    img_x = (torch.arange(0, img_w, dtype=torch.float32) + 0.5 - x0) / (x1 - x0) * 2 - 1
    gx = img_x[:, None, :].expand(n, img_y.size(1), img_x.size(1))
    gy = img_y[:, :, None].expand(n, img_y.size(1), img_x.size(1))
    grid = torch.stack([gx, gy], dim=3)
    return F.grid_sample(masks[:, None].to(torch.float32), grid, align_corners=False)[:, 0]


def maskrcnn_loss(mask_logits, labels, mask_targets):
    labels = torch.cat(labels, dim=0)
    if mask_targets.numel() == 0:
        return mask_logits.sum() * 0
    return F.binary_cross_entropy_with_logits(mask_logits[torch.arange(labels.shape[0]), labels], mask_targets)


def raises(fn, error):
    try:
        fn()
    except error:
        return True
    return False


losses = []
H, W = 20, 24
yy, xx = torch.meshgrid(torch.arange(H), torch.arange(W), indexing="ij")
masks = torch.stack([((yy - cy) ** 2 + (xx - cx) ** 2 <= r * r) for cy, cx, r in [(5, 6, 4), (12, 15, 5), (8, 18, 3),
                                                                                  (15, 4, 6)]])
boxes = masks_to_boxes(masks)
losses += boxes.flatten().tolist() + [masks_to_boxes(masks[:0]).shape[0]]
iou = mask_iou(masks, torch.roll(masks, shifts=(1, 2), dims=(1, 2)))
losses += iou.diagonal().tolist() + [iou.sum().item()]
small = torch.sigmoid(torch.sin(torch.arange(4 * 7 * 7, dtype=torch.float32).view(4, 7, 7) * 0.5) * 3)
pasted = paste_masks(small, boxes + torch.tensor([0.0, 0.0, 1.0, 1.0]), H, W)
losses += [pasted.sum().item(), (pasted > 0.5).sum().item()]
mask_logits = torch.cos(torch.arange(4 * 3 * 7 * 7, dtype=torch.float32) * 0.13).view(4, 3, 7, 7).requires_grad_()
roi_masks = (F.interpolate(masks[:, None].float(), size=(7, 7), mode="bilinear", align_corners=False)[:, 0] >= 0.5)
loss = maskrcnn_loss(mask_logits, [torch.tensor([1, 2]), torch.tensor([0, 2])], roi_masks.float())
loss.backward()
losses += [loss.item(), mask_logits.grad.abs().sum().item(), mask_logits.grad[:, 1].abs().sum().item()]
areas = masks.sum((1, 2))
canvas = torch.zeros(H, W, dtype=torch.long)
for k in torch.argsort(areas, descending=True).tolist():
    canvas[masks[k]] = k + 1
losses += torch.bincount(canvas.flatten()).tolist()

# 0-d tensors read as one-element 1-D ones by where(cond) and nonzero(as_tuple=True), as numpy's.
best = iou.max()
keep = torch.where(best > 0.5)
losses += [len(keep), keep[0].tolist() == [0], torch.nonzero(best < 0.1, as_tuple=True)[0].numel()]
losses += [torch.nonzero(torch.tensor(3), as_tuple=True)[0].tolist() == [0], *torch.nonzero(torch.tensor(3)).shape]
score = torch.tensor(0.25, requires_grad=True)
refined = score.masked_scatter(best > 0.5, torch.tensor([0.75, 0.5]))
refined.backward()
losses += [refined.item(), score.grad.item()]

# int32 index tensors work where torch takes them; int16 ones raise as torch's do.
idx32 = torch.tensor([3, 0, 2], dtype=torch.int32)
flat = areas.float()
losses += flat[idx32].tolist() + flat.index_select(0, idx32).tolist() + flat.gather(0, idx32).tolist()
losses += torch.zeros(4).index_add_(0, idx32, torch.ones(3)).tolist()
idx16 = idx32.to(torch.int16)
losses += [raises(lambda: flat[idx16], IndexError), raises(lambda: flat.index_select(0, idx16), RuntimeError),
           raises(lambda: flat.gather(0, idx16), RuntimeError), raises(lambda: flat.take(idx32), RuntimeError),
           raises(lambda: F.embedding(idx16, torch.ones(4, 2)), RuntimeError)]

# Integer masks must be made float before adaptive pooling or sampling, in torch.
u8 = masks[:, None].to(torch.uint8)
losses += [raises(lambda: F.adaptive_avg_pool2d(u8, 4), NotImplementedError),
           raises(lambda: F.adaptive_max_pool2d(u8.long(), 4), NotImplementedError),
           raises(lambda: F.grid_sample(u8, torch.zeros(4, 2, 2, 2), align_corners=False), NotImplementedError),
           raises(lambda: F.conv2d(u8.float(), torch.ones(1, 1, 3, 3), stride=2, padding="same"), RuntimeError)]
losses += F.adaptive_avg_pool2d(u8.float(), 4).sum((1, 2, 3)).tolist()
print(losses)
