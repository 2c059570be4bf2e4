"""Neural-network ops as single autograd nodes: linear, convolution, pooling, normalization, resampling and padding.

Convolution, pooling and the batch, group and instance norms call fused backend kernels each way
(``conv``/``conv_backward``, ...): one kernel is several times faster on the CPU than composing them from smaller ops.
Double backward (``create_graph=True``): the backward primitives of convolution, pooling, resampling and padding have
a backward of their own; the norms' backward is written in tensor ops instead (``genesis.ops.norm_grads``) while the
graph of the backward is recorded, and stays one fused kernel otherwise. ``Linear`` uses only the ``matmul``
primitive; it exists so that a layer is one graph node whose weight gradient comes out contiguous in the weight's
layout.
"""

from __future__ import annotations

from typing import Callable

from genesis import dtypes
from genesis.autograd import Primitive, is_grad_enabled
from genesis.ndarray import NDArray, check_same_device
from genesis.ops._args import zeros_like_detached
from genesis.ops.compare import where
from genesis.ops.norm_grads import batch_norm_grads, group_norm_grads
from genesis.ops.reduce import softmax
from genesis.tensor import Tensor


class Linear(Primitive):
    """``x @ w.T + b`` for ``x`` (*, in), ``w`` (out, in) and optional ``b`` (out,), all of one dtype.

    Leading dims are flattened inside the node (a free view for contiguous ``x``): one graph node and one 2-D
    product per layer, however many leading dims.
    """

    @staticmethod
    def forward(ctx, x: NDArray, w: NDArray, b: NDArray | None) -> NDArray:
        ctx.save_for_backward(x, w)
        lead = x.shape[:-1]
        check_same_device("linear", x, w, b)
        x2 = x.reshape((-1, x.shape[-1])) if x.ndim != 2 else x
        out = x.backend.linear(x2, w, b)
        return out.reshape(lead + (w.shape[0],)) if x.ndim != 2 else out

    @staticmethod
    def backward(ctx, grad):
        if not is_grad_enabled():
            return _linear_array_grads(ctx.needs_input_grad, grad.ndarray, *ctx.saved_arrays())
        x, w = ctx.saved_tensors
        return _linear_grads(ctx.needs_input_grad, grad, x, w)


def _linear_array_grads(needs: tuple, g: NDArray, x: NDArray, w: NDArray) -> tuple:
    """(grad_x, grad_w, grad_b) of ``x @ w.T + b`` where ``needs`` asks for them, computed on NDArrays (no graph
    recorded: no per-op autograd bookkeeping)."""
    flat = x.ndim != 2
    xa = x
    if flat:
        g, xa = g.reshape((-1, g.shape[-1])), x.reshape((-1, x.shape[-1]))
    grad_x = g.matmul(w) if needs[0] else None
    return (grad_x.reshape(x.shape) if flat and grad_x is not None else grad_x,
            g.transpose(0, 1).matmul(xa) if needs[1] else None,
            g.sum((0,)) if needs[2] else None)


def _linear_grads(needs: tuple, grad: Tensor, x: Tensor, w: Tensor) -> tuple:
    """(grad_x, grad_w, grad_b) of ``x @ w.T + b`` where ``needs`` asks for them, as recorded tensor ops (under
    ``create_graph``)."""
    flat = x.ndim != 2
    if flat:
        grad, x2 = grad.reshape(-1, grad.shape[-1]), x.reshape(-1, x.shape[-1])
    else:
        x2 = x
    grad_x = grad @ w if needs[0] else None
    if flat and grad_x is not None:
        grad_x = grad_x.reshape(x.shape)
    # (out, N) @ (N, in): the weight gradient is produced in the weight's own (contiguous) layout.
    grad_w = grad.t() @ x2 if needs[1] else None
    grad_b = grad.sum(0) if needs[2] else None
    return grad_x, grad_w, grad_b


