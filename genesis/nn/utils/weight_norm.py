"""Weight normalization through a forward pre-hook (``torch.nn.utils.weight_norm``), from
"Weight Normalization: A Simple Reparameterization to Accelerate Training of Deep Neural Networks"
(Salimans & Kingma, 2016, https://arxiv.org/abs/1602.07868).

``weight_norm(module)`` replaces the parameter ``weight`` by a magnitude ``weight_g`` and a direction ``weight_v``
and recomputes ``weight = weight_g * weight_v / ||weight_v||`` before every forward. The parametrization form of the
same idea is ``genesis.nn.utils.parametrizations.weight_norm``; both share the math below.
"""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

from genesis.nn.modules.module import Module
from genesis.nn.parameter import Parameter
from genesis.tensor import Tensor

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]

T_module = TypeVar("T_module", bound=Module)


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dimension but ``dim``, kept as size-1 dimensions (``torch.norm_except_dim``).

    ``dim=-1`` means the norm of the whole tensor (a 0-d tensor), as in torch, whatever ``v``'s rank.
    """
    if dim == -1:
        return v.norm(2)
    keep = dim % v.ndim
    return v.norm(2, dim=tuple(d for d in range(v.ndim) if d != keep), keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """``g * v / ||v||``, the norm taken over every dimension but ``dim`` (``torch._weight_norm``)."""
    return v * (g / _norm_except_dim(v, dim))


def _check_materialized(module: Module, what: str, action: str) -> None:
    """Refuse a lazy module whose parameters still wait for their shapes (as torch does)."""
    pending = getattr(module, "has_uninitialized_params", None)
    if pending is not None and pending():
        raise ValueError(f"The module passed to `{what}` can't have uninitialized parameters. Make sure to run the "
                         f"dummy forward before applying {action}")


def _check_no_hook(module: Module, hook_type: type, name: str, what: str) -> None:
    """Refuse a second hook of ``hook_type`` on the same parameter."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, hook_type) and hook.name == name:
            raise RuntimeError(f"Cannot register two {what} hooks on the same parameter {name}")


def _remove_hook(module: Module, hook_type: type, name: str, what: str) -> None:
    """Undo the reparametrization of ``module.<name>`` by its ``hook_type`` hook and unregister the hook."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, hook_type) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return
    raise ValueError(f"{what} of '{name}' not found in {module}")


class WeightNorm:
    """The forward pre-hook of ``weight_norm``: recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v``.

    Args:
        name: the name of the reparametrized parameter.
        dim: the dimension kept by the norm (``None`` or ``-1``: the norm of the whole tensor).
    """

    name: str
    dim: int

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        """``g * v / ||v||`` from the module's current ``<name>_g`` and ``<name>_v``."""
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        """Reparametrize ``module.<name>`` and register the hook; returns the hook."""
        warnings.warn("`genesis.nn.utils.weight_norm` is deprecated in favor of "
                      "`genesis.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        _check_no_hook(module, WeightNorm, name, "weight_norm")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        _check_materialized(module, "WeightNorm", "weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight.detach(), fn.dim)))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        """Put the current weight back as a plain parameter and drop ``<name>_g`` and ``<name>_v``."""
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: T_module, name: str = "weight", dim: int | None = 0) -> T_module:
    """Apply weight normalization to the parameter ``name`` of ``module``: ``w = g * v / ||v||``.

    The parameter is replaced by ``<name>_g`` (the magnitude, the norm of ``w`` over every dimension but ``dim``,
    size-1 dimensions kept) and ``<name>_v`` (the direction, initially ``w`` itself); a forward pre-hook recomputes
    ``module.<name>`` from them before every forward. Deprecated in torch in favor of
    :func:`genesis.nn.utils.parametrizations.weight_norm`; emits the same ``FutureWarning``.

    Args:
        module: the module holding the parameter.
        name: the parameter's name.
        dim: the dimension kept by the norm (one norm per output channel with ``0``); ``None`` takes one norm over
            the whole tensor.

    Returns:
        ``module`` itself.
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo :func:`weight_norm`: ``module.<name>`` becomes a parameter again, holding the current ``g * v / ||v||``.

    Raises:
        ValueError: if ``module`` has no weight normalization on ``name``.
    """
    _remove_hook(module, WeightNorm, name, "weight_norm")
    return module
