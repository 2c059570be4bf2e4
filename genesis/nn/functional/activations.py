"""Activation functions (``torch.nn.functional`` names and signatures)."""

from __future__ import annotations

import warnings
from typing import Callable

from genesis import dtypes, random
from genesis import ops as T
from genesis.autograd import is_grad_enabled
from genesis.nn.functional._out import check_out
from genesis.ops import activations as A
from genesis.ops._args import check_floating_kernel, check_real_kernel
from genesis.ops.activations import activation
from genesis.ops.unary import Silu
from genesis.ops.unary import hardshrink as hardshrink  # computed in the op layer: also Tensor.hardshrink
from genesis.ops.unary import leaky_relu as _leaky_relu
from genesis.ops.unary import prelu as prelu  # computed in the op layer: also Tensor.prelu
from genesis.tensor import Tensor, zeros


def _apply(x: Tensor, inplace: bool, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """``fn(x)``, or with ``inplace`` written into ``x``. When autograd records an in-place call, ``fn`` reads a
    copy, because the backward of most activations needs the input that the write overwrites."""
    if not inplace:
        return fn(x)
    if x.requires_grad and is_grad_enabled():
        return x.copy_(fn(x.clone()))
    return x.copy_(fn(x))


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)``. In place, the graph needs no copy of the input: relu's gradient reads its output."""
    return input.relu_() if inplace else T.relu(input)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)``."""
    return _apply(input, inplace, lambda x: hardtanh(x, 0.0, 6.0))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` where positive, ``negative_slope * x`` elsewhere (one fused node for floating input)."""
    return _apply(input, inplace, lambda x: _leaky_relu(x, negative_slope))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    return _apply(input, inplace, lambda x: activation(A.Elu, "elu", "elu_cpu", x, alpha, 1.0, 1.0))


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Scaled ELU with the constants of Klambauer et al. (2017)."""
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return _apply(input, inplace, lambda x: activation(A.Elu, "selu", "elu_cpu", x, alpha, scale, 1.0))


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise RuntimeError("celu: ZeroDivisionError: alpha cannot be 0 for CELU")
    return _apply(input, inplace, lambda x: activation(A.Elu, "celu", "elu_cpu", x, alpha, 1.0, 1.0 / alpha))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: ``x * Phi(x)``, or its tanh approximation with ``approximate="tanh"``."""
    return T.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False, *, out: Tensor | None = None) -> Tensor:
    """``x * sigmoid(x)`` (a.k.a. swish). ``out=`` writes into a preallocated tensor (no autograd)."""
    if out is not None:
        check_out("silu", out, tuple(input.shape), input)
        input.ndarray.unary("silu", out.ndarray)
        out._bump_version()
        return out
    return _apply(input, inplace, Silu.apply)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    return _apply(input, inplace, lambda x: activation(A.Mish, "mish", "mish_cpu", x))


def sigmoid(input: Tensor) -> Tensor:
    """Elementwise ``1 / (1 + exp(-x))``."""
    return T.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """Elementwise hyperbolic tangent."""
    return T.tanh(input)


def _hardtanh(x: Tensor, min_val: float, max_val: float) -> Tensor:
    """``clamp(x, min_val, max_val)`` with torch's hardtanh gradient: zero at the two bounds as well as outside them
    (clamp's own gradient passes at the bounds), one node for floating ``x``. An integer ``x`` keeps its dtype,
    clamped to the bounds converted to it (truncated), as torch's; a bool one is refused."""
    if x.dtype is dtypes.bool_:
        raise RuntimeError("hardtanh: Bool inputs not supported for hardtanh")
    if x.dtype.is_complex:
        raise NotImplementedError("hardtanh: clamp is not supported for complex types")
    if x.dtype.category == 2:
        return activation(A.Hardtanh, "hardtanh", "hardtanh_cpu", x, min_val, max_val)
    return T.clamp(x, int(min_val), int(max_val))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """``clamp(x, min_val, max_val)``; its gradient is zero at and beyond the bounds."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _apply(input, inplace, lambda x: _hardtanh(x, min_val, max_val))


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``; its gradient is ``1/6`` strictly inside ``(-3, 3)``, 0 elsewhere."""
    return _apply(input, inplace, lambda x: activation(A.Hardsigmoid, "hardsigmoid", "hardsigmoid_cpu", x))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``; its gradient is 0 up to -3, ``x / 3 + 1/2`` inside ``(-3, 3)``, 1 from 3 on."""
    return _apply(input, inplace, lambda x: activation(A.Hardswish, "hardswish", "hardswish_cpu", x))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""
    return T.softplus(input, beta, threshold)


def softsign(input: Tensor) -> Tensor:
    """Elementwise ``x / (1 + |x|)``."""
    return input / (T.abs(input) + 1)


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x)) = -softplus(-x)``, computed stably."""
    return activation(A.LogSigmoid, "logsigmoid", "log_sigmoid_cpu", input)


