"""Linear maps, embeddings, dropout, padding and normalization helpers (``torch.nn.functional`` signatures)."""

from __future__ import annotations

from typing import Sequence

from genesis import amp, random
from genesis import functional as T
from genesis.functional.dropout import Dropout
from genesis.functional.nn_ops import Embedding, Linear
from genesis.nn.functional._out import write_out
from genesis.tensor import Tensor, arange, full, ones_like, tensor, zeros, zeros_like


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None, *, out: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` for ``input`` of shape (*, in_features) and ``weight`` (out_features, in_features).

    ``out=`` writes the result into a preallocated tensor (inference only, no autograd).
    """
    input, weight, bias = amp.autocast_args("linear", input, weight, bias)
    if input.shape[-1] != weight.shape[-1]:
        raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, input.shape))} "
                           f"and {weight.shape[-1]}x{weight.shape[0] if weight.ndim == 2 else 1})")
    if weight.ndim == 2 and input.ndim >= 2 and input.dtype is weight.dtype and (
            bias is None or (bias.dtype is weight.dtype and bias.shape == (weight.shape[0],))):
        # One node and one 2-D product over all leading dims (flattened inside the node).
        result = Linear.apply(input, weight, bias)
    else:
        result = T.matmul(input, weight.t() if weight.ndim == 2 else weight)
        if bias is not None:
            result = result + bias
    return write_out("linear", result, out)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_k = x1^T W_k x2 + b_k`` for ``weight`` of shape (out, in1, in2)."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear: input1 and input2 must have the same leading dims, got {tuple(input1.shape)} "
                           f"and {tuple(input2.shape)}")
    if weight.shape[1] != input1.shape[-1] or weight.shape[2] != input2.shape[-1]:
        raise RuntimeError(f"bilinear: weight of shape {tuple(weight.shape)} does not match input sizes "
                           f"{input1.shape[-1]} and {input2.shape[-1]}")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    out_features, in1, in2 = weight.shape
    # (N, in1) @ (in1, out * in2) -> (N, out, in2), then contract in2 with x2.
    tmp = T.matmul(x1, weight.permute(1, 0, 2).reshape(in1, out_features * in2)).reshape(-1, out_features, in2)
    result = (tmp * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        result = result + bias
    return result.reshape(*lead, out_features)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input``; positions equal to ``padding_idx`` get no gradient."""
    if input.dtype.is_floating_point:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.dtype} instead (while checking arguments for embedding)")
    if weight.ndim != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D, got {weight.ndim}-D")
    num = weight.shape[0]
    if padding_idx is not None:
        if padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx += num
        elif padding_idx >= num:
            raise AssertionError("Padding_idx must be within num_embeddings")
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported; use sparse=False")
    flat = input.reshape(-1).long()
    if max_norm is not None:
        _embedding_renorm_(weight, flat, max_norm, norm_type)
    flat = T._check_bounds("embedding", flat, num, 0, False)
    rows = Embedding.apply(weight, flat)
    if scale_grad_by_freq and weight.requires_grad:
        counts = zeros_like(weight[:, 0]).index_add(0, flat, ones_like(flat, dtype=weight.dtype))
        scale = 1.0 / T.index_select(counts, 0, flat).unsqueeze(1)
        rows = rows.detach() + (rows - rows.detach()) * scale
    if padding_idx is not None and weight.requires_grad:
        # Same values; the rows read at padding_idx are cut from the graph so that row's gradient stays zero.
        rows = T.where((flat == padding_idx).unsqueeze(1), rows.detach(), rows)
    return rows.reshape(*input.shape, weight.shape[1])


def _embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """Rescale in place the referenced rows whose norm exceeds ``max_norm`` (torch's ``embedding_renorm_``)."""
    from genesis.autograd import no_grad

    with no_grad():
        rows = T.unique(indices)
        norms = T.norm(weight[rows], norm_type, dim=1)
        scale = T.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).unsqueeze(1)
        weight[rows] = weight[rows] * scale


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    return T.one_hot(tensor, num_classes)


def _check_p(op: str, p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"{op} probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (identity when not training).

    The mask comes from Genesis's default generator, so ``genesis.manual_seed`` makes it reproducible. It is not
    stored: the backward pass draws the same numbers again (one fused kernel each way on cuda).
    """
    _check_p("dropout", p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    elif not input.dtype.is_floating_point:
        raise RuntimeError(f"dropout: result type Float can't be cast to the desired output type "
                           f"{input.dtype.name} (dropout needs a floating-point input)")
    else:
        # One node: the mask comes from the generator's counter-based stream and is regenerated in backward.
        seed, offset = random._stream(None, input.device, input.numel())
        out = Dropout.apply(input, p=p, seed=seed, offset=offset)
    return input.copy_(out) if inplace else out


def _feature_dropout(op: str, input: Tensor, p: float, training: bool, inplace: bool, batched_ndim: int) -> Tensor:
    _check_p(op, p)
    if not training or p == 0.0:
        return input
    # One draw per channel: shape (N, C, 1, 1, ...) or (C, 1, 1, ...) for unbatched input.
    lead = 2 if input.ndim == batched_ndim else 1
    shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    if p == 1.0:
        out = input * 0.0
    else:
        keep = random.rand(shape, dtype=input.dtype, device=input.device) >= p
        out = input * keep.to(input.dtype) * (1.0 / (1.0 - p))
    return input.copy_(out) if inplace else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) input."""
    return _feature_dropout("dropout1d", input, p, training, inplace, 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) or (C, H, W) input."""
    return _feature_dropout("dropout2d", input, p, training, inplace, 4)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalizing mean and variance."""
    _check_p("alpha_dropout", p)
    if not training or p == 0.0:
        return input
    alpha_p = -1.7580993408473766
    keep = (random.rand(input.shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)
    a = ((1 - p) * (1 + p * alpha_p**2)) ** -0.5
    b = -a * alpha_p * p
    out = (input * keep + alpha_p * (1 - keep)) * a + b
    return input.copy_(out) if inplace else out


# ------------------------------------------------------------------ padding

def _pad_constant(x: Tensor, dim: int, before: int, after: int, value: float) -> Tensor:
    if before < 0:
        x = x.narrow(dim, -before, x.shape[dim] + before)
        before = 0
    if after < 0:
        x = x.narrow(dim, 0, x.shape[dim] + after)
        after = 0
    parts = []
    for n in (before, None, after):
        if n is None:
            parts.append(x)
        elif n > 0:
            shape = list(x.shape)
            shape[dim] = n
            parts.append(full(shape, value, dtype=x.dtype, device=x.device))
    return T.cat(parts, dim) if len(parts) > 1 else x


def _pad_indices(mode: str, size: int, before: int, after: int) -> list[int]:
    idx = []
    for i in range(-before, size + after):
        if mode == "reflect":
            period = 2 * (size - 1)
            j = abs(i) % period if period else 0
            idx.append(period - j if j >= size else j)
        elif mode == "replicate":
            idx.append(min(max(i, 0), size - 1))
        else:  # circular
            idx.append(i % size)
    return idx


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: ``pad = (last_left, last_right, prev_left, prev_right, ...)``.

    Modes: ``"constant"`` (negative amounts crop), ``"reflect"``, ``"replicate"``, ``"circular"``.
    """
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant" and value not in (None, 0):
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if mode != "constant" and (len(pad) not in (2, 4, 6) or input.ndim not in (len(pad) // 2 + 1, len(pad) // 2 + 2)):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    out = input
    for i in range(len(pad) // 2):
        dim = input.ndim - 1 - i
        before, after = int(pad[2 * i]), int(pad[2 * i + 1])
        if before == 0 and after == 0:
            continue
        if mode == "constant":
            out = _pad_constant(out, dim, before, after, 0.0 if value is None else value)
            continue
        size = out.shape[dim]
        if mode == "reflect" and (before >= size or after >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({before}, {after}) at dimension {dim} of input {tuple(input.shape)}")
        if mode == "circular" and (before > size or after > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        index = tensor(_pad_indices(mode, size, before, after), device=input.device)
        out = T.index_select(out, dim, index)
    return out


# ------------------------------------------------------------------ vectors

def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim``."""
    denom = T.norm(input, p, dim, keepdim=True).clamp(min=eps)
    return write_out("normalize", input / denom, out)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / max(||x1|| * ||x2||, eps)`` along ``dim`` (inputs broadcast)."""
    w12 = (x1 * x2).sum(dim)
    n1 = (x1 * x1).sum(dim)
    n2 = (x2 * x2).sum(dim)
    return w12 / T.sqrt(T.clamp(n1 * n2, min=eps * eps))


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim."""
    return T.norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


# ------------------------------------------------------------------ sliding windows

def _pair(v: int | Sequence[int], n: int = 2) -> tuple[int, ...]:
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(i) for i in v)
    return v * n if len(v) == 1 else v


def _window_index(h: int, w: int, kernel: tuple[int, int], dilation: tuple[int, int], stride: tuple[int, int],
                  device: object) -> tuple[Tensor, int, int]:
    """Flat (h * w) positions of every (ki, kj, i, j) kernel tap, shape (kh * kw * oh * ow,), and (oh, ow)."""
    (kh, kw), (dh, dw), (sh, sw) = kernel, dilation, stride
    oh = (h - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w - (dw * (kw - 1) + 1)) // sw + 1
    ki = arange(kh, device=device).reshape(kh, 1, 1, 1)
    kj = arange(kw, device=device).reshape(1, kw, 1, 1)
    i = arange(oh, device=device).reshape(1, 1, oh, 1)
    j = arange(ow, device=device).reshape(1, 1, 1, ow)
    return ((i * sh + ki * dh) * w + (j * sw + kj * dw)).reshape(-1), oh, ow


def _check_window_args(op: str, kernel: tuple, dilation: tuple, padding: tuple, stride: tuple) -> None:
    if min(stride) <= 0 or min(dilation) <= 0 or min(kernel) <= 0 or min(padding) < 0:
        raise RuntimeError(f"{op}: kernel_size, dilation and stride must be positive and padding non-negative, got "
                           f"kernel_size={kernel}, dilation={dilation}, padding={padding}, stride={stride}")


def unfold(input: Tensor, kernel_size: int | Sequence[int], dilation: int | Sequence[int] = 1,
           padding: int | Sequence[int] = 0, stride: int | Sequence[int] = 1) -> Tensor:
    """im2col: sliding (kh, kw) blocks of (N, C, H, W) input as columns of shape (N, C * kh * kw, L)."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"unfold: expected 3D or 4D (batch mode) tensor for input, got {input.ndim}D")
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    kernel, dil, pads, strides = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    _check_window_args("unfold", kernel, dil, pads, strides)
    if pads[0] or pads[1]:
        x = pad(x, (pads[1], pads[1], pads[0], pads[0]))
    n, c, h, w = x.shape
    if h < dil[0] * (kernel[0] - 1) + 1 or w < dil[1] * (kernel[1] - 1) + 1:
        raise RuntimeError(f"unfold: the padded input of size {(h, w)} is smaller than the dilated kernel")
    index, oh, ow = _window_index(h, w, kernel, dil, strides, input.device)
    # One gather over the flattened plane; its backward scatter-adds overlapping windows.
    cols = T.index_select(x.reshape(n, c, h * w), 2, index).reshape(n, c * kernel[0] * kernel[1], oh * ow)
    return cols if batched else cols.squeeze(0)


def fold(input: Tensor, output_size: int | Sequence[int], kernel_size: int | Sequence[int],
         dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
         stride: int | Sequence[int] = 1) -> Tensor:
    """col2im, the adjoint of ``unfold``: sums the (N, C * kh * kw, L) columns back into (N, C, H, W)."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"fold: expected 2D or 3D (batch mode) tensor for input, got {input.ndim}D")
    batched = input.ndim == 3
    cols = input if batched else input.unsqueeze(0)
    (oh_img, ow_img), (kh, kw) = _pair(output_size), _pair(kernel_size)
    (dh, dw), (ph, pw), (sh, sw) = _pair(dilation), _pair(padding), _pair(stride)
    n, ckk, blocks = cols.shape
    if ckk % (kh * kw):
        raise RuntimeError(f"fold: expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={ckk} and kernel_size={(kh, kw)}")
    c = ckk // (kh * kw)
    hp, wp = oh_img + 2 * ph, ow_img + 2 * pw
    dest, oh, ow = _window_index(hp, wp, (kh, kw), (dh, dw), (sh, sw), input.device)
    if oh * ow != blocks:
        raise RuntimeError(f"fold: expected input's dimension 2 to match the calculated number of sliding blocks "
                           f"{oh} * {ow} = {oh * ow}, but got input.size(2)={blocks}")
    src = cols.reshape(n, c, kh * kw * blocks)
    index = dest.reshape(1, 1, -1).expand(n, c, dest.shape[0])
    out = zeros((n, c, hp * wp), dtype=input.dtype, device=input.device).scatter_add(2, index, src)
    out = out.reshape(n, c, hp, wp)[:, :, ph:ph + oh_img, pw:pw + ow_img]
    return out if batched else out.squeeze(0)
