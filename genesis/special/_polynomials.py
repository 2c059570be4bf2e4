"""The classical orthogonal polynomials of ``genesis.special``, evaluated as torch evaluates them: Chebyshev's T, U, V
and W (and their shifted forms on [0, 1]), Hermite's H (physicists') and He (probabilists'), Laguerre's L and
Legendre's P.

Each takes ``(input, n)``, a tensor and a tensor or number, broadcast and promoted together (integers to the default
float dtype). As in torch, ``n`` is truncated to an integer and any ``n`` that is NaN, infinite or outside int64
counts as negative; every polynomial is 0 for negative ``n``, 1 for ``n = 0``, and otherwise comes from its three-term
recurrence, run per element up to its own ``n`` (a host read finds the longest), with torch's shortcuts: the exact
values at the ends of the Chebyshev interval, the trigonometric closed forms inside it for large ``n``, and NaN for
Hermite degrees above 512 (128 in float32). Like torch's, they have no derivative: results never require grad.
"""

from __future__ import annotations

import math
from typing import Callable

from genesis import dtypes
from genesis import ops as F
from genesis.autograd import no_grad
from genesis.special._common import _float_pair
from genesis.tensor import Tensor

# For each Chebyshev kind: n above which the trigonometric closed form replaces the recurrence inside (-1, 1)
# (plain, shifted), as torch's kernels choose.
_TRIG_FROM = {"t": (6, 6), "u": (8, 6), "v": (8, 6), "w": (8, 4)}


def _operands(op: str, input: Tensor | float, n: Tensor | float) -> tuple[Tensor, Tensor]:
    """``input`` and the degree ``n`` broadcast, in their promoted floating dtype, detached; ``n`` truncated, -1 where
    it is no int64."""
    x, n = _float_pair(op, input, n)
    x, n = F.broadcast_tensors(x.detach(), n.detach())
    return x, F.where(F.isfinite(n) & (n.abs() < 2.0**63), F.trunc(n), -1.0)


def _recurrence(n: Tensor, p: Tensor, q: Tensor, step: Callable[[float, Tensor, Tensor], Tensor]) -> Tensor:
    """The polynomial of degree ``n`` from those of degrees 0 and 1 (``p``, ``q``): ``n - 1`` steps
    ``(p, q) <- (q, step(k, p, q))`` for k = 1, 2, ..., each element stopping at its own ``n``. Every 64 steps a host
    read ends the loop early once every element still stepping is NaN (where it stays, as torch's loops stop there)."""
    steps = int(n.amax().item()) if n.numel() else 0
    for k in range(1, steps):
        active = n > k
        r = step(float(k), p, q)
        p, q = F.where(active, q, p), F.where(active, r, q)
        if k % 64 == 0 and not bool(((n > k + 1) & ~F.isnan(q)).any().item()):
            break
    return q


def _finish(n: Tensor, first: Tensor | float, value: Tensor) -> Tensor:
    """``value`` where ``n >= 2``, ``first`` (degree 1) where ``n == 1``, 1 where ``n == 0``, 0 where ``n < 0``."""
    out = F.where(n == 1, first, value)
    return F.where(n < 0, 0.0, F.where(n == 0, 1.0, out))


def _chebyshev(op: str, input: Tensor | float, n: Tensor | float, kind: str, shifted: bool) -> Tensor:
    """Chebyshev's T, U, V or W of degree ``n`` at ``y = x`` (or ``2x - 1`` for the shifted forms): all four share
    the recurrence ``P_{k+1} = 2y P_k - P_{k-1}`` from ``P_0 = 1`` and differ in ``P_1`` = y, 2y, 2y - 1, 2y + 1."""
    x, n = _operands(op, input, n)
    with no_grad():
        y = x + x - 1.0 if shifted else x
        first = {"t": y, "u": y + y, "v": y + y - 1.0, "w": y + y + 1.0}[kind]
        sign = F.where(F.remainder(n, 2.0) == 1, -1.0, 1.0)  # (-1)^n, the parity at y = -1
        # The exact values at y = +-1 (where torch returns them without the recurrence).
        at_one = {"t": 1.0, "u": n + 1.0, "v": 1.0, "w": n + n + 1.0}[kind]
        at_minus_one = sign * {"t": 1.0, "u": n + 1.0, "v": n + n + 1.0, "w": 1.0}[kind]
        # Inside (-1, 1), with theta = acos(y): T = cos(n theta), U = sin((n + 1) theta) / sin(theta),
        # V = cos((n + 1/2) theta) / cos(theta / 2), W = sin((n + 1/2) theta) / sin(theta / 2); where the half-angle
        # denominator rounds to 0, the limit at the nearer end.
        theta = F.acos(y)
        if kind == "t":
            closed = F.cos(n * theta)
        elif kind == "u":
            closed = F.sin((n + 1.0) * theta) / F.sin(theta)
        elif kind == "v":
            closed = F.where(F.sin(theta / 2.0) != 1, F.cos((n + 0.5) * theta) / F.cos(theta / 2.0), at_minus_one)
        else:
            closed = F.where(F.cos(theta / 2.0) != 1, F.sin((n + 0.5) * theta) / F.sin(theta / 2.0), at_one)
        use_closed = (y.abs() < 1) & (n > _TRIG_FROM[kind][shifted])
        ends = y.abs() == 1
        value = _recurrence(F.where(use_closed | ends, 0.0, n), F.ones_like(y), first,
                            lambda k, p, q: (y + y) * q - p)
        out = _finish(n, first, value)
        out = F.where(use_closed, closed, out)
        return F.where(ends & (n >= 0), F.where(y > 0, at_one, at_minus_one), out)


