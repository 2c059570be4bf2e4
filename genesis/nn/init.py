"""Parameter initialization (``torch.nn.init``): in-place fills that run without recording gradients.

Every function draws from Genesis's random number generator (the default one, or ``generator=``) and uses
torch's distributions, bounds and fan computations, so layers initialize like torch's layers (the numbers differ
because the generators differ).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np

from genesis import random
from genesis.autograd import no_grad
from genesis.random import Generator
from genesis.tensor import Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
    # torch's deprecated aliases, each with a FutureWarning
    "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
    "kaiming_normal", "orthogonal", "sparse",
]


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (torch's table: relu sqrt(2), tanh 5/3, selu 3/4, ...)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(t: Tensor) -> tuple[int, int]:
    if t.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in t.shape[2:]:
        receptive *= s
    return t.shape[1] * receptive, t.shape[0] * receptive


def _calculate_correct_fan(t: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of {['fan_in', 'fan_out']}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with U(a, b)."""
    with no_grad():
        return random.uniform_(tensor, a, b, generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with N(mean, std^2)."""
    with no_grad():
        return random.normal_(tensor, mean, std, generator)


def _norm_cdf(x: float) -> float:
    """The standard normal's cumulative distribution at ``x``."""
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Generator | None = None) -> Tensor:
    """Fill with N(mean, std^2) truncated to [a, b], drawn as torch draws it: where [a, b] holds more than 30% of
    the normal's mass, values outside are redrawn from the normal until none is left; elsewhere (a narrow interval
    or one far in a tail) uniform draws on [a, b] are kept with probability ``pdf(x) / max of pdf on [a, b]``, so
    that sampling stays fast. ``a > b`` raises as ``uniform_`` does."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)
    with no_grad():
        mass = _norm_cdf((b - mean) / std) - _norm_cdf((a - mean) / std)
        if mass > 0.3:
            # the bounds as the tensor's dtype holds them, so that a value equal to one is kept
            low, high = tensor.new_tensor(a).item(), tensor.new_tensor(b).item()
            values = random.randn(tensor.shape, generator=generator, dtype=tensor.dtype, device=tensor.device)
            values = values * std + mean
            outside = (values < low) | (values > high)
            while bool(outside.any()):
                redraw = random.randn(tensor.shape, generator=generator, dtype=tensor.dtype, device=tensor.device)
                values = values.where(~outside, redraw * std + mean)
                outside = (values < low) | (values > high)
            return tensor._fill_from(values.ndarray)
        log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2  # the log-density's top on [a, b]

        def rejected(x: Tensor) -> Tensor:
            accept = random.uniform_(tensor.new_empty(tensor.shape), generator=generator).log()
            return accept > -0.5 * ((x - mean) / std) ** 2 - log_peak

        values = random.uniform_(tensor.new_empty(tensor.shape), a, b, generator)
        pending = rejected(values)
        while bool(pending.any()):
            candidates = random.uniform_(tensor.new_empty(tensor.shape), a, b, generator)
            values = values.where(~pending, candidates)
            pending = pending & rejected(candidates)
        return tensor._fill_from(values.ndarray)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix (ones on the main diagonal)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        rows, cols = tensor.shape
        return tensor._fill_from(tensor.new_tensor(np.eye(rows, cols), dtype=tensor.dtype).ndarray)


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3/4/5-D convolution weight with the Dirac delta (the convolution keeps its input's channels)."""
    dims = tensor.ndim
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    min_dim = min(out_per_group, sizes[1])
    values = np.zeros(tuple(sizes))
    for g in range(groups):
        for d in range(min_dim):
            centre = tuple(s // 2 for s in sizes[2:])
            values[(g * out_per_group + d, d, *centre)] = 1
    with no_grad():
        return tensor._fill_from(tensor.new_tensor(values, dtype=tensor.dtype).ndarray)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot normal: N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """He uniform: U(-b, b) with ``b = gain * sqrt(3 / fan)``."""
    if 0 in tensor.shape:
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """He normal: N(0, std^2) with ``std = gain / sqrt(fan)``."""
    if 0 in tensor.shape:
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a normal matrix (Saxe et al. 2013), times gain."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = random.randn((rows, cols), generator=generator, dtype=tensor.dtype, device=tensor.device)
    a = np.asarray(flat.double().cpu().numpy())
    if rows < cols:
        a = a.T
    # Host QR: initialization runs once, and the sign correction below makes the result unique.
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with no_grad():
        values = tensor.new_tensor(np.ascontiguousarray(q * gain), dtype=tensor.dtype).reshape(tensor.shape)
        return tensor._fill_from(values.ndarray)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None) -> Tensor:
    """A 2-D matrix with N(0, std^2) entries where a ``sparsity`` fraction of each column is zero."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        values = random.randn(tensor.shape, generator=generator, dtype=tensor.dtype, device=tensor.device) * std
        for col in range(cols):
            zero_rows = random.randperm(rows, generator=generator, device=tensor.device)[:num_zeros]
            keep = tensor.new_ones(rows, dtype=values.dtype)
            keep[zero_rows] = 0
            values[:, col] = values[:, col] * keep
        return tensor._fill_from(values.ndarray)


def _deprecated(new: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """torch's deprecated alias of an initializer without the trailing underscore (``nn.init.uniform``): warns, then
    calls ``new``."""
    old = new.__name__[:-1]

    def alias(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.", FutureWarning,
                      stacklevel=2)
        return new(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated alias of :func:`{new.__name__}`."
    return alias


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
