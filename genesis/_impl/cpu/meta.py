"""The meta backend: arrays with a shape, strides and dtype but no data (torch's ``device="meta"``).

A program builds a large model on the meta device to lay it out without allocating or initializing its weights,
then moves it to a real device with ``Module.to_empty`` or loads a checkpoint with ``load_state_dict(assign=True)``.
Every op on meta arrays gives meta arrays of the right shape and dtype.

The CPU backend's primitives run unchanged here: they compute with torch tensors, and torch's meta tensors carry
exactly this (shape and dtype inference, no data); ``wrap`` gives a meta tensor the meta device. Only the primitives
that make arrays from nothing or read data are the meta backend's own.
"""

from __future__ import annotations

import numpy as np
import torch

from genesis import dtypes
from genesis._impl import cpu
from genesis._impl.contract import PRIMITIVES
from genesis._impl.cpu.tensors import TORCH_DTYPE, native, wrap
from genesis.ndarray import NDArray

# Every primitive is the CPU backend's, unless defined below.
globals().update({name: getattr(cpu, name) for name in PRIMITIVES})

_NO_DATA = "Cannot copy out of meta tensor; no data!"


def _meta(shape: tuple[int, ...], dtype: dtypes.dtype) -> NDArray:
    return wrap(torch.empty(shape, dtype=TORCH_DTYPE[dtype], device="meta"))


def empty(shape: tuple[int, ...], dtype: dtypes.dtype, device: object) -> NDArray:
    return _meta(shape, dtype)


def full(shape: tuple[int, ...], value: int | float | bool, dtype: dtypes.dtype, device: object) -> NDArray:
    return _meta(shape, dtype)


def arange(start: float, end: float, step: float, dtype: dtypes.dtype, device: object) -> NDArray:
    return wrap(torch.arange(start, end, step, dtype=TORCH_DTYPE[dtype], device="meta"))


def from_numpy(array: np.ndarray, dtype: dtypes.dtype, device: object, non_blocking: bool = False) -> NDArray:
    return _meta(array.shape, dtype)


def to_numpy(x: NDArray) -> np.ndarray:
    raise NotImplementedError(_NO_DATA)


def data_ptr(x: NDArray) -> int:
    return 0


def pin_memory(x: NDArray) -> NDArray:
    raise NotImplementedError(_NO_DATA)


def is_pinned(x: NDArray) -> bool:
    return False


def uniform(shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int, offset: int) -> NDArray:
    return _meta(shape, dtype)


def normal(shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int, offset: int) -> NDArray:
    return _meta(shape, dtype)


def randint(low: int, high: int, shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int,
            offset: int) -> NDArray:
    return _meta(shape, dtype)


def dropout(x: NDArray, p: float, seed: int, offset: int) -> NDArray:
    return wrap(torch.empty_like(native(x)))


def synchronize(device: object = None) -> None:
    pass


def check_index(x: NDArray, low: int, high: int, ignore: int | None, error: type[Exception], message: str) -> NDArray:
    return x  # no values to check
