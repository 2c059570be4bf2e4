"""``linalg.eig`` / ``eigvals`` (general matrices) and ``linalg.ldl_factor`` / ``ldl_factor_ex`` / ``ldl_solve``
against torch: values, dtypes, shapes, gradients and errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import genesis
from tests.helpers import DEVICE, to_genesis, to_torch

_PRIMITIVES = ("eig", "ldl_factor", "ldl_solve")
pytestmark = pytest.mark.skipif(
    not all(hasattr(genesis.device(DEVICE).backend, name) for name in _PRIMITIVES),
    reason=f"the {DEVICE} backend does not implement the eig / ldl_factor / ldl_solve primitives yet")


def _random(shape: tuple[int, ...], dtype: torch.dtype = torch.float64, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.complex(torch.randn(shape, generator=g, dtype=torch.float64),
                             torch.randn(shape, generator=g, dtype=torch.float64)).to(dtype)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def _close(g: Any, t: torch.Tensor, rtol: float = 1e-9, atol: float = 1e-10) -> None:
    """Genesis's result ``g`` (or a torch copy of it) against torch's: shape, dtype and values."""
    assert tuple(g.shape) == tuple(t.shape)
    assert str(g.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    got = g if isinstance(g, torch.Tensor) else to_torch(g)
    np.testing.assert_allclose(got.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


# ------------------------------------------------------------------ eig / eigvals

def _in_value_order(L: Any, V: Any = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Eigenvalues (and their eigenvectors' columns) sorted by real then imaginary part, both rounded: torch leaves
    the order unspecified, and another LAPACK build (the host LAPACK of a GPU backend) may return another one."""
    values = to_torch(L) if not isinstance(L, torch.Tensor) else L.detach()
    key = values.real.double().round(decimals=3) * 1e6 + values.imag.double().round(decimals=3)
    order = key.argsort(dim=-1, stable=True)
    values = values.gather(-1, order)
    if V is None:
        return values, None
    vectors = to_torch(V) if not isinstance(V, torch.Tensor) else V.detach()
    return values, vectors.gather(-1, order.unsqueeze(-2).expand(vectors.shape))


