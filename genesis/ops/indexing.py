"""Indexing: ``x[key]`` and ``x[key] = value`` with torch's semantics (the key parser splits a key into a basic
view part and advanced index tensors), ``index_put``, and index arithmetic (unravel_index, one_hot).
"""

from __future__ import annotations

import builtins
import math
import numbers
import operator
import warnings
from typing import Any, Callable

import numpy as np

from genesis import dtypes
from genesis.autograd import Primitive, forward_ad, is_grad_enabled
from genesis.autograd.engine import _sum_to_shape
from genesis.memo import remember
from genesis.ndarray import NDArray, broadcast_shapes, full_indices
from genesis.ops._args import _check_range, _check_same_dtype, _to_index_tensor, _zeros
from genesis.ops.compare import nonzero, where
from genesis.ops.inplace import assign_inplace, check_inplace, write_recorded
from genesis.ops.views import Select, basic_view_kind, view_of
from genesis.tensor import Tensor
from genesis.tensor import tensor as _from_data


class Index(Primitive):
    """``x[indices]`` for one entry per dim: None (all) or int64 arrays already broadcast to one shape."""

    @staticmethod
    def forward(ctx, x: NDArray, indices: tuple) -> NDArray:
        ctx.meta = (x.shape, x.dtype, indices)
        return x.backend.index(x, indices)

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, indices = ctx.meta
        advanced = [d for d, i in enumerate(indices) if i is not None]
        if len(advanced) == 1 and not is_grad_enabled():
            # One index tensor: its gradient rows add into zeros along its dim (the backend's index_add_, no index
            # as large as the gradient); under create_graph the differentiable index_put below.
            d = advanced[0]
            flat = indices[d].reshape((indices[d].size,))
            g = grad.ndarray
            out = g.backend.full(shape, 0, g.dtype, g.device)
            return g.backend.index_add_(out, d, flat, g.reshape(shape[:d] + flat.shape + shape[d + 1:])), None
        return index_put(_zeros(shape, grad.dtype, grad), indices, grad, accumulate=True), None


class IndexPut(Primitive):
    """Out-of-place ``input[indices] = values`` (or ``+=`` with accumulate); values broadcast to the indexed shape."""

    @staticmethod
    def forward(ctx, x: NDArray, indices: tuple, values: NDArray, accumulate: bool) -> NDArray:
        out = x.backend.contiguous(x) if not x.is_contiguous() else x.backend.cast(x, x.dtype)
        full = full_indices(x.shape, indices)
        if values.ndim:  # the indexed region's shape, from the indices alone (nothing is gathered to learn it)
            target_shape = broadcast_shapes("index_put_", *(i.shape for i in full))
            if values.shape != target_shape:
                values = values.expand(target_shape, "index_put_")
        x.backend.index_put_(out, full, values.astype(x.dtype), accumulate)
        ctx.meta = (indices, accumulate, values.shape)
        return out

    @staticmethod
    def backward(ctx, grad):
        indices, accumulate, values_shape = ctx.meta
        grad_x = grad if accumulate else index_put(grad, indices, _zeros((), grad.dtype, grad), accumulate=False)
        grad_v = index_tensor(grad, indices) if ctx.needs_input_grad[2] else None
        if grad_v is not None and grad_v.shape != values_shape:
            grad_v = _sum_to_shape(grad_v, values_shape)
        return grad_x, None, grad_v, None


def _check_bounds(op: str, index: Tensor, size: int, dim: int, negative: bool = True,
                  error: type[Exception] = IndexError) -> Tensor:
    """The index with negative entries wrapped; an entry out of range raises ``error`` naming it.

    ``negative=False`` for ops where torch refuses negative indices (gather, scatter, index_select, index_add);
    ``error`` is the exception type torch raises for that op. The check is the backend's ``check_index``: eager on
    the CPU; on CUDA it runs on the device and raises RuntimeError at the next synchronization (no host read here).
    """
    if 0 in index.ndarray.shape:  # empty
        return index
    if size == 0:  # every entry is out of range: known without reading the index
        raise error(f"{op}: index is out of bounds for dimension {dim} with size 0")
    message = f"{op}: index {{value}} is out of bounds for dimension {dim} with size {{size}}"
    return _check_range(index, -size if negative else 0, size, error, message)


