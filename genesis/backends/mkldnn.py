"""``torch.backends.mkldnn`` as Genesis answers it: Genesis has no oneDNN (MKL-DNN) backend of its own.

Its CPU backend computes with PyTorch's CPU kernels, and tensors have no ``mkldnn`` layout (``Tensor.to_mkldnn``),
so :func:`is_available` is False and code such as ``if torch.backends.mkldnn.is_available(): x = x.to_mkldnn()``
takes its plain path. The switches (``enabled``, ``deterministic``, ``allow_tf32``) are kept as settings that read
back what was set, alone or for a block with :func:`flags`; no Genesis kernel reads them.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

enabled = True
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: Genesis has no oneDNN backend (its CPU kernels are PyTorch's, reached through its CPU backend)."""
    return False


def is_acl_available() -> bool:
    """False: no oneDNN, hence no oneDNN built with the Arm Compute Library."""
    return False


def set_flags(_enabled: bool | None = None, _deterministic: bool | None = None,
              _allow_tf32: bool | None = None) -> tuple[bool, bool, bool]:
    """Set the switches given (None keeps one); returns the previous ``(enabled, deterministic, allow_tf32)``."""
    global enabled, deterministic, allow_tf32
    previous = (enabled, deterministic, allow_tf32)
    if _enabled is not None:
        enabled = bool(_enabled)
    if _deterministic is not None:
        deterministic = bool(_deterministic)
    if _allow_tf32 is not None:
        allow_tf32 = bool(_allow_tf32)
    return previous


@contextmanager
def flags(enabled: bool = False, deterministic: bool = False, allow_tf32: bool = True) -> Iterator[None]:
    """Set the switches for the duration of a ``with`` block, then restore them (torch's defaults: a block that
    turns ``enabled`` off)."""
    previous = set_flags(enabled, deterministic, allow_tf32)
    try:
        yield
    finally:
        set_flags(*previous)

