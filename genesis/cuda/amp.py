"""``genesis.cuda.amp``: the older spelling of mixed precision on CUDA that many scripts still import
(``from torch.cuda.amp import GradScaler, autocast, custom_fwd, custom_bwd``). All are ``genesis.amp``'s, with
"cuda" as the device type. Each warns as torch's, which deprecated this spelling (FutureWarning)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from genesis import amp, dtypes
from genesis.amp import _deprecated_spelling as deprecated_spelling


class autocast(amp.autocast):
    """``autocast(enabled=True, dtype=float16, cache_enabled=True)``: ``genesis.autocast("cuda", ...)``."""

    def __init__(self, enabled: bool = True, dtype: Any = dtypes.float16, cache_enabled: bool = True) -> None:
        deprecated_spelling("torch.cuda.amp.autocast", "torch.amp.autocast('cuda', args...)")
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """``GradScaler(init_scale=65536.0, ...)``: ``genesis.amp.GradScaler("cuda", ...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        deprecated_spelling("torch.cuda.amp.GradScaler", "torch.amp.GradScaler('cuda', args...)")
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def custom_fwd(fwd: Callable | None = None, *, cast_inputs: Any = None) -> Callable:
    """``genesis.amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)``."""
    deprecated_spelling("torch.cuda.amp.custom_fwd", "torch.amp.custom_fwd(args..., device_type='cuda')")
    return amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable | None = None) -> Callable:
    """``genesis.amp.custom_bwd(bwd, device_type="cuda")``."""
    deprecated_spelling("torch.cuda.amp.custom_bwd", "torch.amp.custom_bwd(args..., device_type='cuda')")
    return amp.custom_bwd(bwd, device_type="cuda")


__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]
