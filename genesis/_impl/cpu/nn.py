"""The CPU backend's neural-network primitives: convolution, pooling, normalization, resampling, padding, the
recurrent cells, and the fused kernels (softmax, norms, cross-entropy, SwiGLU, RoPE, attention, KV cache) on torch's
CPU operators."""

from __future__ import annotations

import math

import torch

from genesis import dtypes
from genesis._impl.cpu.tensors import TORCH_DTYPE, check_index, native, wrap
from genesis.ndarray import NDArray

# ---------------------------------------------------------------- neural network

def conv(x: NDArray, w: NDArray, bias: NDArray | None, stride: tuple, padding: tuple, dilation: tuple, groups: int,
         transposed: bool, output_padding: tuple, out: NDArray | None = None) -> NDArray:
    b = native(bias) if bias is not None else None
    args = (native(x), native(w), b, list(stride), list(padding), list(dilation), transposed, list(output_padding),
            groups)
    if out is not None:
        torch.ops.aten.convolution.out(*args, out=native(out))
        return out
    return wrap(torch.ops.aten.convolution(*args))


def conv_backward(grad: NDArray, x: NDArray, w: NDArray, stride: tuple, padding: tuple, dilation: tuple, groups: int,
                  transposed: bool, output_padding: tuple, output_mask: tuple) -> tuple:
    grads = torch.ops.aten.convolution_backward(
        native(grad), native(x), native(w), [w.shape[1 if transposed else 0] * (groups if transposed else 1)],
        list(stride), list(padding), list(dilation), transposed, list(output_padding), groups, list(output_mask))
    return tuple(wrap(g) if m else None for g, m in zip(grads, output_mask))


_MAX_POOL = {2: (torch.ops.aten.max_pool2d_with_indices, torch.ops.aten.max_pool2d_with_indices_backward),
             3: (torch.ops.aten.max_pool3d_with_indices, torch.ops.aten.max_pool3d_with_indices_backward)}
_AVG_POOL = {2: (torch.ops.aten.avg_pool2d, torch.ops.aten.avg_pool2d_backward),
             3: (torch.ops.aten.avg_pool3d, torch.ops.aten.avg_pool3d_backward)}


def pool(x: NDArray, mode: str, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, ceil_mode: bool,
         count_include_pad: bool, divisor_override: int | None, indices: bool = True) -> tuple[NDArray, NDArray | None]:
    if mode == "max":
        values, argmax = _MAX_POOL[len(kernel)][0](native(x), list(kernel), list(stride), list(padding),
                                                   list(dilation), ceil_mode)
        return wrap(values), (wrap(argmax) if indices else None)
    return wrap(_AVG_POOL[len(kernel)][0](native(x), list(kernel), list(stride), list(padding), ceil_mode,
                                          count_include_pad, divisor_override)), None


def pool_backward(grad: NDArray, x: NDArray, indices: NDArray | None, mode: str, kernel: tuple, stride: tuple,
                  padding: tuple, dilation: tuple, ceil_mode: bool, count_include_pad: bool,
                  divisor_override: int | None) -> NDArray:
    if mode == "max":
        return wrap(_MAX_POOL[len(kernel)][1](native(grad), native(x), list(kernel), list(stride), list(padding),
                                              list(dilation), ceil_mode, native(indices)))
    return wrap(_AVG_POOL[len(kernel)][1](native(grad), native(x), list(kernel), list(stride), list(padding),
                                          ceil_mode, count_include_pad, divisor_override))


def _opt(x: NDArray | None) -> torch.Tensor | None:
    return native(x) if x is not None else None


def batch_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, running_mean: NDArray | None,
               running_var: NDArray | None, training: bool, momentum: float, eps: float) -> tuple:
    out, mean, invstd = torch.ops.aten.native_batch_norm(native(x), _opt(weight), _opt(bias), _opt(running_mean),
                                                         _opt(running_var), training, momentum, eps)
    return wrap(out), wrap(mean), wrap(invstd)


def batch_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, running_mean: NDArray | None,
                        running_var: NDArray | None, save_mean: NDArray, save_invstd: NDArray, training: bool,
                        eps: float, output_mask: tuple) -> tuple:
    grads = torch.ops.aten.native_batch_norm_backward(native(grad), native(x), _opt(weight), _opt(running_mean),
                                                      _opt(running_var), native(save_mean), native(save_invstd),
                                                      training, eps, list(output_mask))
    return tuple(wrap(g) if m and g is not None else None for g, m in zip(grads, output_mask))


