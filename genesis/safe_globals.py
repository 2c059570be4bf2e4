"""The globals a ``weights_only`` load may use besides tensors and plain containers, as torch's
``torch.serialization.add_safe_globals`` / ``safe_globals`` / ``get_safe_globals`` / ``clear_safe_globals``.

A user marks classes (``argparse.Namespace``, a config class of their own) or functions as safe; a weights-only
:func:`genesis.load` then rebuilds objects of those classes from Genesis files and from ``torch.save`` pickles,
and still refuses every other name. A global is known by its full path ``module.qualname``, or by the path given
with it as ``(obj, "module.qualname")`` when the file names it differently.
"""

from __future__ import annotations

from typing import Any, Callable, Union

SafeGlobal = Union[Callable, "tuple[Callable, str]"]

_marked: set[SafeGlobal] = set()


def add_safe_globals(safe_globals: list[SafeGlobal]) -> None:
    """Mark classes or functions (or ``(obj, "module.qualname")`` pairs) as safe for ``weights_only`` loads.

    Args:
        safe_globals: the globals; each one an object, or a pair of the object and the full path files name it by.
    """
    global _marked
    _marked = _marked.union(safe_globals)


def get_safe_globals() -> list[SafeGlobal]:
    """The globals marked safe by :func:`add_safe_globals` (and active :class:`safe_globals` blocks)."""
    return list(_marked)


def clear_safe_globals() -> None:
    """Forget every global marked safe."""
    global _marked
    _marked = set()


class safe_globals:
    """Mark globals as safe for ``weights_only`` loads inside a ``with`` block only.

    Args:
        safe_globals: as :func:`add_safe_globals`.
    """

    def __init__(self, safe_globals: list[SafeGlobal]) -> None:
        self.safe_globals = safe_globals

    def __enter__(self) -> None:
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc: object) -> None:
        global _marked
        _marked = _marked - set(self.safe_globals)


def lookup(full_path: str) -> Any | None:
    """The global marked safe under ``module.qualname``, or None (ValueError/TypeError for a malformed pair, as
    torch's)."""
    for entry in _marked:
        if isinstance(entry, tuple):
            if len(entry) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                                 f"length: {len(entry)}")
            if type(entry[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: "
                                f"{type(entry[1])}")
            obj, name = entry
        else:
            obj, name = entry, f"{entry.__module__}.{entry.__qualname__}"
        if name == full_path:
            return obj
    return None


__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "lookup", "safe_globals"]
