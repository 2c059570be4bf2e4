"""``Module``'s state dict: saving, loading and their hooks, with torch's protocol.

Saving walks the module tree: each module runs its state-dict pre-hooks, writes its own entries
(``_save_to_state_dict``), recurses into its children, then runs its post-hooks. The returned ``OrderedDict`` carries
``_metadata`` (each module's ``_version`` by prefix), which modules read when they load an older layout.

Loading walks the tree the same way: each module gets the entries under its prefix and its own metadata in
``_load_from_state_dict``, which runs its load pre-hooks and then takes its parameters and buffers. Modules override
that method (calling ``super()``) to rename or convert old entries, exactly as under torch. Genesis checks every entry
before it copies any: the copies are collected while the tree is walked and made only when nothing was wrong, so a
failed ``load_state_dict`` leaves the module unchanged.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, namedtuple
from typing import Any, Callable, Mapping

from genesis.autograd import no_grad
from genesis.nn.parameter import Parameter
from genesis.tensor import Tensor

_EXTRA_STATE_KEY = "_extra_state"


class _Loads(threading.local):
    """Per thread, the copies each running ``load_state_dict`` will make (innermost call last)."""

    def __init__(self) -> None:
        self.pending: list[list] = []


_loads = _Loads()


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys the module expected but did not get, and the extra ones."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _WithModule:
    """A load pre-hook registered publicly: called with the module first, as torch's public hooks are."""

    def __init__(self, hook: Callable, module: Any) -> None:
        self.hook = hook
        self.module = module

    def __call__(self, *args: Any) -> Any:
        return self.hook(self.module, *args)


class StateDictMixin:
    """The state-dict half of ``nn.Module`` (see the module docstring)."""

    # ------------------------------------------------------------ saving
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Write this module's own parameters, persistent buffers and extra state into ``destination``."""
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not StateDictMixin.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY] = self.get_extra_state()

    def state_dict(self, *args: Any, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (``"0.weight"``, ``"bn.running_mean"``).

        Values share memory with the module (detached unless ``keep_vars``). The dict's ``_metadata`` holds each
        module's ``_version`` by prefix, as torch's.
        """
        if args:
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def get_extra_state(self) -> Any:
        """State beyond parameters and buffers that ``state_dict`` should save (override with
        ``set_extra_state``); the base class has none."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state: Any) -> None:
        """Restore what ``get_extra_state`` returned (override together with it)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    # ------------------------------------------------------------ loading
    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """Take this module's own entries from ``state_dict`` (torch's signature; override to adapt old layouts).

        Runs the load pre-hooks, checks each entry against its parameter or buffer (type and shape), and records
        the mismatches in ``error_msgs``, the absent entries in ``missing_keys`` (with ``strict``) and entries under
        ``prefix`` that belong to nothing in ``unexpected_keys``.
        """
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        local_state = {k: v for k, v in self._parameters.items() if v is not None}
        local_state.update((k, v) for k, v in self._buffers.items()
                           if v is not None and k not in self._non_persistent_buffers_set)
        assign = local_metadata.get("assign_to_params_buffers", False)
        copies = _loads.pending[-1] if _loads.pending else None
        for name, target in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected genesis.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(value)}")
                continue
            if target.ndim == 0 and value.ndim == 1 and value.shape[0] == 1:
                value = value[0]  # a scalar saved as a 1-element vector by old releases
            if tuple(value.shape) != tuple(target.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                                  f"checkpoint, the shape in current model is {target.shape}.")
                continue
            if copies is None:
                _copy_entry(self, name, target, value, assign)
            else:
                copies.append((self, name, target, value, assign))
        extra_key = prefix + _EXTRA_STATE_KEY
        if type(self).set_extra_state is not StateDictMixin.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head = key[len(prefix):].split(".", 1)
                    if (head[0] not in self._modules) if len(head) > 1 else (head[0] not in local_state):
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy parameters and buffers from ``state_dict`` into this module.

        Every module's ``_load_from_state_dict`` sees the entries under its prefix (overrides there adapt old
        checkpoints, as under torch). Every entry is checked before anything is copied: a shape mismatch (or, with
        ``strict``, a missing or unexpected key) raises ``RuntimeError`` naming the key(s) and both shapes, and
        leaves the module unchanged.

        Args:
            state_dict: a mapping from dotted names to tensors (e.g. from ``state_dict()`` or a checkpoint).
            strict: whether missing and unexpected keys are errors.
            assign: whether to take the given tensors as the new parameters/buffers instead of copying into them.

        Returns:
            ``(missing_keys, unexpected_keys)`` as a named tuple.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors, copies = [], [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata
        post_hooks = []

        def load(module: StateDictMixin, local_state_dict: dict, prefix: str) -> None:
            local_metadata = dict(metadata.get(prefix[:-1], {})) if metadata is not None else {}
            if assign:
                local_metadata["assign_to_params_buffers"] = True
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing, unexpected,
                                         errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                         child_prefix)
            post_hooks.extend((module, hook) for hook in module._load_state_dict_post_hooks.values())

        _loads.pending.append(copies)
        try:
            load(self, state_dict, "")
        finally:
            _loads.pending.pop()
        # Post-hooks may edit the key lists (e.g. forgive keys they restored themselves) before the strict check.
        incompatible = _IncompatibleKeys(missing, unexpected)
        for module, hook in post_hooks:
            if hook(module, incompatible) is not None:
                raise RuntimeError("Hooks registered with ``register_load_state_dict_post_hook`` are not expected "
                                   "to return new values; modify incompatible_keys in place instead.")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected)
                              + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {self._get_name()}:\n\t" + "\n\t".join(errors))
        for module, name, target, value, assign_entry in copies:
            _copy_entry(module, name, target, value, assign_entry)
        return incompatible

    # ------------------------------------------------------------ hooks
    def register_state_dict_pre_hook(self, hook: Callable) -> Any:
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict`` saves this module."""
        return self._add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable) -> Any:
        """``hook(module, state_dict, prefix, local_metadata)`` runs after ``state_dict`` saved this module and its
        children; it may edit the dict in place (or return a new one)."""
        return self._add_hook(self._state_dict_hooks, hook)

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook: Callable) -> Any:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)``
        runs before this module takes its entries; it may edit ``state_dict`` in place (rename old keys)."""
        return self._add_hook(self._load_state_dict_pre_hooks, _WithModule(hook, self))

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False) -> Any:
        """torch's private form: ``hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)``, with the module first when ``with_module``."""
        return self._add_hook(self._load_state_dict_pre_hooks, _WithModule(hook, self) if with_module else hook)

    def register_load_state_dict_post_hook(self, hook: Callable) -> Any:
        """``hook(module, incompatible_keys)`` runs after this module and its children loaded; it may edit the
        missing and unexpected key lists in place before ``strict`` checks them."""
        return self._add_hook(self._load_state_dict_post_hooks, hook)


def _copy_entry(module: Any, name: str, target: Tensor, value: Tensor, assign: bool) -> None:
    """Load one checked entry: copy into the module's tensor, or (``assign``) take the given tensor itself."""
    with no_grad():
        if not assign:
            target.copy_(value)
        elif name in module._parameters:
            module._parameters[name] = value if isinstance(value, Parameter) else Parameter(value,
                                                                                           target.requires_grad)
        else:
            module._buffers[name] = value
