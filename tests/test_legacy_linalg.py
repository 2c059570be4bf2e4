"""torch's older linear-algebra spellings (``svd`` returning V, ``qr(some)``, ``cholesky(upper)``,
``triangular_solve``, ``lu`` / ``lu_solve`` / ``lu_unpack``, ``chain_matmul``) and their Tensor methods against torch:
values, gradients, return types, warnings and errors."""

import warnings

import pytest
import torch

import genesis
from tests.helpers import assert_same, check, check_error, rand, to_genesis, to_torch


def _quiet(fn):
    """``fn(lib, ...)`` with the deprecation warnings both libraries emit silenced."""
    def call(lib, *args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(lib, *args)
    return call


def _spd(n: int, *batch: int) -> torch.Tensor:
    m = rand(*batch, n, n, requires_grad=False)
    return (m @ m.mT + n * torch.eye(n, dtype=torch.float64)).requires_grad_()


def _well_conditioned(*shape: int) -> torch.Tensor:
    a = rand(*shape, requires_grad=False)
    return (a + 3 * torch.eye(shape[-2], shape[-1], dtype=torch.float64)).requires_grad_()


# ------------------------------------------------------------------ svd


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 4), (3, 1)])
@pytest.mark.parametrize("some", [True, False])
def test_svd_factors_reconstruct_the_matrix(shape: tuple, some: bool) -> None:
    x = rand(*shape, requires_grad=False)
    U, S, V = genesis.svd(to_genesis(x), some=some)
    tU, tS, tV = torch.svd(x, some=some)
    assert (tuple(U.shape), tuple(S.shape), tuple(V.shape)) == (tuple(tU.shape), tuple(tS.shape), tuple(tV.shape))
    assert_same(S, tS)
    k = min(shape[-2:])
    u, v = to_torch(U), to_torch(V)
    torch.testing.assert_close((u[..., :k] * to_torch(S).unsqueeze(-2)) @ v[..., :k].mT, x)
    # Singular vectors are defined up to sign: compare the orthogonal matrices up to the sign of each column.
    for q in (u, v):
        gram = q.mT @ q
        torch.testing.assert_close(gram, torch.eye(q.shape[-1], dtype=torch.float64).expand(gram.shape), atol=1e-9,
                                   rtol=0)
    torch.testing.assert_close(u[..., :k].abs(), tU[..., :k].abs())
    torch.testing.assert_close(v[..., :k].abs(), tV[..., :k].abs())


def test_svd_gradient_of_sign_invariant_quantities() -> None:
    # U diag(S) V^T and S do not depend on the signs of the singular vectors.
    x = rand(4, 3)
    check(lambda lib, a: lib.svd(a)[1], x)
    check(lambda lib, a: (lambda f: f.U @ lib.diag_embed(f.S) @ f.V.mT)(lib.svd(a)), x)
    check(lambda lib, a: (lambda f: f[0] @ lib.diag_embed(f[1]) @ f[2].mT)(a.svd()), rand(3, 5))


def test_svd_without_vectors() -> None:
    x = rand(2, 4, 3)
    check(lambda lib, a: lib.svd(a, compute_uv=False), x)
    U, S, V = genesis.svd(to_genesis(x), compute_uv=False)
    assert not bool(U.any()) and not bool(V.any()) and tuple(U.shape) == (2, 4, 4) and tuple(V.shape) == (2, 3, 3)


def test_svd_result_fields_and_errors() -> None:
    result = genesis.svd(to_genesis(rand(3, 2)))
    assert type(result)._fields == torch.return_types.svd.__match_args__
    check_error(RuntimeError, lambda lib, a: lib.svd(a), rand(3))
    check_error(RuntimeError, lambda lib, a: lib.svd(a), torch.ones(2, 2, dtype=torch.int64))


# ------------------------------------------------------------------ qr, cholesky


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 2)])
def test_qr(shape: tuple) -> None:
    check(_quiet(lambda lib, a: lib.qr(a)), rand(*shape))
    check(_quiet(lambda lib, a: a.qr(some=False)), rand(*shape), backward=shape[-2] <= shape[-1])


