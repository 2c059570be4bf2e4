"""``genesis.jit``: torch's TorchScript entry points, for scripts that decorate or compile with them.

Genesis runs Python eagerly and has no graph compiler, so ``script`` and ``trace`` return what they are given (the
function or module runs as it is, with the same results) and the decorators leave their function unchanged.
Saving a scripted program (``jit.save`` / ``jit.load``) has no Genesis equivalent and raises; save a
``state_dict()`` instead.
"""

from __future__ import annotations

import contextlib
import typing
from typing import Any, Callable, Iterator, TypeVar

T = TypeVar("T")


def script(obj: T, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None, example_inputs: Any = None) -> T:
    """``obj`` itself (a function, module or class): it runs eagerly."""
    return obj


def trace(func: T, example_inputs: Any = None, *args: Any, **kwargs: Any) -> T:
    """``func`` itself (a function or module): it runs eagerly on whatever inputs it gets."""
    return func


def trace_module(mod: T, inputs: Any = None, *args: Any, **kwargs: Any) -> T:
    """``mod`` itself: it runs eagerly."""
    return mod


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """The decorator that keeps a function out of TorchScript: the function unchanged (with or without arguments)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn: Callable) -> Callable:
    """The decorator for methods TorchScript should not compile: the method unchanged."""
    return fn


def export(fn: Callable) -> Callable:
    """The decorator for methods TorchScript compiles as entry points: the method unchanged."""
    return fn


def script_if_tracing(fn: T) -> T:
    """The decorator that scripts a function only when it is traced: the function unchanged."""
    return fn


def interface(obj: T) -> T:
    """The decorator that declares a TorchScript interface type: the class unchanged."""
    return obj


def freeze(mod: T, preserved_attrs: list[str] | None = None, optimize_numerics: bool = True) -> T:
    """``mod`` itself: freezing inlines a scripted module's parameters; an eager module has nothing to inline."""
    return mod


def optimize_for_inference(mod: T, other_methods: list[str] | None = None) -> T:
    """``mod`` itself: there is no TorchScript graph to optimize."""
    return mod


@contextlib.contextmanager
def optimized_execution(should_optimize: bool) -> Iterator[None]:
    """The switch of TorchScript's graph optimizations: no effect on eager code."""
    yield


@contextlib.contextmanager
def fuser(name: str) -> Iterator[None]:
    """The choice of TorchScript's fusion backend: no effect on eager code."""
    yield


def annotate(the_type: Any, the_value: T) -> T:
    """TorchScript's type hint for a value: the value."""
    return the_value


def is_scripting() -> bool:
    """False: Genesis never runs code as TorchScript."""
    return False


def is_tracing() -> bool:
    """False: Genesis never traces."""
    return False


def _unavailable(name: str) -> Callable:
    def fn(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"jit.{name}: Genesis has no TorchScript programs to save or load; save the "
                                  "model's state_dict() with genesis.save and build the model in Python")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "Not available in Genesis (raises NotImplementedError): there are no TorchScript programs."
    return fn


class Future:
    """What ``fork`` returns: the call's result (computed already) behind torch's ``wait()`` / ``value()``."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        return self._value

    def value(self) -> Any:
        return self._value

    def done(self) -> bool:
        return True


def fork(func: Callable, *args: Any, **kwargs: Any) -> Future:
    """Run ``func(*args, **kwargs)`` and return a ``Future`` of its result: torch runs forked calls of scripted code
    in parallel; Genesis runs them eagerly, one after another, with the same results."""
    return Future(func(*args, **kwargs))


def wait(future: Future) -> Any:
    """The result of a ``fork``."""
    return future.wait()


save = _unavailable("save")
load = _unavailable("load")

#: TorchScript's marker for constant attributes (``x: jit.Final[int]``): ``typing.Final``, as torch's, a plain type
#: hint in Genesis.
Final = typing.Final

__all__ = ["Final", "Future", "annotate", "export", "fork", "freeze", "fuser", "ignore", "interface", "is_scripting",
           "is_tracing", "load", "optimize_for_inference", "optimized_execution", "save", "script",
           "script_if_tracing", "trace", "trace_module", "unused", "wait"]
