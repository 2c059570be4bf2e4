"""Grad mode: whether operations are recorded for differentiation (per thread), and the context managers that switch
it (``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``), as in torch.
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable, Generator


class _GradState(threading.local):
    """Per-thread grad mode flags (plain attributes: read on every op, so kept cheap)."""

    def __init__(self) -> None:
        self.enabled = True
        self.inference = False
        self.multithreading = True


_state = _GradState()


def is_grad_enabled() -> bool:
    """Whether operations are currently recorded for differentiation."""
    return _state.enabled


def _set_enabled(mode: bool) -> None:
    _state.enabled = mode


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` block is active on this thread."""
    return _state.inference


def is_multithreading_enabled() -> bool:
    """Whether backward passes started on this thread may use device worker threads (``set_multithreading_enabled``);
    Genesis's engine always runs a backward pass on the thread that starts it."""
    return _state.multithreading


def _wrap_generator(make_context: Callable[[], Any], fn: Callable) -> Callable:
    """A generator function whose every resumption (first ``next``, ``send``, ``throw``, ``close``) runs inside a
    fresh ``make_context()``, so the mode holds while the generator's body runs, not while its caller's does."""

    @functools.wraps(fn)
    def generator_context(*args: Any, **kwargs: Any) -> Generator:
        gen = fn(*args, **kwargs)
        try:
            with make_context():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_context():
                        gen.close()
                    raise
                except BaseException as exc:
                    with make_context():
                        response = gen.throw(exc)
                else:
                    with make_context():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return generator_context


def _decorate(make_context: Callable[[], Any], fn: Callable) -> Callable:
    """``fn`` run inside a fresh ``make_context()`` on each call; a generator function on each resumption (torch's
    ``context_decorator``)."""
    if inspect.isgeneratorfunction(fn):
        return _wrap_generator(make_context, fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with make_context():
            return fn(*args, **kwargs)

    return wrapper


class _GradModeContext:
    """Base of the grad-mode context managers; each one also works as a function decorator."""

    mode: bool = True

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        _set_enabled(self.mode)

    def __exit__(self, *exc: object) -> None:
        _set_enabled(self._prev)

    def __call__(self, fn: Callable) -> Callable:
        return _decorate(self.__class__, fn)


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
        return _decorate(functools.partial(set_grad_enabled, self.mode), fn)


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
        return _decorate(functools.partial(inference_mode, self.enabled_flag), fn)


class set_multithreading_enabled:
    """Allow or forbid device worker threads in the backward passes this thread starts (torch's switch, per thread);
    takes effect immediately and, used as a context manager, restores the previous setting on exit. Genesis runs
    every backward pass on the calling thread, which is what ``mode=False`` asks for, so only the flag changes."""

    def __init__(self, mode: bool) -> None:
        self._prev = _state.multithreading
        self.mode = bool(mode)
        _state.multithreading = self.mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _state.multithreading = self._prev

    def __call__(self, fn: Callable) -> Callable:
        _state.multithreading = self._prev
        return _decorate(functools.partial(set_multithreading_enabled, self.mode), fn)