class CastLinear(Primitive):
    """``Linear`` under autocast with float32 parameters, the casts to the autocast dtype ``dtype`` folded in.

    ``x``, ``w`` and ``b`` enter as they are (their edges); ``x`` is cast inside the node, the parameters' casts come
    as ``w_low``/``b_low`` (made once per region through the cast cache, ``amp.cast_parameter``). The gradients are
    computed in the autocast dtype and widened to each input's dtype by the backward engine, as it does for every
    node. torch records a cast node per input plus the product's node; folding the casts leaves one graph node per
    layer instead of up to four, with the same arithmetic (the product and its gradients in the autocast dtype,
    each gradient rounded there and then widened, as torch's ``ToCopyBackward0`` does).
    """

    keeps_inputs = True  # create_graph recomputes the casts from x and the parameters

    @staticmethod
    def forward(ctx, x: NDArray, w: NDArray, b: NDArray | None, *, dtype, w_low: NDArray,
                b_low: NDArray | None) -> NDArray:
        return Linear.forward(ctx, x.astype(dtype), w_low, b_low)

    @staticmethod
    def backward(ctx, grad):
        if not is_grad_enabled():  # the saved x and weight are already their casts
            return Linear.backward(ctx, grad)
        # create_graph: the casts recomputed from the inputs and recorded, so that higher-order gradients reach x and
        # the parameters through them.
        x, w, _ = ctx._inputs
        return _linear_grads(ctx.needs_input_grad, grad, x.to(grad.dtype), w.to(grad.dtype))


class NllLoss(Primitive):
    """``nll_loss`` of (N, C) log-probabilities against int64 class indices in one node: optional class weights
    (no gradient, as torch's), ``ignore_index`` and the reduction.

    Forward and backward are the backend's ``nll_loss`` / ``nll_loss_backward`` (torch's kernels on the CPU): the
    target classes gathered and weighted (weight 0 for ignored rows), then reduced; ``mean`` divides by the summed
    weights of the rows kept (nan when every row is ignored, as torch). Backward scatters ``-w * grad`` (over that
    sum for ``mean``) into zeros at the target classes: an ignored row gets an exact zero.
    """

    @staticmethod
    def forward(ctx, x: NDArray, target: NDArray, weight: NDArray | None, *, ignore_index: int,
                reduction: str) -> NDArray:
        if weight is not None and weight.dtype is not x.dtype:
            weight = weight.astype(x.dtype)
        loss, total = x.backend.nll_loss(x, target, weight, ignore_index, reduction)
        if ctx.needs_input_grad:  # recorded: what backward needs (the shared no-grad ctx keeps nothing)
            ctx.saved = (x, target, weight, total)
            ctx.options = (ignore_index, reduction)
        return loss

    @staticmethod
    def backward(ctx, grad):
        x, target, weight, total = ctx.saved
        ignore_index, reduction = ctx.options
        if not is_grad_enabled():
            return x.backend.nll_loss_backward(grad.ndarray, x, target, weight, ignore_index, reduction, total), \
                None, None
        # create_graph: the same in tensor ops, differentiable in grad
        n = x.shape[0]
        valid = target.binary("ne", ignore_index)
        col = valid.where(target, 0).reshape((n, 1))
        w = valid.astype(x.dtype)
        if weight is not None:
            w = w * x.backend.gather(weight, 0, col.reshape((n,)))
        g = grad.expand(n) if reduction != "none" else grad
        if reduction == "mean":
            g = g / Tensor._wrap(total)
        coef = where(Tensor._wrap(valid), -Tensor._wrap(w) * g, 0.0)
        zeros = Tensor._wrap(NDArray.full(x.shape, 0, grad.dtype, grad.device))
        return zeros.scatter(1, Tensor._wrap(col), coef.unsqueeze(1)), None, None


