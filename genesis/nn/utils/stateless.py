"""Calling a module with other tensors in place of its parameters and buffers (``torch.nn.utils.stateless``).

:func:`reparametrized` swaps tensors into a module by dotted name (``"0.weight"``, ``"bn.running_mean"``) and swaps
the originals back when it exits, on an exception too. As in torch, a swapped-in tensor is stored in the module's
registry as it is (a plain tensor where a ``Parameter`` was), so the module's forward reads it and gradients flow to
it; a name the module does not have is set as a plain attribute for the call and removed afterwards. Tensors the
module reassigns during the call (rather than changing in place) are written back into the caller's dict.

:func:`functional_call` is torch's older spelling of ``genesis.func.functional_call`` and, as torch's, warns that
it is deprecated.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from genesis.nn.modules.module import Module
from genesis.tensor import Tensor

__all__ = ["functional_call"]

_MISSING = object()  # the module had no attribute of that name before the swap


def _untie(module: Module, tensors: dict[str, Tensor]) -> dict[str, Tensor]:
    """``tensors`` extended to every name tied to a given one (a weight shared by two submodules is given under one
    name and used under both). Different tensors given for names of one tied tensor raise ValueError."""
    by_identity: dict[int, set[str]] = {}
    for name, t in [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]:
        by_identity.setdefault(id(t), set()).add(name)
    tied = {name: names for names in by_identity.values() if len(names) > 1 for name in names}
    untied = dict(tensors)
    for name in tensors:
        if name not in tied:
            continue
        given = {id(tensors[n]) for n in tied[name] if n in tensors}
        if len(given) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(tied[name])}, which are tied. "
                             "Consider using tie_weights=False")
        for other in tied[name]:
            untied[other] = tensors[name]
    return untied


def _check_keys(module: Module, names: Any) -> None:
    """strict: the names must be exactly the module's parameters and buffers (tied names included)."""
    valid = {n for n, _ in [*module.named_parameters(remove_duplicate=False),
                            *module.named_buffers(remove_duplicate=False)]}
    missing, unexpected = sorted(valid - set(names)), sorted(set(names) - valid)
    errors = []
    if unexpected:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if errors:
        raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(errors))


def _owner(module: Module, name: str) -> tuple[Module, str]:
    """The submodule holding dotted ``name`` and the last part of the name."""
    path, _, attr = name.rpartition(".")
    owner = module
    for part in path.split(".") if path else ():
        child = getattr(owner, part, None)
        if not isinstance(child, Module):
            raise AttributeError(f"{owner._get_name()} has no submodule `{part}` (looking up `{name}`)")
        owner = child
    return owner, attr


def _swap(module: Module, name: str, value: Any) -> Any:
    """Put ``value`` (or, for ``_MISSING``, nothing) under dotted ``name``; returns what was there."""
    if value is not _MISSING and value is not None and not isinstance(value, Tensor):
        raise TypeError(f"functional_call: the value for `{name}` is a {type(value).__name__}, not a Tensor")
    owner, attr = _owner(module, name)
    for registry in (owner._parameters, owner._buffers):
        if attr in registry:
            old = registry[attr]
            if value is _MISSING:
                del registry[attr]
            else:
                registry[attr] = value
            return old
    old = getattr(owner, attr, _MISSING)
    if old is not _MISSING and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"functional_call: attribute `{name}` of the module is a {type(old).__name__}, not a Tensor")
    if value is not _MISSING:
        setattr(owner, attr, value)
    elif old is not _MISSING:
        delattr(owner, attr)
    return old


@contextmanager
def reparametrized(module: Module, tensors: dict[str, Tensor], tie_weights: bool = False,
                   strict: bool = False) -> Iterator[None]:
    """Within the block, ``module`` holds ``tensors`` (dotted names) in place of its parameters and buffers.

    Args:
        module: the module to change for the duration of the block.
        tensors: ``{dotted name: tensor}``.
        tie_weights: a tensor given for one of several tied names is used for all of them.
        strict: the names must be exactly the module's parameters and buffers (RuntimeError otherwise).
    """
    untied = _untie(module, tensors) if tie_weights else tensors
    if strict:
        _check_keys(module, untied)
    originals: dict[str, Any] = {}
    try:
        for name, value in untied.items():
            originals[name] = _swap(module, name, value)
        yield
    finally:
        current = {name: _swap(module, name, old) for name, old in reversed(list(originals.items()))}
        # A module that reassigned a tensor during the call (``self.step = self.step + 1``) leaves the new one in
        # its registry: the caller's dict gets it, as in torch.
        tensors.update({k: current[k] for k in tensors if k in current and current[k] is not _MISSING})


def _functional_call(module: Module, tensors: dict[str, Tensor], args: Any = None,
                     kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with ``tensors`` in place of its parameters and buffers (no deprecation warning:
    the shared implementation of both ``functional_call`` spellings). Unlike torch's, it accepts ``nn.DataParallel``:
    Genesis's runs the wrapped module whole, so the swapped tensors are the ones used."""
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with reparametrized(module, tensors, tie_weights=tie_weights, strict=strict):
        return module(*args, **(kwargs or {}))


def functional_call(module: Module, parameters_and_buffers: dict[str, Tensor], args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with ``parameters_and_buffers`` in place of its parameters and buffers.

    Deprecated in torch 2.0 in favour of ``torch.func.functional_call`` (``genesis.func.functional_call``), a
    drop-in replacement; this warns as torch does.

    Args:
        module: the module to call.
        parameters_and_buffers: ``{dotted name: tensor}``.
        args: the positional arguments (a value that is not a tuple is the one argument).
        kwargs: the keyword arguments.
        tie_weights: tied parameters and buffers stay tied (one given value is used for all their names).
        strict: the names must be exactly the module's parameters and buffers.

    Returns:
        What the module returns.
    """
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in "
                  "a future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
                  "replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
