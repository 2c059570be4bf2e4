"""``genesis.utils.hooks`` (``torch.utils.hooks``): the handle hook registrations return, and the marker for hooks
that are not meant to be saved with a tensor.

:class:`RemovableHandle` is the handle of ``nn.Module``'s hook registrations, in torch's shape: built over the
ordered dicts the hook is registered in, with a unique ``id`` to register it under, so code that keeps hooks of its
own writes what it writes with torch::

    handle = RemovableHandle(self._hooks)
    self._hooks[handle.id] = hook
    return handle          # handle.remove(), or ``with handle:``

Tensor and graph-node hooks (``Tensor.register_hook``, ``Node.register_hook``) return the autograd layer's own
handle, ``genesis.autograd.RemovableHandle``, which removes its hook from a list; both have ``remove()`` and work
as context managers.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, TypeVar

from genesis.nn.modules.module import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]

F = TypeVar("F", bound=Callable[..., Any])


def unserializable_hook(f: F) -> F:
    """Mark a tensor hook as not meant to be serialized, which silences :func:`warn_if_has_hooks` for it (a
    decorator; returns ``f``)."""
    f.__torch_unserializable__ = True  # type: ignore[attr-defined]
    return f


def warn_if_has_hooks(tensor: Any) -> None:
    """Warn for every gradient hook registered on ``tensor`` that is not marked :func:`unserializable_hook`: hooks
    are not saved with a tensor."""
    hooks = tensor._hooks
    node = tensor._grad_fn
    if node is not None and node._output_hooks:
        hooks = node._output_hooks.get(tensor._output_nr)
    for hook in hooks or ():
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is expected, you can "
                          "decorate the function with @torch.utils.hooks.unserializable_hook to suppress this warning",
                          stacklevel=2)