class Conv(Primitive):
    """``conv(x, w) + bias`` (or the transposed convolution) over the trailing spatial dims."""

    # The hyperparameters are keyword-only: autograd tracks positional arguments, and these need no edges.
    @staticmethod
    def forward(ctx, x: NDArray, w: NDArray, bias: NDArray | None, *, stride: tuple, padding: tuple,
                dilation: tuple, groups: int, transposed: bool, output_padding: tuple) -> NDArray:
        ctx.save_for_backward(x, w)
        ctx.params = (stride, padding, dilation, groups, transposed, output_padding)
        return x.backend.conv(x, w, bias, stride, padding, dilation, groups, transposed, output_padding)

    @staticmethod
    def backward(ctx, grad):
        params = ctx.params + (tuple(bool(m) for m in ctx.needs_input_grad[:3]),)
        if not is_grad_enabled():
            x, w = ctx.saved_arrays()
            return x.backend.conv_backward(grad.ndarray, x, w, *params)
        x, w = ctx.saved_tensors
        return ConvBackward.apply(grad, x, w, params=params)


class CastConv(Primitive):
    """``Conv`` under autocast with float32 parameters, their casts folded in as ``CastLinear``'s: ``w`` and
    ``bias`` enter as the parameters (their edges), their casts to the autocast dtype as ``w_low``/``b_low`` (once
    per region, through the cast cache); the backward engine widens the gradients to the parameters' dtype."""

    keeps_inputs = True  # create_graph recomputes the weight's cast from the parameter

    @staticmethod
    def forward(ctx, x: NDArray, w: NDArray, bias: NDArray | None, *, w_low: NDArray, b_low: NDArray | None,
                **params) -> NDArray:
        return Conv.forward(ctx, x, w_low, b_low, **params)

    @staticmethod
    def backward(ctx, grad):
        if not is_grad_enabled():  # the saved weight is already its cast
            return Conv.backward(ctx, grad)
        # create_graph: the weight's cast recomputed and recorded, so that it gets higher-order gradients.
        params = ctx.params + (tuple(bool(m) for m in ctx.needs_input_grad[:3]),)
        x, w_low = ctx.saved_tensors
        return ConvBackward.apply(grad, x, ctx._inputs[1].to(w_low.dtype), params=params)


class ConvBackward(Primitive):
    """(grad_x, grad_w, grad_bias) of ``Conv`` in one backend call.

    A convolution ``y = B(x, w)`` is bilinear, so its backward is made of the same two adjoints and differentiates
    into convolutions again: for upstream ``(gg_x, gg_w, gg_b)``, the gradient of the incoming ``grad`` is
    ``B(gg_x, w) + B(x, gg_w) + gg_b``, that of ``x`` is the input adjoint of ``(grad, gg_w)`` and that of ``w`` the
    weight adjoint of ``(gg_x, grad)`` (torch's ``_convolution_double_backward``). Gradient penalties through
    convolutions (WGAN-GP, R1) take this path.
    """

    @staticmethod
    def forward(ctx, grad: NDArray, x: NDArray, w: NDArray, *, params: tuple) -> tuple:
        # params: (stride, padding, dilation, groups, transposed, output_padding, output_mask)
        ctx.save_for_backward(grad, x, w)
        ctx.params = params
        return grad.backend.conv_backward(grad, x, w, *params)

    @staticmethod
    def backward(ctx, gg_x, gg_w, gg_b):
        grad, x, w = ctx.saved_tensors
        stride, padding, dilation, groups, transposed, output_padding, _ = ctx.params
        conv = dict(stride=stride, padding=padding, dilation=dilation, groups=groups, transposed=transposed,
                    output_padding=output_padding)
        need_grad, need_x, need_w = ctx.needs_input_grad[:3]
        d_grad = d_x = d_w = None
        if need_grad:
            terms = []
            if gg_x is not None:
                terms.append(Conv.apply(gg_x, w, gg_b, **conv))
            elif gg_b is not None:
                terms.append(gg_b.reshape((1, -1) + (1,) * (grad.ndim - 2)).expand(grad.shape))
            if gg_w is not None:
                terms.append(Conv.apply(x, gg_w, None, **conv))
            for term in terms:
                d_grad = term if d_grad is None else d_grad + term
        if need_x and gg_w is not None:
            d_x = ConvBackward.apply(grad, x, gg_w, params=ctx.params[:6] + ((True, False, False),))[0]
        if need_w and gg_x is not None:
            d_w = ConvBackward.apply(grad, gg_x, w, params=ctx.params[:6] + ((False, True, False),))[1]
        return d_grad, d_x, d_w