def adaptive_pool(x: NDArray, mode: str, output_size: tuple) -> tuple[NDArray, NDArray | None]:
    if mode == "max":
        values, indices = torch.ops.aten.adaptive_max_pool2d(native(x), list(output_size))
        return wrap(values), wrap(indices)
    return wrap(torch.ops.aten._adaptive_avg_pool2d(native(x), list(output_size))), None


def adaptive_pool_backward(grad: NDArray, x: NDArray, indices: NDArray | None, mode: str) -> NDArray:
    if mode == "max":
        return wrap(torch.ops.aten.adaptive_max_pool2d_backward(native(grad), native(x), native(indices)))
    return wrap(torch.ops.aten._adaptive_avg_pool2d_backward(native(grad), native(x)))


def _group_norm_layout(t: torch.Tensor) -> torch.memory_format:
    """The dense layout torch's group norm kernels take ``t`` in: channels_last where ``t`` is stored so, else
    row-major."""
    return next((f for f in (torch.channels_last, torch.channels_last_3d) if t.dim() == (4 if f is torch.channels_last
                 else 5) and t.is_contiguous(memory_format=f) and not t.is_contiguous()), torch.contiguous_format)


def group_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, num_groups: int,
               eps: float) -> tuple[NDArray, NDArray, NDArray]:
    t = native(x)
    t = t.contiguous(memory_format=_group_norm_layout(t))  # torch's kernel takes a dense input only
    N, C = t.shape[:2]
    out, mean, rstd = torch.ops.aten.native_group_norm(t, _opt(weight), _opt(bias), N, C, math.prod(t.shape[2:]),
                                                       num_groups, eps)
    return wrap(out), wrap(mean), wrap(rstd)


def group_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, mean: NDArray, rstd: NDArray,
                        num_groups: int, output_mask: tuple) -> tuple:
    t = native(x)
    # torch's kernel reads dy in x's layout: give both one layout
    fmt = _group_norm_layout(t)
    t, g = t.contiguous(memory_format=fmt), native(grad).contiguous(memory_format=fmt)
    N, C = t.shape[:2]
    grads = torch.ops.aten.native_group_norm_backward(g, t, native(mean), native(rstd), _opt(weight), N,
                                                      C, math.prod(t.shape[2:]), num_groups, list(output_mask))
    return tuple(wrap(g) if m and g is not None else None for g, m in zip(grads, output_mask))


_UPSAMPLE = {"nearest": (torch.ops.aten.upsample_nearest2d, torch.ops.aten.upsample_nearest2d_backward),
             "nearest-exact": (torch.ops.aten._upsample_nearest_exact2d,
                               torch.ops.aten._upsample_nearest_exact2d_backward),
             "bilinear": (torch.ops.aten.upsample_bilinear2d, torch.ops.aten.upsample_bilinear2d_backward)}


def upsample(x: NDArray, output_size: tuple, mode: str, align_corners: bool | None, scales: tuple) -> NDArray:
    op = _UPSAMPLE[mode][0].default
    if mode == "bilinear":
        return wrap(op(native(x), list(output_size), bool(align_corners), *scales))
    return wrap(op(native(x), list(output_size), *scales))


def upsample_backward(grad: NDArray, input_size: tuple, mode: str, align_corners: bool | None,
                      scales: tuple) -> NDArray:
    op = _UPSAMPLE[mode][1].default
    out_size = list(grad.shape[2:])
    if mode == "bilinear":
        return wrap(op(native(grad), out_size, list(input_size), bool(align_corners), *scales))
    return wrap(op(native(grad), out_size, list(input_size), *scales))


_PAD_BACKWARD = {("reflect", 1): torch.ops.aten.reflection_pad1d_backward,
                 ("reflect", 2): torch.ops.aten.reflection_pad2d_backward,
                 ("reflect", 3): torch.ops.aten.reflection_pad3d_backward,
                 ("replicate", 1): torch.ops.aten.replication_pad1d_backward,
                 ("replicate", 2): torch.ops.aten.replication_pad2d_backward,
                 ("replicate", 3): torch.ops.aten.replication_pad3d_backward}


