"""Fused neural-network ops as single autograd nodes over backend kernels (Triton on CUDA, torch on the CPU).

Each forward is one backend primitive (cross-entropy's then reduces its rows on NDArrays, inside the same node), and
so is each backward when no graph is recorded. With ``create_graph`` the backward is written in differentiable tensor
ops instead, so higher derivatives still work.

- ``LayerNorm``: layer_norm (or rms_norm with ``rms=True``) over the last dim; saves float32 mean and rstd.
- ``FusedCrossEntropy``: cross-entropy of (N, C) logits with ignore_index, label smoothing and the reduction in one
  node; saves only the per-row log-sum-exp, never the probabilities.
- ``SwiGLU``: ``silu(gate) * up``.
- ``Rope``: rotary embedding ``x * cos + rotate_half(x) * sin`` with tables broadcastable to x; linear in x, its
  backward is the inverse rotation (itself a ``Rope``).
- ``Attention``: fused attention (causal, additive mask, grouped-query K/V) over (B, H, L, D) tensors; on CUDA
  Genesis's Triton flash attention or cuDNN's (``genesis._impl.cuda.sdpa`` chooses), on the CPU torch's flash kernel
  for the CPU (``CpuAttention``).

The ``fused_*`` functions are what ``genesis.nn.functional`` calls: they return the fused result where a kernel
applies (tensors of float32/float16/bfloat16 on CUDA; on the CPU the norms, label-smoothed cross-entropy, attention
and the optimizer steps, whose backend kernels are torch's there) and None elsewhere, so the caller keeps its
composite.
"""

from __future__ import annotations

from genesis import dtypes
from genesis.autograd import Primitive, is_grad_enabled
from genesis.backends import cuda as sdp
from genesis.memo import remember
from genesis.memory_format import is_dense
from genesis.ndarray import NDArray
from genesis.ops._args import zeros_like_detached
from genesis.ops.compare import where
from genesis.ops.nn import TARGET_OUT_OF_RANGE
from genesis.ops.norm_grads import layer_norm_grads
from genesis.ops.reduce import safe_softmax, softmax
from genesis.tensor import Tensor, arange


class LayerNorm(Primitive):
    """``(x - mean) * rstd * weight + bias`` over the last dim (``rms``: ``x * rstd * weight``, no mean, no bias),
    with ``rstd = 1 / sqrt(var + eps)`` (``1 / sqrt(mean(x^2) + eps)``); statistics in float32."""

    @staticmethod
    def forward(ctx, x: NDArray, weight: NDArray | None, bias: NDArray | None, eps: float, rms: bool) -> NDArray:
        out, mean, rstd = x.device.backend.layer_norm(x, weight, bias, eps, rms)
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.rms = rms
        ctx.eps = eps
        ctx.bias_dtype = bias.dtype if bias is not None else None
        return out

    @staticmethod
    def backward(ctx, grad):
        rms = ctx.rms
        need = ctx.needs_input_grad
        if is_grad_enabled():
            x, weight, _, _ = ctx.saved_tensors
            gx, gw, gb = layer_norm_grads(grad, x, weight, ctx.eps, rms, ctx.bias_dtype, need)
        else:  # one backend call on the arrays
            x, weight, mean, rstd = ctx.saved_arrays()
            mask = (bool(need[0]), weight is not None and bool(need[1]), not rms and bool(need[2]))
            gx, gw, gb = x.backend.layer_norm_backward(grad.ndarray, x, weight, mean, rstd, rms, mask,
                                                       ctx.bias_dtype)
        return gx, gw, gb, None, None