def _phase_aligned(V: Any, tV: torch.Tensor) -> torch.Tensor:
    """Genesis's eigenvectors, each column turned by the unit phase that best matches torch's: eigenvectors are
    unique up to that phase only, and LAPACK builds other than torch's (the host LAPACK of a GPU backend) may pick
    another sign for a real eigenvector."""
    g = (V if isinstance(V, torch.Tensor) else to_torch(V)).to(tV.dtype)
    c = (g.conj() * tV).sum(-2, keepdim=True)
    phase = torch.where(c.abs() > 0, c / c.abs().clamp_min(1e-30), torch.ones_like(c))
    return g * phase

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (1, 1), (0, 0), (3, 0, 0)])
def test_eig_values_and_vectors_match_torch(dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    A = _random(shape, dtype)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype in (torch.float32, torch.complex64) else {}
    L, V = _in_value_order(*genesis.linalg.eig(to_genesis(A)))
    tL, tV = _in_value_order(*torch.linalg.eig(A))
    _close(L, tL, **tol)
    _close(_phase_aligned(V, tV), tV, **tol)
    _close(_in_value_order(genesis.linalg.eigvals(to_genesis(A)))[0],
           _in_value_order(torch.linalg.eigvals(A))[0], **tol)
    result = genesis.linalg.eig(to_genesis(A))
    assert result._fields == ("eigenvalues", "eigenvectors")


def _eig_loss(lib: Any, L: Any, V: Any) -> Any:
    """A loss of both outputs that does not depend on the eigenvectors' phases (torch's condition)."""
    weights = lib.arange(V.shape[-1], dtype=lib.float64) + 1
    if lib is genesis:
        weights = weights.to(DEVICE)
    return (L.real * L.imag).sum() + L.abs().sum() + (V.abs() ** 2 * weights).sum()


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_eig_gradient_matches_torch(dtype: torch.dtype) -> None:
    A = _random((2, 4, 4), dtype, seed=3)
    a, ta = to_genesis(A, requires_grad=True), A.clone().requires_grad_()
    _eig_loss(genesis, *genesis.linalg.eig(a)).backward()
    _eig_loss(torch, *torch.linalg.eig(ta)).backward()
    _close(a.grad, ta.grad, rtol=1e-7, atol=1e-9)
    a.grad, ta.grad = None, None
    genesis.linalg.eigvals(a).abs().sum().backward()
    torch.linalg.eigvals(ta).abs().sum().backward()
    _close(a.grad, ta.grad, rtol=1e-7, atol=1e-9)


def test_eig_gradcheck_and_forward_ad() -> None:
    a = to_genesis(_random((3, 3), seed=5), requires_grad=True)
    assert genesis.autograd.gradcheck(lambda x: genesis.view_as_real(genesis.linalg.eigvals(x)), (a,),
                                      check_forward_ad=True)
    assert genesis.autograd.gradcheck(lambda x: genesis.linalg.eig(x)[1].abs(), (a,))
    assert genesis.autograd.gradgradcheck(lambda x: genesis.view_as_real(genesis.linalg.eigvals(x)), (a,))


def test_eig_phase_dependent_loss_raises_as_torch() -> None:
    A = _random((3, 3), seed=7)
    for lib, x in ((genesis, to_genesis(A, requires_grad=True)), (torch, A.clone().requires_grad_())):
        _, V = lib.linalg.eig(x)
        with pytest.raises(RuntimeError, match="specified up to multiplication by e"):
            V.imag.sum().backward()


def test_eig_errors_as_torch() -> None:
    for fn in (genesis.linalg.eig, genesis.linalg.eigvals):
        with pytest.raises(RuntimeError, match=r"linalg.eig(vals)?: A must be batches of square matrices, but they "
                                               r"are 2 by 3 matrices"):
            fn(genesis.zeros(2, 3, device=DEVICE))
        with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
            fn(genesis.zeros(3, device=DEVICE))
        with pytest.raises(RuntimeError, match="Got int64"):
            fn(genesis.zeros(3, 3, dtype=genesis.int64, device=DEVICE))
        with pytest.raises(NotImplementedError, match="float16"):
            fn(genesis.zeros(3, 3, dtype=genesis.float16, device=DEVICE))
    for lib in (genesis, torch):
        with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
            lib.eig(lib.zeros(2, 2))
        with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
            lib.zeros(2, 2).eig()


@pytest.mark.skipif(DEVICE != "cpu", reason="torch's autocast rule for linalg.eig is the CPU policy's")
def test_eig_under_cpu_autocast_runs_in_float32() -> None:
    A = _random((3, 3)).to(torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = torch.linalg.eigvals(A)
    with genesis.autocast("cpu", dtype=genesis.bfloat16):
        values = genesis.linalg.eigvals(to_genesis(A))
    _close(values, expected, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ ldl_factor / ldl_solve

def _symmetric(shape: tuple[int, ...], dtype: torch.dtype, hermitian: bool, seed: int = 0) -> torch.Tensor:
    A = _random(shape, dtype, seed)
    return A + (A.mH if hermitian else A.mT)


@pytest.mark.parametrize("dtype,hermitian", [(torch.float32, False), (torch.float64, False), (torch.float64, True),
                                             (torch.complex128, False), (torch.complex128, True),
                                             (torch.complex64, True)])
@pytest.mark.parametrize("shape", [(5, 5), (3, 4, 4), (1, 1), (0, 0)])
def test_ldl_factor_and_solve_match_torch(dtype: torch.dtype, hermitian: bool, shape: tuple[int, ...]) -> None:
    A = _symmetric(shape, dtype, hermitian)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype in (torch.float32, torch.complex64) else {}
    LD, pivots, info = genesis.linalg.ldl_factor_ex(to_genesis(A), hermitian=hermitian)
    tLD, tpivots, tinfo = torch.linalg.ldl_factor_ex(A, hermitian=hermitian)
    _close(LD, tLD, **tol)
    _close(pivots, tpivots)
    _close(info, tinfo)
    factor = genesis.linalg.ldl_factor(to_genesis(A), hermitian=hermitian)
    assert factor._fields == ("LD", "pivots")
    _close(factor.LD, tLD, **tol)
    B = _random((*shape[:-1], 2), dtype, seed=1)
    X = genesis.linalg.ldl_solve(LD, pivots, to_genesis(B), hermitian=hermitian)
    _close(X, torch.linalg.ldl_solve(tLD, tpivots, B, hermitian=hermitian), **tol)


def test_ldl_pivots_of_an_indefinite_matrix_with_2x2_blocks() -> None:
    A = torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]], dtype=torch.float64)
    LD, pivots = genesis.linalg.ldl_factor(to_genesis(A))
    tLD, tpivots = torch.linalg.ldl_factor(A)
    assert to_torch(pivots).tolist() == tpivots.tolist() and min(tpivots.tolist()) < 0
    _close(LD, tLD)


