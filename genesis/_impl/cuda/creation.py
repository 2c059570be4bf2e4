"""Memory and creation primitives of the CUDA backend: empty, full, arange, host and DLPack copies, casts,
contiguous copies, and device synchronization."""

from __future__ import annotations

import math

import numpy as np
from cuda.bindings import driver as cu

from genesis import dtypes
from genesis._impl.cuda import dlpack, graphs, pinned, storage
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.kernels import elementwise as ek
from genesis._impl.cuda.launch import (
    _PTR16,
    _coalesce,
    _contig,
    _ew,
    _new,
    _new_like,
    _next_pow2,
    _psig,
    _ptr,
    _stream,
    part,
    real_view,
)
from genesis.memo import remember
from genesis.ndarray import NDArray, check_same_device


def empty(shape: tuple[int, ...], dtype: dtypes.dtype, device: object) -> NDArray:
    return _new(tuple(shape), dtype, device)


def full(shape: tuple[int, ...], value: int | float | bool | complex, dtype: dtypes.dtype, device: object
         ) -> NDArray:
    out = _new(tuple(shape), dtype, device)
    if dtype.category == 3:
        return fill_complex(out, value)
    if dtype.category == 1 and isinstance(value, float):
        value = int(value)
    return _ew("copy", 1, out, (value,))


def fill_complex(out: NDArray, value: complex | float | int | bool) -> NDArray:
    """Set every element of the complex array ``out`` to the number ``value``: its parts, through the real view."""
    value = complex(value)
    real = out.dtype.to_real
    if value == 0:
        _ew("copy", 1, real_view(out), (0.0,), real)
    else:
        _ew("copy", 1, part(out, 0), (value.real,), real)
        _ew("copy", 1, part(out, 1), (value.imag,), real)
    return out


_ARANGE = td.Kernel(ek.arange_kernel)


