"""Launchers of the padding kernels (``kernels/nn_pad.py``): the contract's ``pad`` and ``pad_backward``.

Reflect, replicate and circular padding of 1 to 3 trailing dims in one launch each way, any input strides. A
channels_last (or channels_last_3d) input padded over all its spatial dims gives a channels_last output (and a
channels_last output gradient a channels_last input gradient); other inputs give contiguous results. The backward
gathers in a fixed order (no atomics), so gradients are bitwise reproducible.
"""

from __future__ import annotations

import math

import numpy as np

from genesis import dtypes
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import from_numpy
from genesis._impl.cuda.kernels import nn_pad as pk
from genesis._impl.cuda.launch import _new, _new_channels_last, _next_pow2, _pointers
from genesis.memo import remember
from genesis.memory_format import channels_last, channels_last_3d, suggest
from genesis.ndarray import NDArray

_FWD = td.Kernel(pk.pad_fwd)
_BWD = td.Kernel(pk.pad_bwd)
# Elements per program of both kernels and the widest tile row, chosen with benchmark/sweep_cnn_tiles.py on an H200.
_TILE, _TILE_WIDTH = 2048, 256
_TABLES: dict[tuple, tuple] = {}
_MODES = {"reflect": 0, "replicate": 1, "circular": 2}
# Launch plans per operand layout and padding (a network pads the same shapes at every step).
_PLANS: dict[tuple, tuple] = {}
_BACKWARD_PLANS: dict[tuple, tuple] = {}
_ARG_TYPES = ("i64",) + ("i32",) * 5 + ("i64",) * 6  # rows, the iteration space's sizes and strides
_FWD_ARG_TYPES = _ARG_TYPES + ("i32",) * 6  # ... and the forward's input sizes and amounts in front


def _axis_tables(size: int, before: int, after: int, mode: str, device: object) -> tuple:
    """The backward's device tables of one axis, cached: (first, count, outs, longest list)."""
    key = (size, before, after, mode, device.index)
    hit = _TABLES.get(key)
    if hit is None:
        o = np.arange(-before, size + after)
        if mode == "reflect":
            src = np.abs(o)
            src = np.where(src >= size, 2 * (size - 1) - src, src)
        elif mode == "replicate":
            src = np.clip(o, 0, size - 1)
        else:  # circular
            src = o % size
        count = np.bincount(src, minlength=size)
        first = np.cumsum(count) - count
        outs = np.argsort(src, kind="stable")  # the outputs reading each input position, in output order
        hit = _TABLES[key] = tuple(from_numpy(a.astype(np.int32), dtypes.int32, device) for a in (first, count, outs))
    return hit


def _channels_last(x: NDArray, padded: int) -> bool:
    """Whether x is stored channels_last with every spatial dim padded (then the channels are iterated last)."""
    if x.ndim != padded + 2 or x.ndim not in (4, 5):
        return False
    return suggest(x.shape, x.strides) in (channels_last, channels_last_3d)


def _space(x: NDArray, padded: int, last: bool) -> tuple[list[int], list[int]]:
    """(sizes, strides) of x over the kernels' (A0, A1, D, H, W, B) iteration space."""
    dims = list(zip(x.shape, x.strides))
    lead, spatial = dims[:x.ndim - padded], [(1, 0)] * (3 - padded) + dims[x.ndim - padded:]
    if last:  # channels_last: (N, 1, D, H, W, C)
        space = [lead[0], (1, 0)] + spatial + [lead[1]]
    else:
        space = [(1, 0)] * (2 - len(lead)) + lead + spatial + [(1, 0)]
    return [s for s, _ in space], [st for _, st in space]


def _alloc(shape: tuple, dtype: dtypes.dtype, device: object, last: bool) -> NDArray:
    """A new array of ``shape``, channels_last when ``last`` (dense in the iteration space's order either way)."""
    return _new_channels_last(shape, dtype, device) if last else _new(shape, dtype, device)


def _amounts(pad: tuple) -> list[tuple[int, int]]:
    """(before, after) of the D, H, W axes (the unpadded ones (0, 0))."""
    padded = len(pad) // 2
    return [(0, 0)] * (3 - padded) + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(padded))]


def _wide(*sizes: int) -> bool:
    return max(sizes) >= 2 ** 31


