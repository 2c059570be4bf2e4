"""Batch normalization over the batch of every rank of a process group (``SyncBatchNorm``'s computation).

Forward: each rank sums its shard per channel (the values, their squares, the count); one all-reduce of those
sums gives every rank the global mean and variance, with which it normalizes its own shard and updates the running
statistics (unbiased variance, as batch norm). Backward: the gradient of a shard depends on the whole batch through
the statistics, so the two per-channel sums it needs (of ``dy * w`` and of ``dy * w * x_hat``) are all-reduced
too; the weight and bias gradients stay local (DistributedDataParallel averages them like any other gradient).
Statistics are accumulated in float32 for half-precision input.
"""

from __future__ import annotations

from typing import Any

from genesis import dtypes
from genesis import ops as T
from genesis.autograd import Function
from genesis.distributed import collectives
from genesis.distributed.process_group import ReduceOp
from genesis.tensor import Tensor, full


class _SyncBatchNorm(Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, weight: Tensor | None, bias: Tensor | None, *, running_mean: Tensor | None,
                running_var: Tensor | None, momentum: float, eps: float, group: Any) -> Tensor:
        c = x.shape[1]
        dims = (0,) + tuple(range(2, x.ndim))
        shape = (1, c) + (1,) * (x.ndim - 2)
        xf = x.float() if x.dtype in (dtypes.float16, dtypes.bfloat16) else x
        count = full((1,), x.numel() // c, dtype=xf.dtype, device=x.device)
        stats = T.cat([xf.sum(dims), (xf * xf).sum(dims), count])
        collectives.all_reduce(stats, ReduceOp.SUM, group)
        total = stats[2 * c]
        mean = stats[:c] / total
        var = (stats[c:2 * c] / total - mean * mean).clamp(min=0.0)
        invstd = (var + eps).rsqrt()
        if running_mean is not None and running_var is not None:
            unbiased = var * (total / (total - 1).clamp(min=1.0))
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
        x_hat = (xf - mean.reshape(shape)) * invstd.reshape(shape)
        out = x_hat
        if weight is not None:
            out = out * weight.float().reshape(shape) if weight.dtype is not xf.dtype else out * weight.reshape(shape)
        if bias is not None:
            out = out + (bias.float() if bias.dtype is not xf.dtype else bias).reshape(shape)
        ctx.save_for_backward(x_hat, invstd, weight)
        ctx.meta = (total, dims, shape, group, x.dtype, bias.dtype if bias is not None else None)
        return out.to(x.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        x_hat, invstd, weight = ctx.saved_tensors
        total, dims, shape, group, dtype, bias_dtype = ctx.meta
        g = grad.float() if grad.dtype is not x_hat.dtype else grad
        grad_bias = g.sum(dims)
        grad_weight = (g * x_hat).sum(dims)
        w = weight.to(x_hat.dtype).reshape(shape) if weight is not None else 1.0
        sums = T.cat([grad_bias, grad_weight])
        collectives.all_reduce(sums, ReduceOp.SUM, group)
        c = grad_bias.shape[0]
        sum_dy, sum_dy_xhat = sums[:c].reshape(shape), sums[c:].reshape(shape)
        grad_x = (g - sum_dy / total - x_hat * (sum_dy_xhat / total)) * (w * invstd.reshape(shape))
        return (grad_x.to(dtype), grad_weight.to(weight.dtype) if weight is not None else None,
                grad_bias.to(bias_dtype) if bias_dtype is not None else None)


def sync_batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                    weight: Tensor | None, bias: Tensor | None, momentum: float, eps: float,
                    group: Any = None) -> Tensor:
    """Training-mode batch norm of ``input`` (N, C, *) with the statistics of the whole batch across ``group``'s
    ranks (the default group when None); the running statistics are updated in place when given."""
    if input.ndim < 2:
        raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
    return _SyncBatchNorm.apply(input, weight, bias, running_mean=running_mean, running_var=running_var,
                                momentum=momentum, eps=eps, group=group)
