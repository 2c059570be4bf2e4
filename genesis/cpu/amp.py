"""``genesis.cpu.amp``: the older spelling of mixed precision on the CPU (``from torch.cpu.amp import autocast``):
``genesis.autocast("cpu", ...)`` and ``genesis.amp.GradScaler("cpu", ...)``, each with torch's FutureWarning of a
deprecated spelling."""

from __future__ import annotations

from typing import Any

from genesis import amp, dtypes
from genesis.amp import _deprecated_spelling as deprecated_spelling


class autocast(amp.autocast):
    """``autocast(enabled=True, dtype=bfloat16, cache_enabled=True)``: ``genesis.autocast("cpu", ...)``."""

    def __init__(self, enabled: bool = True, dtype: Any = dtypes.bfloat16, cache_enabled: bool = True) -> None:
        deprecated_spelling("torch.cpu.amp.autocast", "torch.amp.autocast('cpu', args...)")
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """``GradScaler(init_scale=65536.0, ...)``: ``genesis.amp.GradScaler("cpu", ...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        deprecated_spelling("torch.cpu.amp.GradScaler", "torch.amp.GradScaler('cpu', args...)")
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


__all__ = ["GradScaler", "autocast"]
