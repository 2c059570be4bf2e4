"""Differentiable gradients of the normalization nodes, used when the backward itself is recorded.

Batch, group, instance and layer/RMS norm compute their gradient in one fused backend call, which has no derivative
of its own. When the backward is recorded (``create_graph=True``: gradient penalties such as WGAN-GP and R1,
MAML-style meta-learning, Hessian-vector products) the nodes call these functions instead: the same gradient written
in tensor ops, so that autograd differentiates it to any order. The statistics are recomputed from the input rather
than taken from the forward, so that second derivatives see their dependence on it.

Every norm here standardizes ``x`` over a set of dims ``D``: ``x_hat = (x - mean_D x) * r`` with
``r = (mean_D (x - mean_D x)^2 + eps)^(-1/2)`` (RMS norm: ``x_hat = x * r``, ``r = (mean_D x^2 + eps)^(-1/2)``),
then scales by ``weight`` and shifts by ``bias``. With ``wg = grad * weight`` the input gradient is

    dx = r * (wg - mean_D wg - x_hat * mean_D (wg * x_hat))        (RMS norm: without the ``mean_D wg`` term)

and the parameter gradients are ``sum(grad * x_hat)`` and ``sum(grad)`` over every dim the parameters broadcast
along. Eval-mode batch norm normalizes with fixed running statistics, so it is affine in ``x``: ``dx = wg * r``.
Half-precision tensors are computed in float32 (as the kernels keep their statistics) and the gradients cast back to
each input's dtype.
"""

from __future__ import annotations

from genesis import dtypes
from genesis.tensor import Tensor


def _wide(t: Tensor) -> Tensor:
    """``t`` in the dtype the statistics are computed in: float32 for half precision, else its own."""
    return t.float() if t.dtype in (dtypes.float16, dtypes.bfloat16) else t


def _standardize(x: Tensor, dims: tuple[int, ...], eps: float, rms: bool = False) -> tuple[Tensor, Tensor]:
    """``(x_hat, r)`` of ``x`` over ``dims`` (dims kept), recomputed in differentiable ops."""
    centered = x if rms else x - x.mean(dims, keepdim=True)
    r = ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
    return centered * r, r


def _input_grad(wg: Tensor, x_hat: Tensor, r: Tensor, dims: tuple[int, ...], rms: bool = False) -> Tensor:
    """``r * (wg - mean wg - x_hat * mean(wg * x_hat))`` over ``dims``: the gradient through the statistics."""
    dx = wg - x_hat * (wg * x_hat).mean(dims, keepdim=True)
    if not rms:
        dx = dx - wg.mean(dims, keepdim=True)
    return dx * r


def _param_grads(g: Tensor, x_hat: Tensor, dims: tuple[int, ...], weight: Tensor | None,
                 bias_dtype: dtypes.dtype | None, need: tuple) -> tuple[Tensor | None, Tensor | None]:
    """``(sum(g * x_hat), sum(g))`` over ``dims``, cast to the weight's and bias's dtypes, where needed."""
    grad_weight = (g * x_hat).sum(dims).to(weight.dtype) if weight is not None and need[1] else None
    grad_bias = g.sum(dims).to(bias_dtype) if bias_dtype is not None and need[2] else None
    return grad_weight, grad_bias


def batch_norm_grads(grad: Tensor, x: Tensor, weight: Tensor | None, running_mean: Tensor | None,
                     running_var: Tensor | None, training: bool, eps: float, bias_dtype: dtypes.dtype | None,
                     need: tuple) -> tuple:
    """``(grad_x, grad_weight, grad_bias)`` of batch norm over every dim but 1 (``need`` masks them).

    In training the statistics are the batch's; in eval the running statistics, which are constants (buffers, not
    differentiated: torch's ``native_batch_norm`` treats them the same way).
    """
    channels = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    dims = (0,) + tuple(range(2, x.ndim))
    g, xw = _wide(grad), _wide(x)
    wg = g * _wide(weight).reshape(channels) if weight is not None else g
    if training:
        x_hat, r = _standardize(xw, dims, eps)
        grad_x = _input_grad(wg, x_hat, r, dims) if need[0] else None
    else:
        r = (running_var.detach().to(xw.dtype).reshape(channels) + eps).rsqrt()
        x_hat = (xw - running_mean.detach().to(xw.dtype).reshape(channels)) * r
        grad_x = wg * r if need[0] else None
    grad_weight, grad_bias = _param_grads(g, x_hat, dims, weight, bias_dtype, need)
    return grad_x.to(x.dtype) if grad_x is not None else None, grad_weight, grad_bias


def group_norm_grads(grad: Tensor, x: Tensor, weight: Tensor | None, num_groups: int, eps: float,
                     need: tuple) -> tuple:
    """``(grad_x, grad_weight, grad_bias)`` of group norm of (N, C, *spatial) input: ``num_groups`` groups of
    channels per sample, standardized over their channels and spatial dims (instance norm: one channel a group)."""
    grouped = (x.shape[0], num_groups, -1)  # (N, G, C/G * spatial)
    channels = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    g, xw = _wide(grad), _wide(x)
    x_hat, r = _standardize(xw.reshape(grouped), (2,), eps)
    grad_x = None
    if need[0]:
        wg = g * _wide(weight).reshape(channels) if weight is not None else g
        grad_x = _input_grad(wg.reshape(grouped), x_hat, r, (2,)).reshape(x.shape).to(x.dtype)
    dims = (0,) + tuple(range(2, x.ndim))
    bias_dtype = x.dtype  # the fused node takes parameters of the input's dtype only
    return (grad_x,) + _param_grads(g, x_hat.reshape(x.shape), dims, weight, bias_dtype, need)


def layer_norm_grads(grad: Tensor, x: Tensor, weight: Tensor | None, eps: float, rms: bool,
                     bias_dtype: dtypes.dtype | None, need: tuple) -> tuple:
    """``(grad_x, grad_weight, grad_bias)`` of layer norm (``rms``: RMS norm, no bias) over the last dim."""
    g, xw = _wide(grad), _wide(x)
    x_hat, r = _standardize(xw, (-1,), eps, rms)
    grad_x = None
    if need[0]:
        wg = g * _wide(weight) if weight is not None else g
        grad_x = _input_grad(wg, x_hat, r, (-1,), rms).to(x.dtype)
    lead = tuple(range(x.ndim - 1))
    return (grad_x,) + _param_grads(g, x_hat, lead, weight, None if rms else bias_dtype, need)