class Pool(Primitive):
    """Max or average pooling over 2 or 3 trailing spatial dims; max also returns the argmax indices when the caller
    asks for them (``indices``) or backward will need them (None otherwise: they are not computed)."""

    @staticmethod
    def forward(ctx, x: NDArray, *, mode: str, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                ceil_mode: bool, count_include_pad: bool, divisor_override: int | None,
                indices: bool = False) -> tuple:
        keep = mode == "max" and (indices or bool(ctx.needs_input_grad and ctx.needs_input_grad[0]))
        values, indices = x.backend.pool(x, mode, kernel, stride, padding, dilation, ceil_mode, count_include_pad,
                                         divisor_override, keep)
        ctx.save_for_backward(x, indices)
        ctx.params = (mode, kernel, stride, padding, dilation, ceil_mode, count_include_pad, divisor_override)
        if indices is not None:
            ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices=None):
        if not is_grad_enabled():
            x, indices = ctx.saved_arrays()
            return x.backend.pool_backward(grad.ndarray, x, indices, *ctx.params)
        x, indices = ctx.saved_tensors
        return PoolBackward.apply(grad, x, indices, params=ctx.params)


def _pooled_double_grad(gg: Tensor, indices: Tensor | None, grad_shape: tuple, spatial: int,
                        average: Callable) -> Tensor:
    """The gradient of a pooling backward's incoming ``grad``: pooling is linear, so it is the pooling of ``gg``:
    for max, ``gg`` read at the saved argmax positions (counted within each plane of the ``spatial`` trailing dims);
    for average, ``average(gg)``."""
    if indices is None:
        return average(gg)
    flat = gg.reshape(tuple(gg.shape[:-spatial]) + (-1,))
    index = indices.reshape(tuple(indices.shape[:-spatial]) + (-1,))
    return flat.gather(-1, index).reshape(grad_shape)


class PoolBackward(Primitive):
    """The gradient of ``Pool``; linear in ``grad``, so it differentiates into a pooling of the upstream gradient
    (a gather at the argmax indices for max pooling)."""

    @staticmethod
    def forward(ctx, grad: NDArray, x: NDArray, indices: NDArray | None, *, params: tuple) -> NDArray:
        # params: (mode, kernel, stride, padding, dilation, ceil_mode, count_include_pad, divisor_override)
        ctx.save_for_backward(indices)
        ctx.params = params
        ctx.grad_shape = grad.shape
        return grad.backend.pool_backward(grad, x, indices, *params)

    @staticmethod
    def backward(ctx, gg):
        (indices,) = ctx.saved_tensors
        mode, kernel, stride, padding, dilation, ceil_mode, count_include_pad, divisor_override = ctx.params

        def average(t: Tensor) -> Tensor:
            return Pool.apply(t, mode=mode, kernel=kernel, stride=stride, padding=padding, dilation=dilation,
                              ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                              divisor_override=divisor_override)[0]

        return _pooled_double_grad(gg, indices, ctx.grad_shape, len(kernel), average), None, None


class AdaptivePool(Primitive):
    """Adaptive max or average pooling of (N, C, H, W) input to ``output_size``; max also returns the indices."""

    @staticmethod
    def forward(ctx, x: NDArray, *, mode: str, output_size: tuple) -> tuple:
        values, indices = x.backend.adaptive_pool(x, mode, output_size)
        ctx.save_for_backward(x, indices)
        ctx.mode = mode
        if indices is not None:
            ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices=None):
        if not is_grad_enabled():
            x, indices = ctx.saved_arrays()
            return x.backend.adaptive_pool_backward(grad.ndarray, x, indices, ctx.mode)
        x, indices = ctx.saved_tensors
        return AdaptivePoolBackward.apply(grad, x, indices, mode=ctx.mode)


