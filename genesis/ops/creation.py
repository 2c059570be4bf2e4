"""Creation functions beyond ``genesis.tensor``'s: torch's ``asarray`` (sharing memory where it can), ``frombuffer``,
``empty_strided``, the deprecated inclusive ``range``, ``linspace``, ``logspace``, ``eye``, ``scalar_tensor``, and the
``Tensor.new_*`` methods (``new_zeros``...: this tensor's dtype and device unless given)."""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any, Sequence

import numpy as np

from genesis import dtypes
from genesis import memory_format as _mf
from genesis.device import factory_device, to_device
from genesis.ndarray import NDArray
from genesis.tensor import Tensor, arange, empty, from_dlpack, from_numpy, full, ones, tensor, zeros
from genesis.tensor_data import linspace_half


def range(start: Any, end: Any, step: Any = 1, *, dtype: Any = None, layout: Any = None, device: Any = None,
          pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """Deprecated (as in torch, with its warning): values from ``start`` to ``end`` *inclusive* spaced by ``step``,
    ``floor((end - start) / step) + 1`` of them, in the default float dtype unless ``dtype`` says otherwise.

    Values are ``start + i * step`` computed in float64 (int64 for integer dtypes, whose bounds are truncated) and
    rounded once, as torch's CPU kernel. Use ``arange`` (end excluded) instead.
    """
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    d = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    integral = d.category < 2
    if integral:
        start, end, step = builtins.int(start), builtins.int(end), builtins.int(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = (end - start) // step + 1 if integral else builtins.int((end - start) / step + 1)
    dev = factory_device(device)
    values = arange(count, dtype=dtypes.int64 if integral else dtypes.float64, device=dev) * step + start
    out = values.to(d)
    return out.requires_grad_(True) if requires_grad else out


def _strided_storage(size: Sequence[int], stride: Sequence[int]) -> int:
    """The elements a storage needs for a view of ``size`` and ``stride`` starting at 0."""
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} strides for {len(size)} sizes")
    if any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"empty_strided: negative sizes or strides are not supported, got {list(size)} and "
                           f"{list(stride)}")
    if 0 in size:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(size, stride))


def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: Any = None, layout: Any = None,
                  device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialized tensor of ``size`` laid out with ``stride`` (in elements) over a storage just large enough."""
    size, stride = tuple(builtins.int(n) for n in size), tuple(builtins.int(s) for s in stride)
    d = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    storage = NDArray.empty((_strided_storage(size, stride),), d, factory_device(device))
    out = Tensor._wrap(storage.as_strided(size, stride, 0))
    return out.requires_grad_(True) if requires_grad else out


def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], *, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialized tensor of ``size`` whose dims lie in memory in the order ``physical_layout`` (outermost
    first): ``empty_permuted((N, C, H, W), (0, 2, 3, 1))`` is channels-last."""
    size, order = tuple(builtins.int(n) for n in size), tuple(builtins.int(d) for d in physical_layout)
    if len(order) != len(size):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    for i, d in enumerate(order):
        if not 0 <= d < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {len(size) - 1}, but got {d} at "
                               f"index {i}).  NB: negative dims not currently supported; file an issue if you want it.")
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    stride, step = [0] * len(size), 1
    for d in reversed(order):
        stride[d] = step
        step *= builtins.max(size[d], 1)
    return empty_strided(size, stride, dtype=dtype, device=device, requires_grad=requires_grad)


def new_empty_strided(self: Tensor, size: Sequence[int], stride: Sequence[int], *, dtype: Any = None,
                      layout: Any = None, device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False) -> Tensor:
    """``empty_strided`` with this tensor's dtype and device unless given (``Tensor.new_empty_strided``)."""
    return empty_strided(size, stride, dtype=dtype if dtype is not None else self.dtype,
                         device=device if device is not None else self.device, requires_grad=requires_grad)


def new_tensor(self: Tensor, data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, *,
               layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A new tensor copied from ``data`` with this tensor's dtype and device unless given (``Tensor.new_tensor``)."""
    _mf.check_strided("new_tensor", layout)
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad,
                  pin_memory=pin_memory)