def _normalize_key(key: Any) -> tuple:
    """The key as a tuple; like torch, a list holding sequences, tensors, slices, None or ... is a tuple too."""
    if isinstance(key, tuple):
        return key
    if isinstance(key, list) and len(key) < 32 and builtins.any(
            isinstance(k, (list, tuple, slice, Tensor)) or k is None or k is Ellipsis for k in key):
        return tuple(key)
    return (key,)


def _selects(k: Any) -> bool:
    """Whether ``k`` is a 0-d integer tensor (not uint8, a mask): torch reads it as a number and selects, so the
    result is a view (``x[t] += 1`` writes into ``x``) and it places dims as an int would."""
    return isinstance(k, Tensor) and k.ndim == 0 and k.dtype.category == 1 and k.dtype is not dtypes.uint8


def _is_basic(key: tuple) -> bool:
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice):
            continue
        if isinstance(k, int) and not isinstance(k, bool) or _selects(k) or isinstance(k, np.integer) or (
                isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu" and k.dtype != np.uint8):
            continue  # a numpy integer (or 0-d integer array) is an int to torch: x[np.int64(0)] is a view
        if hasattr(k, "__index__") and not isinstance(k, (Tensor, bool, list)) and not hasattr(k, "shape"):
            continue
        return False
    return True


def _int_slice(k: slice) -> slice:
    """``k`` with Python int bounds (numpy integers in a slice would leak into the result's shape)."""
    if all(b is None or b.__class__ is int for b in (k.start, k.stop, k.step)):
        return k
    return slice(*(b if b is None else operator.index(b) for b in (k.start, k.stop, k.step)))


def _byte_masks_as_bool(key: tuple) -> tuple:
    """A uint8 tensor in a key is a mask, as in torch (deprecated there, with the same warning)."""
    if not any(isinstance(k, Tensor) and k.dtype is dtypes.uint8 for k in key):
        return key
    warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.",
                  UserWarning, stacklevel=4)
    return tuple(k.to(dtypes.bool_) if isinstance(k, Tensor) and k.dtype is dtypes.uint8 else k for k in key)