class FusedCrossEntropy(Primitive):
    """Cross-entropy of 2-D logits against int64 targets, reduced, in one node (rows with ``ignore_index`` give 0).

    ``loss_i = (1 - e) * (lse_i - x[i, t_i]) + e * (lse_i - mean_j x[i, j])`` for label smoothing ``e``, computed by
    the backend in float32 and reduced there: ``none`` keeps the rows, ``sum`` adds them, ``mean`` divides the sum by
    the number of non-ignored rows (nan when every row is ignored, as torch). The backend also checks the targets
    (``TARGET_OUT_OF_RANGE``: at the call on the CPU, at the next synchronization on CUDA). The output has the logits'
    dtype (float32 with ``float_out``). Saves only the per-row log-sum-exp, never the probabilities.
    """

    @staticmethod
    def forward(ctx, x: NDArray, target: NDArray, ignore_index: int, label_smoothing: float,
                reduction: str, float_out: bool = False) -> NDArray:
        out_dtype = dtypes.float32 if float_out else x.dtype
        loss, lse, count = x.device.backend.cross_entropy(x, target, ignore_index, label_smoothing, reduction,
                                                          out_dtype, TARGET_OUT_OF_RANGE)
        ctx.save_for_backward(x, target, lse)
        ctx.params = (ignore_index, label_smoothing, reduction)
        ctx.count = count  # the number of non-ignored rows of a mean (float32), else None
        return loss

    @staticmethod
    def backward(ctx, grad):
        x, target, lse = ctx.saved_tensors
        ignore_index, smoothing, reduction = ctx.params
        if is_grad_enabled():  # create_graph: the gradient in differentiable tensor ops
            if reduction == "mean":
                grad = grad / Tensor._wrap(ctx.count)
            if reduction != "none":
                grad = grad.expand(x.ndarray.shape[0])
            return _cross_entropy_rows_grad(grad, x, target, ignore_index, smoothing), None, None, None, None, None
        gx = x.device.backend.cross_entropy_backward(grad.ndarray, x.ndarray, target.ndarray, lse.ndarray, ctx.count,
                                                      ignore_index, smoothing)
        return gx, None, None, None, None, None


def _cross_entropy_rows_grad(grad, x, target, ignore_index: int, smoothing: float):
    """Differentiable ``(softmax(x) - (1 - e) * onehot(t) - e / C) * grad`` (zero rows where ignored)."""
    valid = target != ignore_index
    safe = where(valid, target, 0)
    probs = softmax(x.float(), 1)
    onehot = zeros_like_detached(probs).scatter(1, safe.unsqueeze(1), 1.0 - smoothing)
    scale = where(valid, grad.float(), 0.0)
    return ((probs - onehot - smoothing / x.shape[1]) * scale.unsqueeze(1)).to(x.dtype)


class SwiGLU(Primitive):
    """``silu(gate) * up``, computed in float32 and rounded once."""

    @staticmethod
    def forward(ctx, gate: NDArray, up: NDArray) -> NDArray:
        ctx.save_for_backward(gate, up)
        return gate.backend.swiglu(gate, up)

    @staticmethod
    def backward(ctx, grad):
        gate, up = ctx.saved_tensors
        if is_grad_enabled():
            g, u, d = gate.float(), up.float(), grad.float()
            sg = g.sigmoid()
            return (d * u * sg * (1 + g * (1 - sg))).to(gate.dtype), (d * g * sg).to(up.dtype)
        return SwiGLUBackward.apply(grad, gate, up)


class SwiGLUBackward(Primitive):
    @staticmethod
    def forward(ctx, grad: NDArray, gate: NDArray, up: NDArray) -> tuple:
        return gate.backend.swiglu_backward(grad, gate, up)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("double backward through the fused swiglu backward is not supported")


class Rope(Primitive):
    """``x * cos + rotate_half(x) * sin`` (``inverse``: ``x * cos - rotate_half(x * sin)``); no table gradients."""

    @staticmethod
    def forward(ctx, x: NDArray, cos: NDArray, sin: NDArray, inverse: bool) -> NDArray:
        ctx.save_for_backward(cos, sin)
        ctx.inverse = inverse
        return x.backend.rope(x, cos, sin, inverse)

    @staticmethod
    def backward(ctx, grad):
        cos, sin = ctx.saved_tensors
        # The op is linear in x and its adjoint is the inverse rotation: the backward is a Rope too.
        return Rope.apply(grad, cos.detach(), sin.detach(), not ctx.inverse), None, None, None


