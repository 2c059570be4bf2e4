"""Indexing primitives: advanced indexing and assignment, gather/scatter, index_select/index_add, sorting."""

from __future__ import annotations

from typing import Callable

from genesis import dtypes
from genesis.functional.elementwise import Primitive
from genesis.ndarray import NDArray, full_indices


def _zeros(shape: tuple[int, ...], dtype: dtypes.dtype, device) -> NDArray:
    return NDArray.full(shape, 0, dtype, device)


def _overlaps(view: NDArray) -> bool:
    """Whether two indices of a strided view can reach the same element (so a plain copy would lose some)."""
    if view.size == 0:
        return False
    # Walking dims from the smallest stride up, each stride must step past everything the smaller ones reach.
    extent = 0
    for stride, size in sorted((abs(s), n) for n, s in zip(view.shape, view.strides) if n > 1):
        if stride <= extent:
            return True
        extent += stride * (size - 1)
    return False


class ViewBackwardFill(Primitive):
    """Gradient of a view: zeros of the base shape with the gradient written through the same view."""

    @staticmethod
    def forward(ctx, grad: NDArray, shape: tuple[int, ...], make_view: Callable) -> NDArray:
        ctx.make_view = make_view
        out = _zeros(shape, grad.dtype, grad.device)
        view = make_view(out)
        if not _overlaps(view):
            view.copy_(grad)
            return out
        # Elements seen several times through the view (unfold, as_strided) sum their gradients: find each view
        # element's position in the base by viewing an arange the same way, then scatter-add there.
        positions = make_view(out.backend.arange(0, out.size, 1, dtypes.int64, out.device).reshape(shape))
        flat_grad = grad.contiguous().reshape((-1,))
        out.backend.index_put_(out.reshape((-1,)), (positions.contiguous().reshape((-1,)),), flat_grad, True)
        return out

    @staticmethod
    def backward(ctx, grad):
        from genesis.functional import view_of

        return view_of(grad, ctx.make_view), None, None


class Index(Primitive):
    """``x[indices]`` for one entry per dim: None (all) or int64 arrays already broadcast to one shape."""

    @staticmethod
    def forward(ctx, x: NDArray, indices: tuple) -> NDArray:
        ctx.meta = (x.shape, x.dtype, indices)
        return x.backend.index(x, indices)

    @staticmethod
    def backward(ctx, grad):
        from genesis.functional import index_put

        shape, dtype, indices = ctx.meta
        return index_put(_zeros_tensor(shape, grad), indices, grad, accumulate=True), None


def _zeros_tensor(shape: tuple[int, ...], like):
    from genesis.tensor import Tensor

    return Tensor._wrap(_zeros(shape, like.dtype, like.device))


class IndexPut(Primitive):
    """Out-of-place ``x[indices] = values`` (or ``+=`` with accumulate); values broadcast to the indexed shape."""

    @staticmethod
    def forward(ctx, x: NDArray, indices: tuple, values: NDArray, accumulate: bool) -> NDArray:
        out = x.backend.contiguous(x) if not x.is_contiguous() else x.backend.cast(x, x.dtype)
        target_shape = x.backend.index(x, indices).shape if values.ndim else None
        if target_shape is not None and values.shape != target_shape:
            values = values.expand(target_shape, "index_put_")
        x.backend.index_put_(out, full_indices(x.shape, indices), values.astype(x.dtype), accumulate)
        ctx.meta = (indices, accumulate, values.shape)
        return out

    @staticmethod
    def backward(ctx, grad):
        from genesis.functional import index_put, index_tensor

        indices, accumulate, values_shape = ctx.meta
        grad_x = grad if accumulate else index_put(grad, indices, _zeros_tensor((), grad), accumulate=False)
        grad_v = index_tensor(grad, indices) if ctx.needs_input_grad[2] else None
        if grad_v is not None and grad_v.shape != values_shape:
            from genesis.autograd import _sum_to_shape

            grad_v = _sum_to_shape(grad_v, values_shape)
        return grad_x, None, grad_v, None


class Gather(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dim: int, index: NDArray) -> NDArray:
        ctx.meta = (x.shape, dim)
        ctx.save_for_backward(index)
        return x.backend.gather(x, dim, index)

    @staticmethod
    def backward(ctx, grad):
        from genesis.functional import zeros_scatter

        (index,) = ctx.saved_tensors
        shape, dim = ctx.meta
        return zeros_scatter(shape, dim, index, grad), None, None


class Scatter(Primitive):
    """Out-of-place scatter: mode "set" (torch.scatter) or "add" (torch.scatter_add)."""

    @staticmethod
    def forward(ctx, x: NDArray, dim: int, index: NDArray, src: NDArray | float, mode: str) -> NDArray:
        ctx.meta = (dim, mode)
        ctx.save_for_backward(index)
        if isinstance(src, NDArray):
            src = src.astype(x.dtype)
        return x.backend.scatter(x, dim, index, src, mode)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        dim, mode = ctx.meta
        grad_x = grad if mode == "add" else grad.scatter(dim, index, 0.0)
        grad_src = grad.gather(dim, index) if ctx.needs_input_grad[3] else None
        return grad_x, None, None, grad_src, None


class IndexSelect(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dim: int, index: NDArray) -> NDArray:
        ctx.meta = (x.shape, dim)
        ctx.save_for_backward(index)
        return x.backend.index_select(x, dim, index)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        shape, dim = ctx.meta
        return _zeros_tensor(shape, grad).index_add(dim, index, grad), None, None


class IndexAdd(Primitive):
    """Out-of-place ``index_add``: ``out = x; out.index_select(dim, index) += alpha * src``."""

    @staticmethod
    def forward(ctx, x: NDArray, dim: int, index: NDArray, src: NDArray, alpha: float) -> NDArray:
        ctx.meta = (dim, alpha)
        ctx.save_for_backward(index)
        out = x.backend.contiguous(x) if not x.is_contiguous() else x.backend.cast(x, x.dtype)
        # One index array at `dim`: the indexed dim stays in place, so `src` already has the indexed shape.
        indices = tuple(index if d == dim else None for d in range(x.ndim))
        values = src.astype(x.dtype) if alpha == 1 else src.astype(x.dtype) * alpha
        x.backend.index_put_(out, full_indices(x.shape, indices), values, True)
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        dim, alpha = ctx.meta
        grad_src = grad.index_select(dim, index) * alpha if ctx.needs_input_grad[3] else None
        return grad, None, None, grad_src, None


class Sort(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dim: int, descending: bool, stable: bool) -> tuple[NDArray, NDArray]:
        if x.ndim == 0:
            values, indices = x, NDArray.full((), 0, dtypes.int64, x.device)
        else:
            values, indices = x.backend.sort(x, dim, descending, stable)
        ctx.meta = (x.shape, dim)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices):
        from genesis.functional import zeros_scatter

        (indices,) = ctx.saved_tensors
        shape, dim = ctx.meta
        if not shape:
            return grad, None, None, None
        return zeros_scatter(shape, dim, indices, grad), None, None, None