def _split_key(x: Tensor, key: tuple) -> tuple[tuple, list[tuple[int, Tensor]]]:
    """Separate a mixed key into a basic view key and advanced entries (dim in the view, int64 index)."""
    items = []
    for k in key:
        if _selects(k):
            items.append(k.__index__())
        elif isinstance(k, Tensor):
            if k.device is not x.device:
                # As torch: CPU indices may index a tensor on any device; other mixes are an error.
                if k.device.type != "cpu":
                    raise RuntimeError(f"index: indices should be either on cpu or on the same device as the "
                                       f"indexed tensor ({x.device}), got indices on {k.device}")
                k = k.to(x.device)
            items.append(k)
        elif isinstance(k, (list, tuple, range)) or hasattr(k, "__array__") and not isinstance(k, (int, float)):
            host = _host_key(k)
            if host is not None:
                items.append(host)
                continue
            t = _from_data(list(k) if isinstance(k, range) else k, device=x.device)
            items.append(t if t.dtype is dtypes.bool_ else t.to(dtypes.int64))
        elif isinstance(k, bool):
            items.append(_from_data(k, device=x.device))
        elif isinstance(k, (int, slice)) or k is None or k is Ellipsis:
            items.append(k)
        elif hasattr(k, "__index__"):
            items.append(k.__index__())
        elif isinstance(k, (str, bytes)):  # torch reads a sequence index as tensor data, which text cannot be
            raise TypeError(f"index: invalid data type '{type(k).__name__}': only integers, slices (`:`), ellipsis "
                            "(`...`), None and long or byte Variables are valid indices")
        else:
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                f"(got {type(k).__name__})"
            )
    consumed = 0
    for k in items:
        if isinstance(k, (Tensor, np.ndarray)):
            consumed += k.ndim if k.dtype == np.bool_ or k.dtype is dtypes.bool_ else 1
        elif k is not None and k is not Ellipsis:
            consumed += 1
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    basic, advanced = [], []
    view_dim = 0
    for k in items:
        if k is Ellipsis:
            n = x.ndim - consumed
            basic += [slice(None)] * n
            view_dim += n
            consumed = x.ndim
        elif k is None:
            basic.append(None)
            view_dim += 1
        elif isinstance(k, int):
            basic.append(k)
        elif isinstance(k, slice):
            basic.append(k)
            view_dim += 1
        elif k.__class__ is np.ndarray:  # Python data: a mask's coordinates, or integers checked on the host later
            if k.dtype == np.bool_:
                start = len([b for b in basic if b is not None])
                _check_mask_shape(x, start, k.shape)
                for coords in np.nonzero(k):
                    basic.append(slice(None))
                    advanced.append((view_dim, _device_index(coords, x)))
                    view_dim += 1
            else:
                basic.append(slice(None))
                advanced.append((view_dim, k))
                view_dim += 1
        elif k.dtype is dtypes.bool_:
            if k.ndim == 0:
                basic.append(None)
                advanced.append((view_dim, k.new_tensor([0] if k.item() else [], dtype=dtypes.int64)))
                view_dim += 1
                continue
            for coords in _mask_coordinates(x, len([b for b in basic if b is not None]), k):
                basic.append(slice(None))
                advanced.append((view_dim, coords))
                view_dim += 1
        else:
            if k.dtype not in (dtypes.int64, dtypes.int32):
                raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got {k.dtype}")
            basic.append(slice(None))
            advanced.append((view_dim, k.to(dtypes.int64)))
            view_dim += 1
    return tuple(basic), advanced


def _host_key(k: Any) -> np.ndarray | None:
    """A key of Python integers or bools (a flat list or tuple, a range, an integer or bool numpy array) as a numpy
    int64 or bool array, so that its bounds are checked on the host, without reading the device; None for any
    other data (nested lists, floats, tensors inside: read as tensor data)."""
    if k.__class__ is range:
        return np.arange(k.start, k.stop, k.step, dtype=np.int64)
    if k.__class__ is np.ndarray:
        if k.ndim and (k.dtype == np.bool_ or k.dtype.kind in "iu" and k.dtype != np.uint8):
            return k if k.dtype == np.bool_ else k.astype(np.int64, copy=False)
        return None
    if k.__class__ in (list, tuple) and all(v.__class__ is int or v.__class__ is bool for v in k):
        return np.array(k, dtype=np.bool_ if k and all(v.__class__ is bool for v in k) else np.int64)
    return None


def _device_index(a: np.ndarray, x: Tensor) -> NDArray:
    """The int64 host array ``a`` on ``x``'s device."""
    return x.device.backend.from_numpy(np.ascontiguousarray(a, dtype=np.int64), dtypes.int64, x.device)


def _check_mask_shape(x: Tensor, start: int, shape: tuple[int, ...]) -> None:
    """torch's IndexError where a mask of ``shape`` does not match ``x``'s dims from ``start`` on."""
    dims = x.ndarray.shape
    for j, n in enumerate(shape):
        if start + j >= len(dims) or dims[start + j] != n:
            raise IndexError(f"The shape of the mask {list(shape)} at index {j} does not match the shape of the "
                             f"indexed tensor {list(dims)} at index {start + j}")


def _mask_coordinates(x: Tensor, start: int, mask: Tensor) -> list[NDArray]:
    """The coordinates of ``mask``'s True entries, one int64 array per dim it covers (dims ``start`` on of ``x``),
    after torch's shape check. They lie in range by construction: no bounds check follows."""
    m = mask.ndarray
    _check_mask_shape(x, start, m.shape)
    coords = m.backend.nonzero(m)  # (count, mask dims)
    return [coords.basic_index((_WHOLE, j)) for j in range(m.ndim)]