def _tiles(rows: int, cols: int) -> tuple[int, int, int]:
    """(BR, BW, programs) of the (rows, cols) tiles of both kernels: ``_TILE`` elements in rows of up to
    ``_TILE_WIDTH`` columns (a 264-wide row takes two 256-wide tiles: narrower ones that waste fewer masked lanes
    measured slower)."""
    bw = min(max(4, _next_pow2(cols)), _TILE_WIDTH)
    br = min(max(1, _TILE // bw), max(1, _next_pow2(rows)))
    return br, bw, -(-rows // br) * -(-cols // bw)


def _forward_plan(x: NDArray, pad: tuple, mode: str) -> tuple:
    """(output layout and shape, launch arguments) of padding arrays of x's shape and strides: worked out once."""
    padded = len(pad) // 2
    last = _channels_last(x, padded)
    sizes, strides = _space(x, padded, last)
    amounts = _amounts(pad)
    out_sizes = sizes[:2] + [n + b + a for n, (b, a) in zip(sizes[2:5], amounts)] + sizes[5:]
    shape = tuple(x.shape[:x.ndim - padded]) + tuple(out_sizes[5 - padded:5])
    total = math.prod(shape)
    rows = math.prod(out_sizes[:4])
    br, bw, programs = _tiles(rows, out_sizes[4] * out_sizes[5])
    consts = (_MODES[mode], out_sizes[5] == 1, _wide(x.size, total), br, bw)
    args = (rows, *out_sizes[1:], *strides, *sizes[2:5], *(b for b, _ in amounts))
    return last, shape, programs if total else 0, consts, args


def pad(x: NDArray, pad: tuple, mode: str) -> NDArray:
    key = (x.shape, x.strides, x.dtype, pad, mode, x.device.index)
    plan = _PLANS.get(key)
    if plan is None:
        padded = len(pad) // 2
        if mode != "circular" and x.dtype is dtypes.bool_:
            name = "reflection" if mode == "reflect" else "replication"
            raise NotImplementedError(f"\"{name}_pad{padded}d\" not implemented for 'Bool'")
        plan = remember(_PLANS, key, _forward_plan(x, pad, mode))
    last, shape, programs, consts, args = plan
    y = _alloc(shape, x.dtype, x.device, last)
    if programs:
        rt.ensure_device(x.device.index)
        ptrs, sig = _pointers((x, y))
        go = _FWD.launcher(sig + _FWD_ARG_TYPES, consts, 4)
        go(programs, 1, 1, *ptrs, *args)
    return y


def _backward_plan(grad: NDArray, dx: NDArray, pad: tuple, mode: str, last: bool) -> tuple:
    """(input gradient layout, launch arguments) of the adjoint of padding for gradients of grad's shape and
    strides into arrays laid out as ``dx``: worked out once."""
    padded = len(pad) // 2
    _, strides = _space(grad, padded, last)
    sizes, _ = _space(dx, padded, last)
    axes = [_axis_tables(n, b, a, mode, grad.device) for n, (b, a) in zip(sizes[2:5], _amounts(pad))]
    tables = tuple(t for axis in axes for t in axis)
    rows = math.prod(sizes[:4])
    br, bw, programs = _tiles(rows, sizes[4] * sizes[5])
    consts = (sizes[5] == 1, grad.dtype is dtypes.float64, _wide(dx.size, grad.size), br, bw)
    return last, dx.shape, programs if dx.size else 0, tables, consts, (rows, *sizes[1:], *strides)


def pad_backward(grad: NDArray, input_shape: tuple, pad: tuple, mode: str) -> NDArray:
    key = (grad.shape, grad.strides, grad.dtype, tuple(input_shape), pad, mode, grad.device.index)
    plan = _BACKWARD_PLANS.get(key)
    if plan is None:
        if grad.dtype.category != 2:
            raise RuntimeError(f"pad_backward: expected a floating-point gradient, got {grad.dtype.name}")
        last = _channels_last(grad, len(pad) // 2)
        dx = _alloc(tuple(input_shape), grad.dtype, grad.device, last)
        plan = remember(_BACKWARD_PLANS, key, _backward_plan(grad, dx, pad, mode, last))
    else:
        dx = _alloc(plan[1], grad.dtype, grad.device, plan[0])
    _, _, programs, tables, consts, args = plan
    if programs:
        rt.ensure_device(grad.device.index)
        ptrs, sig = _pointers((grad, dx) + tables)
        go = _BWD.launcher(sig + _ARG_TYPES, consts, 4)
        go(programs, 1, 1, *ptrs, *args)
    return dx
