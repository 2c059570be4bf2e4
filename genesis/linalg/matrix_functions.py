"""Matrix functions and products over Genesis ops: integer powers, the exponential, chained products and
Vandermonde matrices; each differentiable, on every device."""

from __future__ import annotations

import math

from genesis import dtypes
from genesis import ops as F
from genesis.linalg.solvers import _check_square, inv
from genesis.tensor import Tensor


def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times (the identity for n = 0, powers of the inverse for n < 0)."""
    _check_square("linalg.matrix_power", A)
    if n < 0:
        return matrix_power(inv(A), -n)
    size = A.shape[-1]
    result = None
    base = A
    # Binary exponentiation: log2(n) squarings.
    while n:
        if n & 1:
            result = base if result is None else F.matmul(result, base)
        n >>= 1
        if n:
            base = F.matmul(base, base)
    if result is None:
        eye = (F.arange_like(size, A).unsqueeze(1) == F.arange_like(size, A).unsqueeze(0)).to(A.dtype)
        # The identity, attached to A's graph with a zero gradient (as torch).
        return F.where(F.ones_like_bool(A), eye, A)
    return result.clone() if result is A else result


def multi_dot(tensors: list[Tensor]) -> Tensor:
    """The product of a chain of matrices; the first may be a 1-d row vector and the last a 1-d column vector."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            raise RuntimeError(f"multi_dot(): tensor {i} must be {'1D or 2D' if len(allowed) == 2 else '2D'} but "
                               f"got {t.ndim}D")
    first, last = tensors[0], tensors[-1]
    chain = [first.unsqueeze(0) if first.ndim == 1 else first, *tensors[1:-1],
             last.unsqueeze(1) if last.ndim == 1 else last]
    out = chain[0]
    for t in chain[1:]:
        out = F.mm(out, t)
    if last.ndim == 1:
        out = out.squeeze(1)
    if first.ndim == 1:
        out = out.squeeze(0)
    return out


def matrix_exp(A: Tensor) -> Tensor:
    """Matrix exponential of (..., n, n) matrices by scaling and squaring of a Taylor series.

    A is scaled by 2^-s until its 1-norm is at most 1/2, the series summed to a degree whose remainder is below
    the dtype's precision (18 terms in float64, 10 otherwise), and the result squared s times; differentiable.
    """
    _check_square("linalg.matrix_exp", A)
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point tensor as input. Got {A.dtype.name}")
    n = A.shape[-1]
    eye = (F.arange_like(n, A).unsqueeze(1) == F.arange_like(n, A).unsqueeze(0)).to(A.dtype)
    if A.numel() == 0:
        return A.clone()
    norm = float(F.amax(F.sum(A.detach().abs(), -2)).item())
    squarings = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    X = A / (2 ** squarings) if squarings else A
    result = eye + X
    term = X
    for k in range(2, 19 if A.dtype is dtypes.float64 else 11):
        term = F.matmul(term, X) / k
        result = result + term
    for _ in range(squarings):
        result = F.matmul(result, result)
    return result


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """Vandermonde matrices ``x[..., i] ** j`` for j < N (default the last dim's size), batched over leading dims."""
    if x.ndim == 0:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError(f"linalg.vander: N must be greater than 1, got {n}")
    if not x.dtype.is_floating_point:
        x = x.to(dtypes.int64)
    ones = F.where(F.ones_like_bool(x), 1, x).unsqueeze(-1)
    # Running products keep the gradient finite at x == 0, unlike x ** j.
    return F.cat([ones, x.unsqueeze(-1).expand((*x.shape, n - 1))], -1).cumprod(-1)
