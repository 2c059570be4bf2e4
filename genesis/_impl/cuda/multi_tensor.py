"""Multi-tensor launchers: one kernel launch over a whole list of tensors (``kernels/nn_adamw.py``,
``kernels/multi_tensor.py``): the optimizer steps ``adam_multi_step_`` and ``sgd_multi_step_``, GradScaler's
``unscale_grads_``, and the per-tensor norms and in-place scale / fill / clamp behind ``genesis._foreach_*`` and
``clip_grad_norm_`` (``multi_norm``, ``multi_scale_``, ``multi_fill_``, ``multi_clamp_``), and the pairwise copies of
``genesis._foreach_copy_`` (``multi_copy_``).

A launch covers one list of contiguous tensors of one dtype: the kernel reads each tensor's element offset from the
list's first tensor (a small int64 table) and size tables. Both are cached on the device: the size tables depend
only on the sizes and the offset table only on the addresses, so a training loop, whose allocator hands out the same
blocks step after step, uploads them once. During a CUDA graph capture a cached table is held by the graph, and a
missing one is uploaded by a copy node of the graph and not cached (its contents exist only once the graph runs).

``multi_*`` primitives accept any mix of dtypes and strides on one device: they launch once per dtype (norms: once
per run of one dtype in list order) and copy or fall back to one elementwise op per non-contiguous tensor.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from genesis import dtypes
from genesis._impl.cuda import graphs
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import cast, contiguous, copy_, from_numpy, full
from genesis._impl.cuda.elementwise import binary
from genesis._impl.cuda.kernels import multi_tensor as mtk
from genesis._impl.cuda.kernels import nn_adamw as adk
from genesis._impl.cuda.launch import _contig, _new, _pointers, _psig, _ptr
from genesis.ndarray import NDArray, check_same_device, check_tensor_lists

_F32 = dtypes.float32
_ADAM_MULTI = td.Kernel(adk.adam_multi_step)
_SGD_MULTI = td.Kernel(adk.sgd_multi_step)
_UNSCALE = td.Kernel(adk.unscale_multi)
_NORM_PARTIALS = td.Kernel(mtk.multi_norm_partials)
_NORM_FINISH = td.Kernel(mtk.multi_norm_finish)
_SCALE = td.Kernel(mtk.multi_scale)
_FILL = td.Kernel(mtk.multi_fill)
_CLAMP = td.Kernel(mtk.multi_clamp)
_COPY = td.Kernel(mtk.multi_copy)
_MT_BLOCK = 4096  # elements per program (about 114 KiB of traffic per program for float32 Adam)
_NORM_RBLOCK = 1024  # partials per step of the finishing reduction
_MT_TABLES: dict[tuple, tuple] = {}
_MT_OFFSETS: dict[tuple, tuple] = {}
_CACHE_MAX = 64  # entries per cache: parameter lists and their addresses rarely change


def _cached(cache: dict[tuple, tuple], key: tuple, build: Callable[[], tuple]) -> tuple:
    """``cache[key]``, built on a miss; see the module docstring for the rules during a graph capture."""
    hit = cache.get(key)
    if hit is not None:
        graphs.hold(hit)
        return hit
    hit = build()
    if not graphs.capturing:
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        cache[key] = hit
    return hit


def _mt_tables(sizes: tuple[int, ...], device: object) -> tuple[NDArray, NDArray, NDArray, int]:
    """Device tables of a list of tensor sizes: sizes, the tensor of each program, each tensor's first program.

    They depend only on the sizes, so an optimizer's parameter list uploads them once. An empty tensor has no
    programs.
    """
    def build() -> tuple:
        blocks = np.array([(n + _MT_BLOCK - 1) // _MT_BLOCK for n in sizes], np.int64)
        first = np.concatenate(([0], np.cumsum(blocks)[:-1])).astype(np.int32)
        owner = np.repeat(np.arange(len(sizes), dtype=np.int32), blocks)
        return (from_numpy(np.array(sizes, np.int64), dtypes.int64, device), from_numpy(owner, dtypes.int32, device),
                from_numpy(first, dtypes.int32, device), int(blocks.sum()))

    return _cached(_MT_TABLES, (sizes, device.index), build)


def _first(arrays: list[NDArray]) -> NDArray:
    """The array a list's offsets count from: its first non-empty one (empty arrays are never read)."""
    return next((a for a in arrays if a.size), arrays[0])