def test_ldl_solve_broadcasts_batches() -> None:
    A = _symmetric((2, 4, 4), torch.float64, False)
    B = _random((3, 1, 4, 2), seed=2)
    LD, pivots = genesis.linalg.ldl_factor(to_genesis(A))
    X = genesis.linalg.ldl_solve(LD, pivots, to_genesis(B))
    assert tuple(X.shape) == (3, 2, 4, 2)
    np.testing.assert_allclose((A @ to_torch(X)).numpy(), B.expand(3, 2, 4, 2).numpy(), rtol=1e-9, atol=1e-10)


def test_ldl_singular_and_no_derivative_as_torch() -> None:
    zeros = torch.zeros(3, 3, dtype=torch.float64)
    _, _, info = genesis.linalg.ldl_factor_ex(to_genesis(zeros))
    _close(info, torch.linalg.ldl_factor_ex(zeros)[2])
    for call in (lambda lib, x: lib.linalg.ldl_factor(x),
                 lambda lib, x: lib.linalg.ldl_factor_ex(x, check_errors=True)):
        for lib, x in ((genesis, to_genesis(zeros)), (torch, zeros)):
            with pytest.raises(RuntimeError):
                call(lib, x)
    A = _symmetric((3, 3), torch.float64, False)
    for lib, x in ((genesis, to_genesis(A, requires_grad=True)), (torch, A.clone().requires_grad_())):
        LD, pivots = lib.linalg.ldl_factor(x)
        assert LD.requires_grad and not pivots.requires_grad
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not implemented"):
            LD.sum().backward()
        B = lib.ones(3, 1, dtype=lib.float64, requires_grad=True)
        X = lib.linalg.ldl_solve(LD.detach(), pivots, B if lib is torch else B.to(DEVICE))
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not implemented"):
            X.sum().backward()


def test_ldl_errors_as_torch() -> None:
    A = _symmetric((3, 3), torch.float64, False)
    LD, pivots = genesis.linalg.ldl_factor(to_genesis(A))
    cases = [
        (RuntimeError, "A must be batches of square matrices, but they are 2 by 3",
         lambda lib, ld, p, t: lib.linalg.ldl_factor(t(torch.zeros(2, 3)))),
        (RuntimeError, "must have at least 2 dimensions",
         lambda lib, ld, p, t: lib.linalg.ldl_factor(t(torch.zeros(3)))),
        (RuntimeError, "Expected a floating point or complex tensor as input. Got", lambda lib, ld, p, t:
         lib.linalg.ldl_factor(t(torch.zeros(3, 3, dtype=torch.int64)))),
        (NotImplementedError, "not implemented for",
         lambda lib, ld, p, t: lib.linalg.ldl_factor(t(torch.zeros(3, 3, dtype=torch.half)))),
        (RuntimeError, "Expected LD.shape\\[:-1\\] and pivots.shape to be the same", lambda lib, ld, p, t:
         lib.linalg.ldl_solve(ld, p[:2], t(torch.zeros(3, 1, dtype=torch.float64)))),
        (RuntimeError, "Expected pivots to be integers", lambda lib, ld, p, t:
         lib.linalg.ldl_solve(ld, p.float(), t(torch.zeros(3, 1, dtype=torch.float64)))),
        (RuntimeError, "Incompatible matrix sizes for torch.linalg.ldl_solve", lambda lib, ld, p, t:
         lib.linalg.ldl_solve(ld, p, t(torch.zeros(4, 1, dtype=torch.float64)))),
        (RuntimeError, "to have the same dtype", lambda lib, ld, p, t:
         lib.linalg.ldl_solve(ld, p, t(torch.zeros(3, 1)))),
        (IndexError, "dimension|Dimension",
         lambda lib, ld, p, t: lib.linalg.ldl_solve(ld, p, t(torch.zeros(3, dtype=torch.float64)))),
    ]
    tLD, tpivots = torch.linalg.ldl_factor(A)
    for error, match, call in cases:
        with pytest.raises(error, match=match):
            call(genesis, LD, pivots, to_genesis)
        with pytest.raises(error, match=match):
            call(torch, tLD, tpivots, lambda t: t)
