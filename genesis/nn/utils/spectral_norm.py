"""Spectral normalization through a forward pre-hook (``torch.nn.utils.spectral_norm``), from
"Spectral Normalization for Generative Adversarial Networks" (Miyato et al., 2018, https://arxiv.org/abs/1802.05957).

``spectral_norm(module)`` keeps the parameter as ``weight_orig`` and, before every forward, sets
``weight = weight_orig / sigma`` where ``sigma = u^T W v`` estimates the largest singular value of ``weight_orig``
(reshaped to a matrix ``W``). The singular vectors ``u`` and ``v`` are the buffers ``weight_u`` and ``weight_v``,
refined by power iteration in training mode only. The parametrization form is
``genesis.nn.utils.parametrizations.spectral_norm``.

As in torch, the module's state dict records the layout's version in its metadata
(``_metadata[prefix]["spectral_norm"]["weight.version"] = 1``), and a checkpoint without it that holds ``weight``
beside ``weight_orig`` and ``weight_u`` (the layout before version 1) loads by deriving ``weight_v`` from them.
"""

from __future__ import annotations

from typing import Any, TypeVar

from genesis import ops as T
from genesis.autograd import no_grad
from genesis.nn import functional as F
from genesis.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from genesis.nn.modules.module import Module
from genesis.nn.parameter import Parameter
from genesis.nn.utils.weight_norm import _check_materialized, _check_no_hook, _remove_hook
from genesis.tensor import Tensor

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook", "spectral_norm",
           "remove_spectral_norm"]

T_module = TypeVar("T_module", bound=Module)


def _weight_to_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as a (size of ``dim``, everything else) matrix: ``dim`` moved to the front, the rest flattened."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.reshape(weight.shape[0], -1)


def _default_dim(module: Module) -> int:
    """The output dimension of ``module``'s weight: 1 for transposed convolutions, 0 otherwise (as torch)."""
    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


