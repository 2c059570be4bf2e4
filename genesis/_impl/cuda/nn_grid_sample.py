"""The ``grid_sample_2d`` and ``grid_sample_2d_backward`` primitives of the CUDA backend: one kernel launch each
(``kernels/nn_grid_sample.py``), over contiguous copies of strided operands."""

from __future__ import annotations

from genesis import dtypes
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import contiguous, full
from genesis._impl.cuda.kernels import nn_grid_sample as gk
from genesis._impl.cuda.launch import _contig, _new, _next_pow2, _psig, _ptr
from genesis.ndarray import NDArray

_FWD = td.Kernel(gk.grid_sample_fwd)
_BWD = td.Kernel(gk.grid_sample_bwd)
_PADDING = {"zeros": 0, "border": 1, "reflection": 2}
_BLOCK_P = 64  # points per program; channels are walked in blocks of up to 16


def _dense(x: NDArray) -> NDArray:
    return x if _contig(x) else contiguous(x)


def _consts(x: NDArray, mode: str, padding_mode: str, align_corners: bool) -> tuple:
    c = x.shape[1]
    return (mode == "nearest", _PADDING[padding_mode], bool(align_corners), x.dtype is dtypes.float64, _BLOCK_P,
            min(16, _next_pow2(max(c, 1))))


def grid_sample_2d(x: NDArray, grid: NDArray, mode: str, padding_mode: str, align_corners: bool) -> NDArray:
    x, grid = _dense(x), _dense(grid)
    n, c, h, w = x.shape
    points = grid.shape[1] * grid.shape[2]
    out = _new((n, c, grid.shape[1], grid.shape[2]), x.dtype, x.device)
    if not out.size:
        return out
    rt.ensure_device(x.device.index)
    ptrs = (_ptr(x), _ptr(grid), _ptr(out))
    types = tuple(_psig(a, q) for a, q in zip((x, grid, out), ptrs)) + ("i32",) * 4
    go = _FWD.launcher(types, _consts(x, mode, padding_mode, align_corners), 4)
    go((points + _BLOCK_P - 1) // _BLOCK_P, n, 1, *ptrs, c, h, w, points)
    return out


def grid_sample_2d_backward(grad: NDArray, x: NDArray, grid: NDArray, mode: str, padding_mode: str,
                            align_corners: bool, needs_input: bool, needs_grid: bool
                            ) -> tuple[NDArray | None, NDArray | None]:
    grad, x, grid = _dense(grad), _dense(x), _dense(grid)
    n, c, h, w = x.shape
    points = grid.shape[1] * grid.shape[2]
    wide = dtypes.float64 if x.dtype is dtypes.float64 else dtypes.float32
    grad_x = full(x.shape, 0, wide, x.device) if needs_input else None  # atomic adds land in float32 or float64
    nearest = mode == "nearest"
    grad_grid = None
    if needs_grid:  # nearest sampling is flat between pixels: a zero gradient, as torch's
        grad_grid = full(grid.shape, 0, grid.dtype, grid.device) if nearest else _new(grid.shape, grid.dtype,
                                                                                       grid.device)
    if grad.size and ((needs_grid and not nearest) or needs_input):
        rt.ensure_device(x.device.index)
        arrays = (grad, x, grid, grad_x if grad_x is not None else x, grad_grid if grad_grid is not None else grid)
        ptrs = tuple(_ptr(a) for a in arrays)
        types = tuple(_psig(a, q) for a, q in zip(arrays, ptrs)) + ("i32",) * 4
        consts = (needs_input, needs_grid and not nearest) + _consts(x, mode, padding_mode, align_corners)
        go = _BWD.launcher(types, consts, 4)
        go((points + _BLOCK_P - 1) // _BLOCK_P, n, 1, *ptrs, c, h, w, points)
    if grad_x is not None and grad_x.dtype is not x.dtype:
        grad_x = grad_x.astype(x.dtype)
    return grad_x, grad_grid
