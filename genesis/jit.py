"""``genesis.jit``: torch's TorchScript entry points, for scripts that decorate or compile with them.

Genesis runs Python eagerly and has no graph compiler, so ``script`` and ``trace`` return what they are given (the
function or module runs as it is, with the same results) and the decorators leave their function unchanged.
Saving a scripted program (``jit.save`` / ``jit.load``) has no Genesis equivalent and raises; save a
``state_dict()`` instead.
"""

from __future__ import annotations

import builtins
import contextlib
import types
import typing
import warnings
from typing import Any, Callable, Iterator, TypeVar

from genesis.nn.modules.module import Module

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


#: The bare container types torch refuses as ``isinstance`` targets (their element types are missing); the typing
#: aliases are keys here as objects, not annotations.
_BARE_CONTAINERS = {dict: "dict", list: "list", tuple: "tuple", typing.Dict: "Dict", typing.List: "List",  # noqa: UP006
                    typing.Optional: "Optional", typing.Tuple: "Tuple"}  # noqa: UP006


def _empty_container_warning(obj: Any) -> None:
    if obj == [] or obj == {} or obj == ():
        warnings.warn("The inner type of a container is lost when calling torch.jit.isinstance in eager mode. For "
                      "example, List[int] would become list and therefore falsely return True for List[float] or "
                      "List[str].", stacklevel=4)


def _container_matches(obj: Any, target_type: Any) -> bool:
    """Whether ``obj`` is the parameterized container ``target_type``, checked element by element (as torch)."""
    origin, args = typing.get_origin(target_type), typing.get_args(target_type)
    if origin is list:
        _empty_container_warning(obj)
        return builtins.isinstance(obj, list) and all(_matches(el, args[0]) for el in obj)
    if origin is dict:
        _empty_container_warning(obj)
        return builtins.isinstance(obj, dict) and all(builtins.isinstance(key, args[0]) and _matches(val, args[1])
                                                      for key, val in obj.items())
    if origin is tuple:
        _empty_container_warning(obj)
        return (builtins.isinstance(obj, tuple) and len(obj) == len(args)
                and all(_matches(el, el_type) for el, el_type in zip(obj, args)))
    if origin is typing.Union or origin is types.UnionType:  # Optional[X] too: None always matches
        # As torch: the first parameterized member decides alone.
        for member in args:
            if typing.get_origin(member) is not None:
                return obj is None or _container_matches(obj, member)
            if obj is None or builtins.isinstance(obj, member):
                return True
    return False


def _matches(obj: Any, target_type: Any) -> bool:
    return (_container_matches(obj, target_type) if typing.get_origin(target_type) is not None
            else builtins.isinstance(obj, target_type))


def isinstance(obj: Any, target_type: Any) -> bool:
    """TorchScript's container type refinement, checked eagerly: whether ``obj`` is a ``target_type``.

    Parameterized containers (``List[Tensor]``, ``Dict[str, List[int]]``, ``Tuple[int, str]``, ``Optional[...]``)
    are checked element by element; a tuple of types matches any of its members. An empty container matches any
    element type (with torch's warning that the inner type is lost).
    """
    if builtins.isinstance(target_type, tuple):
        return any(isinstance(obj, member) for member in target_type)
    if builtins.isinstance(target_type, (list, dict, set)):
        raise RuntimeError("The second argument to `torch.jit.isinstance` must be a type or a tuple of types")
    name = _BARE_CONTAINERS.get(target_type)
    if name in ("dict", "Dict"):
        raise RuntimeError(f"Attempted to use {name} without contained types. Please add contained type, e.g. "
                           f"{name}[int, int]")
    if name is not None:
        raise RuntimeError(f"Attempted to use {name} without a contained type. Please add a contained type, e.g. "
                           f"{name}[int]")
    return _matches(obj, target_type)


class ScriptModule(Module):
    """The base class of torch's TorchScript modules (the legacy ``class M(jit.ScriptModule)`` with
    ``@jit.script_method``): a plain :class:`~genesis.nn.Module` whose methods run eagerly. ``jit.script`` returns
    modules unchanged, so a module is an instance of this class only when it derives from it."""


class ScriptFunction:
    """The type of torch's compiled TorchScript functions, for ``isinstance`` checks: ``jit.script`` returns functions
    unchanged, so no Genesis object is one."""


def script_method(fn: Callable) -> Callable:
    """The legacy decorator of a :class:`ScriptModule`'s compiled methods: the method unchanged."""
    return fn


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

__all__ = ["Final", "Future", "ScriptFunction", "ScriptModule", "annotate", "export", "fork", "freeze", "fuser",
           "ignore", "interface", "is_scripting", "is_tracing", "isinstance", "load", "optimize_for_inference",
           "optimized_execution", "save", "script", "script_if_tracing", "script_method", "trace", "trace_module",
           "unused", "wait"]