class SpectralNorm:
    """The forward pre-hook of ``spectral_norm``: sets ``module.<name> = <name>_orig / sigma``.

    Invariant after each training forward: ``u = normalize(W v)``.

    Args:
        name: the name of the normalized parameter.
        n_power_iterations: power-iteration steps per training forward (positive).
        dim: the weight's output dimension (the rows of the matrix ``W``).
        eps: the lower bound of the norms divided by in ``normalize``.
    """

    #: The state-dict layout: 1 saves ``<name>_orig``, ``<name>_u`` and ``<name>_v``; before it, ``<name>`` and no
    #: ``<name>_v``.
    _version: int = 1

    name: str
    dim: int
    n_power_iterations: int
    eps: float

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``weight`` as the matrix ``W`` whose largest singular value is estimated."""
        return _weight_to_matrix(weight, self.dim)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        """``<name>_orig / (u^T W v)``, after ``n_power_iterations`` refinements of ``u`` and ``v`` if asked.

        The power iteration updates the buffers in place (so module replicas sharing them see the update), then
        the weight uses clones of them, so a graph built by an earlier forward (``D(real) - D(fake)`` in GANs)
        still finds the values it saved.
        """
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    # u and v approach the first left and right singular vectors, so u^T W v approaches sigma.
                    F.normalize(T.mv(weight_mat.t(), u), dim=0, eps=self.eps, out=v)
                    F.normalize(T.mv(weight_mat, v), dim=0, eps=self.eps, out=u)
                u = u.clone()
                v = v.clone()
        sigma = T.dot(u, T.mv(weight_mat, v))
        return weight / sigma

    def _solve_v_and_rescale(self, weight_mat: Tensor, u: Tensor, target_sigma: Tensor) -> Tensor:
        """A ``v`` with ``u = normalize(W v)`` (the invariant above) and ``u^T W v = target_sigma``; the
        pseudo-inverse serves where ``W^T W`` is singular."""
        v = T.mv(T.mm(T.mm(weight_mat.t(), weight_mat).pinverse(), weight_mat.t()), u)
        return v.mul_(target_sigma / T.dot(u, T.mv(weight_mat, v)))

    def remove(self, module: Module) -> None:
        """Put ``<name>_orig / sigma`` back as the plain parameter ``<name>``; drop ``_orig``, ``_u`` and ``_v``."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> SpectralNorm:
        """Move ``module.<name>`` to ``<name>_orig``, add the ``_u``/``_v`` buffers and register the hook."""
        _check_no_hook(module, SpectralNorm, name, "spectral_norm")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        _check_materialized(module, "SpectralNorm", "spectral normalization")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            # Random starting vectors; the power iteration of each training forward refines them.
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # Code that reads module.<name> before the first forward (weight initializers...) still finds a tensor.
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Loads a state dict of the layout before version 1 (``<name>`` and ``<name>_u`` beside ``<name>_orig``, no
    ``<name>_v``): ``sigma`` is ``mean(<name>_orig / <name>)``, and ``<name>_v`` is solved from ``<name>_u``.

    Args:
        fn: the module's spectral normalization.
    """

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool, missing_keys: list[str],
                 unexpected_keys: list[str], error_msgs: list[str]) -> None:
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is not None and version >= 1:
            return
        weight_key = prefix + fn.name
        if version is None and weight_key not in state_dict and all(
                weight_key + suffix in state_dict for suffix in ("_orig", "_u", "_v")):
            return  # today's layout without its metadata (a hand-made state dict)
        missing = [weight_key + suffix for suffix in ("_orig", "", "_u") if weight_key + suffix not in state_dict]
        if missing:
            if strict:
                missing_keys.extend(missing)
            return
        with no_grad():
            weight_orig = state_dict[weight_key + "_orig"]
            weight = state_dict.pop(weight_key)
            sigma = (weight_orig / weight).mean()
            weight_mat = fn.reshape_weight_to_matrix(weight_orig)
            state_dict[weight_key + "_v"] = fn._solve_v_and_rescale(weight_mat, state_dict[weight_key + "_u"], sigma)


class SpectralNormStateDictHook:
    """Records the state-dict layout's version in the module's metadata: ``["spectral_norm"]["<name>.version"]``.

    Args:
        fn: the module's spectral normalization.
    """

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module: Module, state_dict: dict, prefix: str, local_metadata: dict) -> None:
        versions = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


def spectral_norm(module: T_module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> T_module:
    """Apply spectral normalization to the parameter ``name`` of ``module``: ``W_SN = W / sigma(W)``.

    ``sigma(W)``, the largest singular value of the weight reshaped to a matrix (``dim`` first), is estimated as
    ``u^T W v`` with ``u`` and ``v`` from power iteration, run ``n_power_iterations`` times before each forward in
    training mode only (under ``no_grad``). The parameter becomes ``<name>_orig``; ``<name>_u`` and ``<name>_v`` are
    buffers, so the state dict holds torch's keys.

    Args:
        module: the module holding the parameter.
        name: the parameter's name.
        n_power_iterations: power-iteration steps per training forward.
        eps: the lower bound of the norms divided by when normalizing ``u`` and ``v``.
        dim: the weight's output dimension; ``None``: 1 for ``ConvTranspose1d/2d/3d``, 0 otherwise.

    Returns:
        ``module`` itself.
    """
    SpectralNorm.apply(module, name, n_power_iterations, _default_dim(module) if dim is None else dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo :func:`spectral_norm`: ``module.<name>`` becomes a parameter again, holding the current ``W / sigma``.

    Raises:
        ValueError: if ``module`` has no spectral normalization on ``name``.
    """
    _remove_hook(module, SpectralNorm, name, "spectral_norm")
    for hooks, hook_type in ((module._state_dict_hooks, SpectralNormStateDictHook),
                             (module._load_state_dict_pre_hooks, SpectralNormLoadStateDictPreHook)):
        for key, hook in hooks.items():
            if isinstance(hook, hook_type) and hook.fn.name == name:
                del hooks[key]
                break
    return module