def pad(x: NDArray, pad: tuple, mode: str) -> NDArray:
    return wrap(torch.nn.functional.pad(native(x), list(pad), mode=mode))


def pad_backward(grad: NDArray, input_shape: tuple, pad: tuple, mode: str) -> NDArray:
    g = native(grad)
    if mode != "circular":
        like = g.new_empty(()).expand(input_shape)  # torch reads only the input's sizes
        return wrap(_PAD_BACKWARD[mode, len(pad) // 2].default(g, like, list(pad)))
    for i in range(len(pad) // 2):  # fold each padded dim back: the wrapped bands land on the opposite edge
        dim, size = g.ndim - 1 - i, input_shape[-1 - i]
        before, after = pad[2 * i], pad[2 * i + 1]
        out = g.narrow(dim, before, size).clone()
        out.narrow(dim, size - before, before).add_(g.narrow(dim, 0, before))
        out.narrow(dim, 0, after).add_(g.narrow(dim, before + size, after))
        g = out
    return wrap(g)


def embedding_backward(grad: NDArray, index: NDArray, num_weights: int) -> NDArray:
    return wrap(torch.ops.aten.embedding_dense_backward(native(grad), native(index), num_weights, -1, False))


# ---------------------------------------------------------------- fused neural-network kernels (torch composites)

# Recurrent cells: torch's gate order (LSTM i, f, g, o; GRU r, z, n); half precision computes in float32.

def _f32(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _tanh_(x: torch.Tensor) -> torch.Tensor:
    """``tanh(x) = 2 sigmoid(2x) - 1`` in place: torch's CPU tanh of a (20, 650) block right after a matrix product
    took a median 8 ms on a shared 2-core machine (its threaded path), the sigmoid form 0.13 ms."""
    return x.mul_(2).sigmoid_().mul_(2).sub_(1)


def rnn_cell_(mode: str, gi: NDArray, gh: NDArray, h: NDArray, c: NDArray | None, h_out: NDArray,
              saved: NDArray | None) -> None:
    H = h_out.shape[-1]
    gi, gh, out, s = _f32(native(gi)), _f32(native(gh)), native(h_out), _opt(saved)
    if mode == "LSTM":
        # Computed where it is kept when the saved block has the computing dtype (a dozen small ops in all: each
        # costs a few microseconds at the sizes of a cell, more than its arithmetic).
        direct = s.dtype == gi.dtype
        act = torch.add(gi, gh, out=s[:, :4 * H]) if direct else gi + gh  # (B, 4H) pre-activations
        # One sigmoid over all four gates, g's pre-activation doubled first: tanh(x) = 2 sigmoid(2x) - 1.
        g = act[:, 2 * H:3 * H]
        g.mul_(2)
        act.sigmoid_()
        g.mul_(2).sub_(1)
        i, f, _, o = act.split(H, 1)
        c_new = torch.mul(f, _f32(native(c)), out=s[:, 4 * H:]) if direct else f * _f32(native(c))
        c_new.addcmul_(i, g)
        tc = torch.mul(c_new, 2).sigmoid_().mul_(2).sub_(1)  # tanh(c')
        if out.dtype == tc.dtype:
            torch.mul(o, tc, out=out)
        else:
            out.copy_(o * tc)
        if not direct:
            s[:, :4 * H].copy_(act)
            s[:, 4 * H:].copy_(c_new)
    elif mode == "GRU":
        rz = torch.sigmoid(gi[:, :2 * H] + gh[:, :2 * H])
        r, z = rz.split(H, 1)
        n = _tanh_(torch.addcmul(gi[:, 2 * H:], r, gh[:, 2 * H:]))
        out.copy_(torch.addcmul(n, z, _f32(native(h)) - n))  # (1 - z) n + z h
        s[:, :2 * H].copy_(rz)
        s[:, 2 * H:3 * H].copy_(n)
        s[:, 3 * H:].copy_(gh[:, 2 * H:])
    else:
        pre = gi + gh
        out.copy_(_tanh_(pre) if mode == "RNN_TANH" else pre.relu_())


def _grad_read(parts: tuple[NDArray | None, ...], like: NDArray) -> torch.Tensor:
    """``_grad_sum`` for a gradient that is only read: the one given gradient itself (as a float) when there is one."""
    given = [p for p in parts if p is not None]
    if len(given) == 1:
        return _f32(native(given[0]))
    return _grad_sum(parts, like)


def _grad_sum(parts: tuple[NDArray | None, ...], like: NDArray) -> torch.Tensor:
    """The float sum of the given gradients (zeros where none is given)."""
    total = None
    for p in parts:
        if p is not None:
            total = _f32(native(p)).clone() if total is None else total.add_(native(p))
    return total if total is not None else torch.zeros(like.shape, dtype=_f32(native(like)).dtype)


def rnn_cell_backward_(mode: str, grad_out: NDArray | None, grad_h: NDArray | None, grad_state: NDArray | None,
                       h: NDArray, c: NDArray | None, saved: NDArray, grad_gi: NDArray, grad_gh: NDArray | None,
                       grad_state_prev: NDArray | None) -> None:
    H = h.shape[-1]
    s, d_gi = _f32(native(saved)), native(grad_gi)
    if mode == "LSTM":
        dh = _grad_read((grad_out, grad_h), h)
        act = s[:, :4 * H]
        i, f, g, o, c_new = s.split(H, 1)
        tc = torch.mul(c_new, 2).sigmoid_().mul_(2).sub_(1)  # tanh(c')
        dc = torch.mul(tc, tc).neg_().add_(1).mul_(o).mul_(dh)  # dh o (1 - tanh(c')^2)
        if grad_state is not None:
            dc += native(grad_state)
        # The gates' gradients in two steps over all four: what each gate's output receives, times its
        # activation's derivative (a (1 - a) for the sigmoids, 1 - g^2 for g). Written in place when d_gi has the
        # computing dtype.
        direct = d_gi.dtype == s.dtype
        d_act = d_gi if direct else torch.empty_like(act)
        torch.mul(dc, g, out=d_act[:, :H])
        torch.mul(dc, _f32(native(c)), out=d_act[:, H:2 * H])
        torch.mul(dc, i, out=d_act[:, 2 * H:3 * H])
        torch.mul(dh, tc, out=d_act[:, 3 * H:])
        deriv = torch.sub(1, act).mul_(act)
        torch.mul(g, g, out=deriv[:, 2 * H:3 * H]).neg_().add_(1)
        d_act.mul_(deriv)
        if not direct:
            d_gi.copy_(d_act)
        state_prev = native(grad_state_prev)
        if state_prev.dtype == dc.dtype:
            torch.mul(dc, f, out=state_prev)
        else:
            state_prev.copy_(dc * f)
    elif mode == "GRU":
        dh = _grad_sum((grad_out, grad_h, grad_state), h)
        r, z, n, gh_n = s.split(H, 1)
        dn = dh * (1 - z) * (1 - n * n)
        dr = dn * gh_n * r * (1 - r)
        dz = dh * (_f32(native(h)) - n) * z * (1 - z)
        d_gh = native(grad_gh)
        for d in (d_gi, d_gh):
            d[:, :H].copy_(dr)
            d[:, H:2 * H].copy_(dz)
        d_gi[:, 2 * H:].copy_(dn)
        d_gh[:, 2 * H:].copy_(dn * r)
        native(grad_state_prev).copy_(dh * z)
    else:
        dh = _grad_sum((grad_out, grad_h), h)
        d_gi.copy_(dh * (1 - s * s) if mode == "RNN_TANH" else dh * (s > 0))


def softmax_backward(grad: NDArray, out: NDArray, dim: int, log: bool) -> NDArray:
    g, y = native(grad), native(out)
    if log:
        return wrap(torch._log_softmax_backward_data(g, y, dim, y.dtype))
    return wrap(torch._softmax_backward_data(g, y, dim, y.dtype))


def _native_layer_norm(x: NDArray, *param_dtypes: dtypes.dtype | None) -> bool:
    """Whether torch's fused layer norm serves ``x`` with parameters of ``param_dtypes`` (None: absent):
    float32/float64 with parameters of the input's dtype (computed in it), over rows longer than one (for one element
    its backward leaves the rounding noise of ``x - mean`` in the weight's gradient, where the exact value is
    zero). Half-precision inputs take the float32 formulas below: torch's half kernels round the parameters'
    gradients to the input's precision."""
    if x.shape[-1] <= 1 or x.dtype not in (dtypes.float32, dtypes.float64):
        return False
    return all(d is None or d is x.dtype for d in param_dtypes)


def _dtype(p: NDArray | None) -> dtypes.dtype | None:
    return p.dtype if p is not None else None


def layer_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, eps: float, rms: bool) -> tuple:
    if not rms and _native_layer_norm(x, _dtype(weight), _dtype(bias)):
        t = native(x)
        out, mean, rstd = torch.native_layer_norm(t, t.shape[-1:], _opt(weight), _opt(bias), eps)
        return wrap(out), wrap(mean.squeeze(-1)), wrap(rstd.squeeze(-1))
    # float32 formulas, each full-size temporary made once and then updated in place (a row of the input's size
    # costs an allocation and a pass; a composite with twice as many was three times slower on a 2-core CPU).
    xf = native(x).float()
    if rms:
        mean = torch.zeros(xf.shape[:-1])  # RMS norm centers nothing: the backward reads a mean of zeros
        rstd = (xf * xf).mean(-1).add_(eps).rsqrt_()
        out = xf * rstd.unsqueeze(-1)
    else:
        mean = xf.mean(-1)
        out = xf - mean.unsqueeze(-1)
        rstd = (out * out).mean(-1).add_(eps).rsqrt_()
        out.mul_(rstd.unsqueeze(-1))
    if weight is not None:
        out.mul_(native(weight))
    if bias is not None:
        out.add_(native(bias))
    return wrap(out.to(native(x).dtype)), wrap(mean), wrap(rstd)


def layer_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, mean: NDArray, rstd: NDArray, rms: bool,
                        output_mask: tuple, bias_dtype: dtypes.dtype | None = None) -> tuple:
    if not rms and grad.dtype is x.dtype and _native_layer_norm(x, _dtype(weight), bias_dtype):
        # The statistics came from the same kernel's forward (same rule). The bias enters only for the dtype and
        # shape of its gradient, which the kernel sums in its own order (``grad.sum`` rounds differently).
        # A bias gradient asked for without the bias's dtype is the input's (the contract's default).
        g, xt = native(grad), native(x)
        bias = torch.empty(xt.shape[-1:], dtype=TORCH_DTYPE[bias_dtype or x.dtype]) if output_mask[2] else None
        dx, dw, db = torch.ops.aten.native_layer_norm_backward(
            g, xt, xt.shape[-1:], native(mean).unsqueeze(-1), native(rstd).unsqueeze(-1), _opt(weight), bias,
            [output_mask[0], output_mask[1] and weight is not None, output_mask[2]])
        return (wrap(dx) if dx is not None else None), (wrap(dw) if dw is not None else None), \
            (wrap(db) if db is not None else None)
    g, xt = native(grad).float(), native(x)
    r = native(rstd).unsqueeze(-1)
    xhat = xt.float() * r if rms else (xt.float() - native(mean).unsqueeze(-1)).mul_(r)
    lead = tuple(range(xt.ndim - 1))
    grad_w = wrap((g * xhat).sum(lead).to(native(weight).dtype)) if output_mask[1] and weight is not None else None
    grad_b = wrap(g.sum(lead).to(TORCH_DTYPE[bias_dtype or dtypes.float32])) if output_mask[2] and not rms else None
    if not output_mask[0]:
        return None, grad_w, grad_b
    wg = g * native(weight) if weight is not None else g
    dx = wg - xhat.mul_((xhat * wg).mean(-1, keepdim=True))  # xhat is not needed after this
    if not rms:
        dx.sub_(wg.mean(-1, keepdim=True))
    return wrap(dx.mul_(r).to(xt.dtype)), grad_w, grad_b


def cross_entropy(x: NDArray, target: NDArray, ignore_index: int, label_smoothing: float, reduction: str,
                  out_dtype: dtypes.dtype, check: tuple[type[Exception], str]) -> tuple:
    t = native(check_index(target, 0, x.shape[1], ignore_index, *check))
    xf = native(x).float()
    valid = t != ignore_index
    col = torch.where(valid, t, 0).unsqueeze(1)
    # torch's log_softmax kernel takes one fused pass per row (logsumexp took 2.3x its time on (512, 1000) rows):
    # the loss reads it at the target, and the backward's lse is max(x) - max(log_softmax(x)), both maxima at the
    # row's largest logit, where log_softmax is -log(sum(exp(x - max))): as exact as logsumexp's own.
    ls = torch.log_softmax(xf, 1)
    picked = ls.gather(1, col).squeeze(1)
    lse = xf.amax(1).sub_(ls.amax(1))
    loss = picked.neg()
    if label_smoothing > 0:
        loss = (1 - label_smoothing) * loss - label_smoothing * ls.mean(1)
    loss = torch.where(valid, loss, 0.0)
    count = None
    if reduction != "none":
        loss = loss.sum()
        if reduction == "mean":
            count = valid.sum().float()
            loss = loss / count
    return wrap(loss.to(TORCH_DTYPE[out_dtype])), wrap(lse), None if count is None else wrap(count)


_REDUCTION_CODES = {"none": 0, "mean": 1, "sum": 2}  # at::Reduction


def nll_loss(x: NDArray, target: NDArray, weight: NDArray | None, ignore_index: int, reduction: str) -> tuple:
    out, total = torch.ops.aten.nll_loss_forward(native(x), native(target), None if weight is None else native(weight),
                                                 _REDUCTION_CODES[reduction], ignore_index)
    return wrap(out), wrap(total)


def nll_loss_backward(grad: NDArray, x: NDArray, target: NDArray, weight: NDArray | None, ignore_index: int,
                      reduction: str, total_weight: NDArray) -> NDArray:
    return wrap(torch.ops.aten.nll_loss_backward(native(grad), native(x), native(target),
                                                 None if weight is None else native(weight),
                                                 _REDUCTION_CODES[reduction], ignore_index, native(total_weight)))


def cross_entropy_backward(grad: NDArray, x: NDArray, target: NDArray, lse: NDArray, count: NDArray | None,
                           ignore_index: int, label_smoothing: float) -> NDArray:
    xf, t = native(x).float(), native(target)
    valid = t != ignore_index
    d = torch.exp(xf - native(lse).unsqueeze(1)) - label_smoothing / xf.shape[1]
    d.scatter_add_(1, torch.where(valid, t, 0).unsqueeze(1), torch.full((xf.shape[0], 1), label_smoothing - 1.0))
    g = native(grad).float()
    if count is not None:
        g = g / native(count)
    scale = torch.where(valid, g.expand(xf.shape[0]), 0.0)
    return wrap((d * scale.unsqueeze(1)).to(native(x).dtype))


def swiglu(gate: NDArray, up: NDArray) -> NDArray:
    g = native(gate).float()
    return wrap((torch.nn.functional.silu(g) * native(up).float()).to(native(gate).dtype))


def swiglu_backward(grad: NDArray, gate: NDArray, up: NDArray) -> tuple[NDArray, NDArray]:
    d, g, u = native(grad).float(), native(gate).float(), native(up).float()
    sg = torch.sigmoid(g)
    dgate = d * u * sg * (1 + g * (1 - sg))
    return wrap(dgate.to(native(gate).dtype)), wrap((d * g * sg).to(native(up).dtype))


def rope(x: NDArray, cos: NDArray, sin: NDArray, inverse: bool) -> NDArray:
    xt = native(x)
    xf = xt.float()
    # Tables are rounded to x's dtype first, as the composite ``x * cos.to(x.dtype)`` does.
    c, s = native(cos).to(xt.dtype).float(), native(sin).to(xt.dtype).float()
    half = xt.shape[-1] // 2

    def rotate_half(v: torch.Tensor) -> torch.Tensor:
        return torch.cat([-v[..., half:], v[..., :half]], -1)

    out = xf * c - rotate_half(xf * s) if inverse else xf * c + rotate_half(xf) * s
    return wrap(out.to(xt.dtype))


def _attention_fp32(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: NDArray | None, is_causal: bool,
                    scale: float) -> torch.Tensor:
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        scores = scores + native(mask).float()
    if is_causal:
        L, S = scores.shape[-2:]
        scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, -1) @ v


def _flash_mask(mask: NDArray | None, dtype: torch.dtype) -> torch.Tensor | None:
    """An additive mask as torch's CPU flash kernel reads it: 2-D or 4-D, float32 or the queries' dtype."""
    if mask is None:
        return None
    m = native(mask)
    if m.dtype not in (dtype, torch.float32):
        m = m.to(dtype)
    return m.reshape((1,) * (4 - m.ndim) + tuple(m.shape)) if m.ndim not in (2, 4) else m


def attention(q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, is_causal: bool, scale: float) -> tuple:
    """torch's CPU flash attention kernel (what torch's scaled_dot_product_attention runs on the CPU); lse: the
    float row log-sum-exp of the masked, scaled scores, (B, H, L).

    A negative scale runs as ``-q`` with ``|scale|`` (the same scores): the kernel scales its causal mask's -inf
    with the scores, and a negative scale would turn them into +inf."""
    qt = native(q)
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        -qt if scale < 0 else qt, native(k), native(v), 0.0, is_causal, attn_mask=_flash_mask(mask, qt.dtype),
        scale=abs(scale))
    return wrap(out), wrap(lse)


