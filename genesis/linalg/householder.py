"""``linalg.householder_product`` (LAPACK's orgqr): the explicit matrix of a product of Householder reflections,
as ``geqrf`` stores them, written over Genesis ops so it runs on every device and has autograd."""

from __future__ import annotations

from genesis import ops as F
from genesis.tensor import Tensor


def _check_householder_product(A: Tensor, tau: Tensor) -> None:
    """torch's argument checks, with its messages."""
    op = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {A.dtype.name}")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {A.ndim}")
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tau.dtype != A.dtype:
        raise RuntimeError(f"{op}: tau dtype {tau.dtype.name} does not match input dtype {A.dtype.name}")


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of ``H_1 H_2 ... H_k`` for (..., m, n) ``A`` and (..., k) ``tau``, m >= n >= k.

    ``H_i = I - tau_i v_i v_i^H`` is the Householder reflection whose vector ``v_i`` is column i of ``A`` below the
    diagonal, with an implicit 1 on the diagonal and zeros above (the layout of ``geqrf``; what is on and above
    the diagonal of ``A`` is not read). The reflections are applied to the first n columns of the identity, last
    one first: k rank-one updates, differentiable in ``A`` and ``tau``.

    Args:
        A: (..., m, n) floating-point or complex matrices holding the reflection vectors.
        tau: (..., k) their scales, with A's dtype and batch dimensions.

    Returns:
        (..., m, n): orthonormal columns when every ``tau_i = 2 / |v_i|^2`` (or 0: no reflection).
    """
    _check_householder_product(A, tau)
    m, n = A.shape[-2], A.shape[-1]
    rows = F.arange_like(m, A).unsqueeze(-1)  # (m, 1)
    cols = F.arange_like(n, A).unsqueeze(0)  # (1, n)
    eye = (rows == cols).to(A.dtype)  # (m, n)
    V = F.where(rows > cols, A, eye)  # (..., m, n): column i is v_i
    if tau.shape[-1] == 0:  # no reflection: the identity, attached to A's graph with a zero gradient (as torch)
        return F.where(F.ones_like_bool(A), eye, A)
    Q = eye.expand(A.shape)
    for i in reversed(range(tau.shape[-1])):
        v = V[..., :, i:i + 1]  # (..., m, 1)
        Q = Q - (tau[..., i:i + 1].unsqueeze(-1) * v) @ (v.mH @ Q)
    return Q
