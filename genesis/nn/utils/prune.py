"""Pruning: zero out parts of a parameter through a mask (``torch.nn.utils.prune``).

    prune.l1_unstructured(model.fc, name="weight", amount=0.3)    # the 30% smallest |w| become 0
    prune.ln_structured(model.conv, "weight", amount=2, n=2, dim=0) # the 2 output channels of least L2 norm
    prune.remove(model.fc, "weight")                                # make it permanent

Pruning ``module.<name>`` moves the parameter to ``<name>_orig`` (still the trained Parameter), adds the buffer
``<name>_mask`` (1 keeps, 0 prunes) and makes ``module.<name>`` a plain attribute, ``<name>_mask * <name>_orig``,
recomputed by a forward pre-hook (the pruning method itself) before every forward. The state dict therefore holds
``<name>_orig`` and ``<name>_mask``, as torch's. Pruning the same parameter again computes the new mask only over
what is still unpruned and combines the methods in a :class:`PruningContainer`; :func:`remove` writes the pruned
values into a plain parameter again and drops the hook, ``_orig`` and ``_mask``.

``amount`` is the fraction of units to prune (a float in [0, 1], rounded as ``round(amount * n)``) or their count
(an int). Unstructured methods rank single entries; structured ones rank whole slices along ``dim`` (by the norm of
each slice for :class:`LnStructured`). Among equal scores the order is ``topk``'s, as in torch.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from genesis import ops as T
from genesis.memory_format import contiguous_format
from genesis.nn.modules.module import Module
from genesis.nn.utils.convert_parameters import parameters_to_vector
from genesis.random import rand, rand_like
from genesis.tensor import Tensor

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured", "l1_unstructured",
           "random_structured", "ln_structured", "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A way of computing a pruning mask; also the forward pre-hook that reapplies it before every forward.

    Subclasses set ``PRUNING_TYPE`` (``"unstructured"``, ``"structured"`` with a ``dim`` attribute, or
    ``"global"``) and define :meth:`compute_mask`.
    """

    PRUNING_TYPE: str
    _tensor_name: str | None = None

    def __call__(self, module: Module, inputs: Any) -> None:
        """Recompute ``module.<name>`` from ``<name>_orig`` and ``<name>_mask`` (the forward pre-hook)."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask of ``t`` (ranked by ``t``'s values), combined with ``default_mask``, the mask so far."""

    def apply_mask(self, module: Module) -> Tensor:
        """``<name>_mask * <name>_orig`` of ``module`` (the pruned tensor; differentiable in ``<name>_orig``)."""
        if self._tensor_name is None:
            raise RuntimeError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None,
              **kwargs: Any) -> BasePruningMethod:
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, on top of earlier pruning of it.

        Args:
            importance_scores: the values to rank by in place of the parameter's own (same shape).

        Returns:
            The hook now registered: the new method, or the container holding it with the earlier ones.
        """
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise ValueError(f"importance_scores should have the same shape as parameter {name} of {module}, "
                                 f"got {tuple(importance_scores.shape)} vs {tuple(orig.shape)}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            # First pruning of this tensor: the Parameter moves to <name>_orig.
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = T.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone(memory_format=contiguous_format)
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):  # roll back to the plain parameter
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """``t`` times its mask (ranked by ``importance_scores``, default ``t``), without touching a module."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise ValueError(f"importance_scores should have the same shape as tensor t, got "
                                 f"{tuple(importance_scores.shape)} vs {tuple(t.shape)}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else T.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``module.<name>`` becomes a Parameter again holding the pruned values (the
        ``_orig`` Parameter object itself), and ``<name>_orig`` and ``<name>_mask`` are deleted."""
        if self._tensor_name is None:
            raise RuntimeError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _composite_method(cls: type[BasePruningMethod], module: Module, name: str, *args: Any,
                      **kwargs: Any) -> BasePruningMethod:
    """The new method for ``module.<name>``; when the tensor is already pruned, its hook is unregistered and the new
    method joins the old one(s) in a :class:`PruningContainer`."""
    old_method = None
    found = [key for key, hook in module._forward_pre_hooks.items()
             if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(found) > 1:
        raise RuntimeError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. Use "
                           "a PruningContainer.")
    for key in found:
        old_method = module._forward_pre_hooks.pop(key)
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if isinstance(old_method, PruningContainer):
        old_method.add_pruning_method(method)
        return old_method
    if old_method is not None:
        container = PruningContainer(old_method)
        container.add_pruning_method(method)
        return container
    return method


class PruningContainer(BasePruningMethod):
    """The pruning methods applied to one tensor in turn; its mask is the last method's, computed over the entries
    (unstructured) or slices (structured) the earlier ones left."""

    def __init__(self, *args: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if args:
            self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append ``method`` (it must prune the same tensor)."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Iterator[BasePruningMethod]:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the last method's mask computed on the part of ``t`` still unpruned: the entries
        where the mask is 1 (unstructured), the slices along ``dim`` not yet all zero (structured), or all of ``t``
        (global)."""
        method = self._pruning_methods[-1]
        mask = default_mask
        new_mask = mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            slc: Any = mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` '
                                     "defined.")
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = tuple(keep_channel if d == dim else slice(None) for d in range(n_dims))
        elif method.PRUNING_TYPE == "global":
            slc = tuple(slice(None) for _ in range(t.dim()))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial_mask = method.compute_mask(t[slc], default_mask=mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (a tensor reparametrized as pruning, for uniform handling)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` entries chosen uniformly at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        # The entries drawing the largest random numbers are pruned.
        return _unstructured_mask(t, default_mask, self.amount, lambda: rand_like(t), largest=True)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return _unstructured_mask(t, default_mask, self.amount, lambda: T.abs(t), largest=False)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              importance_scores: Tensor | None = None) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` slices along ``dim`` chosen at random (whole channels)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        n_channels, n_prune = _structured_count(t, self.amount, self.dim)
        if n_prune == 0:
            return default_mask
        prob = rand(n_channels, device=t.device)
        # The channels drawing the n_prune lowest numbers are pruned.
        threshold = T.kthvalue(prob, k=n_prune).values
        mask = _channel_mask(t, self.dim, prob > threshold)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              dim: int = -1) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` slices along ``dim`` of smallest L``n`` norm (``n`` as ``genesis.norm``'s ``p``:
    an int, ``float("inf")``, ``float("-inf")``, ``"fro"``...)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, n: int | float | str, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        n_channels, n_prune = _structured_count(t, self.amount, self.dim)
        if n_prune == 0:
            return default_mask
        norm = _compute_norm(t, self.n, self.dim)
        keep = T.topk(norm, k=n_channels - n_prune, largest=True).indices
        mask = _channel_mask(t, self.dim, keep)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, n: int | float | str,  # type: ignore[override]
              dim: int, importance_scores: Tensor | None = None) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is 0 (the mask has the tensor's shape)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise ValueError(f"default_mask shape {tuple(default_mask.shape)} must match self.mask shape "
                             f"{tuple(self.mask.shape)}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, mask=mask)


def identity(module: Module, name: str) -> Module:
    """Reparametrize ``module.<name>`` as pruned with an all-ones mask; returns ``module``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    """Prune ``amount`` random entries of ``module.<name>``; returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: int | float,
                    importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` entries of ``module.<name>`` of smallest ``|importance_scores|`` (default: the
    parameter's own values); returns ``module``."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    """Prune ``amount`` random slices of ``module.<name>`` along ``dim``; returns ``module``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: int | float, n: int | float | str, dim: int,
                  importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` slices of ``module.<name>`` along ``dim`` of smallest L``n`` norm (of
    ``importance_scores`` when given); returns ``module``."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters: Iterable[tuple[Module, str]], pruning_method: type[BasePruningMethod],
                        importance_scores: dict[tuple[Module, str], Tensor] | None = None, **kwargs: Any) -> None:
    """Prune several tensors together: ``pruning_method(**kwargs)`` (unstructured) ranks the entries of all of them
    at once (``amount`` counts over their total), and each gets its share as a :class:`CustomFromMask` mask.

    Args:
        parameters: ``(module, name)`` pairs.
        pruning_method: an unstructured method class, such as :class:`L1Unstructured`.
        importance_scores: scores per ``(module, name)`` in place of the tensors' own values.
    """
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    default_mask = parameters_to_vector([getattr(module, name + "_mask", T.ones_like(getattr(module, name)))
                                         for module, name in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        count = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + count].view_as(param))
        pointer += count


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` where ``mask`` is 0; returns ``module``."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent: the pruned values become the plain parameter ``name``
    again; ``<name>_orig``, ``<name>_mask`` and the hook are removed. Returns ``module``."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any of its submodules has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())


def _validate_pruning_amount_init(amount: Any) -> None:
    """``amount`` is a non-negative int or a float in [0, 1]."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_pruning_amount(amount: int, tensor_size: int) -> None:
    """A count of units to prune is at most the number of units."""
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _validate_structured_pruning(t: Tensor) -> None:
    if len(t.shape) <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"{t.shape} with {len(t.shape)} dims")


def _compute_nparams_toprune(amount: int | float, tensor_size: int) -> int:
    """The count of units to prune: ``amount`` itself (an int) or ``round(amount * tensor_size)``."""
    return amount if isinstance(amount, numbers.Integral) else round(amount * tensor_size)


def _validate_pruning_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")


def _compute_norm(t: Tensor, n: int | float | str, dim: int) -> Tensor:
    """The L``n`` norm of each slice of ``t`` along ``dim`` (over every other dimension)."""
    dims = list(range(t.dim()))
    del dims[dim]
    return T.norm(t, p=n, dim=dims)


def _unstructured_mask(t: Tensor, default_mask: Tensor, amount: int | float, scores: Callable[[], Tensor],
                       largest: bool) -> Tensor:
    """A copy of ``default_mask`` with 0 at the ``amount`` entries of ``t`` whose ``scores()`` are largest (or
    smallest); ``scores`` is called only when something is pruned (no random numbers drawn for nothing)."""
    n_prune = _compute_nparams_toprune(amount, t.numel())
    _validate_pruning_amount(n_prune, t.numel())
    mask = default_mask.clone(memory_format=contiguous_format)
    if n_prune != 0:
        mask.view(-1)[T.topk(scores().view(-1), k=n_prune, largest=largest).indices] = 0
    return mask


def _structured_count(t: Tensor, amount: int | float, dim: int) -> tuple[int, int]:
    """``(slices along dim, slices to prune)`` after checking ``t``, ``dim`` and ``amount``."""
    _validate_structured_pruning(t)
    _validate_pruning_dim(t, dim)
    n_channels = t.shape[dim]
    n_prune = _compute_nparams_toprune(amount, n_channels)
    _validate_pruning_amount(n_prune, n_channels)
    return n_channels, n_prune


def _channel_mask(t: Tensor, dim: int, channels: Tensor) -> Tensor:
    """A mask of ``t``'s shape, 1 in the slices along ``dim`` that ``channels`` selects (a bool mask or indices)."""
    mask = T.zeros_like(t)
    mask[tuple(channels if d == dim % t.dim() else slice(None) for d in range(t.dim()))] = 1
    return mask
