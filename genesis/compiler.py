"""``genesis.compiler``: torch's ``torch.compiler`` namespace for scripts that mark functions for (or against)
compilation. Genesis runs every op eagerly, so the markers leave functions as they are and the queries answer as
torch's do outside a compiled region; ``genesis.compile(module, mode="reduce-overhead")`` replays CUDA graphs of the
module's forward and backward, and whole training steps go faster through CUDA graphs (``genesis.cuda.graph``,
``genesis.cuda.make_graphed_callables``)."""

from __future__ import annotations

import weakref
from typing import Any, Callable

#: The CUDA-graph caches of modules compiled with ``mode="reduce-overhead"`` (``genesis._dynamo.cudagraphs``):
#: :func:`reset` empties them.
graph_caches: weakref.WeakSet = weakref.WeakSet()


def _marker(fn: Callable | None, **_: Any) -> Any:
    """A decorator used bare (``@disable``) or with arguments (``@disable(recursive=False)``): fn unchanged."""
    return fn if fn is not None else (lambda f: f)


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """Keep ``fn`` out of compilation: Genesis never compiles, so ``fn`` comes back unchanged."""
    return _marker(fn)


def allow_in_graph(fn: Callable) -> Callable:
    """Let the compiler trace ``fn`` as one node: ``fn`` unchanged."""
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    """Let the compiler treat ``fn``'s result as a constant: ``fn`` unchanged."""
    return fn


def is_compiling() -> bool:
    """Whether the code runs inside a compiled region: never under Genesis."""
    return False


is_dynamo_compiling = is_compiling


def is_exporting() -> bool:
    """Whether the code runs under ``torch.export``: never under Genesis."""
    return False


def reset() -> None:
    """Clear the compiler's caches: the CUDA graphs captured for modules compiled with ``mode="reduce-overhead"``
    (needed after a parameter's storage was replaced in a way the module does not see, e.g. ``p.data = x``)."""
    for cache in list(graph_caches):
        cache.clear()


def cudagraph_mark_step_begin() -> None:
    """Mark the start of a step for compiled CUDA graphs: nothing to mark (outputs of Genesis's graphed modules are
    copies, never overwritten by a later step)."""


def list_backends(exclude_tags: Any = ()) -> list[str]:
    """The compiler backends: none, since Genesis runs eagerly."""
    return []


__all__ = ["allow_in_graph", "assume_constant_result", "cudagraph_mark_step_begin", "disable", "is_compiling",
           "is_dynamo_compiling", "is_exporting", "list_backends", "reset"]