def test_qr_result_and_errors() -> None:
    with pytest.warns(UserWarning, match="torch.linalg.qr"):
        result = genesis.qr(to_genesis(rand(3, 2)))
    assert type(result)._fields == torch.return_types.qr.__match_args__
    check_error(RuntimeError, _quiet(lambda lib, a: lib.qr(a)), rand(3))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper: bool) -> None:
    check(_quiet(lambda lib, a: lib.cholesky(a, upper)), _spd(4))
    check(_quiet(lambda lib, a: a.cholesky(upper=upper)), _spd(3, 2))


def test_cholesky_errors() -> None:
    with pytest.warns(UserWarning, match="torch.linalg.cholesky"):
        genesis.cholesky(to_genesis(_spd(2)))
    with pytest.raises(torch.linalg.LinAlgError):
        _quiet(lambda lib, a: lib.cholesky(a))(torch, -torch.eye(2, dtype=torch.float64))
    with pytest.raises(genesis.linalg.LinAlgError):
        _quiet(lambda lib, a: lib.cholesky(a))(genesis, to_genesis(-torch.eye(2, dtype=torch.float64)))
    check_error(RuntimeError, _quiet(lambda lib, a: lib.cholesky(a)), rand(2, 3))


# ------------------------------------------------------------------ triangular_solve


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("unitriangular", [False, True])
def test_triangular_solve(upper: bool, transpose: bool, unitriangular: bool) -> None:
    check(_quiet(lambda lib, b, a: lib.triangular_solve(b, a, upper, transpose, unitriangular)), rand(3, 2),
          _well_conditioned(3, 3))


def test_triangular_solve_broadcasts_and_copies_the_coefficient() -> None:
    check(_quiet(lambda lib, b, a: lib.triangular_solve(b, a)), rand(2, 3, 2), _well_conditioned(3, 3))
    check(_quiet(lambda lib, b, a: b.triangular_solve(a, upper=False)), rand(3, 1), _well_conditioned(2, 3, 3))
    result = _quiet(lambda lib, b, a: lib.triangular_solve(b, a))(genesis, to_genesis(rand(3, 2)),
                                                                  to_genesis(_well_conditioned(3, 3)))
    assert type(result)._fields == torch.return_types.triangular_solve.__match_args__


def test_triangular_solve_errors() -> None:
    solve = _quiet(lambda lib, b, a: lib.triangular_solve(b, a))
    check_error(RuntimeError, solve, rand(3), _well_conditioned(3, 3))
    check_error(RuntimeError, solve, rand(4, 2), _well_conditioned(3, 3))
    check_error(RuntimeError, solve, rand(3, 2), rand(3, 4))
    check_error(RuntimeError, solve, rand(3, 2).float(), _well_conditioned(3, 3))
    check_error(NotImplementedError, solve, torch.ones(3, 2, dtype=torch.int64), torch.ones(3, 3, dtype=torch.int64))
    with pytest.warns(UserWarning, match="solve_triangular"):
        genesis.triangular_solve(to_genesis(rand(2, 1)), to_genesis(_well_conditioned(2, 2)))


# ------------------------------------------------------------------ lu, lu_solve, lu_unpack


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 5), (2, 4, 4)])
def test_lu(shape: tuple) -> None:
    check(_quiet(lambda lib, a: lib.lu(a)), rand(*shape))
    check(_quiet(lambda lib, a: a.lu(get_infos=True)), rand(*shape))


def test_lu_of_singular_matrices_reports_infos() -> None:
    singular = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64)
    check(_quiet(lambda lib, a: lib.lu(a, get_infos=True)), singular, backward=False)
    check(_quiet(lambda lib, a: lib.lu(a, True, True)), torch.zeros(2, 3, 3, dtype=torch.float64), backward=False)
    result = _quiet(lambda lib, a: lib.lu(a, get_infos=True))(genesis, to_genesis(singular))
    assert type(result)._fields == torch.return_types._lu_with_info.__match_args__
    plain = _quiet(lambda lib, a: lib.lu(a))(genesis, to_genesis(singular))
    assert type(plain) is tuple and len(plain) == 2


def test_lu_errors_and_warning() -> None:
    check_error(RuntimeError, _quiet(lambda lib, a: lib.lu(a)), rand(3))
    check_error(NotImplementedError, _quiet(lambda lib, a: lib.lu(a)), torch.ones(3, 3, dtype=torch.int64))
    with pytest.warns(UserWarning, match="lu_factor"):
        genesis.lu(to_genesis(rand(2, 2)))


