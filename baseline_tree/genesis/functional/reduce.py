"""Reduction primitives (sum, prod, amax/amin, arg-reductions, softmax, cumulative) with their backward."""

from __future__ import annotations

from genesis import dtypes
from genesis.autograd import is_grad_enabled
from genesis.functional.elementwise import Primitive
from genesis.ndarray import NDArray


def _expand_back(grad, shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool):
    """Broadcast a reduced gradient back to the input shape."""
    if not keepdim:
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(shape)


class Sum(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...], keepdim: bool, dtype: dtypes.dtype | None) -> NDArray:
        ctx.meta = (x.shape, dims, keepdim)
        return x.sum(dims, keepdim, dtype)

    @staticmethod
    def backward(ctx, grad):
        shape, dims, keepdim = ctx.meta
        return _expand_back(grad, shape, dims, keepdim), None, None, None


class Prod(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...], keepdim: bool) -> NDArray:
        out = x.reduce("prod", dims, keepdim)
        ctx.save_for_backward(x, out)
        ctx.meta = (dims, keepdim)
        return out

    @staticmethod
    def backward(ctx, grad):
        from genesis.functional import where

        x, out = ctx.saved_tensors
        dims, keepdim = ctx.meta
        grad = _expand_back(grad, x.shape, dims, keepdim)
        out = _expand_back(out, x.shape, dims, keepdim)
        zero = x == 0
        if not zero.any().item():
            return grad * out / x, None, None
        # With zeros, the product of the other elements is computed directly (one zero: the rest; more: 0).
        others = where(zero, 1.0, x).prod(dim=dims, keepdim=True).expand(x.shape)
        n_zero = zero.to(x.dtype).sum(dim=dims, keepdim=True).expand(x.shape)
        partial = where(zero, where(n_zero == 1, others, 0.0), out / where(zero, 1.0, x))
        return grad * partial, None, None


class Extremum(Primitive):
    """amax / amin: the gradient is shared evenly among the elements equal to the extremum."""

    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...], keepdim: bool, op: str) -> NDArray:
        if x.size == 0 and any(x.shape[d] == 0 for d in dims):
            raise IndexError(f"{op}(): Expected reduction dim to have non-zero size (input shape {x.shape})")
        out = x.reduce(op, dims, keepdim)
        ctx.save_for_backward(x, out)
        ctx.meta = (dims, keepdim)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dims, keepdim = ctx.meta
        mask = (x == _expand_back(out, x.shape, dims, keepdim)).to(grad.dtype)
        count = mask.sum(dim=dims, keepdim=True)
        return _expand_back(grad, x.shape, dims, keepdim) * mask / count, None, None, None


class MaxWithIndices(Primitive):
    """max/min along one dim returning (values, indices); the gradient goes to the returned index."""

    @staticmethod
    def forward(ctx, x: NDArray, dim: int, keepdim: bool, op: str) -> tuple[NDArray, NDArray]:
        if x.ndim and x.shape[dim] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size (input shape {x.shape})")
        # Bool has no order in every backend's arg-reduction; uint8 orders False < True the same way.
        keys = x.astype(dtypes.uint8) if x.dtype is dtypes.bool_ else x
        indices = x.backend.arg_reduce("argmax" if op == "max" else "argmin", keys, dim, True)
        values = x.backend.gather(x, dim, indices) if x.ndim else x.backend.cast(x, x.dtype)
        ctx.meta = (x.shape, dim, keepdim)
        if not keepdim and x.ndim:
            values, indices = values.squeeze((dim,)), indices.squeeze((dim,))
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices):
        from genesis.functional import zeros_scatter

        (indices,) = ctx.saved_tensors
        shape, dim, keepdim = ctx.meta
        if not shape:
            return grad, None, None, None
        if not keepdim:
            grad, indices = grad.unsqueeze(dim), indices.unsqueeze(dim)
        return zeros_scatter(shape, dim, indices, grad), None, None, None


class ArgReduce(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dim: int | None, keepdim: bool, op: str) -> NDArray:
        if dim is None:
            flat = x.reshape((-1,))
            out = x.backend.arg_reduce(op, flat, 0, False)
            return out.reshape((1,) * x.ndim) if keepdim else out
        if x.ndim == 0:
            return NDArray.full((), 0, dtypes.int64, x.device)
        if x.shape[dim] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size")
        return x.backend.arg_reduce(op, x, dim, keepdim)


class Softmax(Primitive):
    """``softmax(x, dim)`` (or ``log_softmax`` with ``log=True``); the backward is one fused backend call."""

    @staticmethod
    def forward(ctx, x: NDArray, dim: int, log: bool) -> NDArray:
        out = x.backend.softmax(x, dim, log)
        ctx.save_for_backward(out)
        ctx.meta = (dim, log)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        dim, log = ctx.meta
        if is_grad_enabled():
            # create_graph: composite ops, so the gradient is differentiable again.
            if log:
                return grad - out.exp() * grad.sum(dim=dim, keepdim=True), None, None
            return out * (grad - (grad * out).sum(dim=dim, keepdim=True)), None, None
        return SoftmaxBackward.apply(grad, out, dim, log), None, None


class SoftmaxBackward(Primitive):
    """``y * (dy - sum(dy * y))`` (log: ``dy - exp(y) * sum(dy)``) in one backend call."""

    @staticmethod
    def forward(ctx, grad: NDArray, out: NDArray, dim: int, log: bool) -> NDArray:
        return out.backend.softmax_backward(grad, out, dim, log)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("double backward through the fused softmax backward is not supported")


class Cumsum(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dim: int, widen: bool) -> NDArray:
        ctx.dim = dim
        if widen and x.dtype.category < 2:
            x = x.astype(dtypes.int64)  # torch accumulates integers in int64 unless a dtype is given
        return x.backend.cumulative("cumsum", x, dim)

    @staticmethod
    def backward(ctx, grad):
        # The gradient of a prefix sum is the reversed prefix sum of the gradient.
        return grad.flip(ctx.dim).cumsum(ctx.dim).flip(ctx.dim), None, None


class Cumprod(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dim: int, widen: bool) -> NDArray:
        if widen and x.dtype.category < 2:
            x = x.astype(dtypes.int64)
        out = x.backend.cumulative("cumprod", x, dim)
        ctx.save_for_backward(x, out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dim = ctx.dim
        if not (x == 0).any().item():
            return (grad * out).flip(dim).cumsum(dim).flip(dim) / x, None, None
        # Exact for inputs with zeros: d out_j / d x_i = prod_{k<=j, k!=i} x_k, summed against grad_j.
        n = x.shape[dim]
        pieces = []
        for i in range(n):
            before = x.narrow(dim, 0, i).prod(dim=dim, keepdim=True) if i else None
            after = x.narrow(dim, i + 1, n - i - 1)
            tail = after.cumprod(dim) if n - i - 1 else None
            g_i = grad.narrow(dim, i, 1)
            if tail is not None:
                g_i = g_i + (grad.narrow(dim, i + 1, n - i - 1) * tail).sum(dim=dim, keepdim=True)
            pieces.append(g_i * before if before is not None else g_i)
        from genesis.functional import cat

        return cat(pieces, dim), None, None
