"""Ready-made parametrizations (``torch.nn.utils.parametrizations``): ``orthogonal``, ``weight_norm`` and
``spectral_norm`` built on ``genesis.nn.utils.parametrize.register_parametrization``.

Their state-dict keys are torch's: ``parametrizations.weight.original`` and, with the dynamic trivialization,
``parametrizations.weight.0.base`` for orthogonal matrices; ``parametrizations.weight.original0`` (magnitude) and
``original1`` (direction) for weight normalization; ``parametrizations.weight.original`` and the power-iteration
vectors ``parametrizations.weight.0._u`` / ``._v`` for spectral normalization.
"""

from __future__ import annotations

from enum import Enum, auto
from typing import Any

from genesis import dtypes, linalg
from genesis import ops as T
from genesis.autograd import no_grad
from genesis.nn import functional as F
from genesis.nn.modules.module import Module
from genesis.nn.utils import parametrize
from genesis.nn.utils.spectral_norm import _default_dim, _weight_to_matrix
from genesis.nn.utils.weight_norm import _norm_except_dim, _weight_norm
from genesis.ops.creation import eye
from genesis.tensor import Tensor

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_orthogonal(Q: Tensor) -> bool:
    """Whether the columns of the (..., n, k) ``Q`` are orthonormal, to ``10 n eps`` (torch's test)."""
    n, k = Q.shape[-2], Q.shape[-1]
    identity = eye(k, dtype=Q.dtype, device=Q.device)
    return bool(T.allclose(Q.mH @ Q, identity, atol=10.0 * n * dtypes.finfo(Q.dtype).eps))


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of the QR decomposition of the tall ``A`` whose R has a non-negative diagonal (unique for full rank)."""
    Q, R = linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _geqrf(A: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's ``geqrf`` of (..., m, n) real matrices, unblocked: (R on and above the diagonal with the Householder
    vectors below it (their implicit 1 on the diagonal), the scales tau (..., min(m, n))), with LAPACK's choices
    (``dlarfg``: R[j, j] = -sign(x0) |x|; tau = 0 for a column already zero below the diagonal). No gradient."""
    m, n = A.shape[-2], A.shape[-1]
    rows = T.arange_like(m, A)  # (m,)
    cols = T.arange_like(n, A)  # (n,)
    out = A.detach().clone()
    taus = []
    for j in range(min(m, n)):
        column = out[..., :, j]  # (..., m)
        alpha = column[..., j]
        tail = T.where(rows > j, column, 0.0)  # the entries below the diagonal
        tail_norm = T.sqrt(T.sum(tail * tail, -1))
        reflect = tail_norm > 0
        norm = T.sqrt(alpha * alpha + tail_norm * tail_norm)
        beta = T.where(reflect, T.where(alpha >= 0, -norm, norm), alpha)
        tau = T.where(reflect, (beta - alpha) / T.where(reflect, beta, 1.0), 0.0)
        v = T.where(rows == j, 1.0, tail / T.where(reflect, alpha - beta, 1.0).unsqueeze(-1))  # (..., m)
        # H = I - tau v v^T on the columns right of j; column j becomes (R above, beta, v below the diagonal).
        update = (tau.unsqueeze(-1) * v).unsqueeze(-1) * (v.unsqueeze(-2) @ out)  # (..., m, n)
        out = out - update * (cols > j).to(A.dtype)
        column = T.where(rows < j, column, T.where(rows == j, beta.unsqueeze(-1), v))
        out = T.where(cols == j, column.unsqueeze(-1), out)
        taus.append(tau)
    return out, T.stack(taus, -1) if taus else out.new_zeros((*A.shape[:-2], 0))