def chebyshev_polynomial_t(input: Tensor | float, n: Tensor | float) -> Tensor:
    """Chebyshev polynomial of the first kind ``T_n(input)``."""
    return _chebyshev("chebyshev_polynomial_t", input, n, "t", False)


def chebyshev_polynomial_u(input: Tensor | float, n: Tensor | float) -> Tensor:
    """Chebyshev polynomial of the second kind ``U_n(input)``."""
    return _chebyshev("chebyshev_polynomial_u", input, n, "u", False)


def chebyshev_polynomial_v(input: Tensor | float, n: Tensor | float) -> Tensor:
    """Chebyshev polynomial of the third kind ``V_n(input)``."""
    return _chebyshev("chebyshev_polynomial_v", input, n, "v", False)


def chebyshev_polynomial_w(input: Tensor | float, n: Tensor | float) -> Tensor:
    """Chebyshev polynomial of the fourth kind ``W_n(input)``."""
    return _chebyshev("chebyshev_polynomial_w", input, n, "w", False)


def shifted_chebyshev_polynomial_t(input: Tensor | float, n: Tensor | float) -> Tensor:
    """Shifted Chebyshev polynomial of the first kind ``T*_n(input) = T_n(2 input - 1)``."""
    return _chebyshev("shifted_chebyshev_polynomial_t", input, n, "t", True)


def shifted_chebyshev_polynomial_u(input: Tensor | float, n: Tensor | float) -> Tensor:
    """Shifted Chebyshev polynomial of the second kind ``U*_n(input) = U_n(2 input - 1)``."""
    return _chebyshev("shifted_chebyshev_polynomial_u", input, n, "u", True)


def shifted_chebyshev_polynomial_v(input: Tensor | float, n: Tensor | float) -> Tensor:
    """Shifted Chebyshev polynomial of the third kind ``V*_n(input) = V_n(2 input - 1)``."""
    return _chebyshev("shifted_chebyshev_polynomial_v", input, n, "v", True)


def shifted_chebyshev_polynomial_w(input: Tensor | float, n: Tensor | float) -> Tensor:
    """Shifted Chebyshev polynomial of the fourth kind ``W*_n(input) = W_n(2 input - 1)``."""
    return _chebyshev("shifted_chebyshev_polynomial_w", input, n, "w", True)


def _hermite(op: str, input: Tensor | float, n: Tensor | float, physicists: bool) -> Tensor:
    """``H_{k+1} = 2x H_k - 2k H_{k-1}`` from ``H_1 = 2x``, or ``He_{k+1} = x He_k - k He_{k-1}`` from ``He_1 = x``;
    NaN above torch's degree limit, 512 (128 in float32)."""
    x, n = _operands(op, input, n)
    with no_grad():
        limit = 128 if x.dtype == dtypes.float32 else 512
        too_high = n > limit
        if physicists:
            first, step = x + x, (lambda k, p, q: (x + x) * q - (k + k) * p)
        else:
            first, step = x, (lambda k, p, q: x * q - k * p)
        out = _finish(n, first, _recurrence(F.where(too_high, 0.0, n), F.ones_like(x), first, step))
        return F.where(too_high, math.nan, out)


def hermite_polynomial_h(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The physicists' Hermite polynomial ``H_n(input)``."""
    return _hermite("hermite_polynomial_h", input, n, True)


def hermite_polynomial_he(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The probabilists' Hermite polynomial ``He_n(input)``."""
    return _hermite("hermite_polynomial_he", input, n, False)


def laguerre_polynomial_l(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Laguerre polynomial ``L_n(input)``: ``(k + 1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}``; 1 at 0."""
    x, n = _operands("laguerre_polynomial_l", input, n)
    with no_grad():
        first = 1.0 - x
        value = _recurrence(F.where(x == 0, 0.0, n), F.ones_like(x), first,
                            lambda k, p, q: ((k + k + first) * q - k * p) / (k + 1.0))
        out = _finish(n, first, value)
        return F.where((x == 0) & (n >= 0), 1.0, out)


def legendre_polynomial_p(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Legendre polynomial ``P_n(input)``: ``(k + 1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}``; +-1 at +-1."""
    x, n = _operands("legendre_polynomial_p", input, n)
    with no_grad():
        ends = x.abs() == 1
        value = _recurrence(F.where(ends, 0.0, n), F.ones_like(x), x,
                            lambda k, p, q: ((k + k + 1.0) * x * q - k * p) / (k + 1.0))
        out = _finish(n, x, value)
        parity = F.where(F.remainder(n, 2.0) == 1, -1.0, 1.0)
        return F.where(ends & (n >= 0), F.where(x > 0, 1.0, parity), out)