class AdaptivePoolBackward(Primitive):
    """The gradient of ``AdaptivePool``; linear in ``grad``, differentiated like ``PoolBackward``."""

    @staticmethod
    def forward(ctx, grad: NDArray, x: NDArray, indices: NDArray | None, *, mode: str) -> NDArray:
        ctx.save_for_backward(indices)
        ctx.meta = (mode, grad.shape)
        return grad.backend.adaptive_pool_backward(grad, x, indices, mode)

    @staticmethod
    def backward(ctx, gg):
        (indices,) = ctx.saved_tensors
        mode, grad_shape = ctx.meta

        def average(t: Tensor) -> Tensor:
            return AdaptivePool.apply(t, mode=mode, output_size=tuple(grad_shape[2:]))[0]

        return _pooled_double_grad(gg, indices, grad_shape, 2, average), None, None


class BatchNorm(Primitive):
    """Batch normalization over every dim but 1; in training it also updates the running statistics in place.

    Backward is the backend's ``batch_norm_backward``; under ``create_graph`` it is written in tensor ops
    (``batch_norm_grads``), so gradient penalties and Hessian-vector products differentiate it again.
    """

    @staticmethod
    def forward(ctx, x: NDArray, weight: NDArray | None, bias: NDArray | None, running_mean: NDArray | None,
                running_var: NDArray | None, *, training: bool, momentum: float, eps: float) -> NDArray:
        out, save_mean, save_invstd = x.backend.batch_norm(x, weight, bias, running_mean, running_var, training,
                                                           momentum, eps)
        # The running statistics normalize only in eval (then a later in-place change of them is caught); the batch
        # statistics are this op's own arrays, which nothing else can change.
        if training:
            ctx.save_for_backward(x, weight)
        else:
            ctx.save_for_backward(x, weight, running_mean, running_var)
        ctx.stats = (save_mean, save_invstd)
        ctx.params = (training, eps)
        ctx.bias_dtype = bias.dtype if bias is not None else None
        return out

    @staticmethod
    def backward(ctx, grad):
        need = ctx.needs_input_grad
        if is_grad_enabled():
            x, weight, running_mean, running_var = _batch_norm_saved(ctx.saved_tensors)
            mask = (bool(need[0]), weight is not None and bool(need[1]), bool(need[2]))
            grads = batch_norm_grads(grad, x, weight, running_mean, running_var, *ctx.params, ctx.bias_dtype, mask)
        else:
            x, weight, running_mean, running_var = _batch_norm_saved(ctx.saved_arrays())
            mask = (bool(need[0]), weight is not None and bool(need[1]), bool(need[2]))
            grads = x.backend.batch_norm_backward(grad.ndarray, x, weight, running_mean, running_var, *ctx.stats,
                                                  *ctx.params, mask)
        return tuple(grads) + (None, None)


def _batch_norm_saved(saved: tuple) -> tuple:
    """(x, weight, running_mean, running_var) of a ``BatchNorm`` node (no running statistics in training)."""
    return saved if len(saved) == 4 else (*saved, None, None)


def check_all(ok: Tensor | NDArray, error: type[Exception], message: str) -> None:
    """Report ``message`` as ``error`` unless the bool tensor (or array) ``ok`` is all true, without reading the
    device: the backend's ``check_index`` on whether any element is false (raised here on the CPU; on CUDA recorded
    on the device and raised as RuntimeError at the next synchronization, as torch's device-side asserts)."""
    nd = ok.ndarray if isinstance(ok, Tensor) else ok
    bad = nd.reshape((nd.size,)).unary("logical_not").reduce("any", (0,), True).astype(dtypes.int64)
    nd.backend.check_index(bad, 0, 1, None, error, message)


#: The error of a class target outside [0, C) that is not ignore_index: (exception class, message template).
TARGET_OUT_OF_RANGE = (IndexError, "Target {value} is out of bounds (the input has {size} classes).")


