"""Views and copies of one tensor's elements: reshape, view, permute, transpose, expand, squeeze, narrow,
select, diagonal, unfold, contiguous and clone. Views only change NDArray metadata; their outputs share
the input's memory, and their gradient is written back through the same view.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Sequence

from genesis import dtypes
from genesis import memory_format as _mf
from genesis.autograd import Primitive, is_grad_enabled
from genesis.autograd.engine import _sum_to_shape
from genesis.ndarray import NDArray, broadcast_shapes, infer_shape, normalize_dim, normalize_dims, view_plan
from genesis.ops._args import _shape_args, _varargs_or_keyword
from genesis.tensor import Tensor


def _grad_view(grad: Tensor, method: str, *args: Any) -> Tensor | NDArray:
    """``grad.method(*args)`` for a view op's backward: on the gradient's array when no graph of the backward is
    recorded (no autograd node to build), else as a recorded tensor op."""
    return getattr(grad, method)(*args) if is_grad_enabled() else getattr(grad.ndarray, method)(*args)


class View(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, shape: tuple[int, ...], op: str) -> NDArray:
        ctx.shape = x.shape
        return x.view(shape, op)

    @staticmethod
    def backward(ctx, grad):
        return _grad_view(grad, "reshape", ctx.shape), None, None


class Reshape(Primitive):
    """A reshape that must copy: the output owns new memory (``reshape`` sends viewable ones to View)."""

    @staticmethod
    def forward(ctx, x: NDArray, shape: tuple[int, ...]) -> NDArray:
        ctx.shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return _grad_view(grad, "reshape", ctx.shape), None


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
        return _grad_view(grad, "permute", inverse), None


class Transpose(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, d0: int, d1: int) -> NDArray:
        ctx.dims = (d0, d1)
        return x.transpose(d0, d1)

    @staticmethod
    def backward(ctx, grad):
        return _grad_view(grad, "transpose", *ctx.dims), None, None


class Expand(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, shape: tuple[int, ...], op: str = "expand") -> NDArray:
        ctx.shape = x.shape
        return x.expand(shape, op)

    @staticmethod
    def backward(ctx, grad):
        return _sum_to_shape(grad, ctx.shape), None, None


class Squeeze(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, dims: tuple[int, ...] | None) -> NDArray:
        ctx.shape = x.shape
        return x.squeeze(dims)

    @staticmethod
    def backward(ctx, grad):
        return _grad_view(grad, "reshape", ctx.shape), None


class Unsqueeze(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, x: NDArray, dim: int) -> NDArray:
        ctx.shape = x.shape
        return x.unsqueeze(dim)

    @staticmethod
    def backward(ctx, grad):
        return _grad_view(grad, "reshape", ctx.shape), None


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
        out = NDArray.full(shape, 0, grad.dtype, grad.device)
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
        return view_of(grad, ctx.make_view), None, None


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
        return ViewBackwardFill.apply(grad, shape, make_view), None


# ViewOf under torch's names for the views it makes (each subclass gets its own node class: ``SelectBackward0``...).
class Select(ViewOf):
    """``select`` and integer indexing."""


class Slice(ViewOf):
    """``narrow`` and slicing."""


class Diagonal(ViewOf):
    """``diagonal``."""


class Unfold(ViewOf):
    """``Tensor.unfold``."""


class Alias(ViewOf):
    """``x[...]``: the whole tensor, as a view."""


class IndexUnsqueeze(ViewOf):
    """Indexing whose last effective entry is ``None`` (torch records an unsqueeze)."""


def basic_view_kind(key: tuple, shape: tuple[int, ...]) -> type[ViewOf]:
    """The view class named as torch names the node of ``x[key]`` for a basic ``key``: after the last entry torch
    applies (a single entry always applies; in a tuple, a slice over a whole dim and ``...`` do nothing)."""
    if len(key) == 1:
        k = key[0]
        return Alias if k is Ellipsis else IndexUnsqueeze if k is None or isinstance(k, bool) else (
            Select if isinstance(k, int) else Slice)
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis and not isinstance(k, bool))
    kind, dim = Alias, 0
    for k in key:
        if k is Ellipsis:
            dim += len(shape) - consumed
        elif k is None or isinstance(k, bool):
            kind = IndexUnsqueeze
        else:
            if isinstance(k, int):
                kind = Select
            elif dim >= len(shape) or k.indices(shape[dim]) != (0, shape[dim], 1):
                kind = Slice
            dim += 1
    return kind


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
        stored = NDArray.empty((x.size,), x.dtype, x.device)  # dense strides span exactly the elements
        return stored.as_strided(x.shape, strides, 0).copy_(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class ToDevice(Primitive):
    """Copy to another device; the gradient goes back to the source device."""

    @staticmethod
    def forward(ctx, x: NDArray, device, non_blocking: bool) -> NDArray:
        ctx.device = x.device
        return x.to(device, non_blocking)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.device), None, None


def reshape(input: Tensor, *sizes: Any, shape: Sequence[int] | None = None) -> Tensor:
    """``input`` with the shape given as varargs, one sequence or ``shape=``: a view when the strides allow one
    (sharing memory and version counter, as torch), else a copy."""
    nd = input.ndarray
    shape = _shape_args("reshape", _varargs_or_keyword("reshape", sizes, "shape", shape))
    target, strides = view_plan("reshape", nd.shape, nd.strides, shape)
    if strides is not None:
        return View.apply(input, target, "reshape")
    return Reshape.apply(input, target)


#: The Python types torch's argument parser takes for dtypes (``x.view(float)`` is ``x.view(torch.float64)``).
_PYTHON_DTYPES = {float: dtypes.float64, int: dtypes.int64, bool: dtypes.bool_, complex: dtypes.complex128}


def _as_dtype(arg: Any) -> dtypes.dtype | None:
    """``arg`` as a dtype where it names one, else None."""
    if isinstance(arg, dtypes.dtype):
        return arg
    return _PYTHON_DTYPES.get(arg) if isinstance(arg, type) else None


def view(input: Tensor, *shape: Any, size: Sequence[int] | None = None, dtype: Any = None) -> Tensor:
    """``input`` with a new shape (varargs, one sequence or ``size=``), sharing its memory (RuntimeError where the
    strides allow no view); or, given one dtype (``x.view(genesis.int32)``, ``x.view(dtype=...)``), its memory read as
    that dtype (:func:`view_dtype`)."""
    shape = _varargs_or_keyword("view", shape, "size", size)
    if dtype is None:
        target = _as_dtype(shape[0]) if len(shape) == 1 else None
        if target is None:
            return View.apply(input, _shape_args("view", shape), "view")
        return view_dtype(input, target)
    target = _as_dtype(dtype)
    if shape or target is None:
        got = ", ".join([type(s).__name__ for s in shape] + [f"dtype={type(dtype).__name__}"])
        raise TypeError(f"view() received an invalid combination of arguments - got ({got}), but expected one of: "
                        "(dtype dtype) or (tuple of ints size)")
    return view_dtype(input, target)


def view_dtype(input: Tensor, dtype: dtypes.dtype) -> Tensor:
    """``input``'s memory read bit for bit as elements of ``dtype`` (torch's ``Tensor.view(dtype)``).

    With equal element sizes the shape and strides stay; otherwise the last dim (stride 1) grows or shrinks by the
    ratio of the sizes (``NDArray.view_dtype`` has torch's rules and errors). As in torch the result is outside the
    graph (not differentiable, ``_base`` None), yet it shares memory and the version counter with ``input``: a write
    through either is seen by the other.
    """
    out = input.detach()  # outside the graph, one version counter
    out.ndarray = input.ndarray.view_dtype(dtype)
    return out


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if input.ndim == 0:
        normalize_dim("flatten", start_dim, 0)  # a 0-d tensor takes dims in [-1, 0], as torch
        normalize_dim("flatten", end_dim, 0)
        return reshape(input, 1)
    s = normalize_dim("flatten", start_dim, input.ndim)
    e = normalize_dim("flatten", end_dim, input.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input.shape[:s] + (math.prod(input.shape[s:e + 1]),) + input.shape[e + 1:]
    return reshape(input, shape)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """``dim`` split into dims of ``sizes`` (one of them may be -1, inferred)."""
    if input.ndim == 0:
        raise RuntimeError(f"unflatten: Dimension specified as {dim} but tensor has no dimensions")
    d = normalize_dim("unflatten", dim, input.ndim)
    sizes = infer_shape("unflatten", sizes, input.shape[d])
    return reshape(input, input.shape[:d] + tuple(sizes) + input.shape[d + 1:])


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    dims = None if dim is None else normalize_dims("squeeze", dim, input.ndim)
    return Squeeze.apply(input, dims)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return Unsqueeze.apply(input, dim)


def permute(input: Tensor, *order: Any, dims: Sequence[int] | None = None) -> Tensor:
    """A view of ``input`` with its dims in the order given as varargs, one sequence or ``dims=``."""
    dims = _shape_args("permute", _varargs_or_keyword("permute", order, "dims", dims))
    if len(dims) != input.ndim:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
            f"desired ordering of dimensions i.e. input.dim() = {input.ndim} is not equal to len(dims) = {len(dims)}"
        )
    return Permute.apply(input, dims)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    if input.ndim == 0:
        normalize_dim("transpose", dim0, 0)
        normalize_dim("transpose", dim1, 0)
        return input
    return Transpose.apply(input, dim0, dim1)


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """The dims ``source`` moved to the positions ``destination``, the others keeping their order."""
    given_src = list(source) if isinstance(source, (tuple, list)) else [source]
    given_dst = list(destination) if isinstance(destination, (tuple, list)) else [destination]
    if len(given_src) != len(given_dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({given_src} dims) should contain the "
                           f"same number of dims as destination ({given_dst} dims)")
    src = [normalize_dim("movedim", d, input.ndim) for d in given_src]
    dst = [normalize_dim("movedim", d, input.ndim) for d in given_dst]
    for name, given, dims in (("source", given_src, src), ("destination", given_dst, dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({given})")
    order = [d for d in range(input.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, order)


moveaxis = movedim


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """``transpose`` under numpy's name and argument names."""
    return transpose(input, axis0, axis1)


swapdims = transpose


def ravel(input: Tensor) -> Tensor:
    """The flattened tensor (a view when the layout allows one)."""
    return reshape(input, -1)


def t(input: Tensor) -> Tensor:
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def matrix_transpose(input: Tensor, name: str = "mT") -> Tensor:
    """The last two dims swapped (``t.mT``; ``name`` is the property or method the message names): a 0-d tensor
    stays as it is and a 1-D one is refused, as torch's."""
    if input.ndim == 1:
        raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return transpose(input, -2, -1) if input.ndim else input


def expand(input: Tensor, *shape: Any) -> Tensor:
    return Expand.apply(input, _shape_args("expand", shape))


def broadcast_to(input: Tensor, shape: Sequence[int] | int) -> Tensor:
    """``input`` expanded to ``shape`` (a sequence of sizes, or one size), as a view."""
    return Expand.apply(input, _shape_args("broadcast_to", (shape,)), "broadcast_to")


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    shape = broadcast_shapes("broadcast_tensors", *(t.shape for t in tensors))
    return tuple(broadcast_to(t, shape) for t in tensors)


def view_of(input: Tensor, make_view: Callable[[NDArray], NDArray], kind: type[ViewOf] = ViewOf) -> Tensor:
    """A differentiable view given by a function of the NDArray (used by slicing, narrow, diagonal ...); ``kind``
    names its graph node as torch's (``Select``, ``Slice``...; ``ViewOf`` is torch's ``as_strided``)."""
    return kind.apply(input, make_view)


def narrow(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """The view of ``length`` elements from ``start`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    length = operator.index(length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = normalize_dim("narrow", dim, input.ndim)
    start = int(start)
    n = input.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"narrow: start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return view_of(input, lambda x: x.narrow(d, start, length), Slice)


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A contiguous copy of ``narrow(input, dim, start, length)``."""
    return Clone.apply(narrow(input, dim, start, length))


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` along ``dim``, without that dim (a view)."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim("select", dim, input.ndim)
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} at dimension {d}"
        )
    key = (slice(None),) * d + (index,)
    return view_of(input, lambda x: x.basic_index(key), Select)


def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None) -> Tensor:
    """The view of ``input``'s memory with the given sizes and strides (in elements), from ``storage_offset`` (default:
    the tensor's own offset), as torch's. Overlapping views sum their gradients."""
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} strides for {len(size)} sizes")
    if any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: negative sizes or strides are not supported, got {list(size)} and "
                           f"{list(stride)}")
    return view_of(input, lambda x: x.as_strided(size, stride, x.offset if storage_offset is None else storage_offset))


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    offset = operator.index(offset)
    return view_of(input, lambda x: x.diagonal(offset, dim1, dim2), Diagonal)


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Sliding windows of ``size`` with ``step`` along ``dimension`` as a new last dim (Tensor.unfold)."""
    size, step = operator.index(size), operator.index(step)
    return view_of(input, lambda x: x.unfold(dimension, size, step), Unfold)


def contiguous(input: Tensor, memory_format: _mf.memory_format = _mf.contiguous_format) -> Tensor:
    """``input`` if it is dense in ``memory_format`` (row-major by default, or channels_last), else such a copy."""
    if memory_format is _mf.contiguous_format:
        return input if input.is_contiguous() else Clone.apply(input)
    _mf.check("contiguous", memory_format)
    if memory_format is _mf.preserve_format:
        if input.is_contiguous():
            return input
        raise RuntimeError("contiguous(): preserve memory format is unsupported by the contiguous operator")
    strides = _mf.strides(tuple(input.shape), memory_format)
    return input if input.is_contiguous(memory_format=memory_format) else ToMemoryFormat.apply(input, strides=strides)


def clone(input: Tensor, memory_format: _mf.memory_format = _mf.preserve_format) -> Tensor:
    """A copy of ``input``. ``preserve_format`` (the default) keeps the layout, as torch: a dense ``input`` (row-major,
    channels_last, a transpose or permutation) is copied with its own strides, a strided slice into dense strides in
    its dims' memory order; other formats set the copy's layout."""
    fmt = _mf.check("clone", memory_format)
    nd = input.ndarray
    if fmt is _mf.preserve_format:
        if nd.is_contiguous():
            return Clone.apply(input)
        return ToMemoryFormat.apply(input, strides=_mf.preserved_strides(nd.shape, nd.strides))
    if fmt is _mf.contiguous_format:
        return Clone.apply(input)
    return ToMemoryFormat.apply(input, strides=_mf.strides(nd.shape, fmt))


def keep_layout(copy: Tensor, source: NDArray) -> Tensor:
    """``copy`` (a new tensor of ``source``'s values) laid out as ``preserve_format`` asks of a conversion: with
    ``source``'s strides where it is dense, else densely in the memory order of its dims (torch's ``_to_copy``); a
    copy already laid out so is returned as it is."""
    have = copy.ndarray.strides
    if have == source.strides:
        return copy
    want = _mf.preserved_strides(source.shape, source.strides)
    return copy if have == want else ToMemoryFormat.apply(copy, strides=want)
