"""LDL factorization of symmetric or Hermitian (possibly indefinite) matrices: ``ldl_factor``, ``ldl_factor_ex``
and ``ldl_solve``, as torch.linalg's.

Both run on the backend's ``ldl_factor`` and ``ldl_solve`` primitives (LAPACK's Bunch-Kaufman sytrf / sytrs on the
CPU), so the compact factor and its pivots are LAPACK's, as torch's. As in torch, neither has a derivative: their
outputs require grad when an input does, and backpropagating through them raises RuntimeError.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from genesis import dtypes
from genesis import ops as F
from genesis.autograd import Primitive
from genesis.linalg.solvers import _check_info, _check_square
from genesis.ndarray import NDArray, broadcast_shapes
from genesis.tensor import Tensor

_LDL_DTYPES = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


class _NotDifferentiable(Primitive):
    """An op torch defines no derivative for: its backward raises torch's error."""

    kernel_name = ""

    @classmethod
    def backward(cls, ctx: Any, *grads: Any) -> tuple:
        raise RuntimeError(f"derivative for aten::{cls.kernel_name} is not implemented")


class _LdlFactor(_NotDifferentiable):
    kernel_name = "linalg_ldl_factor_ex"

    @staticmethod
    def forward(ctx: Any, A: NDArray, hermitian: bool) -> tuple[NDArray, NDArray, NDArray]:
        LD, pivots, info = A.backend.ldl_factor(A, hermitian)
        ctx.mark_non_differentiable(pivots, info)
        return LD, pivots, info


class _LdlSolve(_NotDifferentiable):
    kernel_name = "linalg_ldl_solve"

    @staticmethod
    def forward(ctx: Any, LD: NDArray, pivots: NDArray, B: NDArray, hermitian: bool) -> NDArray:
        return LD.backend.ldl_solve(LD, pivots, B, hermitian)


class LDLFactorResult(NamedTuple):
    """(LD, pivots), as torch.return_types.linalg_ldl_factor."""

    LD: Tensor
    pivots: Tensor


class LDLFactorExResult(NamedTuple):
    """(LD, pivots, info), as torch.return_types.linalg_ldl_factor_ex."""

    LD: Tensor
    pivots: Tensor
    info: Tensor


def _check_dtype(op: str, A: Tensor) -> None:
    if A.dtype in _LDL_DTYPES:
        return
    if A.dtype.is_floating_point:
        raise NotImplementedError(f"{op}: not implemented for {A.dtype.name}; use float32, float64, complex64 or "
                                  "complex128")
    raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {A.dtype.name}")


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> LDLFactorExResult:
    """``ldl_factor`` with LAPACK's info: (LD, pivots, info), info int32 per matrix, 0 or the 1-based index of the
    first exactly zero diagonal entry of D (the factorization is still complete, but D is singular). No host
    synchronization unless ``check_errors``, which raises RuntimeError for a non-zero info."""
    op = "torch.linalg.ldl_factor_ex"
    _check_dtype(op, A)
    _check_square(op, A)
    LD, pivots, info = _LdlFactor.apply(A, bool(hermitian))
    if check_errors:
        _check_info(op, info, _singular_d, RuntimeError)
    return LDLFactorExResult(LD, pivots, info)


def _singular_d(code: int) -> str:
    return f"The factorization could not be completed because D[{code}, {code}] is exactly zero (D is singular)."


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> LDLFactorResult:
    """Compact Bunch-Kaufman factorization ``A = P L D L^T P^T`` (``L D L^H`` with ``hermitian=True``) of symmetric
    or Hermitian, possibly indefinite, (..., n, n) matrices, read from the lower triangle; (LD, pivots) as LAPACK's
    sytrf (hetrf) and torch.

    LD holds L's multipliers below the diagonal and D's 1x1 and 2x2 blocks on and below it (zeros above). pivots
    (int32, 1-based): ``pivots[k] > 0`` is a 1x1 block after rows and columns k and ``pivots[k]`` swapped; two equal
    negative entries ``pivots[k] = pivots[k + 1] = -p`` a 2x2 block after rows and columns k + 1 and p swapped.
    RuntimeError where D has an exactly zero diagonal entry. Not differentiable (as torch's).
    """
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    _check_info("torch.linalg.ldl_factor", info, _singular_d, RuntimeError)
    return LDLFactorResult(LD, pivots)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """X with ``A X = B`` from ``ldl_factor``'s (LD, pivots) of A, for B (..., n, k); the batch dims of LD, pivots
    and B broadcast. ``hermitian`` must be what ``ldl_factor`` was given. Not differentiable (as torch's)."""
    op = "torch.linalg.ldl_solve"
    if LD.ndim < 2:
        raise RuntimeError(f"{op}: LD should have at least 2 dimensions, but has {LD.ndim} dimensions instead")
    _check_square(op, LD)
    if B.ndim < 2:
        raise IndexError(f"{op}: B should have at least 2 dimensions, but has {B.ndim} dimensions instead")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with "
                           f"shape {list(pivots.shape)} instead")
    if pivots.dtype.is_floating_point or pivots.dtype.is_complex or pivots.dtype is dtypes.bool_:
        raise RuntimeError(f"{op}: Expected pivots to be integers. Got {pivots.dtype.name}")
    if LD.dtype is not B.dtype:
        raise RuntimeError(f"Expected B and LD to have the same dtype, but found B of type {B.dtype.name} and LD of "
                           f"type {LD.dtype.name} instead.")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {op}: each LD matrix is {n} by {n} but each B matrix is "
                           f"{B.shape[-2]} by {B.shape[-1]}")
    _check_dtype(op, LD)
    batch = broadcast_shapes(op, tuple(LD.shape[:-2]), tuple(B.shape[:-2]))
    LD = F.broadcast_to(LD, (*batch, n, n))
    pivots = F.broadcast_to(pivots.to(dtypes.int32), (*batch, n))
    B = F.broadcast_to(B, (*batch, *B.shape[-2:]))
    return _LdlSolve.apply(LD, pivots, B, bool(hermitian))