def checked_target(target: NDArray, n_classes: int, ignore_index: int) -> NDArray:
    """Class indices checked to lie in [0, n_classes) or equal ignore_index (the backend's ``check_index``: IndexError
    at the call on the CPU, RuntimeError at the next synchronization on CUDA)."""
    return target.device.backend.check_index(target, 0, n_classes, ignore_index, *TARGET_OUT_OF_RANGE)


class BinaryCrossEntropy(Primitive):
    """Elementwise binary cross-entropy of probabilities ``p`` against targets ``t`` (unreduced, unweighted), as
    torch: ``-(t max(log p, -100) + (1 - t) max(log1p(-p), -100))``, the backend's kernel (which also checks that
    both lie in [0, 1]).

    Backward is torch's formula, not the composite's chain rule: ``(p - t) / max(p (1 - p), 1e-12)`` for ``p`` and
    ``log1p(-p) - log p`` for ``t``. Where a saturated sigmoid gave ``p`` exactly 0 or 1, the chain rule through the
    clamped logs multiplies 0 by an infinite derivative (NaN); this stays finite, as torch's does.
    """

    @staticmethod
    def forward(ctx, p: NDArray, t: NDArray) -> NDArray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(p, t)
        return p.backend.binary_cross_entropy(p, t)

    @staticmethod
    def backward(ctx, grad):
        if not is_grad_enabled() and not ctx.needs_input_grad[1]:  # the probabilities' gradient: one kernel
            p, t = ctx.saved_arrays()
            return p.backend.binary_cross_entropy_backward(grad.ndarray, p, t), None
        # Tensor ops: recorded under create_graph (a differentiable gradient), plain computation otherwise.
        p, t = ctx.saved_tensors
        grad_p = grad * (p - t) / (p * (1 - p)).clamp(min=1e-12) if ctx.needs_input_grad[0] else None
        grad_t = grad * ((-p).log1p() - p.log()) if ctx.needs_input_grad[1] else None
        return grad_p, grad_t


class CrossEntropy(Primitive):
    """Cross-entropy of (N, C) logits against int64 class indices in one node (no label smoothing).

    An index outside ``[0, C)`` (other than ``ignore_index``) raises IndexError before anything is computed (on CUDA:
    RuntimeError at the next synchronization, see ``checked_target``).

    Forward: the backend's log_softmax and ``nll_loss`` (torch's kernels on the CPU): ``loss_i = -w[t_i] *
    log_softmax(x)_i[t_i]`` (zero where ``t_i == ignore_index``), then the mean over the summed weights, the sum, or
    none. Backward: ``nll_loss_backward`` then ``softmax_backward`` (under ``create_graph``, tensor ops:
    ``(softmax(x) - onehot(t)) * w[t] * dloss``).
    """

    @staticmethod
    def forward(ctx, x: NDArray, target: NDArray, weight: NDArray | None, *, ignore_index: int,
                reduction: str) -> NDArray:
        backend = x.device.backend
        target = checked_target(target, x.shape[1], ignore_index)
        logp = backend.softmax(x, 1, True, False)
        loss, total = backend.nll_loss(logp, target, weight, ignore_index, reduction)
        ctx.save_for_backward(x, logp)
        ctx.saved = (target, weight, total)
        ctx.options = (ignore_index, reduction)
        return loss

    @staticmethod
    def backward(ctx, grad):
        x, logp = ctx.saved_tensors
        target, weight, total = ctx.saved
        ignore_index, reduction = ctx.options
        if not is_grad_enabled():
            # torch's two kernels, so that the gradient rounds as theirs: nll_loss's, then log_softmax's.
            lp = logp.ndarray
            g = lp.backend.nll_loss_backward(grad.ndarray, lp, target, weight, ignore_index, reduction, total)
            return lp.backend.softmax_backward(g, lp, 1, True), None, None
        n = x.shape[0]
        valid = target.binary("ne", ignore_index)
        safe = valid.where(target, 0)
        w = valid.astype(x.dtype)
        if weight is not None:
            w = w * weight.backend.gather(weight, 0, safe)
        valid, safe, w = Tensor._wrap(valid), Tensor._wrap(safe), Tensor._wrap(w)
        scale = w * (grad if reduction == "none" else grad.expand(n))
        if reduction == "mean":
            # where(): ignored rows get exactly zero even when every row is ignored (count == 0).
            scale = where(valid, scale / Tensor._wrap(total), 0.0)
        onehot = zeros_like_detached(logp).scatter(1, safe.unsqueeze(1), 1.0)
        # With create_graph the probabilities are recomputed from the input so that they stay differentiable.
        return (softmax(x, 1) - onehot) * scale.unsqueeze(1), None, None


