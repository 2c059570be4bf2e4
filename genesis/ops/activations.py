"""Activations with Python-number parameters as one graph node each way, as torch's native kernels: ELU (and SELU,
CELU), hardswish, hardsigmoid, hardtanh (relu6), softplus, softshrink, hardshrink, threshold, mish, log-sigmoid
and logit; and the gated linear unit (``Glu``). Forward is the backend's ``activation`` kernel, backward its
``activation_backward``; with ``create_graph`` the gradient is recorded as ``ActivationBackward``, whose own
derivative for the input follows torch's double-backward formulas, so gradient penalties through these layers see
torch's values.

``activation(node, name, kernel, x, *params)`` runs one for a real floating ``x`` and raises torch's error for other
dtypes (the functional layer computes hardtanh and threshold of integers with a clamp and a select).
"""

from __future__ import annotations

from genesis.autograd import Primitive, is_grad_enabled
from genesis.ndarray import NDArray
from genesis.ops._args import check_floating_kernel, check_real_kernel, zeros_like_detached
from genesis.ops.compare import where
from genesis.ops.join import cat
from genesis.tensor import Tensor


class Parametric(Primitive):
    """An activation of ``x`` with parameters ``params`` (a tuple of floats, in the order of the backend contract's
    ``ACTIVATION_OPS``). A subclass per torch node names the backend ``op`` and writes ``second(gx, x, *params)``:
    the input's part of the double backward for ``gx = gg * grad`` (None: zero, a piecewise-linear activation)."""

    op = ""

    @staticmethod
    def second(gx: Tensor, x: Tensor, *params: float) -> Tensor | None:
        return None

    @classmethod
    def forward(cls, ctx, x: NDArray, params: tuple) -> NDArray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
            ctx.params = params
        return x.backend.activation(cls.op, x, params)

    @classmethod
    def backward(cls, ctx, grad):
        if is_grad_enabled():  # create_graph: a node that can be differentiated again
            (x,) = ctx.saved_tensors
            return ActivationBackward.apply(grad, x, cls, ctx.params), None
        (x,) = ctx.saved_arrays()
        return x.backend.activation_backward(cls.op, grad.ndarray, x, ctx.params), None


class ActivationBackward(Primitive):
    """A ``Parametric`` activation's gradient ``grad * f'(x)`` as a recorded node: its derivative for ``grad`` is
    itself, for ``x`` the activation's ``second`` (a zero tensor where that is none, as torch hands the layers below
    a zero gradient, not none)."""

    @staticmethod
    def forward(ctx, grad: NDArray, x: NDArray, node: type[Parametric], params: tuple) -> NDArray:
        ctx.save_for_backward(grad, x)
        ctx.node, ctx.params = node, params
        return grad.backend.activation_backward(node.op, grad, x, params)

    @staticmethod
    def backward(ctx, gg):
        grad, x = ctx.saved_tensors
        node, params = ctx.node, ctx.params
        d_x = node.second(gg * grad, x, *params) if ctx.needs_input_grad[1] else None
        if d_x is None and ctx.needs_input_grad[1]:
            d_x = zeros_like_detached(x)
        return ActivationBackward.apply(gg, x, node, params), d_x, None, None


class Elu(Parametric):
    """``x * scale`` where ``x > 0``, ``expm1(x * input_scale) * alpha * scale`` elsewhere (elu, selu, celu)."""

    op = "elu"

    @staticmethod
    def second(gx, x, alpha, scale, input_scale):
        # torch's elu_double_backward: the negative side's curvature, counted where x < 0 (not at 0).
        negative = x < 0
        curve = (where(negative, x, 0.0) * input_scale).exp() * (input_scale * input_scale * alpha * scale)
        return where(negative, gx * curve, 0.0)


class Hardswish(Parametric):
    op = "hardswish"

    @staticmethod
    def second(gx, x):
        return where((x > -3.0) & (x < 3.0), gx / 3.0, 0.0)


class Hardsigmoid(Parametric):
    op = "hardsigmoid"


class Hardtanh(Parametric):
    """``clamp(x, min_val, max_val)``, slope 0 at the bounds too (relu6 is ``hardtanh(x, 0, 6)``)."""

    op = "hardtanh"


class Softplus(Parametric):
    op = "softplus"

    @staticmethod
    def second(gx, x, beta, threshold):
        z = x * beta
        s = z.sigmoid()
        return where(z < threshold, gx * s * (1 - s) * beta, 0.0)


class Softshrink(Parametric):
    op = "softshrink"


class Hardshrink(Parametric):
    op = "hardshrink"


class Threshold(Parametric):
    op = "threshold"


class Mish(Parametric):
    op = "mish"

    @staticmethod
    def second(gx, x):
        # f' = t + x s (1 - t^2) with t = tanh(softplus(x)), s = sigmoid(x), dt/dx = (1 - t^2) s.
        s = x.sigmoid()
        t = x.clamp(max=20.0).exp().log1p().tanh()  # tanh(softplus(x)) is 1 from 20 on: no overflow to inf
        flat = 1 - t * t
        dt = flat * s
        return gx * (dt + s * flat + x * s * (1 - s) * flat - 2 * x * s * t * dt)


class LogSigmoid(Parametric):
    op = "log_sigmoid"

    @staticmethod
    def second(gx, x):
        s = x.sigmoid()
        return gx * (s - 1) * s


class Logit(Parametric):
    """``log(z / (1 - z))`` of ``x`` clamped to [eps, 1 - eps] (``eps`` negative: no clamp); the gradient is 0
    outside that range (NaN outside [0, 1] without eps)."""

    op = "logit"

    @staticmethod
    def second(gx, x, eps):
        lo, hi = (0.0, 1.0) if eps < 0 else (eps, 1 - eps)
        q = x * (1 - x)
        return where((x >= lo) & (x <= hi), gx * (2 * x - 1) / (q * q), 0.0)


class Glu(Primitive):
    """The gated linear unit ``a * sigmoid(b)`` of the halves of ``x`` along ``dim``: the backend's ``glu`` kernel
    each way (with ``create_graph``, tensor ops that can be differentiated again)."""

    @staticmethod
    def forward(ctx, x: NDArray, dim: int) -> NDArray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
            ctx.dim = dim
        return x.backend.glu(x, dim)

    @staticmethod
    def backward(ctx, grad):
        if not is_grad_enabled():
            (x,) = ctx.saved_arrays()
            return x.backend.glu_backward(grad.ndarray, x, ctx.dim), None
        (x,) = ctx.saved_tensors
        a, b = x.chunk(2, ctx.dim)
        s = b.sigmoid()
        return cat([grad * s, grad * a * s * (1 - s)], ctx.dim), None


def activation(node: type[Parametric], name: str, kernel: str, x: Tensor, *params: float) -> Tensor:
    """``node``'s activation of ``x`` with Python-number ``params``, as one node; torch's error, naming the op
    ``name`` and its kernel ``kernel``, for an integer, bool or complex ``x``."""
    check_floating_kernel(name, kernel, x)
    check_real_kernel(name, kernel, x)
    return node.apply(x, tuple(float(p) for p in params))