def _mt_offsets(lists: list[list[NDArray]], sizes: tuple[int, ...], device: object
                ) -> tuple[NDArray, tuple[int, ...]]:
    """(int64 (len(lists), T) element offsets of every tensor from its list's first, per-list alignment constexprs).

    ``sizes`` are the element counts of each position. A list's alignment is its elements per 16 bytes when every
    address in it is 16-byte aligned, else 1. Empty arrays get offset 0.
    """
    # The addresses in line (no call per array): this key is made at every step for every parameter.
    key = (device.index,) + tuple(
        (arrays[0].dtype.itemsize, tuple(a.buffer.ptr + a.offset * a.dtype.itemsize if n else 0
                                         for a, n in zip(arrays, sizes)))
        for arrays in lists)

    def build() -> tuple:
        rows, aligns = [], []
        for arrays in lists:
            item = arrays[0].dtype.itemsize
            base = _ptr(_first(arrays))
            addrs = np.array([_ptr(a) if a.size else base for a in arrays], np.int64)
            assert all(a.dtype is arrays[0].dtype for a in arrays) and not (addrs % item).any()
            rows.append((addrs - base) // item)
            aligns.append(16 // item if not (addrs % 16).any() else 1)
        return from_numpy(np.stack(rows), dtypes.int64, device), tuple(aligns)

    return _cached(_MT_OFFSETS, key, build)


def _mt_launch(kernel: td.Kernel, lists: list[list[NDArray]], extra: tuple, scalars: tuple, scalar_types: tuple,
               consts: tuple) -> None:
    """Launch a multi-tensor kernel over ``lists`` (first list: the sizes); ``extra`` pointers follow the firsts,
    ``scalars`` follow the tensor count (an NDArray among them is passed as its pointer, its type ``None``)."""
    sizes = tuple([math.prod(a.shape) for a in lists[0]])
    device = lists[0][0].device
    rt.ensure_device(device.index)
    size_t, owner_t, first_t, programs = _mt_tables(sizes, device)
    if not programs:
        return
    offsets, aligns = _mt_offsets(lists, sizes, device)
    arrays = tuple(_first(a) for a in lists) + extra + (offsets, size_t, owner_t, first_t)
    ptrs, sig = _pointers(arrays)
    values = tuple(_ptr(x) if isinstance(x, NDArray) else x for x in scalars)
    types = tuple(_psig(x, v) if isinstance(x, NDArray) else t for x, v, t in zip(scalars, values, scalar_types))
    sig = sig + ("i32",) + types
    go = kernel.launcher(sig, consts + (_MT_BLOCK,) + aligns, 8)
    go(programs, 1, 1, *ptrs, len(sizes), *values)


def _nonempty(*lists: list | None) -> list:
    """The lists with every position whose first-list tensor is empty dropped (None lists stay None)."""
    keep = [i for i, a in enumerate(lists[0]) if 0 not in a.shape]
    if len(keep) == len(lists[0]):
        return list(lists)  # the common case: nothing to drop, no list copied
    return [None if lst is None else [lst[i] for i in keep] for lst in lists]


# ---------------------------------------------------------------- optimizer steps and GradScaler

def adam_multi_step_(params: list[NDArray], grads: list[NDArray], exp_avgs: list[NDArray],
                     exp_avg_sqs: list[NDArray], masters: list[NDArray] | None, lr: float | NDArray, beta1: float,
                     beta2: float, eps: float, weight_decay: float, decoupled: bool, step: int | NDArray,
                     maximize: bool) -> None:
    check_tensor_lists("adam_multi_step_", ("params", "grads", "exp_avgs", "exp_avg_sqs", "masters"), params, grads,
                       exp_avgs, exp_avg_sqs, masters, same_dtype=True)
    params, grads, exp_avgs, exp_avg_sqs, masters = _nonempty(params, grads, exp_avgs, exp_avg_sqs, masters)
    if not params:
        return
    lists = [params, grads, exp_avgs, exp_avg_sqs, masters if masters is not None else params]
    lr_ptr, step_ptr = isinstance(lr, NDArray), isinstance(step, NDArray)
    l2, wd = (0.0, weight_decay) if decoupled else (weight_decay, 0.0)
    sign = -1.0 if maximize else 1.0
    if lr_ptr or step_ptr:  # the kernel derives the step's scalars from the values on the device
        check_same_device("adam_multi_step_", params[0], *(x for x in (lr, step) if isinstance(x, NDArray)))
        scalars = (beta1, beta2, eps, l2, 1.0, 0.0, 1.0, sign, lr, step if step_ptr else float(step), wd)
    else:
        scalars = (beta1, beta2, eps, l2, 1.0 - lr * wd, lr / (1 - beta1 ** step), (1 - beta2 ** step) ** 0.5, sign,
                   0.0, 0.0, 0.0)
    _mt_launch(_ADAM_MULTI, lists, (), scalars, ("fp32",) * 11, (masters is not None, lr_ptr, step_ptr))


def sgd_multi_step_(params: list[NDArray], grads: list[NDArray], bufs: list[NDArray] | None, lr: float,
                    momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool,
                    first: bool) -> None:
    check_tensor_lists("sgd_multi_step_", ("params", "grads", "bufs"), params, grads, bufs, same_dtype=True)
    params, grads, bufs = _nonempty(params, grads, bufs)
    if not params:
        return
    lists = [params, grads, bufs if bufs is not None else params]
    scalars = (lr, momentum, dampening, weight_decay, -1.0 if maximize else 1.0)
    _mt_launch(_SGD_MULTI, lists, (), scalars, ("fp32",) * 5, (bufs is not None, first, nesterov))


def unscale_grads_(grads: list[NDArray], inv_scale: float) -> NDArray:
    check_tensor_lists("unscale_grads_", ("grads",), grads, same_dtype=True)
    found = full((1,), 0.0, _F32, grads[0].device)
    (grads,) = _nonempty(grads)
    if grads:
        _mt_launch(_UNSCALE, [grads], (found,), (inv_scale,), ("fp32",), ())
    return found


# ---------------------------------------------------------------- norms, scale, fill, clamp

_ORD = {2.0: "l2", 1.0: "l1", math.inf: "max", -math.inf: "min", 0.0: "l0"}


def _check(op: str, xs: list[NDArray]) -> None:
    check_same_device(op, *xs)
    for x in xs:
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"{op}: expected floating-point arrays, got {x.dtype}")


def multi_norm(xs: list[NDArray], norm_type: float) -> NDArray:
    if not xs:
        raise ValueError("multi_norm: expected at least one array")  # the ops layer answers empty lists itself
    _check("multi_norm", xs)
    device = xs[0].device
    out = _new((len(xs),), dtypes.float64 if any(x.dtype is dtypes.float64 for x in xs) else _F32, device)
    ord_ = _ORD.get(float(norm_type), "lp")
    start = 0
    while start < len(xs):  # one pair of launches per run of one dtype
        stop = start + 1
        while stop < len(xs) and xs[stop].dtype is xs[start].dtype:
            stop += 1
        _norm_run([x if _contig(x) else contiguous(x) for x in xs[start:stop]], out._view((stop - start,), (1,),
                  out.offset + start), ord_, float(norm_type))
        start = stop
    return out


def _norm_run(xs: list[NDArray], out: NDArray, ord_: str, p: float) -> None:
    """Norms of one-dtype contiguous arrays into ``out``: partials per program, then one program per array."""
    wide = dtypes.float64 if xs[0].dtype is dtypes.float64 else _F32
    size_t, _, first_t, programs = _mt_tables(tuple(x.size for x in xs), xs[0].device)
    partials = _new((max(programs, 1),), wide, xs[0].device)
    _mt_launch(_NORM_PARTIALS, [xs], (partials,), (p,), ("fp64",), (ord_,))
    arrays = (partials, out, size_t, first_t)
    ptrs, sig = _pointers(arrays)
    go = _NORM_FINISH.launcher(sig + ("fp64",),
                               (ord_, _MT_BLOCK, _NORM_RBLOCK), 4)
    go(len(xs), 1, 1, *ptrs, p)


def _by_dtype(xs: list[NDArray]) -> tuple[dict[dtypes.dtype, list[NDArray]], list[NDArray]]:
    """(contiguous floating arrays grouped by dtype, the others), for the in-place kernels."""
    groups: dict[dtypes.dtype, list[NDArray]] = {}
    others = []
    for x in xs:
        if _contig(x) and x.dtype.is_floating_point:
            groups.setdefault(x.dtype, []).append(x)
        else:
            others.append(x)
    return groups, others


def multi_scale_(xs: list[NDArray], scale: NDArray) -> None:
    if not xs:
        return
    check_same_device("multi_scale_", *xs, scale)
    groups, others = _by_dtype(xs)
    for dtype, group in groups.items():
        _mt_launch(_SCALE, [group], (scale,), (), (), (dtype is dtypes.float64,))
    for x in others:
        binary("mul", x, scale if scale.dtype is x.dtype else cast(scale, x.dtype), x)


def multi_fill_(xs: list[NDArray], value: int | float | bool) -> None:
    if not xs:
        return
    check_same_device("multi_fill_", *xs)
    groups, others = _by_dtype(xs)
    for group in groups.values():
        _mt_launch(_FILL, [group], (), (float(value),), ("fp64",), ())
    for x in others:
        copy_(x, value)


def multi_clamp_(xs: list[NDArray], min: float | None, max: float | None) -> None:
    if not xs or (min is None and max is None):
        return
    check_same_device("multi_clamp_", *xs)
    groups, others = _by_dtype(xs)
    bounds = (0.0 if min is None else float(min), 0.0 if max is None else float(max))
    for dtype, group in groups.items():
        _mt_launch(_CLAMP, [group], (), bounds, ("fp64", "fp64"),
                   (min is not None, max is not None, dtype is dtypes.float64))
    for x in others:
        if min is not None:
            binary("maximum", x, min, x)
        if max is not None:
            binary("minimum", x, max, x)


def _copyable(dst: dtypes.dtype, src: dtypes.dtype) -> bool:
    """Whether the copy kernel converts ``src`` to ``dst`` as ``copy_`` does: floating to floating, or one integer
    dtype (bool and complex take ``copy_``)."""
    if dst.is_floating_point and src.is_floating_point:
        return True
    return dst is src and dst is not dtypes.bool_ and not dst.is_complex


def multi_copy_(dsts: list[NDArray], srcs: list[NDArray]) -> None:
    if len(dsts) != len(srcs):
        raise ValueError(f"multi_copy_: {len(dsts)} destinations and {len(srcs)} sources")
    if not dsts:
        return
    check_same_device("multi_copy_", *dsts, *srcs)
    groups: dict[tuple, tuple[list[NDArray], list[NDArray]]] = {}
    for d, s in zip(dsts, srcs):
        if d.shape != s.shape:
            raise ValueError(f"multi_copy_: shapes {d.shape} and {s.shape} differ")
        if d.size and _contig(d) and _contig(s) and _copyable(d.dtype, s.dtype):
            pair = groups.setdefault((d.dtype, s.dtype), ([], []))
            pair[0].append(d)
            pair[1].append(s)
        elif d.size:
            copy_(d, s)
    for ds, ss in groups.values():
        _mt_launch(_COPY, [ds, ss], (), (), (), ())
