"""Anomaly detection (``torch.autograd.detect_anomaly`` / ``set_detect_anomaly``): while it is on, the backward
pass checks every gradient a node returns and raises ``RuntimeError`` naming the node and the output when one holds
a NaN, instead of letting the NaN spread into the parameters.

Each check reads the device (one synchronization per node), so it is a debugging aid. Unlike torch, Genesis does
not record the forward traceback of each node: the error names the node only.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

_enabled = False
_check_nan = True


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return _enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks gradients for NaN."""
    return _check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off for the process (``torch.set_anomaly_enabled``; ``set_detect_anomaly`` is
    its context manager)."""
    global _enabled, _check_nan
    _enabled, _check_nan = bool(enabled), bool(check_nan)


class set_detect_anomaly:
    """Turn anomaly detection on or off (for the process, or for a ``with`` block as a context manager)."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.previous = (_enabled, _check_nan)
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        set_anomaly_enabled(*self.previous)


class detect_anomaly:
    """A ``with`` block (or a decorator) with anomaly detection on."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        self.mode = set_detect_anomaly(True, self.check_nan)

    def __exit__(self, *exc: object) -> None:
        self.mode.__exit__()

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)
        return run


def check_gradients(name: str, grads: tuple) -> None:
    """Raise if a gradient returned by the backward of the node ``name`` holds a NaN (anomaly detection)."""
    if not _check_nan:
        return
    for i, g in enumerate(grads):
        if g is not None and g.dtype.is_floating_point and bool((g != g).any()):
            raise RuntimeError(f"Function '{name}' returned nan values in its {i}th output.")