def attention_backward(grad: NDArray, q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, out: NDArray,
                       lse: NDArray, is_causal: bool, scale: float) -> tuple:
    qt = native(q)
    dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        native(grad), -qt if scale < 0 else qt, native(k), native(v), native(out), native(lse), 0.0, is_causal,
        attn_mask=_flash_mask(mask, qt.dtype), scale=abs(scale))
    return wrap(-dq if scale < 0 else dq), wrap(dk), wrap(dv)


def kv_cache_write_(cache: NDArray, new: NDArray, position: NDArray) -> None:
    c = native(cache)
    start = int(native(position).reshape(-1)[0])
    c[:, :, start:start + new.shape[2]] = native(new).to(c.dtype)


def rope_kv_cache_write_(q: NDArray, k: NDArray, v: NDArray, cos: NDArray, sin: NDArray, k_cache: NDArray,
                         v_cache: NDArray, position: NDArray) -> NDArray:
    tables = [wrap(native(t).reshape(t.shape[0], 1, 1, t.shape[-1])) for t in (cos, sin)]
    q_out = rope(wrap(native(q).transpose(1, 2)), *tables, False)
    kv_cache_write_(k_cache, rope(wrap(native(k).transpose(1, 2)), *tables, False), position)
    kv_cache_write_(v_cache, wrap(native(v).transpose(1, 2)), position)
    return wrap(native(q_out).contiguous())