class Attention(Primitive):
    """``softmax(q k^T * scale + mask) v``; q (B, H, L, D), k/v (B, HK, S, D) with H a multiple of HK."""

    @staticmethod
    def forward(ctx, q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, is_causal: bool,
                scale: float) -> NDArray:
        out, lse = q.backend.attention(q, k, v, mask, is_causal, scale)
        ctx.save_for_backward(q, k, v, mask, out, lse)
        ctx.params = (is_causal, scale)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, mask, out, lse = ctx.saved_tensors
        if is_grad_enabled():
            # create_graph: the gradients in differentiable tensor ops (forward-mode AD differentiates them too).
            return (*_attention_grads(grad, q, k, v, mask, *ctx.params), None, None, None)
        dq, dk, dv = AttentionBackward.apply(grad, q, k, v, mask, out, lse, *ctx.params)
        return dq, dk, dv, None, None, None


class CpuAttention(Attention):
    """Attention on the CPU (torch's flash kernel for the CPU): a class of its own for torch's node name
    (``ScaledDotProductFlashAttentionForCpuBackward0``)."""


def _attention_grads(grad: Tensor, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, is_causal: bool,
                     scale: float) -> tuple[Tensor, Tensor, Tensor]:
    """The gradients of ``P v`` with ``P = softmax(q k^T * scale + mask)`` in tensor ops (half precision computed in
    float32), ``P`` recomputed: ``dv = P^T dO``, ``dS = P * (dP - rowsum(dP * P))`` with ``dP = dO v^T``,
    ``dq = dS k * scale``, ``dk = dS^T q * scale``; each key head sums the gradients of the query heads sharing it."""
    heads, kv_heads = q.shape[1], k.shape[1]
    group = heads // kv_heads
    work = dtypes.float32 if q.dtype in (dtypes.float16, dtypes.bfloat16) else q.dtype
    qf, gf = q.to(work), grad.to(work)
    kf, vf = (t.to(work).repeat_interleave(group, 1) for t in (k, v))  # (B, H, S, D)
    scores = qf @ kf.transpose(-2, -1) * scale  # (B, H, L, S)
    if mask is not None:
        scores = scores + mask.to(work)
    if is_causal:
        rows, cols = scores.shape[-2:]
        later = arange(cols, device=q.device) > arange(rows, device=q.device).unsqueeze(1)
        scores = scores.masked_fill(later, float("-inf"))
    p = safe_softmax(scores, -1)
    dp = gf @ vf.transpose(-2, -1)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    dq, dk, dv = ds @ kf * scale, ds.transpose(-2, -1) @ qf * scale, p.transpose(-2, -1) @ gf
    if group > 1:
        dk, dv = (t.unflatten(1, (kv_heads, group)).sum(2) for t in (dk, dv))  # (B, HK, S, D)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)


class AttentionBackward(Primitive):
    @staticmethod
    def forward(ctx, grad: NDArray, q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, out: NDArray,
                lse: NDArray, is_causal: bool, scale: float) -> tuple:
        return q.backend.attention_backward(grad, q, k, v, mask, out, lse, is_causal, scale)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("double backward through the fused attention backward is not supported")


# ---------------------------------------------------------------- entry points for nn.functional

_KERNEL_DTYPES = (dtypes.float32, dtypes.float16, dtypes.bfloat16)


def _applies(x: Tensor, *params: Tensor | None) -> bool:
    """A fused kernel serves ``x`` and its parameters: CUDA, a kernel dtype, one device."""
    if x.device.type != "cuda" or x.dtype not in _KERNEL_DTYPES:
        return False
    return all(p is None or (p.device == x.device and p.dtype in _KERNEL_DTYPES) for p in params)


def fused_norm(x: Tensor, weight: Tensor | None, bias: Tensor | None, n_dims: int, eps: float,
               rms: bool) -> Tensor | None:
    """layer_norm / rms_norm over the trailing ``n_dims`` dims (flattened into one row).

    Also on the CPU, where one node with a fused backward beats the composite's dozen (and matches it in float32).
    """
    nd = x.ndarray
    shape, device = nd.shape, nd.device
    if nd.dtype not in _KERNEL_DTYPES or 0 in shape:
        return None
    norm_shape = shape[-n_dims:]
    for p in (weight, bias):
        if p is not None:
            pnd = p.ndarray
            if pnd.device is not device or pnd.dtype not in _KERNEL_DTYPES or pnd.shape != norm_shape:
                return None
    if n_dims == 1:  # no reshapes: each would cost a graph node forward and backward
        return LayerNorm.apply(x, weight, bias, eps, rms)
    x = x.reshape(shape[:-n_dims] + (-1,))
    weight = weight.reshape(-1) if weight is not None else None
    bias = bias.reshape(-1) if bias is not None else None
    return LayerNorm.apply(x, weight, bias, eps, rms).reshape(shape)


