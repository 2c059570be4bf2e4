"""Window functions for spectral analysis (torch's ``hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window``, ``kaiser_window``), written with Genesis ops so they run on every device.

Each follows torch's recipe step by step in the requested dtype (an ``arange`` scaled, then cosines), so half
precision rounds where torch's rounds; a periodic window of length N is the symmetric one of length N + 1 without its
last value (the form spectral methods use). Kaiser windows evaluate the Bessel function i0 in float32 at least, as
torch's kernel does, and round once.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from genesis import dtypes
from genesis.device import factory_device
from genesis.ops.math_special import i0
from genesis.ops.unary import cos
from genesis.tensor import Tensor, arange, ones


def _window_dtype(name: str, window_length: int, dtype: Any) -> dtypes.dtype:
    """The checked dtype of a window (floating only; default dtype by default), with torch's errors."""
    if isinstance(window_length, bool) or not isinstance(window_length, int):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    d = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if d.is_complex:
        raise NotImplementedError(f"{name}: not implemented for '{dtypes.SCALAR_TYPE_NAMES[d]}' (real floating dtypes "
                                  "only)")
    if not d.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d.name}")
    return d


def _window(name: str, window_length: int, periodic: bool, dtype: Any, device: Any, requires_grad: bool,
            symmetric: Callable[[int, dtypes.dtype, Any], Tensor]) -> Tensor:
    """A window of ``window_length``: empty for 0, a single one for 1, else ``symmetric(N, dtype, device)`` (the
    symmetric window of N points) with N = length + 1 and its last value dropped when ``periodic``; a leaf that
    requires grad when asked."""
    d = _window_dtype(name, window_length, dtype)
    dev = factory_device(device)
    if window_length <= 1:
        window = ones(window_length, dtype=d, device=dev)
    else:
        window = symmetric(window_length + 1 if periodic else window_length, d, dev)
        window = window[:-1].clone() if periodic else window
    return window.requires_grad_(True) if requires_grad else window


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: bool = False,
                   requires_grad: bool = False) -> Tensor:
    """The generalized Hamming window ``alpha - beta cos(2 pi n / (N - 1))``, n < N (N the length, plus one when
    ``periodic``)."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, d, dev: _hamming(n, d, dev, alpha, beta))


def _hamming(n: int, d: dtypes.dtype, device: Any, alpha: float, beta: float) -> Tensor:
    return cos(arange(n, dtype=d, device=device) * (2 * math.pi / (n - 1))) * -beta + alpha


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                device: Any = None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """The Hann window ``1/2 - 1/2 cos(2 pi n / (N - 1))`` (a Hamming window with alpha = beta = 1/2)."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, d, dev: _hamming(n, d, dev, 0.5, 0.5))


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                    device: Any = None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad, _blackman)


def _blackman(n: int, d: dtypes.dtype, device: Any) -> Tensor:
    angle = arange(n, dtype=d, device=device) * (math.pi / (n - 1))
    return cos(angle * 4) * 0.08 - cos(angle * 2) * 0.5 + 0.42


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                    device: Any = None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """The triangular Bartlett window ``1 - |2 n / (N - 1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, _bartlett)


def _bartlett(n: int, d: dtypes.dtype, device: Any) -> Tensor:
    rising = arange(n, dtype=d, device=device) * (2.0 / (n - 1))
    half = (n - 1) // 2 + 1  # the first half rises; the rest falls as 2 - x
    window = rising.clone()
    window[half:] = rising[half:] * -1 + 2
    return window


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype: Any = None,
                  layout: Any = None, device: Any = None, pin_memory: bool = False,
                  requires_grad: bool = False) -> Tensor:
    """The Kaiser window ``i0(beta sqrt(1 - ((n - a) / a)^2)) / i0(beta)``, a = (N - 1) / 2."""
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, d, dev: _kaiser(n, d, dev, beta))


def _kaiser(n: int, d: dtypes.dtype, device: Any, beta: float) -> Tensor:
    compute = d if d.itemsize >= 4 else dtypes.float32  # torch's kernel evaluates half types in float32
    center = (n - 1) / 2.0
    ratio = (arange(n, dtype=compute, device=device) - center) / center
    window = i0((1 - ratio * ratio).abs().sqrt() * beta) / i0(Tensor._scalar_like(float(beta), ratio))
    return window.to(d)
