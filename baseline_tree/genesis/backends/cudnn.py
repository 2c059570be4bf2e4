"""cuDNN switches, as ``torch.backends.cudnn``: read by Genesis's convolutions on ``cuda`` at every call.

- ``enabled``: convolutions run through cuDNN where it is available and supports the case (else Genesis's own
  im2col path);
- ``benchmark``: the first call of each convolution configuration times every cuDNN plan and keeps the fastest
  (otherwise cuDNN's heuristic choice is used);
- ``allow_tf32``: float32 convolutions may use TF32 tensor cores (on by default, as in torch).

Set them as module attributes (``genesis.backends.cudnn.benchmark = True``) or for a block with :func:`flags`.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

enabled = True
benchmark = False
allow_tf32 = True
deterministic = False  # accepted for torch compatibility; cuDNN's convolution plans here are deterministic choices


def is_available() -> bool:
    """True when a CUDA GPU and the cuDNN library (through cudnn-frontend) can be used."""
    from genesis import cuda

    if not cuda.is_available():
        return False
    from genesis.backends.cuda import cudnn

    return cudnn.is_available()


def version() -> int | None:
    """cuDNN's version number (e.g. 91900), or None when cuDNN is not available."""
    if not is_available():
        return None
    from genesis.backends.cuda import cudnn

    return int(cudnn.module().backend_version())


@contextmanager
def flags(enabled: bool | None = None, benchmark: bool | None = None, deterministic: bool | None = None,
          allow_tf32: bool | None = None) -> Iterator[None]:
    """Set the given switches for the duration of a ``with`` block (None keeps a switch as it is)."""
    names = ("enabled", "benchmark", "deterministic", "allow_tf32")
    values = (enabled, benchmark, deterministic, allow_tf32)
    module = globals()
    saved = {name: module[name] for name in names}
    try:
        for name, value in zip(names, values):
            if value is not None:
                module[name] = bool(value)
        yield
    finally:
        module.update(saved)
