"""The CPU backend's link to torch: dtype tables, NDArrays as views of torch CPU tensors, and the eager index
check the primitives share."""

from __future__ import annotations

import torch

from genesis import dtypes
from genesis.device import cpu as _cpu
from genesis.device import meta as _meta
from genesis.ndarray import NDArray

TORCH_DTYPE = {
    dtypes.bool_: torch.bool, dtypes.uint8: torch.uint8, dtypes.int8: torch.int8, dtypes.int16: torch.int16,
    dtypes.int32: torch.int32, dtypes.int64: torch.int64, dtypes.float16: torch.float16,
    dtypes.bfloat16: torch.bfloat16, dtypes.float32: torch.float32, dtypes.float64: torch.float64,
    dtypes.complex64: torch.complex64, dtypes.complex128: torch.complex128,
}
GENESIS_DTYPE = {v: k for k, v in TORCH_DTYPE.items()}


def wrap(t: torch.Tensor, shape: tuple[int, ...] | None = None) -> NDArray:
    """Wrap a torch CPU tensor as an NDArray sharing its memory (a torch meta tensor as a meta NDArray: the meta
    backend computes with torch's meta tensors through these same primitives).

    ``shape``, when the caller knows it (an elementwise result has its input's shape), saves converting ``t.shape``.
    """
    return NDArray(t, tuple(t.shape) if shape is None else shape, t.stride(), t.storage_offset(),
                   GENESIS_DTYPE[t.dtype], _meta if t.is_meta else _cpu, t)


def native(x: NDArray) -> torch.Tensor:
    """The torch view of an NDArray (built on first use, then cached)."""
    t = x._native
    if t is None:
        t = x._native = torch.as_strided(x.buffer, x.shape, x.strides, x.offset)
    return t


def _arg(b: NDArray | int | float | bool) -> torch.Tensor | int | float | bool:
    return native(b) if isinstance(b, NDArray) else b


def check_index(x: NDArray, low: int, high: int, ignore: int | None, error: type[Exception], message: str) -> NDArray:
    """Eager check: raises ``error`` naming the first bad value (in row-major order) at the call."""
    t = native(x)
    n = t.numel()
    if n and t.dtype is not torch.bool:
        # One pass decides the common case, every entry valid: a few values are read as Python ints, more are
        # reduced by torch first.
        if n <= 32:
            values = t.tolist() if t.dim() == 1 else t.reshape(-1).tolist()
            least, most = min(values), max(values)
        else:
            least, most = (v.item() for v in torch.aminmax(t))
        if least >= max(low, 0) and most < high:
            return x
    bad = (t < low) | (t >= high)
    if ignore is not None:
        bad &= t != ignore
    if bad.any():
        raise error(message.format(value=int(t[bad][0]), size=high))
    if low < 0 and (t < 0).any():
        return wrap(torch.where(t < 0, t + high, t))
    return x