def _host_checked(a: np.ndarray, size: int, dim: int, x: Tensor) -> NDArray:
    """The host integer index ``a`` along a dim of ``size``, checked (IndexError naming the first bad entry, as the
    device check's message) and wrapped on the host, then on ``x``'s device."""
    if a.size and (a.min() < -size or a.max() >= size):
        bad = a[(a < -size) | (a >= size)].flat[0]
        raise IndexError(f"index: index {bad} is out of bounds for dimension {dim} with size {size}")
    return _device_index(np.where(a < 0, a + size, a) if a.size and a.min() < 0 else a, x)


def _advanced_indices(view: Tensor, advanced: list[tuple[int, Tensor | NDArray | np.ndarray]]) -> tuple:
    """One entry per dim of ``view`` for ``Index``: None, or the dim's index broadcast to the common shape. Index
    tensors are bounds-checked on their device, host arrays on the host; arrays (a mask's coordinates) are in range
    already."""
    try:
        shape = broadcast_shapes("index", *(t.shape for _, t in advanced))
    except RuntimeError:
        shapes = ", ".join(str(list(t.shape)) for _, t in advanced)
        raise IndexError(f"index: shape mismatch: indexing tensors could not be broadcast together with shapes "
                         f"{shapes}") from None
    indices: list = [None] * view.ndim
    for d, t in advanced:
        if t.__class__ is np.ndarray:
            nd = _host_checked(t, view.shape[d], d, view)
        elif t.__class__ is NDArray:
            nd = t
        else:
            nd = _check_bounds("index", t, view.shape[d], d).ndarray
        indices[d] = nd.expand(shape)
    return tuple(indices)


_WHOLE = slice(None)


def _refuse_scalar_key(x: Tensor, key: Any) -> None:
    """torch's errors for a lone integer or slice applied to a 0-dim tensor (``loss.data[0]`` of older scripts);
    in a tuple they are "too many indices" as for any tensor."""
    if isinstance(key, (slice, numbers.Integral)) and not isinstance(key, bool) and x.ndim == 0:
        if isinstance(key, slice):
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        if key != 0:
            raise IndexError(f"index {int(key)} is out of bounds for dimension 0 with size 0")
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                         "C++ to convert a 0-dim tensor to a number")


_BOUNDS = frozenset((int, type(None)))
# (shape, strides, key) -> (view class, shape, strides, offset change) of the plain basic keys seen before.
_BASIC_PLANS: dict[tuple, tuple] = {}