def fused_cross_entropy(x: Tensor, target: Tensor, ignore_index: int, label_smoothing: float,
                        reduction: str, float_out: bool = False) -> Tensor | None:
    """Cross-entropy of (N, C) logits and integer targets (already checked), reduced like torch (mean over the
    non-ignored rows), as one autograd node.

    On the CPU it serves label smoothing (torch in float32, where the composite would sum half-precision logs).
    ``float_out`` gives a float32 loss for half-precision logits (autocast's float32 policy, without the float32
    copy of the logits: the kernel computes in float32 either way; the logits' gradient keeps their dtype).
    """
    nd, tnd = x.ndarray, target.ndarray
    device = nd.device
    if (len(nd.shape) != 2 or nd.dtype not in _KERNEL_DTYPES or tnd.device is not device
            or (device.type != "cuda" and label_smoothing <= 0)):
        return None
    if tnd.dtype is not dtypes.int64:
        target = target.long()
    return FusedCrossEntropy.apply(x, target, ignore_index, label_smoothing, reduction, float_out)


def fused_swiglu(gate: Tensor, up: Tensor) -> Tensor | None:
    """``silu(gate) * up`` for two tensors of one shape and dtype."""
    if not _applies(gate, up) or gate.dtype is not up.dtype or gate.shape != up.shape:
        return None
    return SwiGLU.apply(gate, up)


def fused_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor | None:
    """``x * cos + rotate_half(x) * sin`` with cos/sin broadcastable to x (tables rounded to x's dtype)."""
    if (not _applies(x, cos, sin) or x.shape[-1] % 2 or cos.requires_grad or sin.requires_grad
            or cos.ndim > x.ndim):
        return None
    return Rope.apply(x, cos.detach(), sin.detach(), False)


_HEAD_DIMS = (16, 32, 64, 128)


def fused_attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, dropout_p: float, is_causal: bool,
                    scale: float, enable_gqa: bool) -> Tensor | None:
    """Fused attention for 4-D bfloat16/float16 CUDA tensors (head dims 16..128, powers of two), no dropout: the
    backend runs Genesis's Triton flash attention or cuDNN's, as the switches of ``genesis.backends.cuda`` allow.
    On the CPU, torch's flash kernel for the CPU wherever torch's dispatcher picks it (its values and gradients, also
    those of a query whose keys are all masked by a finite minimum: the kernel's statistics round them differently
    from the composite's softmax).

    A bool mask becomes an additive one (0 / -inf); a float mask must not require grad (its gradient is not
    computed). Grouped-query K/V are read in place, never repeated. None where the composite must run instead;
    RuntimeError when the composite is switched off too (``sdpa_kernel`` without ``SDPBackend.MATH``).
    """
    if q.device.type == "cpu":
        node = CpuAttention
        reason = (_cpu_attention_refusal(q, k, v, attn_mask, dropout_p, enable_gqa) if sdp.flash_sdp_enabled()
                  else "the flash kernel is off")
    elif q.device.type == "cuda":
        node = Attention
        fused = sdp.flash_sdp_enabled() or sdp.cudnn_sdp_enabled()
        reason = (_attention_refusal(q, k, v, attn_mask, dropout_p, enable_gqa) if fused
                  else "both fused kernels are off")
    else:
        return None
    if reason is not None:
        if not sdp.math_sdp_enabled():
            raise RuntimeError(f"scaled_dot_product_attention: no available kernel: the composite is disabled and "
                               f"the fused kernels cannot run this call ({reason})")
        return None
    if attn_mask is not None and attn_mask.dtype is dtypes.bool_:
        attn_mask = where(attn_mask, 0.0, float("-inf")).float()
    return node.apply(q, k, v, attn_mask, is_causal, scale)


_CPU_FLASH_DTYPES = (dtypes.float32, dtypes.float64, dtypes.bfloat16, dtypes.float16)


