"""``torch.utils._pytree``'s functions over Genesis's pytrees (:mod:`genesis.func.pytree`): nested tuples, lists,
dicts, namedtuples and the types registered with :func:`register_pytree_node`; anything else is a leaf."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from genesis.func.pytree import LEAF, TreeSpec, register_pytree_node, tree_flatten, tree_map, tree_unflatten

__all__ = ["LeafSpec", "TreeSpec", "register_pytree_node", "tree_all", "tree_any", "tree_flatten", "tree_iter",
           "tree_leaves", "tree_map", "tree_map_only", "tree_structure", "tree_unflatten"]


def LeafSpec() -> TreeSpec:  # torch's name
    """The spec of a single leaf."""
    return LEAF


def tree_leaves(tree: Any) -> list:
    """The leaves of ``tree``, depth first."""
    return tree_flatten(tree)[0]


def tree_structure(tree: Any) -> TreeSpec:
    """The spec of ``tree`` (its containers without the leaves)."""
    return tree_flatten(tree)[1]


def tree_iter(tree: Any) -> Iterator[Any]:
    """An iterator over the leaves of ``tree``."""
    return iter(tree_leaves(tree))


def tree_map_only(types: type | tuple[type, ...], fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to the leaves that are instances of ``types`` (the others kept)."""
    return tree_map(lambda x: fn(x) if isinstance(x, types) else x, tree)


def tree_any(pred: Callable[[Any], bool], tree: Any) -> bool:
    """Whether ``pred`` holds for some leaf."""
    return any(map(pred, tree_leaves(tree)))


def tree_all(pred: Callable[[Any], bool], tree: Any) -> bool:
    """Whether ``pred`` holds for every leaf."""
    return all(map(pred, tree_leaves(tree)))