def _planned_view(x: Tensor, key: tuple | slice) -> Tensor | None:
    """``x[key]`` for a plain basic key (ints, slices with integer bounds, None, ...), with the view worked out once
    per (shape, strides, key): slicing is the commonest indexing of real programs. None for any other key."""
    parts = key if key.__class__ is tuple else (key,)
    sig = []
    for k in parts:
        c = k.__class__
        if c is slice:
            a, b, step = k.start, k.stop, k.step
            if a.__class__ not in _BOUNDS or b.__class__ not in _BOUNDS or step.__class__ not in _BOUNDS:
                return None
            sig.append((a, b, step))
        elif c is int or k is None or k is Ellipsis:
            sig.append(k)
        else:
            return None
    nd = x.ndarray
    shape0, strides0 = nd.shape, nd.strides
    pkey = (shape0, strides0, tuple(sig))
    plan = _BASIC_PLANS.get(pkey)
    if plan is None:
        out = nd.basic_index(parts)  # raises for a bad key; nothing is kept then
        plan = remember(_BASIC_PLANS, pkey, (basic_view_kind(parts, shape0), out.shape, out.strides,
                                             out.offset - nd.offset))
    kind, shape, strides, delta = plan

    def make_view(a: NDArray) -> NDArray:
        if a.strides == strides0 and a.shape == shape0:
            return a._view(shape, strides, a.offset + delta)
        return a.basic_index(parts)  # another layout (a gradient's, in backward)

    return kind.apply(x, make_view)


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]`` with torch's semantics: basic keys give views, tensors/lists/masks give copies."""
    if key.__class__ is int and x.ndarray.shape:  # x[i], the commonest key (basic_index checks its range)
        return Select.apply(x, lambda a: a.basic_index((key,)))
    if (key.__class__ is Tensor and key.ndarray.dtype is dtypes.int64 and key.ndarray.shape and x.ndarray.shape
            and key.device is x.device):  # x[indices]: rows picked by an int64 index tensor
        rows = _check_bounds("index", key, x.ndarray.shape[0], 0)
        return Index.apply(x, (rows.ndarray,) + (None,) * (len(x.ndarray.shape) - 1))
    if (key.__class__ is Tensor and key.ndarray.dtype is dtypes.bool_ and 0 < len(key.ndarray.shape) <= len(
            x.ndarray.shape) and key.device is x.device):  # x[mask]: the elements (or rows) where mask is True
        coords = _mask_coordinates(x, 0, key)
        return Index.apply(x, tuple(coords) + (None,) * (len(x.ndarray.shape) - len(coords)))
    if key.__class__ is tuple or key.__class__ is slice and x.ndarray.shape:
        view = _planned_view(x, key)
        if view is not None:
            return view
    _refuse_scalar_key(x, key)
    key = _normalize_key(key)
    if _is_basic(key):
        key = tuple(_int_slice(k) if isinstance(k, slice) else k.__index__()
                    if not isinstance(k, int) and k is not None and k is not Ellipsis else k for k in key)
        return view_of(x, lambda a: a.basic_index(key), basic_view_kind(key, x.ndarray.shape))
    basic, advanced = _split_key(x, _byte_masks_as_bool(key))
    # A basic part of whole-dim slices selects x itself: no view node (torch's graph has none either).
    view = view_of(x, lambda a: a.basic_index(basic)) if any(k != _WHOLE for k in basic) else x
    return Index.apply(view, _advanced_indices(view, advanced))


def index_tensor(x: Tensor, indices: tuple) -> Tensor:
    """``x[indices]`` for NDArray-level indices (one entry per dim, None or broadcast int64 arrays)."""
    return Index.apply(x, indices)


def _refuse_byte_mask_fill(key: tuple, value: Any) -> None:
    """A key that is one uint8 mask with a scalar or 0-d value: torch fills through ``masked_fill_`` there, which
    refuses a uint8 mask."""
    if len(key) == 1 and isinstance(key[0], Tensor) and key[0].dtype is dtypes.uint8 and (
            not isinstance(value, Tensor) or value.ndim == 0):
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype unsigned char")


def _masks_as_coordinates(indices: tuple, values: Tensor) -> tuple:
    """``index_put``'s indices with each bool (or, deprecated, uint8) mask replaced by the coordinates of its True
    entries, one index per dim it covers, as torch reads masks there."""
    if not builtins.any(isinstance(i, Tensor) and i.dtype in (dtypes.bool_, dtypes.uint8) for i in indices):
        return indices
    if builtins.any(isinstance(i, Tensor) and i.dtype is dtypes.uint8 for i in indices):
        _refuse_byte_mask_fill(indices, values)
        indices = _byte_masks_as_bool(indices)
    out: list = []
    for i in indices:
        if isinstance(i, Tensor) and i.dtype is dtypes.bool_:
            coords = nonzero(i if i.ndim else i.unsqueeze(0))
            out.extend(coords[:, j] for j in range(coords.shape[1]))
        else:
            out.append(i)
    return tuple(out)


def index_put(input: Tensor, indices: tuple, values: Any, accumulate: bool = False) -> Tensor:
    """Out-of-place ``input[indices] = values``; indices are NDArrays/None per dim or a tuple of index Tensors."""
    if not isinstance(values, Tensor):
        values = Tensor._wrap(NDArray.scalar(values, input.dtype, input.device))
    elif values.device is not input.device and values.ndim == 0 and values.device.type == "cpu":
        values = values.to(input.device)  # a CPU scalar goes to the input's device, as torch takes it
    _check_same_dtype("index_put", input, values)
    if builtins.any(isinstance(i, Tensor) for i in indices):
        indices = _masks_as_coordinates(tuple(indices), values)
        tensors = [_to_index_tensor("index_put", i, input, IndexError) for i in indices]
        shape = broadcast_shapes("index_put", *(t.shape for t in tensors))
        checked = [_check_bounds("index_put", t, input.shape[d], d) for d, t in enumerate(tensors)]
        indices = tuple(t.ndarray.expand(shape) for t in checked) + (None,) * (input.ndim - len(tensors))
    return IndexPut.apply(input, indices, values, accumulate)