def _cpu_attention_refusal(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, dropout_p: float,
                           enable_gqa: bool) -> str | None:
    """Why torch's CPU dispatcher would not run its flash kernel for this call (``sdp_utils_cpp``), or None."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        return "needs 4-D query, key and value"
    if dropout_p > 0.0:
        return f"dropout_p={dropout_p}"
    if q.dtype not in _CPU_FLASH_DTYPES or k.dtype is not q.dtype or v.dtype is not q.dtype:
        return f"dtypes {q.dtype}, {k.dtype}, {v.dtype}"
    batch, heads, length, dim = q.shape
    kv_heads = k.shape[1]
    if k.shape[0] != batch or v.shape[0] != batch:
        return "batch sizes differ"
    if v.shape[1] != kv_heads or not (kv_heads == heads or enable_gqa and heads % kv_heads == 0):
        return f"{heads} query heads over {kv_heads} key and {v.shape[1]} value heads"
    if k.shape[-1] != dim or v.shape[-1] != dim:
        return "head dims differ"
    if length == 0 or k.shape[2] == 0:
        return "empty sequence"
    if q.stride(-1) != 1 or k.stride(-1) != 1 or v.stride(-1) != 1:
        return "the last dim of query, key or value is strided"
    if attn_mask is not None:
        m = attn_mask.shape
        fits = attn_mask.ndim == 2 or attn_mask.ndim == 4 and m[0] in (1, batch) and m[1] in (1, heads)
        if not fits or m[-2] not in (1, length) or m[-1] not in (1, k.shape[2]):
            return f"mask of shape {tuple(m)}"
        if attn_mask.requires_grad:
            return "the mask requires grad"
    return None


def _attention_refusal(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, dropout_p: float,
                       enable_gqa: bool) -> str | None:
    """Why the fused attention cannot run this call, or None."""
    if (q.ndim != 4 or k.ndim != 4 or v.ndim != 4 or q.dtype not in (dtypes.bfloat16, dtypes.float16)
            or q.dtype is not k.dtype or k.dtype is not v.dtype or q.shape[-1] not in _HEAD_DIMS
            or v.shape[-1] != q.shape[-1] or k.device != q.device or v.device != q.device
            or q.shape[0] != k.shape[0] or k.shape[:3] != v.shape[:3]):
        return (f"needs 4-D bfloat16/float16 q, k, v on one device with head dim in {_HEAD_DIMS}, got "
                f"{tuple(q.shape)} {q.dtype}, {tuple(k.shape)} {k.dtype}, {tuple(v.shape)} {v.dtype}")
    if dropout_p > 0.0:
        return f"dropout_p={dropout_p}"
    hq, hk = q.shape[1], k.shape[1]
    if hq != hk and not (enable_gqa and hq % hk == 0):
        return f"{hq} query heads over {hk} key heads without enable_gqa"
    if q.shape[2] == 0 or k.shape[2] == 0:
        return "empty sequence"
    if attn_mask is not None:
        if attn_mask.requires_grad or attn_mask.device != q.device or attn_mask.ndim > 4:
            return "mask requires grad, lives on another device or has more than 4 dims"
        if attn_mask.dtype is not dtypes.bool_ and attn_mask.dtype not in _KERNEL_DTYPES:
            return f"mask dtype {attn_mask.dtype}"
    return None


def fused_adam_step_(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, lr: float, beta1: float,
                     beta2: float, eps: float, weight_decay: float, decoupled: bool, step: int) -> bool:
    """One fused Adam/AdamW step in place on a parameter and its moments (CUDA: Genesis's kernel; CPU: torch's
    fused kernel, every floating dtype); False (nothing done) where no fused kernel applies."""
    arrays = (param, grad, exp_avg, exp_avg_sq)
    on_cpu = all(t.device.type == "cpu" and t.dtype is param.dtype for t in arrays)
    if not (on_cpu or _applies(param, grad, exp_avg, exp_avg_sq)) or not all(t.is_contiguous() for t in arrays):
        return False
    param.ndarray.backend.adam_step_(param.ndarray, grad.ndarray, exp_avg.ndarray, exp_avg_sq.ndarray, lr, beta1,
                                     beta2, eps, weight_decay, decoupled, step)
    for t in (param, exp_avg, exp_avg_sq):
        t._bump_version()
    return True


def _multi_applies(lists: list[list[Tensor] | None]) -> bool:
    """Lists of dense tensors on one device, each list one kernel dtype (CUDA) or one floating dtype (CPU), the
    tensors at one position laid out alike (row-major, channels_last ...: the kernels walk each as flat memory)."""
    device = lists[0][0].ndarray.device
    contiguous = True
    for tensors in lists:
        if tensors is None:
            continue
        dtype = tensors[0].ndarray.dtype
        if device.type == "cuda" and dtype not in _KERNEL_DTYPES or not dtype.is_floating_point:
            return False
        # On the arrays, and contiguity known per (shape, strides): an optimizer step asks this of every parameter,
        # gradient and moment.
        for t in tensors:
            nd = t.ndarray
            if nd.device is not device or nd.dtype is not dtype:
                return False
            if contiguous:
                key = (nd.shape, nd.strides)
                c = _ROW_MAJOR.get(key)
                if c is None:
                    c = remember(_ROW_MAJOR, key, nd.is_contiguous())
                contiguous = c
    if contiguous:  # the common case, checked cheaply
        return True
    present = [tensors for tensors in lists if tensors is not None]
    layouts = [t.ndarray.strides for t in present[0]]
    if not all(is_dense(t.ndarray.shape, s) for t, s in zip(present[0], layouts)):
        return False
    return all([t.ndarray.strides for t in tensors] == layouts for tensors in present[1:])


_ROW_MAJOR: dict[tuple, bool] = {}  # (shape, strides) -> row-major contiguous


def _bump(*lists: list[Tensor] | None) -> None:
    for tensors in lists:
        for t in tensors or ():
            t._bump_version()


def fused_adam_multi_step_(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                           exp_avg_sqs: list[Tensor], masters: list[Tensor] | None, lr: float | Tensor, beta1: float,
                           beta2: float, eps: float, weight_decay: float, decoupled: bool, step: int | Tensor,
                           maximize: bool) -> bool:
    """One Adam/AdamW step over whole lists of parameters in place (on CUDA one kernel launch for all of them);
    with ``masters`` the float32 master weights are updated and the parameters get the rounded result. ``lr`` and
    ``step`` (the count including this step) may be 0-d tensors on the parameters' CUDA device, read by the kernel.
    False (nothing done) where the lists do not fit the kernel: mixed devices or dtypes within a list,
    non-contiguous."""
    lists = [params, grads, exp_avgs, exp_avg_sqs, masters]
    if not params or not _multi_applies(lists):
        return False
    nd = [None if lst is None else [t.ndarray for t in lst] for lst in lists]
    lr, step = (x.ndarray if isinstance(x, Tensor) else x for x in (lr, step))
    params[0].ndarray.backend.adam_multi_step_(*nd, lr, beta1, beta2, eps, weight_decay, decoupled, step, maximize)
    _bump(params, exp_avgs, exp_avg_sqs, masters)
    return True


def fused_sgd_multi_step_(params: list[Tensor], grads: list[Tensor], bufs: list[Tensor] | None, lr: float,
                          momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool,
                          first: bool) -> bool:
    """One SGD step over whole lists of parameters in place (``bufs``: momentum buffers, new when ``first``);
    False (nothing done) where the lists do not fit the kernel."""
    lists = [params, grads, bufs]
    if not params or not _multi_applies(lists):
        return False
    nd = [None if lst is None else [t.ndarray for t in lst] for lst in lists]
    params[0].ndarray.backend.sgd_multi_step_(*nd, lr, momentum, dampening, weight_decay, nesterov, maximize, first)
    _bump(params, bufs)
    return True


def fused_unscale_(grads: list[Tensor], inv_scale: float) -> Tensor | None:
    """``g *= inv_scale`` for every gradient in one pass (one launch per dtype group on CUDA); returns a float32
    (1,) tensor on their device, 1.0 if any gradient held an inf or nan. None (nothing done) where it does not apply.
    """
    if not grads or not _multi_applies([grads]):
        return None
    found = grads[0].ndarray.backend.unscale_grads_([g.ndarray for g in grads], inv_scale)
    _bump(grads)
    return Tensor._wrap(found)