class GroupNorm(Primitive):
    """Group normalization of (N, C, *spatial) input: ``num_groups`` groups of channels per sample.

    Backward is the backend's ``group_norm_backward``; under ``create_graph`` it is written in tensor ops
    (``group_norm_grads``) so that it differentiates again.
    """

    @staticmethod
    def forward(ctx, x: NDArray, weight: NDArray | None, bias: NDArray | None, *, num_groups: int,
                eps: float) -> NDArray:
        out, mean, rstd = x.backend.group_norm(x, weight, bias, num_groups, eps)
        ctx.save_for_backward(x, weight)
        ctx.stats = (mean, rstd)
        ctx.params = (num_groups, eps)
        return out

    @staticmethod
    def backward(ctx, grad):
        return _group_norm_grads(ctx, grad)


class InstanceNorm(Primitive):
    """Instance normalization: group norm with one channel per group (the same kernel each way), and torch's
    running-statistics update: ``running = (1 - momentum) * running + momentum * batch mean of the per-instance
    statistics`` (unbiased variances, recovered from the kernel's ``rstd`` as ``rstd^-2 - eps``)."""

    @staticmethod
    def forward(ctx, x: NDArray, weight: NDArray | None, bias: NDArray | None, running_mean: NDArray | None,
                running_var: NDArray | None, *, momentum: float, eps: float) -> NDArray:
        channels = x.shape[1]
        out, mean, rstd = x.backend.group_norm(x, weight, bias, channels, eps)
        if running_mean is not None and running_var is not None:
            count = x.size // (x.shape[0] * channels)
            unbiased = ((rstd * rstd).unary("reciprocal") - eps) * (count / max(count - 1, 1))
            for running, stat in ((running_mean, mean), (running_var, unbiased)):
                batch = stat.sum((0,)) * (momentum / x.shape[0])  # (C,)
                x.backend.copy_(running, running * (1 - momentum) + batch.astype(running.dtype))
        ctx.save_for_backward(x, weight)
        ctx.stats = (mean, rstd)
        ctx.params = (channels, eps)
        return out

    @staticmethod
    def backward(ctx, grad):
        return _group_norm_grads(ctx, grad) + (None, None)


def _group_norm_grads(ctx, grad) -> tuple:
    """(grad_x, grad_weight, grad_bias) of ``GroupNorm`` / ``InstanceNorm`` from their saved input and statistics:
    one backend call, or differentiable tensor ops when the backward is recorded (``create_graph``)."""
    num_groups, eps = ctx.params
    mask = tuple(bool(m) for m in ctx.needs_input_grad[:3])
    if is_grad_enabled():
        x, weight = ctx.saved_tensors
        return group_norm_grads(grad, x, weight, num_groups, eps, mask)
    x, weight = ctx.saved_arrays()
    return tuple(x.backend.group_norm_backward(grad.ndarray, x, weight, *ctx.stats, num_groups, mask))


class Upsample(Primitive):
    """Nearest / bilinear resampling of (N, C, H, W) input to ``output_size`` (torch's upsample ops)."""

    @staticmethod
    def forward(ctx, x: NDArray, *, output_size: tuple, mode: str, align_corners: bool | None,
                scales: tuple) -> NDArray:
        ctx.params = (x.shape, mode, align_corners, scales)
        return x.backend.upsample(x, output_size, mode, align_corners, scales)

    @staticmethod
    def backward(ctx, grad):
        return UpsampleBackward.apply(grad, params=ctx.params)