class _OrthMaps(Enum):
    """The maps from unconstrained matrices onto the orthogonal ones."""

    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """An orthogonal (..., n, k) matrix from the original: ``matrix_exp`` or ``cayley`` of the skew-symmetric
    matrix built from its lower triangle, or the product of the Householder reflections stored below its diagonal
    (signs on the diagonal), as torch's; with the dynamic trivialization, multiplied by the orthogonal ``base``."""

    base: Tensor

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex():
            if orthogonal_map == _OrthMaps.householder:
                raise ValueError("The householder parametrization does not support complex tensors.")
            raise NotImplementedError("orthogonal: complex (unitary) parametrizations are not implemented: "
                                      "genesis.linalg's matrix_exp, solve and qr take real matrices")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        """The orthogonal matrix (batch) of the original ``X``: the map's, times ``base`` with the trivialization."""
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # X is tall (n >= k) from here
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            # n k - k (k - 1) / 2 parameters: the lower triangle, embedded in an (n, n) skew-symmetric matrix
            X = X.tril()
            if n != k:
                X = T.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = linalg.matrix_exp(A)
            else:  # the Cayley map (I + A/2)(I - A/2)^-1; the two factors commute
                identity = eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(identity - 0.5 * A, identity + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau)
            # The diagonal of X holds signs (+-1); cast to int so that neither gradient nor update reaches it.
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    @no_grad()
    def right_inverse(self, Q: Tensor) -> Tensor:
        """An original whose image is ``Q`` (orthogonalized by QR first when it is not orthogonal).

        With the trivialization the (completed) ``Q`` becomes ``base`` and the original ``-I``, the preimage of the
        identity under every map; without it only the Householder map is inverted (``geqrf``'s reflections).
        """
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape "
                             f"{Q.shape}.")
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            A, tau = _geqrf(Q)
            # diag(R)'s signs on the diagonal, so that householder(A) is Q rather than Q with flipped columns; a
            # missing reflection (tau = 0) is one with tau = 2 in the forward map, whose sign flip this undoes.
            signs = A.diagonal(dim1=-2, dim2=-1).sign()
            A.diagonal(dim1=-2, dim2=-1).copy_(T.where(tau == 0.0, -signs, signs))
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:  # complete Q into an (n, n) orthogonal matrix
            N = Q.new_empty((*Q.shape[:-2], n, n - k)).normal_(0, 1)
            Q = _make_orthogonal(T.cat([Q, N], dim=-1))
        self.base = Q
        # -I: each map sends it to the identity (the Householder map reads the diagonal as signs)
        neg_identity = T.zeros_like(Q_init)
        neg_identity.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_identity


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Make ``module.<name>``, a matrix or a batch of matrices (..., m, n), orthogonal: ``Q^T Q = I_n`` for
    m >= n, ``Q Q^T = I_m`` for m < n, through a parametrization (torch's ``parametrizations.orthogonal``).

    The maps from the original ``X``: "matrix_exp" and "cayley" take ``exp(A)`` or ``(I + A/2)(I - A/2)^-1`` of
    the skew-symmetric ``A`` built from X's lower triangle (the first columns when m != n); "householder" the
    product of the Householder reflections stored below X's diagonal (``linalg.householder_product``). With
    ``use_trivialization`` (the dynamic trivialization, arXiv:1909.09501) the result is multiplied by an orthogonal
    ``base`` buffer (``module.parametrizations.<name>[0].base``), which assigning ``module.<name> = Q`` sets.

    Initial value: the module's weight if it is orthogonal, else the Q of its QR decomposition (with trivialization
    or the Householder map), else what the maps give for the original weight. Completing a non-square weight into
    ``base`` draws normal numbers from Genesis's generator (torch's generator differs: the same weight gives the
    same ``module.<name>``, a different ``base``). Complex (unitary) matrices are not supported.

    Args:
        module: the module holding the tensor.
        name: the tensor's name.
        orthogonal_map: "matrix_exp", "cayley" or "householder"; None: "matrix_exp" for square matrices,
            "householder" otherwise.
        use_trivialization: keep the ``base`` buffer.

    Returns:
        ``module`` itself.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: '
                         f"{orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    """``w = g * v / ||v||`` from the originals ``(g, v)``; ``right_inverse`` splits a weight into them."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Apply weight normalization to ``module.<name>`` as a parametrization: ``w = g * v / ||v||``.

    The magnitude ``g`` (the norm over every dimension but ``dim``, size-1 dimensions kept) and the direction ``v``
    become ``module.parametrizations.<name>.original0`` and ``original1``; the weight is recomputed at every read
    (use :func:`genesis.nn.utils.parametrize.cached` to compute it once per forward). A state dict saved from the
    hook-based ``weight_norm`` (keys ``<name>_g``, ``<name>_v``) loads into a module this was applied to.

    Args:
        module: the module holding the parameter.
        name: the parameter's name.
        dim: the dimension kept by the norm; ``None`` takes one norm over the whole tensor.

    Returns:
        ``module`` itself.
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def rename_hook_based_keys(state_dict: dict, prefix: str, *unused: Any) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(rename_hook_based_keys)
    return module


class _SpectralNorm(Module):
    """``W / sigma(W)`` with ``sigma = u^H W v`` from power iteration (the buffers ``_u``, ``_v``); a vector is
    simply normalized. ``right_inverse`` is the identity."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:  # a vector's spectral norm is its 2-norm: nothing to estimate
            self.n_power_iterations = n_power_iterations
            weight_mat = _weight_to_matrix(weight, self.dim)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # Start from good estimates of the singular vectors, not from random ones.
            self._power_method(weight_mat, 15)

    @no_grad()
    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """Refine ``_u`` and ``_v`` in place (replicas sharing the buffers see the update)."""
        for _ in range(n_power_iterations):
            F.normalize(T.mv(weight_mat, self._v), dim=0, eps=self.eps, out=self._u)
            F.normalize(T.mv(weight_mat.H, self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = _weight_to_matrix(weight, self.dim)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # Clones: a graph recorded by an earlier forward keeps the vectors it saved when the buffers change.
        u = self._u.clone()
        v = self._v.clone()
        sigma = T.vdot(u, T.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Apply spectral normalization to ``module.<name>`` as a parametrization: ``W_SN = W / sigma(W)``.

    ``sigma(W)``, the largest singular value of the weight reshaped to a matrix (``dim`` first), is estimated as
    ``u^H W v``. ``u`` and ``v`` start from 15 power-iteration steps at registration and take
    ``n_power_iterations`` more at every read of ``module.<name>`` in training mode. A 1-D tensor is divided by its
    2-norm. The original is ``module.parametrizations.<name>.original``.

    Args:
        module: the module holding the parameter or buffer.
        name: its name.
        n_power_iterations: power-iteration steps per read in training mode.
        eps: the lower bound of the norms divided by when normalizing ``u`` and ``v``.
        dim: the weight's output dimension; ``None``: 1 for ``ConvTranspose1d/2d/3d``, 0 otherwise.

    Returns:
        ``module`` itself.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    dim = _default_dim(module) if dim is None else dim
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