def arange(start: float, end: float, step: float, dtype: dtypes.dtype, device: object) -> NDArray:
    n = max(0, math.ceil((end - start) / step))
    out = _new((n,), dtype, device)
    if n:
        rt.ensure_device(device.index)
        if dtype.category == 2 or any(isinstance(v, float) for v in (start, step)):
            types, start, step = ("fp64", "fp64"), float(start), float(step)
        else:
            types, start, step = ("i64", "i64"), int(start), int(step)
        p = _ptr(out)
        go = _ARANGE.launcher((_psig(out, p), *types, "i32"), (1024,), 4)
        go((n + 1023) // 1024, 1, 1, p, start, step, n)
    return out


_STAGE_SMALL = 1 << 16  # bytes: host arrays up to this size are staged through pinned memory


def _pinned_copy(arr: np.ndarray) -> np.ndarray:
    """The bytes of contiguous ``arr`` in a pinned block (one memcpy on the host)."""
    staged = pinned.empty(arr.nbytes)
    staged[:] = arr.reshape(-1).view(np.uint8)
    return staged


def from_numpy(array: np.ndarray, dtype: dtypes.dtype, device: object, non_blocking: bool = False) -> NDArray:
    """Copy a host array to the device; with ``non_blocking`` the host does not wait for the copy (one
    ``cuMemcpyHtoDAsync`` on the current stream, no host synchronization): from a contiguous pinned array of the
    right dtype the DMA engine reads it while the host goes on; from pageable memory the driver returns once it has
    staged the array."""
    arr = array if array.flags.c_contiguous else np.ascontiguousarray(array).reshape(array.shape)
    want = dtypes.to_numpy(dtype)
    if arr.dtype != want:
        if arr.dtype.itemsize == want.itemsize and dtype is dtypes.bfloat16:
            arr = arr.view(want)
        else:
            arr = arr.astype(want)
    out = _new(tuple(arr.shape), dtype, device)
    if arr.nbytes and graphs.capturing:
        # Inside a CUDA graph capture the copy becomes a node that reads its source again on every replay: stage the
        # array in pinned memory that the graph keeps (a synchronous copy would end the capture).
        staged = _pinned_copy(arr)
        graphs.hold(staged)
        rt.check(cu.cuMemcpyHtoDAsync(out.buffer.ptr, staged.ctypes.data, arr.nbytes, _stream()), "cuMemcpyHtoDAsync")
        return out
    if arr.nbytes and not pinned.contains(arr.ctypes.data) and arr.nbytes <= _STAGE_SMALL:
        # A small host array (an index list, a kernel's offset table) goes through a pinned block: one memcpy on
        # the host and an asynchronous copy, instead of a copy that waits for the device.
        arr, non_blocking = _pinned_copy(arr), True
    if arr.nbytes and not (non_blocking and pinned.copy_to_device_async(out.buffer.ptr, arr, _stream())):
        storage.copy_from_host(out.buffer.ptr, arr, _stream(), wait=not non_blocking)
    return out


def to_numpy(x: NDArray) -> np.ndarray:
    if not _contig(x):
        x = contiguous(x)
    arr = np.empty(x.shape, dtypes.to_numpy(x.dtype))
    if arr.nbytes:
        rt.ensure_device(x.device.index)
        s = _stream()
        rt.check(cu.cuMemcpyDtoHAsync(arr.ctypes.data, _ptr(x), arr.nbytes, s), "cuMemcpyDtoHAsync")
        rt.stream_synchronize(s)  # also reports errors found by device-side checks
    return arr


def copy_(dst: NDArray, src: NDArray | int | float | bool | complex) -> NDArray:
    if isinstance(src, NDArray):
        check_same_device("copy_", dst, src)
        if src.buffer is dst.buffer and src.size > 1:
            src = contiguous(src)  # overlapping views: read everything before writing
        if dst.dtype.category == 3 or src.dtype.category == 3:
            if src.dtype is not dst.dtype:
                src = cast(src, dst.dtype)
            _ew("copy", 1, real_view(dst), (real_view(src),))
            return dst
        return _ew("copy", 1, dst, (src,))
    if dst.dtype.category == 3:
        return fill_complex(dst, src)
    return _ew("copy", 1, dst, (src.real if isinstance(src, complex) else src,), dst.dtype)


def pin_memory(x: NDArray) -> NDArray:
    raise RuntimeError(f"cannot pin '{x.device}' memory: only dense CPU tensors can be pinned")


def is_pinned(x: NDArray) -> bool:
    return False


def cast(x: NDArray, dtype: dtypes.dtype) -> NDArray:
    if x.dtype.category == 3 or dtype.category == 3:
        return _cast_complex(x, dtype)
    return _ew("copy", 1, _new_like(x, dtype), (x,))


def _cast_complex(x: NDArray, dtype: dtypes.dtype) -> NDArray:
    """Casts to, from and between complex dtypes, as torch: a real array becomes the real part (the imaginary part
    zero); a complex one gives its real part, or for bool whether either part is nonzero."""
    out = _new(x.shape, dtype, x.device)
    if x.dtype.category == 3 and dtype.category == 3:
        _ew("copy", 1, real_view(out), (real_view(x),))
    elif dtype.category == 3:
        _ew("copy", 1, part(out, 0), (x,))
        _ew("copy", 1, part(out, 1), (0.0,), dtype.to_real)
    elif dtype is dtypes.bool_:
        _ew("logical_or", 2, out, (part(x, 0), part(x, 1)))
    else:
        _ew("copy", 1, out, (part(x, 0),))
    return out


def contiguous(x: NDArray) -> NDArray:
    out = _new(x.shape, x.dtype, x.device)
    if x.dtype.category == 3:
        _ew("copy", 1, real_view(out), (real_view(x),))
        return out
    return _ew("copy", 1, out, (x,))


_CAT = td.Kernel(ek.cat_rows)
_CAT_PLANS: dict[tuple, tuple] = {}


def _rows_contiguous(x: NDArray, dim: int) -> bool:
    """Whether the elements of ``x`` from ``dim`` on form one contiguous run per index of the dims before it."""
    expected = 1
    for d in range(x.ndim - 1, dim - 1, -1):
        n = x.shape[d]
        if n != 1:
            if x.strides[d] != expected:
                return False
            expected *= n
    return True


def _cat_plan(arrays: list[NDArray], dim: int, ptrs: list[int]) -> tuple:
    """How ``cat`` copies ``arrays``: (output shape, launches, inputs copied alone). Each launch is (launcher, grid
    x, input indices, trailing arguments) and copies up to four inputs whose elements from ``dim`` on are rows of
    contiguous elements, whatever the strides between the rows (a transposed or sliced input too); the others
    (complex arrays, or dims before ``dim`` that do not fold into three) are (index, start along ``dim``)."""
    first = arrays[0]
    shape = list(first.shape)
    shape[dim] = sum(a.shape[dim] for a in arrays)
    inner = math.prod(shape[dim + 1:])
    n_rows, out_row = math.prod(shape[:dim]), shape[dim] * inner
    batch, alone, start = [], [], 0
    for i, a in enumerate(arrays):
        n = a.shape[dim]
        if n:
            if first.dtype.category != 3 and _rows_contiguous(a, dim):
                batch.append((i, start))
            else:
                alone.append((i, start))
        start += n
    # The dims before ``dim`` (the same in every input), folded where every batched input walks two as one: at
    # most three are numbered in the kernel, else every input is copied on its own.
    lead, lead_strides = _coalesce(shape[:dim], [list(arrays[i].strides[:dim]) for i, _ in batch])
    if not batch or len(lead) > 3:
        return tuple(shape), (), tuple(batch + alone)
    pad = 3 - len(lead)
    r1, r2 = ([1] * pad + lead)[1:]
    lead_strides = [[0] * pad + st for st in lead_strides]
    launches = []
    optype = _PTR16[first.dtype]
    for g in range(0, len(batch), 4):
        group = batch[g:g + 4]
        widths = [arrays[i].shape[dim] * inner for i, _ in group]
        strides = lead_strides[g:g + 4]
        block = min(_next_pow2(max(widths)), 2048 if first.dtype.itemsize <= 2 else 1024)
        rows = min(max(1, 4096 // block), _next_pow2(n_rows))
        n_cblocks = (max(widths) + block - 1) // block
        pad = 4 - len(group)
        types = (optype,) + tuple(_psig(arrays[i], ptrs[i]) for i, _ in group) + (optype,) * pad + ("i64",) * 25
        go = _CAT.launcher(types, (rows, block), 8 if rows * block >= 4096 else 4)
        zeros = (0,) * pad
        tail = (*widths, *zeros, *(st[0] for st in strides), *zeros, *(st[1] for st in strides), *zeros,
                *(st[2] for st in strides), *zeros, *(c * inner for _, c in group), *zeros,
                n_rows, r1, r2, out_row, n_cblocks)
        launches.append((go, (n_rows + rows - 1) // rows * n_cblocks, tuple(i for i, _ in group), pad, tail))
    return tuple(shape), tuple(launches), tuple(alone)


def cat(arrays: list[NDArray], dim: int) -> NDArray:
    """The concatenation along ``dim``, row-major, with a launch plan cached per layout: inputs whose elements from
    ``dim`` on are contiguous rows (whole tensors, gradients of split pieces, transposed heads, slices) are copied
    four per launch; any other input is copied on its own."""
    first = arrays[0]
    if rt.state.device != first.device.index:
        rt.set_device(first.device.index)  # launchers are bound per device
    ptrs = [a.buffer.ptr + a.offset * a.dtype.itemsize for a in arrays]
    key = (dim, first.dtype, first.device.index) + tuple((a.shape, a.strides, not p & 15) for a, p in zip(arrays, ptrs))
    plan = _CAT_PLANS.get(key)
    if plan is None:
        plan = remember(_CAT_PLANS, key, _cat_plan(arrays, dim, ptrs))
    shape, launches, alone = plan
    out = _new(shape, first.dtype, first.device)
    if not out.size:
        return out
    optr = out.buffer.ptr
    for go, grid, which, pad, tail in launches:
        go(grid, len(which), 1, optr, *(ptrs[i] for i in which), *(optr,) * pad, *tail)
    for i, start in alone:
        a = arrays[i]
        copy_(out.narrow(dim, start, a.shape[dim]), a)
    return out


def stack(arrays: list[NDArray], dim: int) -> NDArray:
    """The arrays stacked along a new dim: their concatenation as size-one views along it."""
    return cat([a.unsqueeze(dim) for a in arrays], dim)


def data_ptr(x: NDArray) -> int:
    """Device address of the view's first element."""
    return _ptr(x)


def reinterpret_buffer(x: NDArray, dtype: dtypes.dtype) -> storage.CudaStorage:
    """x's buffer itself: a ``CudaStorage`` is untyped bytes, and pointers are ``ptr + offset * itemsize``."""
    return x.buffer


def to_dlpack(x: NDArray, stream: object = None, max_version: tuple[int, int] | None = None) -> object:
    # Only legacy (unversioned) capsules are produced; DLPack consumers accept them whatever max_version they name.
    return dlpack.to_dlpack(x, stream)


def from_dlpack(obj: object) -> NDArray:
    return dlpack.from_dlpack(obj)


# ---------------------------------------------------------------- device


def synchronize(device: object = None) -> None:
    rt.synchronize(None if device is None or getattr(device, "index", None) is None else device.index)