class UpsampleBackward(Primitive):
    """The adjoint of ``Upsample`` (linear in ``grad``, so its own backward is the forward resampling)."""

    @staticmethod
    def forward(ctx, grad: NDArray, *, params: tuple) -> NDArray:
        ctx.params = params
        ctx.output_size = grad.shape[2:]
        return grad.backend.upsample_backward(grad, *params)

    @staticmethod
    def backward(ctx, gg):
        _, mode, align_corners, scales = ctx.params
        return Upsample.apply(gg, output_size=ctx.output_size, mode=mode, align_corners=align_corners, scales=scales)


class AffineGridGenerator(Primitive):
    """The sampling points ``base @ theta^T`` of the affine maps ``theta`` (N, s, s + 1) at the homogeneous base
    points ``base`` (1, P, s + 1) of a grid, as the grid (N, *spatial, s) of ``shape`` (torch's
    ``affine_grid_generator``).

    The base points are a constant of the node, not a saved tensor (torch's node saves nothing either): a grid can be
    backpropagated through any number of times without ``retain_graph``."""

    @staticmethod
    def forward(ctx, theta: NDArray, *, base: NDArray, shape: tuple) -> NDArray:
        ctx.base = base
        return base.matmul(theta.transpose(1, 2)).reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        # torch's order: (N, s + 1, P) @ (N, P, s), then transposed to theta's (N, s, s + 1)
        n, s = grad.shape[0], grad.shape[-1]
        if is_grad_enabled():  # create_graph: differentiable in grad
            return (Tensor._wrap(ctx.base).transpose(1, 2) @ grad.reshape(n, -1, s)).transpose(1, 2)
        return ctx.base.transpose(1, 2).matmul(grad.ndarray.reshape((n, -1, s))).transpose(1, 2)


class Pad(Primitive):
    """Reflect, replicate or circular padding of the trailing 1 to 3 dims (torch's ``F.pad`` modes but constant)."""

    @staticmethod
    def forward(ctx, x: NDArray, *, pad: tuple, mode: str) -> NDArray:
        ctx.params = (x.shape, pad, mode)
        return x.backend.pad(x, pad, mode)

    @staticmethod
    def backward(ctx, grad):
        return PadBackward.apply(grad, params=ctx.params)


class PadBackward(Primitive):
    """The adjoint of ``Pad``: each input element sums the gradients of the outputs that read it (linear in
    ``grad``, so its own backward pads again)."""

    @staticmethod
    def forward(ctx, grad: NDArray, *, params: tuple) -> NDArray:
        ctx.params = params
        return grad.backend.pad_backward(grad, *params)

    @staticmethod
    def backward(ctx, gg):
        _, pad, mode = ctx.params
        return Pad.apply(gg, pad=pad, mode=mode)


class Embedding(Primitive):
    """Rows of a (V, D) ``weight`` picked by an int64 ``index`` of any shape: (*index.shape, D); the weight gradient
    is deterministic. One node whatever the index's shape (the flattening is NDArray metadata)."""

    @staticmethod
    def forward(ctx, weight: NDArray, index: NDArray) -> NDArray:
        ctx.save_for_backward(index)
        ctx.num_weights = weight.shape[0]
        flat = index if len(index.shape) == 1 else index.reshape((-1,))
        rows = weight.device.backend.index_select(weight, 0, flat)  # (n, D)
        return rows if flat is index else rows.reshape(index.shape + weight.shape[1:])

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return EmbeddingBackward.apply(grad, index, num_weights=ctx.num_weights), None


class EmbeddingBackward(Primitive):
    """Rows of ``grad`` (*index.shape, D) summed by index into a (num_weights, D) gradient (linear in ``grad``)."""

    @staticmethod
    def forward(ctx, grad: NDArray, index: NDArray, *, num_weights: int) -> NDArray:
        ctx.save_for_backward(index)
        return grad.device.backend.embedding_backward(grad, index, num_weights)

    @staticmethod
    def backward(ctx, gg):
        (index,) = ctx.saved_tensors
        return Embedding.apply(gg, index), None