def setitem(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value`` in place for every key ``getitem`` takes, differentiable with respect to both.

    The value is written into ``x``'s memory through the view the key's basic part selects (with ``index_put_``
    for advanced parts; a lone bool mask with one value selects on the device instead, without reading the mask).
    With a graph the write is recorded as one node that ``x`` takes over (``SetSlice``, ``SetIndexed``,
    ``SetMasked``); under forward-mode AD it runs as its out-of-place ``index_put``, which carries the tangents.
    """
    _refuse_scalar_key(x, key)
    key = _normalize_key(key)
    if not isinstance(value, Tensor):
        value = x.new_tensor(value, dtype=x.dtype) if not isinstance(value, (int, float, bool)) else value
    if isinstance(value, Tensor) and value.device is not x.device:
        if value.ndim:
            raise RuntimeError(f"setitem: expected value on {x.device}, got a tensor on {value.device}")
        value = value.to(x.device)
    if (len(key) == 1 and key[0].__class__ is Tensor and key[0].ndarray.dtype is dtypes.bool_ and key[0].ndim
            and key[0].device is x.device and (value.__class__ in (int, float, bool) or value.__class__ is Tensor
                                               and value.ndim == 0 and value.dtype is x.dtype)):
        _fill_masked(x, key[0], value)  # x[mask] = number: no read of the mask on the host, as torch's masked_fill_
        return
    if _is_basic(key):
        key = tuple(k.__index__() if not isinstance(k, (int, slice)) and k is not None and k is not Ellipsis else k
                    for k in key)
        target, indices = x.ndarray.basic_index(key), None
        target_shape = target.shape
    else:
        _refuse_byte_mask_fill(key, value)
        basic, advanced = _split_key(x, _byte_masks_as_bool(key))
        target = x.ndarray.basic_index(basic) if basic else x.ndarray
        indices = _advanced_indices(Tensor._wrap(target), advanced)
        target_shape = _indexed_shape(target.shape, indices)
        if isinstance(value, Tensor) and value.dtype is not x.dtype:
            raise RuntimeError(f"setitem: Index put requires the source and destination dtypes match, got "
                               f"{x.dtype.name} for the destination and {value.dtype.name} for the source.")
    if isinstance(value, Tensor):
        value = _value_for(value, target_shape)
    if not (is_grad_enabled() and (x.requires_grad or isinstance(value, Tensor) and value.requires_grad)):
        check_inplace(x, "setitem")
        if math.prod(target_shape) == 0:
            return
        if indices is None:
            target.copy_(value.ndarray if isinstance(value, Tensor) else value)
        else:
            values = value.ndarray if isinstance(value, Tensor) else NDArray.scalar(value, x.dtype, x.device)
            values = values.astype(x.dtype).expand(target_shape, "setitem")
            target.backend.index_put_(target, full_indices(target.shape, indices), values, False)
        x._bump_version()
        return
    if forward_ad.involves_dual(x, value):  # as its out-of-place op written back, which carries the tangents
        coords = Tensor._wrap(x.device.backend.arange(0, x.numel(), 1, dtypes.int64, x.device)).reshape(x.shape)
        positions = getitem(coords, key).reshape(-1)
        values = value.to(x.dtype) if isinstance(value, Tensor) else x.new_tensor(value, dtype=x.dtype)
        values = values.expand(target_shape).reshape(-1)
        assign_inplace(x, index_put(x.reshape(-1), (positions,), values).reshape(x.shape))
        return
    basic_part = key if indices is None else basic
    values = value.to(x.dtype) if isinstance(value, Tensor) else value
    write_recorded(x, SetSlice if indices is None else SetIndexed, values, key,
                   lambda a: a.basic_index(basic_part) if basic_part else a, indices)


class SetItem(Primitive):
    """``x[key] = value`` recorded, written into ``x``'s own memory (``out`` is ``x``'s array): the region that the
    key selects (the basic view ``make_view`` gives, then the advanced ``indices`` if any) takes the value, as
    torch's ``CopySlices`` / ``IndexPutBackward0``. Backward: the region's gradient goes to the value (summed to
    its shape), the rest to ``x``; nothing of ``x``'s old value is needed."""

    @staticmethod
    def forward(ctx, x: NDArray, value: NDArray | int | float | bool, key: tuple, make_view: Callable,
                indices: tuple | None, out: NDArray) -> NDArray:
        target = make_view(out)
        if indices is None:
            target.copy_(value.expand(target.shape, "setitem") if value.__class__ is NDArray else value)
        else:
            shape = _indexed_shape(target.shape, indices)
            values = value if value.__class__ is NDArray else NDArray.scalar(value, out.dtype, out.device)
            target.backend.index_put_(target, full_indices(target.shape, indices), values.expand(shape, "setitem"),
                                      False)
        ctx.meta = (key, make_view, indices, value.shape if value.__class__ is NDArray else None)
        return out

    @staticmethod
    def backward(ctx, grad):
        key, make_view, indices, value_shape = ctx.meta
        needs = ctx.needs_input_grad
        if is_grad_enabled():  # a graph of the backward (double backward): the same steps as recorded ops
            grad_x = grad.clone() if needs[0] else None
            if grad_x is not None:
                setitem(grad_x, key, 0.0)
            grad_v = _sum_to_shape(getitem(grad, key), value_shape) if needs[1] and value_shape is not None \
                else None
            return grad_x, grad_v, None, None, None
        g = grad.ndarray
        grad_v = None
        if needs[1] and value_shape is not None:
            region = make_view(g)
            # A copy either way: the value's gradient must not alias the incoming one.
            region = region.backend.contiguous(region) if indices is None else g.backend.index(region, indices)
            grad_v = _sum_to_shape(Tensor._wrap(region), value_shape)
        grad_x = None
        if needs[0]:
            gx = g.backend.contiguous(g) if not g.is_contiguous() else g.backend.cast(g, g.dtype)  # a copy
            target = make_view(gx)
            if indices is None:
                target.copy_(0)
            else:
                zero = NDArray.scalar(0, gx.dtype, gx.device).expand(_indexed_shape(target.shape, indices))
                target.backend.index_put_(target, full_indices(target.shape, indices), zero, False)
            grad_x = Tensor._wrap(gx)
        return grad_x, grad_v, None, None, None


