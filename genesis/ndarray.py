"""NDArray: a strided view over a device buffer, and the bridge to the device's backend.

An NDArray is ``(buffer, shape, strides, offset, dtype, device)``. Views (reshape, permute, expand, slicing,
diagonal, ...) are computed here from metadata alone and share the buffer; compute calls go to the device's backend
module (see ``genesis._impl.contract`` for the contract) after the bookkeeping every backend shares: type promotion,
device checks and dim normalization. NDArray knows nothing about autograd.
"""

from __future__ import annotations

import math
import operator
from typing import Sequence

from genesis import dtypes
from genesis.device import device as Device
from genesis.memo import remember

Shape = tuple[int, ...]
_BITWISE_OPS = frozenset(("bitwise_and", "bitwise_or", "bitwise_xor"))
#: Binary ops whose backends take two floating operands of different widths and compute in the wider dtype.
_MIXED_FLOAT_OPS = frozenset(("add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"))


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides (in elements) for ``shape``."""
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def normalize_dim(op: str, dim: int, ndim: int) -> int:
    """Map a possibly negative dim into ``[0, ndim)``; IndexError naming the op otherwise (torch semantics). A numpy
    integer or a one-element integer tensor is a dim too."""
    if dim.__class__ is not int:
        dim = operator.index(dim)
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def normalize_dims(op: str, dim: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Normalize a reduction's dim argument (None: all dims) into a sorted tuple without repeats."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int) or not isinstance(dim, (tuple, list)) and hasattr(dim, "__index__"):
        d = normalize_dim(op, dim, ndim)
        return (d,) if ndim else ()
    dims = tuple(normalize_dim(op, d, ndim) for d in dim)
    if not ndim:
        return ()
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{op}: dim {tuple(dim)} appears multiple times in the list of dims")
    return tuple(sorted(dims))


_BROADCAST: dict[tuple[Shape, ...], Shape] = {}


def broadcast_shapes(op: str, *shapes: Shape) -> Shape:
    """Broadcast shapes as torch does, RuntimeError naming the op and both shapes otherwise (results of valid
    shapes are remembered: every broadcasting op asks, often twice)."""
    try:
        result = _BROADCAST.get(shapes)
    except TypeError:  # a shape given as a list
        return _broadcast(op, shapes)
    if result is None:
        result = remember(_BROADCAST, shapes, _broadcast(op, shapes), 8192)
    return result


def _broadcast(op: str, shapes: tuple[Shape, ...]) -> Shape:
    ndim = max(len(s) for s in shapes)
    result = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s, ndim - len(s)):
            if n != 1:
                if result[i] != 1 and result[i] != n:
                    raise RuntimeError(
                        f"{op}: shapes {tuple(shapes[0])} and {tuple(s)} are not broadcastable "
                        f"(size {result[i]} != {n} at dimension {i - ndim})"
                    )
                result[i] = n
    return tuple(result)


def check_same_device(op: str, *items: object) -> None:
    """RuntimeError, worded as torch's, unless every NDArray and device among ``items`` is on one device.

    Callers holding Tensors pass ``t.device`` (or ``t.ndarray``); anything else (None for an absent optional
    argument, a Python number) is skipped.
    """
    first = None
    for item in items:
        d = item.device if isinstance(item, NDArray) else item
        if not isinstance(d, Device):
            continue
        if first is None:
            first = d
        elif d is not first:
            raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but found at least two devices, "
                               f"{first} and {d}!")


def check_tensor_lists(op: str, names: tuple[str, ...], *lists: list[NDArray] | None,
                       same_dtype: bool = False) -> None:
    """RuntimeError, worded as torch's, unless the lists an in-place multi-tensor kernel reads and writes line up.

    Every list (None for an absent optional one) holds as many arrays as the first, each array has the shape of the
    first list's array at its position, and all live on one device; with ``same_dtype`` each list holds one dtype.
    A foreign kernel trusts these facts for every address it computes, so they are checked before the call.
    """
    first = lists[0]
    device = first[0].device if first else None
    for name, lst in zip(names, lists):
        if lst is None:
            continue
        if len(lst) != len(first):
            raise RuntimeError(f"{op}: Tensor lists must have the same number of tensors, got {len(first)} "
                               f"{names[0]} and {len(lst)} {name}")
        dtype = lst[0].dtype if lst else None
        # One pass per list (an optimizer step checks hundreds of arrays): the messages are built only on failure.
        for ref, a in zip(first, lst):
            if a.device is not device or a.shape != ref.shape or same_dtype and a.dtype is not dtype:
                _list_mismatch(op, names, lists, name, lst, same_dtype)


def _list_mismatch(op: str, names: tuple[str, ...], lists: tuple, name: str, lst: list[NDArray],
                   same_dtype: bool) -> None:
    """Raise ``check_tensor_lists``'s error for ``lst``, the first list that breaks a rule."""
    check_same_device(op, *(a for other in lists if other is not None for a in other))
    first = lists[0]
    for i, (ref, a) in enumerate(zip(first, lst)):
        if a.shape != ref.shape:
            raise RuntimeError(f"{op}: {name}[{i}] has shape {tuple(a.shape)}, but {names[0]}[{i}] has shape "
                               f"{tuple(ref.shape)}")
        if same_dtype and a.dtype is not lst[0].dtype:
            raise RuntimeError(f"{op}: {name} must have one dtype, got {lst[0].dtype} and {a.dtype}")


