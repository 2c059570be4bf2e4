"""Ready-made parametrizations (``torch.nn.utils.parametrizations``): ``weight_norm`` and ``spectral_norm`` built on
``genesis.nn.utils.parametrize.register_parametrization``.

Their state-dict keys are torch's: ``parametrizations.weight.original0`` (magnitude) and ``original1`` (direction)
for weight normalization; ``parametrizations.weight.original`` and the power-iteration vectors
``parametrizations.weight.0._u`` / ``._v`` for spectral normalization.
"""

from __future__ import annotations

from genesis import ops as T
from genesis.autograd import no_grad
from genesis.nn import functional as F
from genesis.nn.modules.module import Module
from genesis.nn.utils import parametrize
from genesis.nn.utils.spectral_norm import _default_dim, _weight_to_matrix
from genesis.nn.utils.weight_norm import _norm_except_dim, _weight_norm
from genesis.tensor import Tensor

__all__ = ["spectral_norm", "weight_norm"]


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

    def rename_hook_based_keys(state_dict: dict, prefix: str) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(rename_hook_based_keys)
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