def new_zeros(self: Tensor, *sizes: Any, size: Any = None, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``genesis.zeros`` with this tensor's dtype and device unless given (``Tensor.new_zeros``)."""
    return zeros(*sizes, size=size, dtype=dtype or self.dtype, layout=layout, device=device or self.device,
                 requires_grad=requires_grad, pin_memory=pin_memory)


def new_ones(self: Tensor, *sizes: Any, size: Any = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``genesis.ones`` with this tensor's dtype and device unless given (``Tensor.new_ones``)."""
    return ones(*sizes, size=size, dtype=dtype or self.dtype, layout=layout, device=device or self.device,
                requires_grad=requires_grad, pin_memory=pin_memory)


def new_full(self: Tensor, size: Sequence[int], fill_value: Any, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, *, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``genesis.full`` with this tensor's dtype and device unless given (``Tensor.new_full``)."""
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad, layout=layout, pin_memory=pin_memory)


def new_empty(self: Tensor, *sizes: Any, size: Any = None, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``genesis.empty`` with this tensor's dtype and device unless given (``Tensor.new_empty``)."""
    return empty(*sizes, size=size, dtype=dtype or self.dtype, layout=layout, device=device or self.device,
                 requires_grad=requires_grad, pin_memory=pin_memory)


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-D CPU tensor over the memory of an object with the buffer protocol (``bytearray``, ``array.array``,
    ``memoryview``, ``mmap``...): ``count`` elements of ``dtype`` (-1: as many as fit) from byte ``offset``, sharing
    the memory, so writes through either are seen by the other. ValueError for sizes that do not fit, as torch."""
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    d = dtypes.to_dtype(dtype)
    nbytes, itemsize = view.nbytes, d.itemsize
    if nbytes == 0 or count == 0:
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if not 0 <= offset < nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({nbytes} "
                         f"bytes) minus 1")
    if count < 0:
        if (nbytes - offset) % itemsize:
            raise ValueError(f"buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({itemsize})")
        count = (nbytes - offset) // itemsize
    elif offset + count * itemsize > nbytes:
        raise ValueError(f"requested buffer length ({count} * {itemsize} bytes) after offset ({offset} bytes) must not "
                         f"be greater than actual buffer length ({nbytes} bytes)")
    raw = view.cast("B") if view.format != "B" or view.ndim != 1 else view
    out = from_numpy(np.frombuffer(raw, dtype=dtypes.to_numpy(d), count=count, offset=offset))
    return out.requires_grad_(True) if requires_grad else out


def _is_buffer(obj: Any) -> bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool | None = None) -> Tensor:
    """``obj`` as a tensor, sharing its memory where it can (torch's ``asarray``).

    A tensor comes back itself when dtype and device already match (a conversion otherwise, differentiable); numpy
    arrays, DLPack producers and buffer-protocol objects (read as raw bytes of ``dtype``, the default dtype if None)
    are shared; numbers and sequences are copied. ``copy=True`` always copies, ``copy=False`` raises ValueError
    where sharing is impossible. ``requires_grad`` defaults to the tensor's own (with torch's warning when True).
    """
    d = dtypes.to_dtype(dtype) if dtype is not None else None
    dev = to_device(device) if device is not None else None
    if isinstance(obj, Tensor):
        if requires_grad is None:
            requires_grad = obj.requires_grad
            if requires_grad:
                warnings.warn("torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of "
                              "False. Pass requires_grad=False explicitly to get the old behavior and silence this "
                              "warning.", UserWarning, stacklevel=2)
        return _tensor_as(obj, d, dev, copy, requires_grad)
    if isinstance(obj, (np.ndarray, np.generic)):
        array = np.asarray(obj)
        alias = isinstance(obj, np.ndarray) and (d is None or dtypes.to_numpy(d) == array.dtype) and (
            dev is None or dev.type == "cpu")
        if copy is False and not alias:
            raise ValueError(f"can't alias NumPy array with dtype '{array.dtype}' into dtype '{d}'.")
        out = from_numpy(array) if alias and not copy else tensor(array, dtype=d, device=dev)
    elif hasattr(obj, "__dlpack__"):
        return _tensor_as(from_dlpack(obj), d, dev, copy, bool(requires_grad))
    elif _is_buffer(obj):
        out = _tensor_as(frombuffer(obj, dtype=d or dtypes.get_default_dtype()), None, dev, copy, False)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        out = tensor(obj, dtype=d, device=dev)
    return out.requires_grad_(True) if requires_grad else out


def _tensor_as(t: Tensor, dtype: dtypes.dtype | None, device: Any, copy: bool | None, requires_grad: bool) -> Tensor:
    """``asarray`` of a tensor: itself, or converted where dtype or device differ (a copy; ValueError with
    ``copy=False``); a copy anyway with ``copy=True``; detached or made to require grad as asked."""
    wrong_dtype = dtype is not None and dtype is not t.dtype
    wrong_device = device is not None and device != t.device
    if copy is False and wrong_dtype:
        raise ValueError(f"can't alias tensor with dtype '{t.dtype}' into dtype '{dtype}'.")
    if copy is False and wrong_device:
        raise ValueError(f"can't alias tensor from device '{t.device}' to '{device}'.")
    out = t.to(device=device, dtype=dtype) if wrong_dtype or wrong_device else t
    if copy and out is t:
        out = t.clone()
    if not requires_grad and out.requires_grad:
        return out.detach()
    if requires_grad and not out.requires_grad:
        out.requires_grad_(True)
    return out


def linspace(start: float, end: float, steps: int, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, *, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (``layout`` None or ``strided``;
    ``pin_memory`` copies the result into page-locked host memory)."""
    _mf.check_strided("linspace", layout)
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    d = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if steps >= 1 << 60:  # more bytes than an address space holds
        raise RuntimeError(f"linspace: Storage size calculation overflowed with sizes=[{steps}]")
    if (steps > 1 and d is dtypes.bool_) or (steps and d.category < 2 and not np.isfinite([start, end]).all()):
        raise (NotImplementedError if d is dtypes.bool_ else RuntimeError)(
            f"linspace: {d.name} cannot hold start={start}, end={end}")
    if d.category < 2:  # integer results count from the bounds as integers, as torch
        start, end = math.trunc(start), math.trunc(end)
    # torch's kernel: the first steps // 2 values counted up from start, the rest down from end (NaN anywhere gives
    # all NaN). For float32 and float64 also its rounding, so that the values are torch's to the bit: the step in the
    # result's precision, each value one fused multiply-add (computed in a wider type, rounded once).
    if d in (dtypes.float16, dtypes.bfloat16) and steps:
        values = linspace_half(float(start), float(end), steps, d)
        return tensor(values, dtype=d, device=device, requires_grad=requires_grad, pin_memory=pin_memory)
    exact = {dtypes.float32: np.float32, dtypes.float64: np.float64}.get(d, np.float64)
    wide = np.longdouble if d is dtypes.float64 else np.float64
    try:
        i = np.arange(steps, dtype=wide)
    except (MemoryError, ValueError) as err:  # torch: RuntimeError for a size it cannot allocate
        raise RuntimeError(f"linspace: cannot allocate {steps} steps: {err}") from None
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: NaN, as torch
        first, last = exact(start), exact(end)
        step = wide(exact((last - first) / exact(steps - 1)) if steps > 1 else 0)
        rising = steps // 2 if steps > 1 else 1  # one step is start itself
        values = np.where(i < rising, wide(first) + step * i, wide(last) - step * (steps - 1 - i))
    if d.category < 2:
        values = np.trunc(values)
    return tensor(values, dtype=d, device=device, requires_grad=requires_grad, pin_memory=pin_memory)


def logspace(start: float, end: float, steps: int, base: float = 10.0, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, *, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``steps`` values ``base ** linspace(start, end, steps)`` (``layout`` and ``pin_memory`` as ``linspace``)."""
    _mf.check_strided("logspace", layout)
    values = np.power(base, np.linspace(start, end, steps, dtype=np.float64))
    return tensor(values, dtype=dtypes.to_dtype(dtype) if dtype else dtypes.get_default_dtype(), device=device,
                  requires_grad=requires_grad, pin_memory=pin_memory)


def eye(n: int, m: int | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False, *,
        layout: Any = None, pin_memory: bool = False) -> Tensor:
    """The ``n`` x ``m`` (default square) identity matrix (``layout`` and ``pin_memory`` as ``zeros``)."""
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"eye: n and m must be non-negative, got n={n}, m={m}")
    m = n if m is None else m
    t = zeros(n, m, dtype=dtype if dtype is not None else dtypes.get_default_dtype(), device=device, layout=layout,
              pin_memory=pin_memory)
    if t.numel():  # allocated by the backend: a size it cannot hold raises its RuntimeError
        t.diagonal().fill_(1)
    return t.requires_grad_(True) if requires_grad else t


def scalar_tensor(value: Any, dtype: Any = None, device: Any = None, *, layout: Any = None,
                  pin_memory: bool = False) -> Tensor:
    """A 0-d tensor holding ``value``, in the default float dtype unless ``dtype`` says otherwise."""
    return full((), value, dtype=dtype or dtypes.get_default_dtype(), device=device, layout=layout,
                pin_memory=pin_memory)