def _factors(*shape: int) -> tuple[torch.Tensor, torch.Tensor]:
    LU, pivots = torch.linalg.lu_factor(_well_conditioned(*shape).detach())
    return LU.requires_grad_(), pivots


@pytest.mark.parametrize("b_shape, a_shape", [((3, 2), (3, 3)), ((2, 4, 1), (2, 4, 4)), ((2, 3, 2), (3, 3)),
                                              ((3, 3), (2, 3, 3))])
def test_lu_solve(b_shape: tuple, a_shape: tuple) -> None:
    LU, pivots = _factors(*a_shape)
    check(_quiet(lambda lib, b, lu, p: lib.lu_solve(b, lu, p)), rand(*b_shape), LU, pivots)
    check(_quiet(lambda lib, b, lu, p: b.lu_solve(lu, p)), rand(*b_shape), LU, pivots)


def test_lu_solve_solves_the_factored_system() -> None:
    A, b = _well_conditioned(4, 4).detach(), rand(4, 3, requires_grad=False)
    LU, pivots = _quiet(lambda lib, a: lib.lu(a))(genesis, to_genesis(A))
    X = _quiet(lambda lib, *args: lib.lu_solve(*args))(genesis, to_genesis(b), LU, pivots)
    torch.testing.assert_close(A @ to_torch(X), b)


def test_lu_solve_errors() -> None:
    LU, pivots = _factors(3, 3)
    solve = _quiet(lambda lib, b, lu, p: lib.lu_solve(b, lu, p))
    check_error(RuntimeError, solve, rand(3), LU, pivots)
    check_error(RuntimeError, solve, rand(4, 2), LU, pivots)
    check_error(RuntimeError, solve, rand(3, 2), LU, pivots.long())
    check_error(RuntimeError, solve, rand(3, 2).float(), LU, pivots)


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 5), (2, 4, 3)])
def test_lu_unpack(shape: tuple) -> None:
    LU, pivots = _factors(*shape)
    check(lambda lib, lu, p: lib.lu_unpack(lu, p), LU, pivots)
    check(lambda lib, lu, p: lib.lu_unpack(lu, p, False, True), LU, pivots, backward=False)
    check(lambda lib, lu, p: lib.lu_unpack(lu, p, unpack_pivots=False), LU, pivots, backward=False)


def test_lu_unpack_rebuilds_the_matrix_and_checks_pivots() -> None:
    A = rand(2, 4, 4, requires_grad=False)
    LU, pivots = torch.linalg.lu_factor(A)
    P, L, U = genesis.lu_unpack(to_genesis(LU), to_genesis(pivots))
    assert type(genesis.lu_unpack(to_genesis(LU), to_genesis(pivots)))._fields == \
        torch.return_types.lu_unpack.__match_args__
    torch.testing.assert_close(to_torch(P @ L @ U), A)
    check_error(RuntimeError, lambda lib, lu, p: lib.lu_unpack(lu, p), LU, pivots.long())


# ------------------------------------------------------------------ chain_matmul


def test_chain_matmul() -> None:
    check(_quiet(lambda lib, a, b, c: lib.chain_matmul(a, b, c)), rand(2, 3), rand(3, 4), rand(4, 5))
    check(_quiet(lambda lib, a, b: lib.chain_matmul(a, b)), rand(2, 3), rand(3, 1))
    single = _quiet(lambda lib, a: lib.chain_matmul(a))
    check(single, rand(2, 3))
    x = to_genesis(rand(2, 2))
    assert single(genesis, x) is not x


def test_chain_matmul_errors_and_warning() -> None:
    check_error(RuntimeError, _quiet(lambda lib: lib.chain_matmul()))
    check_error(RuntimeError, _quiet(lambda lib, a, b: lib.chain_matmul(a, b)), rand(3), rand(3, 2))
    check_error(RuntimeError, _quiet(lambda lib, a, b: lib.chain_matmul(a, b)), rand(2, 3), rand(2, 3))
    with pytest.warns(UserWarning, match="multi_dot"):
        genesis.chain_matmul(to_genesis(rand(2, 2)), to_genesis(rand(2, 2)))