def view_strides(shape: Shape, strides: tuple[int, ...], new_shape: Shape) -> tuple[int, ...] | None:
    """Strides that let ``new_shape`` view memory laid out as (shape, strides), or None if a copy is needed."""
    if not shape:
        return contiguous_strides(new_shape)
    if math.prod(shape) == 0:
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[tensor_d]
        chunk_ends = tensor_d == 0 or (
            shape[tensor_d - 1] != 1 and strides[tensor_d - 1] != tensor_numel * chunk_base_stride
        )
        if chunk_ends:
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


_VIEW_PLANS: dict[tuple, tuple[Shape, tuple[int, ...] | None]] = {}


def view_plan(op: str, shape: Shape, strides: tuple[int, ...], requested: Sequence[int]) \
        -> tuple[Shape, tuple[int, ...] | None]:
    """(new shape, its view strides or None if a copy is needed) for viewing (shape, strides) as ``requested``.

    A training step asks for the same few views every step, so the answers are kept: one dict lookup in place of
    resolving -1 and walking the strides (a bad request raises and is never kept).
    """
    key = (shape, strides, requested if requested.__class__ is tuple else tuple(requested))
    plan = _VIEW_PLANS.get(key)
    if plan is None:
        new_shape = infer_shape(op, requested, math.prod(shape))
        plan = (new_shape, strides if new_shape == shape else view_strides(shape, strides, new_shape))
        remember(_VIEW_PLANS, key, plan, 8192)
    return plan


