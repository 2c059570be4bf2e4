"""Scans along a dim: cumsum and cumprod (primitives), running extrema, logcumsumexp, and the differences and
trapezoidal integrals built on them.
"""

from __future__ import annotations

from typing import Any

from genesis import dtypes
from genesis.autograd import Primitive
from genesis.ndarray import NDArray, normalize_dim
from genesis.ops._args import _zeros, arange_like, check_real_kernel
from genesis.ops.arithmetic import maximum, minimum
from genesis.ops.autocast import autocast_args
from genesis.ops.compare import isinf, isnan, where
from genesis.ops.gather_scatter import gather
from genesis.ops.join import cat
from genesis.ops.reduce import ValuesIndices, sum, values_indices
from genesis.ops.unary import exp, log
from genesis.ops.views import narrow
from genesis.tensor import Tensor


class Cumsum(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dim: int, widen: bool) -> NDArray:
        ctx.dim = dim
        if widen and x.dtype.category < 2:
            x = x.astype(dtypes.int64)  # torch accumulates integers in int64 unless a dtype is given
        return x.backend.cumulative("cumsum", x, dim)

    @staticmethod
    def backward(ctx, grad):
        # The gradient of a prefix sum is the reversed prefix sum of the gradient.
        return grad.flip(ctx.dim).cumsum(ctx.dim).flip(ctx.dim), None, None


