"""Eigendecomposition of general (non-symmetric) matrices: ``eig`` and ``eigvals``, with torch's analytic gradient.

The decomposition is the backend's ``eig`` primitive (LAPACK's geev on the CPU): complex eigenvalues and unit-norm
eigenvectors whose largest component is real, as torch's. The backward is torch's formula (``linalg_eig_backward``),
written in Genesis ops, so it can be differentiated again (double backward, forward-mode AD).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from genesis import dtypes
from genesis import ops as F
from genesis.autograd import Primitive
from genesis.linalg.solvers import _check_square, solve
from genesis.ndarray import NDArray
from genesis.ops.autocast import one_op
from genesis.tensor import Tensor

_EIG_DTYPES = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)
#: torch's tolerance on the imaginary part of ``diag(V^H gV)``, a loss's dependence on the eigenvectors' phases.
_GAUGE_TOLERANCE = 1e-2


def _solve_complex(M: Tensor, B: Tensor) -> Tensor:
    """X with ``M X = B`` for complex M and B, as the real system ``[[P, -Q], [Q, P]] [x; y] = [b; c]`` of
    ``M = P + iQ``, ``X = x + iy``, ``B = b + ic`` (differentiable, as ``linalg.solve``)."""
    P, Q, n = F.real(M), F.imag(M), M.shape[-1]
    block = F.cat([F.cat([P, -Q], -1), F.cat([Q, P], -1)], -2)
    X = solve(block, F.cat([F.real(B), F.imag(B)], -2))
    return F.complex(X[..., :n, :], X[..., n:, :])


def _eig_backward(L: Tensor, V: Tensor, gL: Tensor | None, gV: Tensor | None) -> Tensor:
    """torch's gradient of ``A = V diag(L) V^-1``: ``gA = V^-H (diag(gL) + G / conj(L_j - L_i) off the diagonal)
    V^H`` with ``G = V^H gV - V^H V diag(Re(V^H gV))``, gV projected so that the eigenvectors keep unit norm.

    RuntimeError, as torch, where the loss depends on the eigenvectors' phases (``Im diag(V^H gV)`` not ~0): the
    eigenvectors are defined only up to such a phase."""
    Vh = V.mH
    n = L.shape[-1]
    rows = F.arange_like(n, L.real)
    diagonal = rows.unsqueeze(1) == rows.unsqueeze(0)
    inner = F.zeros_like_detached(V)
    if gV is not None:
        VhgV = Vh @ gV
        diag = VhgV.diagonal(0, -2, -1)
        if diag.numel() and bool((F.imag(diag).abs() > _GAUGE_TOLERANCE).any().item()):
            raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                               "multiplication by e^{i phi}. The specified loss function depends on this quantity, "
                               "so it is ill-defined.")
        inner = VhgV - Vh @ (V * F.real(diag).unsqueeze(-2))
        gap = F.conj(L.unsqueeze(-2) - L.unsqueeze(-1))  # conj(L_j - L_i)
        inner = F.where(diagonal, 0.0, inner / F.where(diagonal, 1.0, gap))
    if gL is not None:
        inner = inner + F.diag_embed(gL.to(V.dtype))
    return _solve_complex(Vh, inner @ Vh)


class _Eig(Primitive):
    """The backend's eigendecomposition, with torch's analytic gradient."""

    @staticmethod
    def forward(ctx: Any, A: NDArray) -> tuple[NDArray, NDArray]:
        values, vectors = A.backend.eig(A)
        ctx.real_input = not A.dtype.is_complex
        ctx.save_for_backward(values, vectors)
        return values, vectors

    @staticmethod
    def backward(ctx: Any, grad_values: Tensor | None, grad_vectors: Tensor | None) -> Tensor:
        values, vectors = ctx.saved_tensors
        gA = _eig_backward(values, vectors, grad_values, grad_vectors)
        return F.real(gA) if ctx.real_input else gA


class EigResult(NamedTuple):
    """(eigenvalues, eigenvectors) with attribute access, as torch.return_types.linalg_eig."""

    eigenvalues: Tensor
    eigenvectors: Tensor


def _check_eig(op: str, A: Tensor) -> None:
    _check_square(op, A)
    if A.dtype not in _EIG_DTYPES:
        if A.dtype.is_floating_point:
            raise NotImplementedError(f"{op}: not implemented for {A.dtype.name}; use float32, float64, complex64 or "
                                      "complex128")
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {A.dtype.name}")


@one_op("linalg_eig")
def eig(A: Tensor) -> EigResult:
    """Eigenvalues and eigenvectors of square (..., n, n) matrices, ``A = V diag(L) V^-1``, both complex (complex64
    for float32 input, complex128 for float64).

    The eigenvalues are in LAPACK's order, not sorted; each eigenvector (a column of V) has unit 2-norm and its
    largest-magnitude component real, as torch's. The gradient is torch's; it needs distinct eigenvalues, and a loss
    that does not depend on the eigenvectors' phases (else RuntimeError, as torch).
    """
    _check_eig("linalg.eig", A)
    return EigResult(*_Eig.apply(A))


@one_op("linalg_eigvals")
def eigvals(A: Tensor) -> Tensor:
    """Eigenvalues (complex) of square (..., n, n) matrices; see ``eig``. Differentiable where they are distinct."""
    _check_eig("linalg.eigvals", A)
    return _Eig.apply(A)[0]
