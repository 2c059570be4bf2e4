"""torch.fft's helpers: the sample frequencies of a transform's bins (``fftfreq``, ``rfftfreq``) and the shifts that
move the zero frequency to the centre and back (``fftshift``, ``ifftshift``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from genesis import dtypes
from genesis.ops.join import cat
from genesis.ops.shape import roll
from genesis.tensor import Tensor, arange


def _freq_dtype(op: str, dtype: Any) -> dtypes.dtype:
    d = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    if d.is_complex:
        raise NotImplementedError(f"{op}: arange is not implemented for {d}")
    if not d.is_floating_point:
        raise RuntimeError(f"{op} requires a floating point or complex dtype, got {d}")
    return d


def _step(n: int, d: float) -> float:
    """``1 / (n * d)`` as torch's C++ computes it: infinite for a zero product (``rfftfreq(0)`` is ``[nan]``)."""
    return math.copysign(math.inf, n * d) if n * d == 0 else 1.0 / (n * d)


def _check_layout(op: str, layout: Any) -> None:
    if layout is not None and str(layout).rpartition(".")[2] != "strided":
        raise RuntimeError(f"{op}: only the strided layout is supported, got {layout}")


def fftfreq(n: int, d: float = 1.0, *, dtype: Any = None, layout: Any = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """The frequencies of the ``n`` bins of :func:`genesis.fft.fft` for samples spaced ``d`` apart:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``."""
    _check_layout("fftfreq", layout)
    dt = _freq_dtype("fftfreq", dtype)
    if n < 0:
        raise RuntimeError(f"fftfreq: Trying to create tensor with negative dimension {n}: [{n}]")
    k = arange(n, dtype=dt, device=device)
    half = (n + 1) // 2
    k = cat([k.narrow(0, 0, half), k.narrow(0, half, n - half) - n]) if n - half else k
    out = (k * _step(n, d)).detach()
    return out.requires_grad_(requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """The frequencies of the ``n // 2 + 1`` bins of :func:`genesis.fft.rfft` for samples spaced ``d`` apart:
    ``[0, 1, ..., n // 2] / (d * n)``."""
    _check_layout("rfftfreq", layout)
    dt = _freq_dtype("rfftfreq", dtype)
    if n < 0:
        raise RuntimeError(f"rfftfreq: Trying to create tensor with negative dimension {n}: [{n}]")
    k = arange(n // 2 + 1, dtype=dt, device=device)
    out = (k * _step(n, d)).detach()
    return out.requires_grad_(requires_grad)


def _all_dims(dim: int | Sequence[int] | None, x: Tensor) -> list[int]:
    if dim is None:
        return list(range(x.ndim))
    return [dim] if isinstance(dim, int) else list(dim)


def fftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """The spectrum rolled so the zero frequency is in the middle of each of ``dim`` (default: all dims)."""
    dims = _all_dims(dim, input)
    return roll(input, [input.shape[d] // 2 for d in dims], dims)


def ifftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`fftshift`: the zero frequency back to index 0 of each of ``dim``."""
    dims = _all_dims(dim, input)
    return roll(input, [(input.shape[d] + 1) // 2 for d in dims], dims)
