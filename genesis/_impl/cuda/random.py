"""Random-number primitives of the CUDA backend: counter-based uniform, normal, randint and dropout."""

from __future__ import annotations

from genesis import dtypes
from genesis._impl.cuda import graphs
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.creation import contiguous
from genesis._impl.cuda.kernels import random as rk_random
from genesis._impl.cuda.launch import _contig, _new, _psig, _ptr
from genesis.ndarray import NDArray

_RANDOM = td.Kernel(rk_random.random_kernel)
_ONE_BELOW = {dtypes.float16: 0.99951171875, dtypes.bfloat16: 0.99609375}


def _random(dist: str, shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int, offset: int,
            low: int = 0, span: int = 1) -> NDArray:
    out = _new(tuple(shape), dtype, device)
    n = out.size
    if n:
        rt.ensure_device(device.index)
        p = _ptr(out)
        base, offset = graphs.rng_counter(device.index, seed, offset, n)
        go = _RANDOM.launcher((_psig(out, p), "i64", "u64", "i64", "*i64", "i64", "u64"),
                              (dist, _ONE_BELOW.get(dtype, 0.99999994), base != 0, 1024), 4)
        go((n + 1023) // 1024, 1, 1, p, n, seed % (1 << 64), offset, base, low, span)
    return out


def uniform(shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int, offset: int) -> NDArray:
    return _random("uniform", shape, dtype, device, seed, offset)


def normal(shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int, offset: int) -> NDArray:
    return _random("normal", shape, dtype, device, seed, offset)


_DROPOUT = td.Kernel(rk_random.dropout_kernel)


def dropout(x: NDArray, p: float, seed: int, offset: int) -> NDArray:
    x = x if _contig(x) else contiguous(x)  # element i is the i-th in row-major order, for x and its gradient
    out = _new(x.shape, x.dtype, x.device)
    n = out.size
    if n:
        rt.ensure_device(x.device.index)
        px, po = _ptr(x), _ptr(out)
        wide = "fp64" if x.dtype is dtypes.float64 else "fp32"  # the scale in the dtype the kernel computes in
        base, offset = graphs.rng_counter(x.device.index, seed, offset, n)
        go = _DROPOUT.launcher((_psig(x, px), _psig(out, po), "i64", "u64", "i64", "*i64", "fp32", wide),
                               (base != 0, 1024), 4)
        go((n + 1023) // 1024, 1, 1, px, po, n, seed % (1 << 64), offset, base, p, 1.0 / (1.0 - p))
    return out


def randint(low: int, high: int, shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int,
            offset: int) -> NDArray:
    return _random("randint", shape, dtype, device, seed, offset, low, high - low)
