"""``torch.nn.utils.init``: building a module without initializing its parameters."""

from __future__ import annotations

import inspect
from typing import Any

from genesis.nn.modules.module import Module


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Module:
    """``module_cls(*args, **kwargs)`` with its parameters and buffers left uninitialized: the module is built on
    the meta device (no memory, no initialization work) and then given empty memory on ``device`` (default the
    CPU), as torch's. The module must take a ``device`` argument."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