def tanhshrink(input: Tensor) -> Tensor:
    """Elementwise ``x - tanh(x)``."""
    return input - T.tanh(input)


def _threshold(x: Tensor, threshold: float, value: float) -> Tensor:
    """``value`` where ``x <= threshold``, ``x`` elsewhere (NaN stays NaN), in ``x``'s dtype: for an integer ``x``
    the value is truncated toward zero, as torch converts it; a bool ``x`` is refused, as torch's kernel."""
    if x.dtype is dtypes.bool_:
        raise NotImplementedError("threshold: \"threshold_cpu\" not implemented for 'Bool'")
    if x.dtype.category != 1:
        return activation(A.Threshold, "threshold", "threshold_cpu", x, threshold, value)
    return T.where(x <= threshold, int(value), x)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``value`` where ``x <= threshold``, ``x`` elsewhere (NaN stays NaN)."""
    return _apply(input, inplace, lambda x: _threshold(x, threshold, value))


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: ``a * sigmoid(b)`` for the two halves of ``dim``."""
    check_floating_kernel("glu", "glu_cpu", input)
    if input.shape[dim] % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {dim} is size {input.shape[dim]}")
    check_real_kernel("glu", "glu_cpu", input)
    return A.Glu.apply(input, dim % input.ndim)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    """torch's legacy ``dim`` when it is omitted, with torch's deprecation warning."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an "
                  "argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: object = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (computed in ``dtype`` when given)."""
    dim = _softmax_dim("softmax", input.ndim, _stacklevel) if dim is None else dim
    return T.softmax(input, dim, dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: object = None) -> Tensor:
    """``softmax(-input)`` along ``dim``."""
    dim = _softmax_dim("softmin", input.ndim, _stacklevel) if dim is None else dim
    return softmax(-input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: object = None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably."""
    dim = _softmax_dim("log_softmax", input.ndim, _stacklevel) if dim is None else dim
    return T.log_softmax(input, dim, dtype)


# ------------------------------------------------------------------ in-place variants


def relu_(input: Tensor) -> Tensor:
    """In-place ``relu``."""
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``elu``."""
    return elu(input, alpha, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place ``leaky_relu``."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place ``hardtanh``."""
    return hardtanh(input, min_val, max_val, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """In-place ``selu``."""
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``celu``."""
    return celu(input, alpha, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place ``threshold``."""
    return _apply(input, True, lambda x: _threshold(x, threshold, value))


# ------------------------------------------------------------------ shrinking, randomized and sampled activations


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between (NaN stays NaN)."""
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be in range [0, inf) for input dtype {input.dtype}, but found "
                           f"{lambd}")
    return activation(A.Softshrink, "softshrink", "softshrink_check", input, lambd)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU (Xu et al., 2015): negative inputs are scaled by ``a ~ U(lower, upper)``, drawn per
    element in training, and by the fixed ``(lower + upper) / 2`` in evaluation."""
    return randomized_relu(input, lower, upper, training, inplace, None)


def randomized_relu(input: Tensor, lower: float, upper: float, training: bool, inplace: bool,
                    generator: random.Generator | None) -> Tensor:
    """``rrelu`` drawing its slopes from ``generator`` (the default one when None): ``F.rrelu`` and torch's
    namespace ``rrelu(input, lower, upper, training, generator)``."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:  # torch's leaky_relu with the mean slope (the slope's gradient at 0 too)
        return _apply(input, inplace, lambda x: _leaky_relu(x, (lower + upper) / 2))
    check_floating_kernel("rrelu", "rrelu_with_noise_out_cpu", input)
    noise = random.rand(input.shape, generator=generator, dtype=input.dtype, device=input.device) * (
        upper - lower) + lower
    return _apply(input, inplace, lambda x: T.where(x > 0, x, x * noise))


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, inplace=True)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax (Concrete) distribution: ``softmax((logits + g) / tau)`` with
    ``g = -log(-log(U))`` Gumbel noise (Jang et al., 2016). ``hard=True`` returns the one-hot argmax in the forward
    pass with the soft sample's gradient (straight-through)."""
    uniform = T.clamp(random.rand(logits.shape, dtype=logits.dtype, device=logits.device), min=eps, max=1 - eps)
    gumbels = -T.log(-T.log(uniform))
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = zeros(logits.shape, dtype=logits.dtype, device=logits.device).scatter(dim, index, 1.0)
    return one_hot - soft.detach() + soft
