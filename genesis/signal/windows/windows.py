"""The window functions of ``genesis.signal.windows``: ``w[n]`` for ``n < M``; with ``sym=False`` the window of
``M + 1`` points without its last one (for ``cosine`` and the centred windows, the same positions shifted)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from genesis import dtypes
from genesis.device import factory_device
from genesis.memory_format import strided
from genesis.ops.arithmetic import minimum
from genesis.ops.creation import linspace
from genesis.ops.math_special import i0
from genesis.tensor import Tensor, arange, empty, ones, tensor


def _checked(name: str, M: int, dtype: Any, layout: Any) -> dtypes.dtype:
    """The window's dtype (the default dtype unless given), after torch's checks of ``M``, layout and dtype."""
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    d = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    if d not in (dtypes.float32, dtypes.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {d}")
    return d


def _positions(start: float, end: float, M: int, d: dtypes.dtype, device: Any, requires_grad: bool) -> Tensor:
    return linspace(start, end, M, dtype=d, device=factory_device(device), requires_grad=requires_grad)


def _trivial(M: int, d: dtypes.dtype, device: Any, requires_grad: bool) -> Tensor:
    """The window of 0 or 1 points."""
    make = empty if M == 0 else ones
    return make(M, dtype=d, device=factory_device(device), requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, dtype: Any = None,
                layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """The exponential (Poisson) window ``exp(-|n - center| / tau)``; ``center`` defaults to the middle."""
    d = _checked("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, d, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _positions(-center / tau, (-center + (M - 1)) / tau, M, d, device, requires_grad)
    return (-k.abs()).exp()


def cosine(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """The cosine (sine) window ``sin(pi (n + 1/2) / M)``."""
    d = _checked("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, d, device, requires_grad)
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    return _positions(0.5 * constant, (0.5 + (M - 1)) * constant, M, d, device, requires_grad).sin()


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Gaussian window ``exp(-(n - (M - 1) / 2)^2 / (2 std^2))``."""
    d = _checked("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, d, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _positions(start * constant, (start + (M - 1)) * constant, M, d, device, requires_grad)
    return (-(k ** 2)).exp()


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None, layout: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Kaiser window ``I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)``."""
    d = _checked("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _trivial(M, d, device, requires_grad)
    b = tensor(beta, dtype=d, device=factory_device(device))
    constant = 2.0 * b / (M if not sym else M - 1)
    end = minimum(b, -b + (M - 1) * constant)
    k = _positions(-beta, end.item(), M, d, device, requires_grad)
    return i0((b * b - k ** 2).sqrt()) / i0(b)


def bartlett(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """The Bartlett (triangular) window ``1 - |2n / (M - 1) - 1|``."""
    d = _checked("bartlett", M, dtype, layout)
    if M <= 1:
        return _trivial(M, d, device, requires_grad)
    constant = 2 / (M if not sym else M - 1)
    return 1 - _positions(-1, -1 + (M - 1) * constant, M, d, device, requires_grad).abs()


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False) -> Tensor:
    """The generalized cosine window ``sum_i (-1)^i a[i] cos(2 pi i n / (M - 1))``."""
    d = _checked("general_cosine", M, dtype, layout)
    if M <= 1:
        return _trivial(M, d, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = _positions(0, (M - 1) * constant, M, d, device, requires_grad)
    dev = factory_device(device)
    a_i = tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=d, device=dev, requires_grad=requires_grad)
    i = arange(len(a), dtype=d, device=dev)
    return (a_i.unsqueeze(-1) * (i.unsqueeze(-1) * k).cos()).sum(0)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype: Any = None, layout: Any = None,
                    device: Any = None, requires_grad: bool = False) -> Tensor:
    """The generalized Hamming window ``alpha - (1 - alpha) cos(2 pi n / (M - 1))``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """The Hamming window (``general_hamming`` with alpha = 0.54)."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """The Hann window (``general_hamming`` with alpha = 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """The Blackman window (``general_cosine`` with a = [0.42, 0.5, 0.08])."""
    _checked("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """The minimum 4-term Blackman-Harris window of Nuttall (``general_cosine`` with his four coefficients)."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)