def decode_attention(q: NDArray, k: NDArray, v: NDArray, length: NDArray, key_mask: NDArray | None,
                     scale: float) -> NDArray:
    n = int(native(length).reshape(-1)[0])
    qt = native(q)
    mask = None
    if key_mask is not None:
        keep = native(key_mask)[:, :n].bool()  # (B, n)
        mask = wrap(torch.zeros(keep.shape, dtype=torch.float32).masked_fill(~keep, float("-inf"))[:, None, None])
    kt, vt = native(k)[:, :, :n].float(), native(v)[:, :, :n].float()
    return wrap(_attention_fp32(qt.float(), kt, vt, mask, False, scale).to(qt.dtype))


_GRID_MODES = {"bilinear": 0, "nearest": 1}
_GRID_PADDING = {"zeros": 0, "border": 1, "reflection": 2}


def grid_sample_2d(x: NDArray, grid: NDArray, mode: str, padding_mode: str, align_corners: bool) -> NDArray:
    return wrap(torch.grid_sampler_2d(native(x), native(grid), _GRID_MODES[mode], _GRID_PADDING[padding_mode],
                                      align_corners))


def grid_sample_2d_backward(grad: NDArray, x: NDArray, grid: NDArray, mode: str, padding_mode: str,
                            align_corners: bool, needs_input: bool, needs_grid: bool
                            ) -> tuple[NDArray | None, NDArray | None]:
    grad_x, grad_grid = torch.ops.aten.grid_sampler_2d_backward(
        native(grad), native(x), native(grid), _GRID_MODES[mode], _GRID_PADDING[padding_mode], align_corners,
        [needs_input, needs_grid])
    return (wrap(grad_x) if needs_input else None), (wrap(grad_grid) if needs_grid else None)