def infer_shape(op: str, shape: Sequence[int], numel: int) -> Shape:
    """Resolve one -1 in a requested shape; RuntimeError naming the op if the sizes cannot match."""
    shape = tuple(int(s) for s in shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred, got shape {list(shape)}")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"{op}: invalid shape dimension in {list(shape)}")
    known = math.prod(s for s in shape if s != -1)
    if unknown:
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
        i = unknown[0]
        shape = shape[:i] + (numel // known,) + shape[i + 1:]
    elif known != numel:
        raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


class NDArray:
    """A strided, typed view over a device buffer; compute is dispatched to ``device.backend``."""

    __slots__ = ("buffer", "shape", "strides", "offset", "dtype", "device", "_native", "__weakref__")

    def __init__(self, buffer: object, shape: Shape, strides: tuple[int, ...], offset: int, dtype: dtypes.dtype,
                 device: Device, native: object = None) -> None:
        self.buffer = buffer
        self.shape = shape
        self.strides = strides
        self.offset = offset
        self.dtype = dtype
        self.device = device
        self._native = native  # the backend's own handle for this view, built once on demand

    # ------------------------------------------------------------ metadata
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def backend(self):  # a backend module
        return self.device.backend

    def is_contiguous(self) -> bool:
        if 0 in self.shape:
            return True  # an empty array has no layout to violate (as torch)
        expected = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != expected:
                return False
            expected *= n
        return True

    def __repr__(self) -> str:
        return f"NDArray(shape={self.shape}, strides={self.strides}, dtype={self.dtype}, device={self.device})"

    # ------------------------------------------------------------ creation
    @staticmethod
    def empty(shape: Shape, dtype: dtypes.dtype, device: Device) -> NDArray:
        return device.backend.empty(tuple(shape), dtype, device)

    @staticmethod
    def full(shape: Shape, value: int | float | bool, dtype: dtypes.dtype, device: Device) -> NDArray:
        return device.backend.full(tuple(shape), value, dtype, device)

    @staticmethod
    def scalar(value: int | float | bool, dtype: dtypes.dtype, device: Device) -> NDArray:
        return device.backend.full((), value, dtype, device)

    # ------------------------------------------------------------ views (metadata only)
    def _view(self, shape: Shape, strides: tuple[int, ...], offset: int | None = None) -> NDArray:
        return NDArray(self.buffer, shape, strides, self.offset if offset is None else offset, self.dtype,
                       self.device)

    def alias(self) -> NDArray:
        """This view again, as another array object: a detached tensor's array (autograd tells the tensors whose
        values a node saved apart by their arrays, so ``x * x.detach()`` must not hold ``x``'s)."""
        return NDArray(self.buffer, self.shape, self.strides, self.offset, self.dtype, self.device, self._native)

    def as_strided(self, shape: Shape, strides: tuple[int, ...], offset: int) -> NDArray:
        return self._view(tuple(shape), tuple(strides), offset)

    def view(self, shape: Sequence[int], op: str = "view") -> NDArray:
        shape, strides = view_plan(op, self.shape, self.strides, shape)
        if shape == self.shape:
            return self
        if strides is None:
            raise RuntimeError(
                f"{op}: size {list(shape)} is not compatible with input tensor's size {list(self.shape)} and stride "
                f"{list(self.strides)} (at least one dimension spans across two contiguous subspaces). "
                "Use .reshape(...) instead."
            )
        return NDArray(self.buffer, shape, strides, self.offset, self.dtype, self.device)

    def view_dtype(self, dtype: dtypes.dtype) -> NDArray:
        """The same bytes read as elements of ``dtype``, with torch's rules for ``Tensor.view(dtype)``.

        Equal element sizes keep shape, strides and offset. Otherwise the last dim must have stride 1 (and there must
        be one); its size, the other strides and the offset scale by the ratio of the element sizes, and where the
        elements grow each of them must divide evenly. RuntimeError worded as torch's otherwise.
        """
        if dtype is self.dtype:
            return self
        old, new = self.dtype.itemsize, dtype.itemsize
        shape, strides, offset = self.shape, self.strides, self.offset
        if old != new:
            what = (f"to view {dtypes.SCALAR_TYPE_NAMES[self.dtype]} as {dtypes.SCALAR_TYPE_NAMES[dtype]} "
                    "(different element sizes)")
            if not shape:
                raise RuntimeError(f"self.dim() cannot be 0 {what}")
            if old > new:
                ratio = old // new
                if strides[-1] != 1:
                    raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
                shape = shape[:-1] + (shape[-1] * ratio,)
                strides = tuple(s * ratio for s in strides[:-1]) + (1,)
                offset *= ratio
            else:
                ratio = new // old  # torch checks in this order: last size, offset, last stride, other strides
                if shape[-1] % ratio:
                    raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got {shape[-1]}")
                if offset % ratio:
                    raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got {offset}")
                if strides[-1] != 1:
                    raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
                for d, s in enumerate(strides[:-1]):
                    if s % ratio:
                        raise RuntimeError(f"self.stride({d}) must be divisible by {ratio} {what}, but got {s}")
                shape = shape[:-1] + (shape[-1] // ratio,)
                strides = tuple(s // ratio for s in strides[:-1]) + (1,)
                offset //= ratio
        return NDArray(self.backend.reinterpret_buffer(self, dtype), shape, strides, offset, dtype, self.device)

    def reshape(self, shape: Sequence[int]) -> NDArray:
        shape, strides = view_plan("reshape", self.shape, self.strides, shape)
        if shape == self.shape:
            return self
        if strides is None:
            return self.contiguous()._view(shape, contiguous_strides(shape))
        return NDArray(self.buffer, shape, strides, self.offset, self.dtype, self.device)

    def permute(self, dims: Sequence[int]) -> NDArray:
        seen: list[int] = []
        for d in dims:  # in order, as torch: a repeat is reported before a later dim out of range
            d = normalize_dim("permute", d, self.ndim)
            if d in seen:
                raise RuntimeError("permute(): duplicate dims are not allowed.")
            seen.append(d)
        dims = tuple(seen)
        if sorted(dims) != list(range(self.ndim)):
            raise RuntimeError(f"permute: dims {tuple(dims)} must be a permutation of the {self.ndim} input dims")
        return self._view(tuple(self.shape[d] for d in dims), tuple(self.strides[d] for d in dims))

    def transpose(self, d0: int, d1: int) -> NDArray:
        d0 = normalize_dim("transpose", d0, self.ndim)
        d1 = normalize_dim("transpose", d1, self.ndim)
        if self.ndim < 2 or d0 == d1:
            return self
        shape, strides = list(self.shape), list(self.strides)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        strides[d0], strides[d1] = strides[d1], strides[d0]
        return self._view(tuple(shape), tuple(strides))

    def expand(self, shape: Sequence[int], op: str = "expand") -> NDArray:
        shape = tuple(shape)
        if len(shape) < self.ndim:
            raise RuntimeError(
                f"{op}: the number of sizes provided ({len(shape)}) must be greater or equal to the number of "
                f"dimensions in the tensor ({self.ndim})"
            )
        lead = len(shape) - self.ndim
        new_shape, new_strides = [], []
        for i, n in enumerate(shape):
            if i < lead:
                if n < 0:
                    raise RuntimeError(f"{op}: the expanded size of the tensor (-1) isn't allowed in a leading, "
                                       "non-existing dimension")
                new_shape.append(n)
                new_strides.append(0)
                continue
            old, stride = self.shape[i - lead], self.strides[i - lead]
            if n == -1:
                n = old
            elif n < 0:
                raise RuntimeError(f"{op}: the expanded size {n} at dimension {i} must be non-negative (or -1 to "
                                   "keep the size)")
            if old == n:
                new_shape.append(n)
                new_strides.append(stride)
            elif old == 1:
                new_shape.append(n)
                new_strides.append(0)
            else:
                raise RuntimeError(
                    f"{op}: the expanded size of the tensor ({n}) must match the existing size ({old}) at "
                    f"non-singleton dimension {i}. Target sizes: {list(shape)}. Tensor sizes: {list(self.shape)}"
                )
        new_shape = tuple(new_shape)
        if new_shape == self.shape:
            return self
        return self._view(new_shape, tuple(new_strides))

    def squeeze(self, dims: tuple[int, ...] | None = None) -> NDArray:
        if dims is None:
            keep = [i for i, n in enumerate(self.shape) if n != 1]
        else:
            keep = [i for i, n in enumerate(self.shape) if n != 1 or i not in dims]
        return self._view(tuple(self.shape[i] for i in keep), tuple(self.strides[i] for i in keep))

    def unsqueeze(self, dim: int) -> NDArray:
        dim = normalize_dim("unsqueeze", dim, self.ndim + 1)
        stride = self.strides[dim] * self.shape[dim] if dim < self.ndim else 1
        return self._view(self.shape[:dim] + (1,) + self.shape[dim:],
                          self.strides[:dim] + (stride,) + self.strides[dim:])

    def narrow(self, dim: int, start: int, length: int) -> NDArray:
        shape = list(self.shape)
        shape[dim] = length
        return self._view(tuple(shape), self.strides, self.offset + start * self.strides[dim])

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> NDArray:
        d1 = normalize_dim("diagonal", dim1, self.ndim)
        d2 = normalize_dim("diagonal", dim2, self.ndim)
        if d1 == d2:
            raise RuntimeError(f"diagonal: dimensions cannot be identical {dim1}, {dim2}")
        start = self.offset
        if offset >= 0:
            length = max(min(self.shape[d1], self.shape[d2] - offset), 0)
            start += offset * self.strides[d2] if length else 0
        else:
            length = max(min(self.shape[d1] + offset, self.shape[d2]), 0)
            start -= offset * self.strides[d1] if length else 0
        keep = [i for i in range(self.ndim) if i not in (d1, d2)]
        shape = tuple(self.shape[i] for i in keep) + (length,)
        strides = tuple(self.strides[i] for i in keep) + (self.strides[d1] + self.strides[d2],)
        return self._view(shape, strides, start)

    def unfold(self, dim: int, size: int, step: int) -> NDArray:
        dim = normalize_dim("unfold", dim, self.ndim)
        n = self.shape[dim] if self.ndim else 1
        if size < 0:
            raise RuntimeError(f"unfold: size is {size} but must be >= 0")
        if size > n:
            raise RuntimeError(f"unfold: maximum size for tensor at dimension {dim} is {n} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"unfold: step is {step} but must be > 0")
        if not self.ndim:  # a scalar is one window of its single element (or of none)
            return self._view((size,), (0,))
        shape = list(self.shape)
        strides = list(self.strides)
        shape[dim] = (n - size) // step + 1
        strides[dim] = self.strides[dim] * step
        return self._view(tuple(shape) + (size,), tuple(strides) + (self.strides[dim],))

    def basic_index(self, key: tuple) -> NDArray:
        """View for a key of ints, slices (positive steps), None and at most one Ellipsis."""
        n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
        if n_real > self.ndim:
            raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
        if any(k is Ellipsis for k in key):
            i = next(i for i, k in enumerate(key) if k is Ellipsis)
            key = key[:i] + (slice(None),) * (self.ndim - n_real) + key[i + 1:]
        shape, strides = [], []
        offset = self.offset
        d = 0
        for k in key:
            if k is None:
                shape.append(1)
                strides.append(0)
                continue
            n, s = self.shape[d], self.strides[d]
            if isinstance(k, slice):
                start, stop, step = k.start, k.stop, k.step
                step = 1 if step is None else step
                if step <= 0:
                    raise ValueError("step must be greater than zero")
                start, stop, _ = slice(start, stop, step).indices(n)
                length = max(0, (stop - start + step - 1) // step)
                if length:
                    offset += start * s
                shape.append(length)
                strides.append(s * step)
            else:
                if not -n <= k < n:
                    raise IndexError(f"index {k} is out of bounds for dimension {d} with size {n}")
                offset += (k % n) * s
            d += 1
        shape.extend(self.shape[d:])
        strides.extend(self.strides[d:])
        return self._view(tuple(shape), tuple(strides), offset)

    # ------------------------------------------------------------ copies and casts
    def contiguous(self) -> NDArray:
        if self.is_contiguous():
            return self
        return self.device.backend.contiguous(self)

    def astype(self, dtype: dtypes.dtype) -> NDArray:
        if dtype is self.dtype:
            return self
        return self.device.backend.cast(self, dtype)

    def copy_(self, src: NDArray | int | float | bool) -> NDArray:
        if isinstance(src, NDArray) and src.device is not self.device:
            src = src.to(self.device)
        return self.device.backend.copy_(self, src)

    def to(self, device: Device, non_blocking: bool = False) -> NDArray:
        """Copy to another device (through host memory), or return self on the same device.

        ``non_blocking``: a host-to-device copy from pinned memory is queued on the current stream without waiting.
        """
        if device is self.device:
            return self
        host = self.device.backend.to_numpy(self)
        return device.backend.from_numpy(host, self.dtype, device, non_blocking)

    def pin_memory(self) -> NDArray:
        """A contiguous copy in page-locked host memory."""
        return self.device.backend.pin_memory(self)

    def is_pinned(self) -> bool:
        return self.device.backend.is_pinned(self)

    def numpy(self):  # numpy.ndarray
        return self.device.backend.to_numpy(self)

    # ------------------------------------------------------------ elementwise
    def unary(self, op: str, out: NDArray | None = None) -> NDArray:
        return self.device.backend.unary(op, self, out)

    def binary(self, op: str, other: NDArray | int | float | bool, out: NDArray | None = None) -> NDArray:
        """Elementwise ``self op other`` with torch's type promotion (``other`` may be a Python number)."""
        a, b = self, other
        if a.dtype.category == 2 and op not in _BITWISE_OPS:
            # The common cases first: a floating array with one of its own dtype, shape and device, or with a Python
            # number, needs no promotion, cast or check.
            if b.__class__ is NDArray:
                if b.dtype is a.dtype and b.shape == a.shape and b.device is a.device:
                    return a.device.backend.binary(op, a, b, out)
            elif b.__class__ is float or b.__class__ is int:
                return a.device.backend.binary(op, a, b, out)
        if isinstance(b, NDArray):
            if a.shape != b.shape:
                broadcast_shapes(op, a.shape, b.shape)
            if b.device is not a.device:
                if b.ndim == 0 and b.device.type == "cpu":
                    b = b.to(a.device)
                elif a.ndim == 0 and a.device.type == "cpu" and out is None:
                    a = a.to(b.device)
                else:
                    check_same_device(op, a, b)
            if b.dtype is a.dtype:
                dt = a.dtype
            else:
                dt = dtypes.result_type(a.dtype, a.ndim, b.dtype, b.ndim)
                if op in _MIXED_FLOAT_OPS and a.dtype.category == 2 and b.dtype.category == 2 and \
                        (dt is a.dtype or dt is b.dtype) and a.dtype.itemsize != b.dtype.itemsize:
                    # Floats of two widths (a bfloat16 activation plus a float32 residual): the backends read each
                    # operand in its own dtype and compute in the wider one, which is exact; no cast copy first.
                    return a.device.backend.binary(op, a, b, out)
            if b.dtype is not dt:
                b = b.device.backend.cast(b, dt)
        else:
            dt = dtypes.result_type_scalar(a.dtype, b)
        if dt.category < 2:
            if op == "div":
                dt = dtypes.get_default_dtype()
                if isinstance(b, NDArray):
                    b = b.device.backend.cast(b, dt)
        elif op in _BITWISE_OPS:
            raise RuntimeError(f"{op}: not implemented for '{dt.name}' (integer or bool tensors only)")
        if a.dtype is not dt:
            a = a.device.backend.cast(a, dt)
        return a.device.backend.binary(op, a, b, out)

    def rbinary(self, op: str, value: int | float | bool) -> NDArray:
        """``value op self`` for a Python number on the left."""
        dt = dtypes.result_type_scalar(self.dtype, value)
        return NDArray.scalar(value, dt, self.device).binary(op, self)

    def __add__(self, other):
        return self.binary("add", other)

    def __radd__(self, other):
        return self.binary("add", other)

    def __sub__(self, other):
        return self.binary("sub", other)

    def __rsub__(self, other):
        return self.rbinary("sub", other)

    def __mul__(self, other):
        return self.binary("mul", other)

    def __rmul__(self, other):
        return self.binary("mul", other)

    def __truediv__(self, other):
        return self.binary("div", other)

    def __rtruediv__(self, other):
        return self.rbinary("div", other)

    def __pow__(self, other):
        return self.binary("pow", other)

    def __neg__(self) -> NDArray:
        return self.device.backend.unary("neg", self, None)

    def __matmul__(self, other: NDArray) -> NDArray:
        return self.matmul(other)

    def where(self, a: NDArray | float, b: NDArray | float) -> NDArray:
        """``a`` where self (a bool array) is true, else ``b``; a and b promoted to one dtype."""
        a_array, b_array = isinstance(a, NDArray), isinstance(b, NDArray)
        shape, device = self.shape, self.device
        if (a_array and a.shape != shape) or (b_array and b.shape != shape):
            broadcast_shapes("where", *[t.shape for t in (self, a, b) if isinstance(t, NDArray)])
        if a_array and b_array:
            dt = a.dtype if a.dtype is b.dtype else dtypes.result_type(a.dtype, a.ndim, b.dtype, b.ndim)
        elif a_array:
            dt = dtypes.result_type_scalar(a.dtype, b)
            b = device.backend.full((), b, dt, device)
        elif b_array:
            dt = dtypes.result_type_scalar(b.dtype, a)
            a = device.backend.full((), a, dt, device)
        else:
            dt = dtypes.promote_types(dtypes.scalar_dtype(a), dtypes.scalar_dtype(b))
            a, b = device.backend.full((), a, dt, device), device.backend.full((), b, dt, device)
        if a.dtype is not dt:
            a = a.astype(dt)
        if b.dtype is not dt:
            b = b.astype(dt)
        if a.device is not device or b.device is not device:
            check_same_device("where", self, *(t for t in (a, b) if t.shape))
            a, b = a.to(device), b.to(device)
        return device.backend.where(self, a, b)

    # ------------------------------------------------------------ reductions
    def sum(self, dims: tuple[int, ...], keepdim: bool = False, dtype: dtypes.dtype | None = None) -> NDArray:
        x = self
        if dtype is not None:
            x = x.astype(dtype)
        elif x.dtype.category < 2:
            x = x.astype(dtypes.int64)
        return x.device.backend.reduce("sum", x, dims, keepdim)

    def reduce(self, op: str, dims: tuple[int, ...], keepdim: bool = False) -> NDArray:
        x = self
        if op == "prod" and x.dtype.category < 2:
            x = x.astype(dtypes.int64)
        return x.device.backend.reduce(op, x, dims, keepdim)

    def max(self, dims: tuple[int, ...], keepdim: bool = False) -> NDArray:
        return self.device.backend.reduce("amax", self, dims, keepdim)

    # ------------------------------------------------------------ linear algebra
    def matmul(self, other: NDArray) -> NDArray:
        """Matrix product with torch's rules for 1-D operands and broadcast batch dims."""
        a, b = self, other
        if (len(a.shape) == 2 and len(b.shape) == 2 and a.dtype is b.dtype and a.dtype is not dtypes.bool_
                and a.device is b.device and a.shape[1] == b.shape[0]):
            return a.device.backend.matmul(a, b)  # the common case, two matrices: none of the checks below apply
        check_same_device("matmul", a, b)
        if a.ndim == 0 or b.ndim == 0:
            raise RuntimeError(
                f"matmul: both arguments need to be at least 1D, but they are {a.ndim}D and {b.ndim}D"
            )
        dt = dtypes.promote_types(a.dtype, b.dtype)
        if a.dtype is not b.dtype:
            raise RuntimeError(
                f"matmul: expected both operands to have the same dtype, but got {a.dtype} and {b.dtype}"
            )
        if dt is dtypes.bool_ and ((a.ndim == 1 and b.ndim == 1) or (a.size and b.size)):
            # torch has no bool kernel: refused wherever one would run (and for any dot, even of empty vectors)
            raise NotImplementedError("matmul: not implemented for 'bool'")
        a_vec, b_vec = a.ndim == 1, b.ndim == 1
        if a_vec:
            a = a.unsqueeze(0)
        if b_vec:
            b = b.unsqueeze(1)
        if a.shape[-1] != b.shape[-2]:
            raise RuntimeError(
                f"matmul: shapes {tuple(self.shape)} and {tuple(other.shape)} cannot be multiplied "
                f"({a.shape[-1]} != {b.shape[-2]})"
            )
        batch = broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
        a = a.expand(batch + a.shape[-2:])
        b = b.expand(batch + b.shape[-2:])
        out = a.device.backend.matmul(a.astype(dt), b.astype(dt))
        if a_vec:
            out = out.squeeze((out.ndim - 2,))
        if b_vec:
            out = out.squeeze((out.ndim - 1,))
        return out


def full_indices(shape: Shape, indices: tuple) -> tuple[NDArray, ...]:
    """Turn ``index`` entries (None or broadcast int64 arrays) into one index array per dim, laid out as the result.

    Advanced indices that are adjacent keep their place in the result; otherwise their dims come first (torch and
    numpy rules). Each full-dim entry becomes an ``arange`` shaped to broadcast along its result dim.
    """
    advanced = [d for d, ix in enumerate(indices) if ix is not None]
    first = next(ix for ix in indices if ix is not None)
    index_shape = first.shape
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    position = advanced[0] if adjacent else 0
    plain = [d for d, ix in enumerate(indices) if ix is None]
    ndim = len(plain) + len(index_shape)
    result = []
    for d, ix in enumerate(indices):
        if ix is None:
            q = plain.index(d)
            q = q if (adjacent and d < position) else q + len(index_shape)
            view = [1] * ndim
            view[q] = shape[d]
            ar = first.device.backend.arange(0, shape[d], 1, dtypes.int64, first.device)
            result.append(ar.reshape(view))
        else:
            view = [1] * position + list(index_shape) + [1] * (ndim - position - len(index_shape))
            result.append(ix.reshape(view))
    return tuple(result)


def cat(arrays: Sequence[NDArray], dim: int) -> NDArray:
    """Concatenate arrays of one device along ``dim`` into a new contiguous array of the first one's dtype (the
    backend's ``cat``: one copy for all of them where it can)."""
    first = arrays[0]
    dtype = first.dtype
    return first.device.backend.cat([a if a.dtype is dtype else a.astype(dtype) for a in arrays], dim)


def stack(arrays: Sequence[NDArray], dim: int) -> NDArray:
    """Stack same-shape arrays of one device and dtype along a new dim ``dim`` (the backend's ``stack``)."""
    return arrays[0].device.backend.stack(list(arrays), dim)