def _fill_masked(x: Tensor, mask: Tensor, value: Tensor | int | float | bool) -> None:
    """``x[mask] = value`` for a bool mask over x's leading dims and one value (a number or a 0-d tensor of x's
    dtype): a select between the value and x written back into x, recorded as ``SetMasked`` when a graph is."""
    _check_mask_shape(x, 0, mask.ndarray.shape)
    m = mask.ndarray
    if m.ndim < x.ndim:
        m = m.reshape(m.shape + (1,) * (x.ndim - m.ndim))
    if is_grad_enabled() and (x.requires_grad or value.__class__ is Tensor and value.requires_grad):
        write_recorded(x, SetMasked, value, m)
        return
    check_inplace(x, "setitem")
    _masked_write(x.ndarray, m, value.ndarray if value.__class__ is Tensor else value)
    x._bump_version()


def _masked_write(out: NDArray, mask: NDArray, value: NDArray | int | float | bool) -> None:
    """``value`` (a number or a 0-d array) where ``mask`` holds, written into ``out``'s memory: one select."""
    fill = value if value.__class__ is NDArray else NDArray.scalar(value, out.dtype, out.device)
    out.copy_(out.backend.where(mask, fill, out))


class SetMasked(Primitive):
    """``x[mask] = value`` recorded, for a mask broadcast over ``x`` and one value (a number or a 0-d array),
    written into ``x``'s memory (torch's node: ``IndexPutBackward0``)."""

    @staticmethod
    def forward(ctx, x: NDArray, value: NDArray | int | float | bool, mask: NDArray, out: NDArray) -> NDArray:
        _masked_write(out, mask, value)
        ctx.mask = mask
        return out

    @staticmethod
    def backward(ctx, grad):
        mask = ctx.mask
        needs = ctx.needs_input_grad
        if is_grad_enabled():  # double backward: the same steps as recorded ops
            m = Tensor._wrap(mask)
            zero = grad.new_zeros(())
            return (where(m, zero, grad) if needs[0] else None,
                    where(m, grad, zero).sum() if needs[1] else None, None)
        g = grad.ndarray
        zero = NDArray.scalar(0, g.dtype, g.device)
        grad_x = Tensor._wrap(g.backend.where(mask, zero, g)) if needs[0] else None
        grad_v = Tensor._wrap(g.backend.where(mask, g, zero).sum(tuple(range(g.ndim)))) if needs[1] else None
        return grad_x, grad_v, None


