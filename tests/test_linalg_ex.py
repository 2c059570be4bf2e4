"""torch.linalg's error-reporting variants (``cholesky_ex``, ``inv_ex``, ``solve_ex``, ``lu_factor_ex``) and
``linalg.lu_solve`` against torch: values, int32 info tensors for batches where some matrices fail, gradients,
result field names, the errors ``check_errors=True`` raises, and that nothing reads the device on the way."""

import pytest
import torch

import genesis
from tests.helpers import DEVICE, assert_same, check, check_error, check_like_torch, rand, to_genesis, to_torch


def _spd(n: int, *batch: int, seed: int = 0) -> torch.Tensor:
    m = rand(*batch, n, n, requires_grad=False, seed=seed)
    return (m @ m.mT + n * torch.eye(n, dtype=torch.float64)).requires_grad_()


def _well_conditioned(*shape: int, seed: int = 0) -> torch.Tensor:
    a = rand(*shape, requires_grad=False, seed=seed)
    return (a + 3 * torch.eye(shape[-2], shape[-1], dtype=torch.float64)).requires_grad_()


def _not_positive_definite_batch() -> torch.Tensor:
    """(2, 3, 4, 4) symmetric matrices: most positive-definite, some failing at leading minors of order 1 to 4,
    one NaN."""
    A = _spd(4, 2, 3).detach().clone()
    A[0, 1, 0, 0] = -1.0  # fails at order 1
    A[0, 2, 1, 1] = A[0, 2, 1, 0] ** 2 / A[0, 2, 0, 0]  # order 2: the reduced pivot is exactly zero
    A[1, 0, 2, 2] = -5.0  # order 3
    A[1, 1, 3, 3] = -10.0  # order 4
    A[1, 2, 2, 0] = A[1, 2, 0, 2] = float("nan")  # NaN propagates to the pivot of order 3
    return A


