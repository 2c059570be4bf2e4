"""Modules as functions of their parameters (``torch.func.functional_call``, ``torch.func.stack_module_state``).

``functional_call(model, params, x)`` runs ``model(x)`` with the tensors of ``params`` in place of the model's own
parameters and buffers and puts the originals back afterwards (on an exception too), so a model can be called with
fast weights (MAML), with parameters a transform differentiates (``grad``, ``jacrev``), or with one member of a
stacked ensemble under ``vmap``. The swapping itself lives in :mod:`genesis.nn.utils.stateless`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from genesis.nn.modules.module import Module
from genesis.nn.utils.stateless import _functional_call
from genesis.ops import stack
from genesis.tensor import Tensor


def functional_call(module: Module, parameter_and_buffer_dicts: dict[str, Tensor] | Sequence[dict[str, Tensor]],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the given tensors in place of its parameters and buffers.

    Gradients flow to the given tensors; the module's own tensors are back in place when the call returns or
    raises. A tensor the module changes in place during the call (batch norm's running statistics) is the given
    one, so the change shows in the caller's dict, as in torch.

    Args:
        module: the module to call.
        parameter_and_buffer_dicts: ``{dotted name: tensor}`` (``"0.weight"``, ``"bn.running_mean"``), or a tuple or
            list of such dicts with distinct keys (``(params, buffers)``). Names the module lacks are set as
            attributes for the call.
        args: the positional arguments; a value that is not a tuple is the one argument.
        kwargs: the keyword arguments.
        tie_weights: parameters and buffers tied in the module (one tensor under several names) stay tied: the
            value given for one name is used for all; different values for tied names raise ValueError.
        strict: the names must be exactly the module's parameters and buffers (RuntimeError otherwise).

    Returns:
        What the module returns.
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for key in d:
                counts[key] = counts.get(key, 0) + 1
        repeated = [key for key, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        tensors = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return _functional_call(module, tensors, args, kwargs, tie_weights=tie_weights, strict=strict)


def _stacked_leaf(tensors: list[Tensor], name: str) -> Tensor:
    """The tensors stacked along a new first dim; a fresh leaf that requires grad when they all do."""
    flags = {t.requires_grad for t in tensors}
    if len(flags) > 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack(tensors)
    return result.detach().requires_grad_() if flags == {True} else result


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The parameters and buffers of ``M`` models of one class, each stacked along a new first dim of size ``M``.

    Prepares an ensemble for ``vmap(lambda p, b, x: functional_call(models[0], (p, b), (x,)), (0, 0, None))``. The
    stacked parameters are new leaves (unrelated to the models' own), so they can go to an optimizer.

    Args:
        models: the models (a list or ``nn.ModuleList``), all of one class and in the same training/eval mode.

    Returns:
        ``(params, buffers)``: dicts from the dotted names of ``named_parameters()`` / ``named_buffers()`` to the
        stacked tensors.
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers
