"""``genesis.svd_lowrank`` and ``genesis.pca_lowrank`` (torch's randomized algorithms) against torch.

The random projections differ between the libraries, so the tests use inputs whose rank is at most ``q``, where the
randomized decomposition is exact: singular values, the spanned subspaces (projectors, free of the singular vectors'
signs), the reconstruction and the gradient of the singular values match torch's; shapes and dtypes too.
"""

import pytest
import torch

import genesis
from tests.helpers import assert_same, check, check_error, rand, to_genesis, to_torch


def _low_rank(m: int, n: int, rank: int, *batch: int, dtype: torch.dtype = torch.float64, seed: int = 0
              ) -> torch.Tensor:
    """A (..., m, n) matrix of the given rank."""
    x = rand(*batch, m, rank, requires_grad=False, seed=seed)
    y = rand(*batch, rank, n, requires_grad=False, seed=seed + 1)
    return (x @ y).to(dtype).requires_grad_()


def _projector(X: torch.Tensor) -> torch.Tensor:
    """The orthogonal projector onto the span of X's columns (independent of their signs and rotation)."""
    return X @ X.mT


def _compare(g: tuple, t: tuple, A: torch.Tensor, rtol: float = 1e-9, atol: float = 1e-9) -> None:
    """Genesis's (U, S, V) against torch's for an input of rank <= q: shapes, dtypes, values up to signs."""
    U, S, V = (to_torch(x) for x in g)
    tU, tS, tV = (x.detach() for x in t)
    for name, mine, theirs in (("U", U, tU), ("S", S, tS), ("V", V, tV)):
        assert mine.shape == theirs.shape and mine.dtype == theirs.dtype, f"{name}: {mine.shape} {mine.dtype}"
    torch.testing.assert_close(S, tS, rtol=rtol, atol=atol)
    torch.testing.assert_close(_projector(U), _projector(tU), rtol=rtol, atol=atol)
    torch.testing.assert_close(_projector(V), _projector(tV), rtol=rtol, atol=atol)
    torch.testing.assert_close(U @ torch.diag_embed(S) @ V.mT, A.detach(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("niter", [0, 2])
@pytest.mark.parametrize("shape", [(8, 5), (4, 9), (2, 7, 6), (2, 3, 6, 10)])
def test_svd_lowrank_is_exact_on_low_rank_inputs(shape: tuple, niter: int) -> None:
    A = _low_rank(*shape[-2:], 3, *shape[:-2])
    genesis.manual_seed(0)
    _compare(genesis.svd_lowrank(to_genesis(A), q=3, niter=niter), torch.svd_lowrank(A, q=3, niter=niter), A)


def test_svd_lowrank_with_more_columns_than_the_rank() -> None:
    """The default q = 6 on a rank-2 input: the extra singular values are zero, the reconstruction exact."""
    A = _low_rank(9, 7, 2)
    U, S, V = (to_torch(x) for x in genesis.svd_lowrank(to_genesis(A)))
    t_S = torch.svd_lowrank(A)[1].detach()
    assert U.shape == (9, 6) and S.shape == (6,) and V.shape == (7, 6)
    torch.testing.assert_close(S, t_S, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(U @ torch.diag(S) @ V.mT, A.detach(), rtol=1e-9, atol=1e-9)


def test_svd_lowrank_subtracts_M() -> None:
    low = _low_rank(8, 6, 2, 2)
    M = rand(1, 6, requires_grad=False, seed=3)  # broadcast to A's shape, as torch
    A = (low + M).detach().requires_grad_()
    genesis.manual_seed(0)
    g = genesis.svd_lowrank(to_genesis(A), q=2, M=to_genesis(M))
    _compare(g, torch.svd_lowrank(A, q=2, M=M), low)


@pytest.mark.parametrize("shape", [(10, 4), (5, 8), (2, 9, 6)])
def test_pca_lowrank_of_centered_low_rank_data(shape: tuple) -> None:
    offset = rand(*shape[:-2], 1, shape[-1], requires_grad=False, seed=4)
    A = (_low_rank(*shape[-2:], 3, *shape[:-2]) + offset).detach().requires_grad_()
    genesis.manual_seed(0)
    centered = A.detach() - A.detach().mean(-2, keepdim=True)
    _compare(genesis.pca_lowrank(to_genesis(A), q=3), torch.pca_lowrank(A, q=3), centered)


def test_pca_lowrank_defaults_and_center_false() -> None:
    A = _low_rank(7, 4, 3)
    U, S, V = genesis.pca_lowrank(to_genesis(A))  # q = min(6, m, n) = 4
    t_U, t_S, t_V = torch.pca_lowrank(A)
    assert (U.shape, S.shape, V.shape) == (t_U.shape, t_S.shape, t_V.shape)
    _compare(genesis.pca_lowrank(to_genesis(A), q=3, center=False), torch.pca_lowrank(A, q=3, center=False), A)


def test_lowrank_in_float32() -> None:
    A = _low_rank(8, 6, 3, dtype=torch.float32)
    _compare(genesis.svd_lowrank(to_genesis(A), q=3), torch.svd_lowrank(A, q=3), A, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("niter", [0, 2])
@pytest.mark.parametrize("shape", [(8, 6), (5, 9)])
def test_gradient_of_the_singular_values(shape: tuple, niter: int) -> None:
    """For rank(A) = q the singular values are those of A, and so is their gradient ``u_i v_i^T``, whatever the
    random projection."""
    A = _low_rank(*shape, 3, 2)
    check(lambda lib, a: lib.svd_lowrank(a, q=3, niter=niter)[1], A)
    offset = rand(2, 1, shape[1], requires_grad=False, seed=5)
    check(lambda lib, a: lib.pca_lowrank(a, q=3, niter=niter)[1], (A + offset).detach().requires_grad_())


def test_the_random_projection_follows_genesis_seed() -> None:
    A = to_genesis(rand(6, 5, requires_grad=False))  # full rank: the result depends on the projection
    genesis.manual_seed(3)
    first = genesis.svd_lowrank(A, q=2, niter=0)
    genesis.manual_seed(3)
    second = genesis.svd_lowrank(A, q=2, niter=0)
    for x, y in zip(first, second):
        assert_same(x, to_torch(y))


@pytest.mark.parametrize("q, niter", [(5, 2), (-1, 2), (2, -1)])
def test_pca_lowrank_bad_arguments(q: int, niter: int) -> None:
    check_error(ValueError, lambda lib, a: lib.pca_lowrank(a, q=q, niter=niter), rand(6, 4))