@pytest.fixture
def no_host_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any read of device values on the host (``item``, ``bool``, ``numpy``, ``tolist``) fails the test."""
    def refuse(self: genesis.ndarray.NDArray) -> None:
        raise AssertionError("read device values on the host")
    monkeypatch.setattr(genesis.ndarray.NDArray, "numpy", refuse)


# ------------------------------------------------------------------ cholesky_ex


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
def test_cholesky_ex_matches_torch(upper: bool, batch: tuple) -> None:
    check(lambda lib, a: lib.linalg.cholesky_ex(a, upper=upper), _spd(4, *batch))


def test_cholesky_ex_result_fields_and_empty_inputs() -> None:
    result = genesis.linalg.cholesky_ex(to_genesis(_spd(3)))
    assert type(result)._fields == torch.return_types.linalg_cholesky_ex.__match_args__
    check(lambda lib, a: lib.linalg.cholesky_ex(a), torch.zeros(0, 0, dtype=torch.float64))
    check(lambda lib, a: lib.linalg.cholesky_ex(a), torch.zeros(3, 0, 0, dtype=torch.float64))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_ex_reports_failures_as_lapack(upper: bool) -> None:
    """info per matrix; on the CPU also the partial factors LAPACK leaves in failing matrices. On cuda those values
    are cuSOLVER's (as torch's there, unspecified): the factors of the matrices that factor are compared."""
    A = _not_positive_definite_batch()
    if DEVICE == "cpu":
        check(lambda lib, a: lib.linalg.cholesky_ex(a, upper=upper), A, backward=False)
        check(lambda lib, a: lib.linalg.cholesky_ex(a), torch.full((3, 3), float("nan"), dtype=torch.float64),
              backward=False)
        return
    expected = torch.linalg.cholesky_ex(A, upper=upper)
    got = genesis.linalg.cholesky_ex(to_genesis(A), upper=upper)
    assert_same(got.info, expected.info, what="info")
    ok = expected.info == 0
    assert_same(got.L[to_genesis(ok)], expected.L[ok], what="factors of the positive-definite matrices")
    nan = genesis.linalg.cholesky_ex(to_genesis(torch.full((3, 3), float("nan"), dtype=torch.float64)))
    assert int(nan.info.item()) != 0, "a NaN matrix must not factor"


def test_cholesky_ex_gradient_of_the_matrices_that_factor() -> None:
    A = _not_positive_definite_batch()
    ok = torch.linalg.cholesky_ex(A).info == 0
    weights = torch.randn(A.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    weights = weights * ok[..., None, None]  # no gradient flows from the failed matrices
    t_A, g_A = A.clone().requires_grad_(), to_genesis(A, requires_grad=True)
    (torch.linalg.cholesky_ex(t_A).L * weights).sum().backward()
    (genesis.linalg.cholesky_ex(g_A).L * to_genesis(weights)).sum().backward()
    assert_same(g_A.grad[to_genesis(ok)], t_A.grad[ok], what="gradient of the positive-definite matrices")


def test_cholesky_ex_check_errors_raises_as_torch() -> None:
    A = _not_positive_definite_batch()
    err = check_like_torch(lambda lib, a: lib.linalg.cholesky_ex(a, check_errors=True), A)
    assert isinstance(err, torch.linalg.LinAlgError)
    with pytest.raises(genesis.linalg.LinAlgError, match=r"cholesky_ex: \(Batch element 1\).*order 1"):
        genesis.linalg.cholesky_ex(to_genesis(A), check_errors=True)
    with pytest.raises(genesis.linalg.LinAlgError, match=r"linalg.cholesky: \(Batch element 1\).*order 1 is"):
        genesis.linalg.cholesky(to_genesis(A))
    with pytest.raises(genesis.linalg.LinAlgError, match=r"linalg.cholesky: The factorization.*order 2 is"):
        genesis.linalg.cholesky(to_genesis(A[0, 2]))
    check_like_torch(lambda lib, a: lib.linalg.cholesky_ex(a, check_errors=True), _spd(3, 2))


@pytest.mark.parametrize("a", [rand(3, 4), rand(3), torch.eye(3, dtype=torch.int64)])
def test_cholesky_ex_bad_inputs(a: torch.Tensor) -> None:
    check_like_torch(lambda lib, x: lib.linalg.cholesky_ex(x), a.detach())


# ------------------------------------------------------------------ inv_ex, solve_ex


def _singular_batch() -> torch.Tensor:
    """(2, 3, 3, 3): well-conditioned matrices with a zero pivot of order 3 in one and of order 1 in another."""
    A = _well_conditioned(2, 3, 3, 3).detach().clone()
    A[0, 1, 2] = A[0, 1, 0] + A[0, 1, 1]  # row 3 the sum of rows 1 and 2
    A[1, 2] = 0.0  # zero matrix
    return A


def test_inv_ex_matches_torch() -> None:
    check(lambda lib, a: lib.linalg.inv_ex(a), _well_conditioned(2, 4, 4))
    check(lambda lib, a: lib.linalg.inv_ex(a), torch.zeros(2, 0, 0, dtype=torch.float64))
    result = genesis.linalg.inv_ex(to_genesis(_well_conditioned(3, 3)))
    assert type(result)._fields == torch.return_types.linalg_inv_ex.__match_args__


@pytest.mark.parametrize("n", [1, 2, 3])
def test_inv_of_n_matrices_of_size_n(n: int) -> None:
    # A batch of n matrices n x n: the identity the inverse solves against must not read as n vectors.
    a = _well_conditioned(n, n, n)
    check(lambda lib, a: lib.linalg.inv(a), a)
    check(lambda lib, a: lib.linalg.inv_ex(a), a)
    check(lambda lib, a: a.inverse(), a)
    check(lambda lib, a: lib.linalg.matrix_power(a, -1), a)


def test_inv_ex_reports_singular_matrices() -> None:
    A = _singular_batch()
    g_inverse, g_info = genesis.linalg.inv_ex(to_genesis(A))
    t_inverse, t_info = torch.linalg.inv_ex(A)
    assert_same(g_info, t_info, what="info")
    ok = t_info == 0
    assert_same(g_inverse[to_genesis(ok)], t_inverse[ok], what="inverse of the invertible matrices")
    check_like_torch(lambda lib, a: lib.linalg.inv_ex(a, check_errors=True), A)
    with pytest.raises(genesis.linalg.LinAlgError, match=r"inv_ex: \(Batch element 1\): The diagonal element 3"):
        genesis.linalg.inv_ex(to_genesis(A), check_errors=True)
    with pytest.raises(genesis.linalg.LinAlgError, match=r"^linalg.inv: The diagonal element 1 is zero"):
        genesis.linalg.inv(to_genesis(A[1, 2]))


@pytest.mark.parametrize("a", [rand(3, 4), rand(3), torch.ones(3, 3, dtype=torch.int64)])
def test_inv_ex_bad_inputs(a: torch.Tensor) -> None:
    check_like_torch(lambda lib, x: lib.linalg.inv_ex(x), a.detach())


@pytest.mark.parametrize("a_shape, b_shape, left", [
    ((3, 3), (3, 2), True), ((3, 3), (3,), True), ((2, 3, 3), (2, 3), True), ((2, 3, 3), (4, 1, 3, 2), True),
    ((3, 3), (5, 3, 1), True), ((3, 3), (2, 3), False), ((2, 4, 4), (3, 4), False), ((2, 3, 3), (5, 2, 2, 3), False),
])
def test_solve_ex_matches_torch(a_shape: tuple, b_shape: tuple, left: bool) -> None:
    check(lambda lib, a, b: lib.linalg.solve_ex(a, b, left=left), _well_conditioned(*a_shape), rand(*b_shape, seed=1))


def test_solve_ex_reports_singular_matrices() -> None:
    A, B = _singular_batch(), rand(4, 1, 3, 3, 2, requires_grad=False, seed=1)
    g_X, g_info = genesis.linalg.solve_ex(to_genesis(A), to_genesis(B))
    t_X, t_info = torch.linalg.solve_ex(A, B)
    assert_same(g_info, t_info, what="info (A's batch shape)")
    ok = (t_info == 0).expand(4, 2, 3)
    assert_same(g_X[to_genesis(ok)], t_X[ok], what="solutions of the invertible systems")
    assert type(genesis.linalg.solve_ex(to_genesis(A), to_genesis(B)))._fields == \
        torch.return_types.linalg_solve_ex.__match_args__
    check_like_torch(lambda lib, a, b: lib.linalg.solve_ex(a, b, check_errors=True), A, B)
    with pytest.raises(genesis.linalg.LinAlgError, match=r"solve_ex: \(Batch element 1\): The solver failed"):
        genesis.linalg.solve_ex(to_genesis(A), to_genesis(B), check_errors=True)
    with pytest.raises(genesis.linalg.LinAlgError, match=r"^torch.linalg.solve: The solver failed"):
        genesis.linalg.solve(to_genesis(A[1, 2]), to_genesis(B[0, 0, 0]))


@pytest.mark.parametrize("a, b, left", [
    (rand(3, 3), rand(4, 2), True), (rand(3, 3), rand(3), False), (rand(3, 3), rand(2, 4), False),
    (rand(3, 3), rand(3, 2, dtype=torch.float32), True), (rand(3, 4), rand(3, 2), True),
    (torch.ones(3, 3, dtype=torch.int64), torch.ones(3, 2, dtype=torch.int64), True),
    (rand(2, 3, 3), rand(4, 3, 2), True),
])
def test_solve_ex_bad_inputs(a: torch.Tensor, b: torch.Tensor, left: bool) -> None:
    check_like_torch(lambda lib, x, y: lib.linalg.solve_ex(x, y, left=left), a.detach(), b.detach())
    check_like_torch(lambda lib, x, y: lib.linalg.solve(x, y, left=left), a.detach(), b.detach())


# ------------------------------------------------------------------ lu_factor_ex, lu_solve


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 5), (2, 4, 4), (2, 0, 3)])
def test_lu_factor_ex_matches_torch(shape: tuple) -> None:
    check(lambda lib, a: lib.linalg.lu_factor_ex(a), rand(*shape))
    result = genesis.linalg.lu_factor_ex(to_genesis(rand(*shape)))
    assert type(result)._fields == torch.return_types.linalg_lu_factor_ex.__match_args__


def test_lu_factor_ex_reports_zero_pivots() -> None:
    A = _singular_batch()
    check(lambda lib, a: lib.linalg.lu_factor_ex(a), A, backward=False)
    check(lambda lib, a: lib.linalg.lu_factor_ex(a), torch.zeros(2, 3, 4, dtype=torch.float64), backward=False)
    check_like_torch(lambda lib, a: lib.linalg.lu_factor_ex(a, check_errors=True), A)
    check_like_torch(lambda lib, a: lib.linalg.lu_factor(a), A)  # torch's lu_factor refuses singular matrices
    check_like_torch(lambda lib, a: lib.linalg.lu_factor(a), A[1, 2])


def _factors(*shape: int) -> tuple[torch.Tensor, torch.Tensor]:
    LU, pivots = torch.linalg.lu_factor(_well_conditioned(*shape).detach())
    return LU.requires_grad_(), pivots


@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("lu_shape, b_shape", [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 4)), ((3, 3), (2, 3, 3)),
                                                ((2, 3, 3), (5, 1, 3, 3))])
def test_lu_solve_matches_torch(adjoint: bool, left: bool, lu_shape: tuple, b_shape: tuple) -> None:
    LU, pivots = _factors(*lu_shape)
    shape = b_shape if left else (*b_shape[:-2], b_shape[-1], b_shape[-2])  # X A = B: B (..., k, n)
    check(lambda lib, lu, p, b: lib.linalg.lu_solve(lu, p, b, left=left, adjoint=adjoint), LU, pivots,
          rand(*shape, seed=1))


def test_lu_solve_solves_the_factored_system() -> None:
    A = _well_conditioned(2, 4, 4).detach()
    B = rand(2, 4, 3, requires_grad=False, seed=1)
    LU, pivots = genesis.linalg.lu_factor(to_genesis(A))
    X = to_torch(genesis.linalg.lu_solve(LU, pivots, to_genesis(B)))
    torch.testing.assert_close(A @ X, B)
    X = to_torch(genesis.linalg.lu_solve(LU, pivots, to_genesis(B), adjoint=True))
    torch.testing.assert_close(A.mT @ X, B)


@pytest.mark.parametrize("lu, pivots, b, left", [
    ("LU", "p", rand(3), True), ("LU", "p64", rand(3, 2), True), ("LU", "p", rand(3, 2, dtype=torch.float32), True),
    ("LU", "p", rand(4, 2), True), ("LU", "p", rand(2, 4), False), ("wide", "p2", rand(2, 3), True),
    ("LU", "p2", rand(3, 3), True), ("batched", "p", rand(3, 3), True),
])
def test_lu_solve_bad_inputs(lu: str, pivots: str, b: torch.Tensor, left: bool) -> None:
    LU, p = _factors(3, 3)
    LU = {"LU": LU, "wide": LU[:2], "batched": LU.expand(4, 3, 3)}[lu].detach()
    p = {"p": p, "p64": p.long(), "p2": p[:2]}[pivots]
    check_like_torch(lambda lib, x, q, y: lib.linalg.lu_solve(x, q, y, left=left), LU, p, b.detach())


# ------------------------------------------------------------------ no host synchronization


def test_the_ex_variants_read_nothing_on_the_host(no_host_reads: None) -> None:
    A = to_genesis(_not_positive_definite_batch())
    S = to_genesis(_singular_batch())
    B = to_genesis(rand(2, 3, 3, 2, requires_grad=False))
    L, info = genesis.linalg.cholesky_ex(A)
    _, info_inv = genesis.linalg.inv_ex(S)
    _, info_solve = genesis.linalg.solve_ex(S, B)
    LU, pivots, info_lu = genesis.linalg.lu_factor_ex(S)
    genesis.linalg.lu_solve(LU, pivots, B)
    assert L.device.type == info.device.type == DEVICE.split(":")[0]
    assert info.dtype is info_inv.dtype is info_solve.dtype is info_lu.dtype is genesis.int32


def test_tensorinv_and_tensorsolve() -> None:
    well_posed = rand(4, 6, 8, 3, seed=21) + 3 * torch.eye(24, dtype=torch.float64).reshape(4, 6, 8, 3)
    check(lambda lib, a: lib.linalg.tensorinv(a, ind=2), well_posed.detach().requires_grad_())
    check(lambda lib, a: lib.linalg.tensorinv(a, 1), (rand(6, 2, 3, seed=22) + 3 * torch.eye(6, dtype=torch.float64)
                                                        .reshape(6, 2, 3)).detach().requires_grad_())
    a = (rand(2, 3, 6, seed=23) + 3 * torch.eye(6, dtype=torch.float64).reshape(2, 3, 6)).detach().requires_grad_()
    check(lambda lib, a, b: lib.linalg.tensorsolve(a, b), a, rand(2, 3, seed=24))
    a5 = (rand(6, 4, 4, 3, 2, seed=25) + 3 * torch.eye(24, dtype=torch.float64).reshape(6, 4, 4, 3, 2)
          .permute(0, 2, 1, 3, 4)).detach().requires_grad_()
    check(lambda lib, a, b: lib.linalg.tensorsolve(a, b, dims=(2, 3, 4)), a5, rand(6, 4, seed=26))
    check_error(RuntimeError, lambda lib, a: lib.linalg.tensorinv(a, ind=0), rand(6, 4, 24))
    check_error(RuntimeError, lambda lib, a: lib.linalg.tensorinv(a, ind=2), rand(6, 4, 2))
    check_error(RuntimeError, lambda lib, a, b: lib.linalg.tensorsolve(a, b), rand(2, 3, 6), rand(2, 2))


@pytest.mark.parametrize("op", ["cholesky", "solve_triangular", "det", "solve", "lu_factor"])
def test_factorizations_differentiate_twice_as_torch(op: str) -> None:
    """The library-backed factorizations and solves (one graph node each) have gradients that are themselves
    differentiable: the gradient of a gradient's norm matches torch's."""
    A0, B0 = _spd(4, 2, seed=3).detach(), rand(2, 4, 3, requires_grad=False, seed=4)

    def run(lib, A, B):
        if op == "cholesky":
            out = lib.linalg.cholesky(A)
        elif op == "solve_triangular":
            out = lib.linalg.solve_triangular(lib.tril(A), B, upper=False)
        elif op == "det":
            out = lib.linalg.det(A)
        elif op == "solve":
            out = lib.linalg.solve(A, B)
        else:
            out = lib.linalg.lu_factor(A).LU
        gA, gB = lib.autograd.grad((out * out).sum(), (A, B), create_graph=True, allow_unused=True,
                                   materialize_grads=True)
        total = (gA * gA).sum()
        if gB.requires_grad:  # B takes part (the solves)
            total = total + (gB * gB).sum()
        total.backward()
        return A.grad, B.grad

    t_A, t_B = A0.clone().requires_grad_(), B0.clone().requires_grad_()
    g_A, g_B = to_genesis(A0, requires_grad=True), to_genesis(B0, requires_grad=True)
    t_grads, g_grads = run(torch, t_A, t_B), run(genesis, g_A, g_B)
    for g, t, name in zip(g_grads, t_grads, ("A", "B")):
        if t is None:
            assert g is None or float(g.abs().sum().item()) == 0.0, name
            continue
        assert_same(g, t, rtol=1e-7, atol=1e-9, what=f"second-order gradient of {name}")