class SetSlice(SetItem):
    """``x[key] = value`` for a basic key (torch's node: ``CopySlices``)."""


class SetIndexed(SetItem):
    """``x[key] = value`` for a key with tensors, lists or masks (torch's node: ``IndexPutBackward0``)."""


def _indexed_shape(shape: tuple[int, ...], indices: tuple) -> tuple[int, ...]:
    """Shape of ``x[indices]`` for one entry per dim (None or index arrays of one broadcast shape)."""
    advanced = [d for d, ix in enumerate(indices) if ix is not None]
    index_shape = tuple(indices[advanced[0]].shape)
    plain = tuple(shape[d] for d, ix in enumerate(indices) if ix is None)
    if advanced == list(range(advanced[0], advanced[-1] + 1)):
        return plain[:advanced[0]] + index_shape + plain[advanced[0]:]
    return index_shape + plain


def _value_for(value: Tensor, target_shape: tuple[int, ...]) -> Tensor:
    """The assigned value with extra leading size-1 dims dropped; RuntimeError if it cannot broadcast."""
    shape = tuple(value.shape)
    while len(shape) > len(target_shape) and shape[0] == 1:
        shape = shape[1:]
    ok = len(shape) <= len(target_shape) and builtins.all(
        v in (1, t) for v, t in zip(reversed(shape), reversed(target_shape)))
    if not ok:
        raise RuntimeError(f"setitem: shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast "
                           f"to indexing result of shape {list(target_shape)}")
    return value.reshape(shape) if shape != tuple(value.shape) else value


def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    """Coordinates in ``shape`` of flat indices (negative ones wrap, as Python's floor division), one int64 tensor
    per dim."""
    if not isinstance(indices, Tensor):
        indices = _from_data(indices)
    if indices.dtype.is_floating_point or indices.dtype is dtypes.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype.name}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    flat = indices.to(dtypes.int64)
    coords = []
    stride = math.prod(shape)
    for size in shape:
        stride //= size if size else 1
        coords.append((flat // stride) % size if size else flat * 0)
    return tuple(coords)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding with a new last dim of ``num_classes`` (inferred as max + 1 when -1)."""
    if tensor.dtype is not dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("one_hot: Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1  # the output's size depends on it: torch reads it too
    if tensor.numel():
        tensor = _check_range(tensor, 0, num_classes, RuntimeError, "one_hot: Class values must be non-negative and "
                              f"smaller than num_classes={num_classes} (got {{value}})")
    nd = tensor.ndarray  # no gradient flows through an encoding: array ops, no nodes
    classes = nd.backend.arange(0, num_classes, 1, dtypes.int64, nd.device)
    return Tensor._wrap(nd.unsqueeze(nd.ndim).binary("eq", classes).astype(dtypes.int64))