class Cumprod(Primitive):
    @staticmethod
    def forward(ctx, x: NDArray, dim: int, widen: bool) -> NDArray:
        if widen and x.dtype.category < 2:
            x = x.astype(dtypes.int64)
        out = x.backend.cumulative("cumprod", x, dim)
        ctx.save_for_backward(x, out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dim = ctx.dim
        if not (x == 0).any().item():
            return (grad * out).flip(dim).cumsum(dim).flip(dim) / x, None, None
        # Exact for inputs with zeros: d out_j / d x_i = prod_{k<=j, k!=i} x_k, summed against grad_j.
        n = x.shape[dim]
        pieces = []
        for i in range(n):
            before = x.narrow(dim, 0, i).prod(dim=dim, keepdim=True) if i else None
            after = x.narrow(dim, i + 1, n - i - 1)
            tail = after.cumprod(dim) if n - i - 1 else None
            g_i = grad.narrow(dim, i, 1)
            if tail is not None:
                g_i = g_i + (grad.narrow(dim, i + 1, n - i - 1) * tail).sum(dim=dim, keepdim=True)
            pieces.append(g_i * before if before is not None else g_i)
        return cat(pieces, dim), None, None


def cumsum(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    (input,) = autocast_args("cumsum", input)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    return Cumsum.apply(input, normalize_dim("cumsum", dim, input.ndim), dtype is None)


def cumprod(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    return Cumprod.apply(input, normalize_dim("cumprod", dim, input.ndim), dtype is None)


def _scan(x: Tensor, dim: int, combine: Any) -> Tensor:
    """Inclusive prefix scan of ``combine`` along ``dim`` in log2(n) doubling steps (Hillis-Steele)."""
    n = x.shape[dim]
    step = 1
    while step < n:
        head = narrow(x, dim, 0, step)
        tail = combine(narrow(x, dim, step, n - step), narrow(x, dim, 0, n - step))
        x = cat([head, tail], dim)
        step *= 2
    return x


def _cum_extremum(op: str, input: Tensor, dim: int) -> ValuesIndices:
    check_real_kernel(op, f"{op}_cpu", input, bools=True)
    if input.ndim == 0:
        if dim not in (-1, 0):
            raise IndexError(f"{op}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
        return values_indices(op, input.clone(), _zeros((), dtypes.int64, input))
    d = normalize_dim(op, dim, input.ndim)
    x = input.detach()
    running = _scan(x, d, maximum if op == "cummax" else minimum)
    # torch moves the index to every later element equal to the running extreme (and to every NaN).
    positions = arange_like(x.shape[d], x).reshape([-1 if k == d else 1 for k in range(x.ndim)])
    hit = x == running
    if x.dtype.is_floating_point:
        hit = hit | isnan(x)
    indices = _scan(where(hit, positions, 0), d, maximum)
    return values_indices(op, gather(input, d, indices), indices)


def cummax(input: Tensor, dim: int) -> ValuesIndices:
    """Running maximum along ``dim`` and the index where each was attained (the latest among equals)."""
    return _cum_extremum("cummax", input, dim)


def cummin(input: Tensor, dim: int) -> ValuesIndices:
    """Running minimum along ``dim`` and the index where each was attained (the latest among equals)."""
    return _cum_extremum("cummin", input, dim)


def _shifted_logaddexp(a: Tensor, b: Tensor) -> Tensor:
    """``log(exp(a) + exp(b))`` shifted by the (detached, finite) larger operand so that nothing overflows: the
    scan step of ``logcumsumexp`` (the ``logaddexp`` op adds dtype promotion and exact infinities)."""
    shift = maximum(a, b).detach()
    shift = where(isinf(shift), 0.0, shift)
    return log(exp(a - shift) + exp(b - shift)) + shift


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``dim``, computed stably by a scan of pairwise log-add-exp."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"logcumsumexp: not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    d = normalize_dim("logcumsumexp", dim, input.ndim)
    if input.ndim == 0:
        return input.clone()
    if input.dtype in (dtypes.float16, dtypes.bfloat16):  # accumulated in float32 and rounded once, as torch's kernel
        return logcumsumexp(input.float(), d).to(input.dtype)
    return _scan(input, d, _shifted_logaddexp)


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim``, after concatenating ``prepend`` and ``append``."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = normalize_dim("diff", dim, input.ndim)
    parts = [p for p in (prepend, input, append) if p is not None]
    for p in parts:
        if p.ndim != input.ndim:
            raise RuntimeError(f"diff expects prepend or append to be the same dimension as input, got "
                               f"{p.ndim} and {input.ndim}")
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        later, earlier = narrow(x, d, 1, size - 1), narrow(x, d, 0, size - 1)
        x = later != earlier if x.dtype is dtypes.bool_ else later - earlier
    return x


def _float(y: Tensor) -> Tensor:
    return y if y.dtype.is_floating_point else y.to(dtypes.get_default_dtype())


def _intervals(op: str, y: Tensor, x: Tensor | None, dx: float | None, dim: int) -> tuple[Tensor, int]:
    """The area of each interval ``(x[i+1] - x[i]) * (y[i] + y[i+1]) / 2`` along ``dim``."""
    d = normalize_dim(op, dim, y.ndim)
    n = y.shape[d]
    y = _float(y)
    mean_heights = (narrow(y, d, 1, n - 1) + narrow(y, d, 0, n - 1)) * 0.5 if n else y
    if x is None:
        return mean_heights * (1.0 if dx is None else dx), d
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        x = x.reshape([-1 if k == d else 1 for k in range(y.ndim)])
    widths = narrow(x, d, 1, n - 1) - narrow(x, d, 0, n - 1) if n else x
    return widths * mean_heights, d


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """Integral of ``y`` along ``dim`` by the trapezoidal rule, at sample points ``x`` or with spacing ``dx``."""
    if x is not None and dx is not None:
        raise RuntimeError("trapezoid: received both x and dx; pass only one of them")
    if y.ndim == 0:
        raise IndexError("trapezoid: Dimension out of range (expected to be in range of [-1, 0], but got -1)")
    areas, d = _intervals("trapezoid", y, x, dx, dim)
    return sum(areas, d)


def trapz(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """Alias of ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """Running trapezoidal integral along ``dim`` (one element shorter than ``y`` there)."""
    if x is not None and dx is not None:
        raise RuntimeError("cumulative_trapezoid: received both x and dx; pass only one of them")
    areas, d = _intervals("cumulative_trapezoid", y, x, dx, dim)
    return cumsum(areas, d)


def gradient(input: Tensor, *, spacing: Any = 1, dim: int | list[int] | tuple[int, ...] | None = None,
             edge_order: int = 1) -> tuple[Tensor, ...]:
    """Numerical derivatives of ``input`` along ``dim`` (every dim by default), one tensor per dim: central
    differences inside, one-sided differences of ``edge_order`` (1 or 2) at the ends. ``spacing`` is the sample
    distance (a number, or one per dim) or the sample coordinates (one 1-D tensor per dim), as torch.gradient."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(range(input.ndim))
    elif isinstance(dim, int):
        dims = [normalize_dim("gradient", dim, input.ndim)]
    else:
        dims = [normalize_dim("gradient", d, input.ndim) for d in dim]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(
                f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim arguments to "
                f"have the same length, but got a spacing argument of length {len(spacing)} and a dim argument of "
                f"length {len(dims)}." if dim is not None else
                f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal to "
                f"'self.dim() = {input.ndim}', since dim argument was not given, but got a list of length "
                f"{len(spacing)}")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    if any(input.shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    return tuple(_coordinate_gradient(input, h, d, edge_order) if isinstance(h, Tensor) and h.ndim == 1
                 else _uniform_gradient(input, h.item() if isinstance(h, Tensor) else h, d, edge_order)
                 for d, h in zip(dims, spacings))


def _uniform_gradient(f: Tensor, h: float, d: int, edge_order: int) -> Tensor:
    """``gradient`` along ``d`` for samples ``h`` apart (torch's order of operations)."""
    n = f.shape[d]
    center = (narrow(f, d, 2, n - 2) - narrow(f, d, 0, n - 2)) / h
    if edge_order == 1:
        first = (narrow(f, d, 1, 1) - narrow(f, d, 0, 1)) / h
        last = (narrow(f, d, n - 1, 1) - narrow(f, d, n - 2, 1)) / h
    else:
        first = (-1.5 * narrow(f, d, 0, 1) + 2 * narrow(f, d, 1, 1) - 0.5 * narrow(f, d, 2, 1)) / h
        last = (0.5 * narrow(f, d, n - 3, 1) - 2 * narrow(f, d, n - 2, 1) + 1.5 * narrow(f, d, n - 1, 1)) / h
    return cat([first, center / 2, last], d)


def _coordinate_gradient(f: Tensor, x: Tensor, d: int, edge_order: int) -> Tensor:
    """``gradient`` along ``d`` for samples at the coordinates ``x`` (second-order accurate inside, as numpy's)."""
    n = f.shape[d]
    dx = diff(x)
    shape = [-1 if k == d else 1 for k in range(f.ndim)]
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * narrow(f, d, 0, n - 2) + b * narrow(f, d, 1, n - 2) + c * narrow(f, d, 2, n - 2)
    if edge_order == 1:
        first = (narrow(f, d, 1, 1) - narrow(f, d, 0, 1)) / dx[0]
        last = (narrow(f, d, n - 1, 1) - narrow(f, d, n - 2, 1)) / dx[-1]
    else:
        h0, h1 = dx[0], dx[1]
        first = (-(2.0 * h0 + h1) / (h0 * (h0 + h1)) * narrow(f, d, 0, 1) + (h0 + h1) / (h0 * h1) * narrow(f, d, 1, 1)
                 + (-h0) / (h1 * (h0 + h1)) * narrow(f, d, 2, 1))
        h0, h1 = dx[-2], dx[-1]
        last = (h1 / (h0 * (h1 + h0)) * narrow(f, d, n - 3, 1) - (h1 + h0) / (h1 * h0) * narrow(f, d, n - 2, 1)
                + (2 * h1 + h0) / (h1 * (h1 + h0)) * narrow(f, d, n - 1, 1))
    return cat([first, center, last], d)
