"""Grad mode: whether operations are recorded for differentiation (per thread), and the context managers that switch
it (``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``), as in torch.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable


class _GradState(threading.local):
    """Per-thread grad mode flags (plain attributes: read on every op, so kept cheap)."""

    def __init__(self) -> None:
        self.enabled = True
        self.inference = False


_state = _GradState()


def is_grad_enabled() -> bool:
    """Whether operations are currently recorded for differentiation."""
    return _state.enabled


def _set_enabled(mode: bool) -> None:
    _state.enabled = mode


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` block is active on this thread."""
    return _state.inference


class _GradModeContext:
    """Base of the grad-mode context managers; each one also works as a function decorator."""

    mode: bool = True

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        _set_enabled(self.mode)

    def __exit__(self, *exc: object) -> None:
        _set_enabled(self._prev)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper


class _NoParamGradModeContext(_GradModeContext):
    """A grad-mode context that takes no arguments, so it also decorates without parentheses (``@no_grad``)."""

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamGradModeContext):
    """Disable gradient recording inside the block (outputs do not require grad)."""

    mode = False


class enable_grad(_NoParamGradModeContext):
    """Enable gradient recording inside the block, also within ``no_grad``."""

    mode = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode on or off; takes effect immediately and, used as a context manager, restores it on exit."""

    def __init__(self, mode: bool) -> None:
        self._prev = is_grad_enabled()
        self.mode = bool(mode)
        _set_enabled(self.mode)

    def __enter__(self) -> None:
        pass

    def __call__(self, fn: Callable) -> Callable:
        _set_enabled(self._prev)
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class inference_mode(_GradModeContext):
    """Like ``no_grad``, for inference code; ``inference_mode(False)`` enables grad mode inside the block."""

    def __new__(cls, mode: bool | Callable = True) -> Any:
        if callable(mode):
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.enabled_flag = mode
        self.mode = not mode

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        self._prev_inference = is_inference_mode_enabled()
        # As in torch, inference_mode(False) turns grad mode on even inside no_grad.
        _set_enabled(not self.enabled_flag)
        _state.inference = self.enabled_flag

    def __exit__(self, *exc: object) -> None:
        _set_enabled(self._prev)
        _state.inference = self._prev_inference

    def __call__(self, fn: Callable) -> Callable:
        flag = self.enabled_flag

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(flag):
                return fn(*args, **kwargs)

        return wrapper
