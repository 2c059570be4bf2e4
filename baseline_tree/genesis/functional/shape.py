"""Shape and view primitives. Views only change NDArray metadata; their outputs share the input's memory."""

from __future__ import annotations

from genesis.functional.elementwise import Primitive
from genesis.ndarray import NDArray
from genesis.ndarray import cat as nd_cat


class View(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, shape: tuple[int, ...], op: str) -> NDArray:
        ctx.shape = x.shape
        return x.view(shape, op)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None, None


class Reshape(Primitive):
    """A reshape that must copy: the output owns new memory (``functional.reshape`` sends viewable ones to View)."""

    @staticmethod
    def forward(ctx, x: NDArray, shape: tuple[int, ...]) -> NDArray:
        ctx.shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None


class Permute(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...]) -> NDArray:
        out = x.permute(dims)
        ctx.dims = tuple(d % max(x.ndim, 1) for d in dims)
        return out

    @staticmethod
    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return grad.permute(inverse), None


class Transpose(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, d0: int, d1: int) -> NDArray:
        ctx.dims = (d0, d1)
        return x.transpose(d0, d1)

    @staticmethod
    def backward(ctx, grad):
        return grad.transpose(*ctx.dims), None, None


class Expand(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, shape: tuple[int, ...], op: str = "expand") -> NDArray:
        ctx.shape = x.shape
        return x.expand(shape, op)

    @staticmethod
    def backward(ctx, grad):
        from genesis.autograd import _sum_to_shape

        return _sum_to_shape(grad, ctx.shape), None, None


class Squeeze(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...] | None) -> NDArray:
        ctx.shape = x.shape
        return x.squeeze(dims)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None


class Unsqueeze(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, dim: int) -> NDArray:
        ctx.shape = x.shape
        return x.unsqueeze(dim)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None


def _scatter_view_grad(grad, shape: tuple[int, ...], make_view):
    """Gradient of a view: zeros of the input shape with ``grad`` written through the same view."""
    from genesis.functional import ViewBackwardFill

    return ViewBackwardFill.apply(grad, shape, make_view)


class ViewOf(Primitive):
    """A view given by a function of the NDArray (slicing, narrow, diagonal, unfold, as_strided)."""

    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, make_view) -> NDArray:
        ctx.meta = (x.shape, make_view)
        return make_view(x)

    @staticmethod
    def backward(ctx, grad):
        shape, make_view = ctx.meta
        return _scatter_view_grad(grad, shape, make_view), None


class Cat(Primitive):
    @staticmethod
    def forward(ctx, dim: int, *arrays: NDArray) -> NDArray:
        # torch skips 1-D empty tensors whatever the other shapes (legacy); they only receive an empty gradient.
        skipped = [a.ndim == 1 and a.size == 0 for a in arrays]
        kept = [a for a, skip in zip(arrays, skipped) if not skip] or list(arrays[:1])
        ctx.meta = (dim, [None if skip else a.shape[dim] for a, skip in zip(arrays, skipped)])
        return nd_cat(kept, dim)

    @staticmethod
    def backward(ctx, grad):
        dim, sizes = ctx.meta
        grads, start = [], 0
        for n in sizes:
            if n is None:
                grads.append(grad.new_zeros(0))
                continue
            grads.append(grad.narrow(dim, start, n))
            start += n
        return (None, *grads)


class Contiguous(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        return x.contiguous()

    @staticmethod
    def backward(ctx, grad):
        return grad


class Clone(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray) -> NDArray:
        return x.backend.contiguous(x) if not x.is_contiguous() else x.backend.cast(x, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad


class ToMemoryFormat(Primitive):
    """A copy of x laid out as ``strides`` (a memory format's dense strides); the gradient passes through."""

    @staticmethod
    def forward(ctx, x: NDArray, *, strides: tuple[int, ...]) -> NDArray:
        order = sorted(range(x.ndim), key=lambda d: -strides[d])  # dims from outermost to innermost in memory
        stored = NDArray.empty(tuple(x.shape[d] for d in order), x.dtype, x.device)
        out = stored.permute(tuple(order.index(d) for d in range(x.ndim)))
        return out.copy_(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class ToDevice(Primitive):
    """Copy to another device; the gradient goes back to the source device."""

    @staticmethod
    def forward(ctx, x: NDArray, device) -> NDArray:
        ctx.device = x.device
        return x.to(device)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.device), None
