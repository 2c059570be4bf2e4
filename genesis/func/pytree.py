"""Nested containers of tensors ("pytrees") as the ``genesis.func`` transforms walk them, after
``torch.utils._pytree``.

The containers are tuples, lists, dicts (``OrderedDict`` and ``defaultdict`` keep their type) and namedtuples;
anything else, ``None`` included, is a leaf. :func:`tree_flatten` lists the leaves depth first (a dict in its key
order) with a :class:`TreeSpec` that :func:`tree_unflatten` rebuilds the containers from; :func:`broadcast_prefix`
spreads a prefix tree such as vmap's ``in_dims`` over the leaves of a full one.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class TreeSpec:
    """The shape of a pytree: the container type (None for a leaf), what rebuilding it needs beyond its children
    (a dict's keys, a defaultdict's factory and keys), and the children's specs."""

    kind: type | None = None
    context: Any = None
    children: tuple[TreeSpec, ...] = ()

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        if self.context is None:
            return f"{self.kind.__name__}({inner})"
        keys = self.context[1] if self.kind is defaultdict else self.context
        return f"{self.kind.__name__}({list(keys)}: {inner})"


LEAF = TreeSpec()


def _is_namedtuple(tree: Any) -> bool:
    return isinstance(tree, tuple) and hasattr(type(tree), "_fields")


#: Container types registered by ``register_pytree_node``: type -> (flatten, unflatten).
_REGISTERED: dict[type, tuple[Callable, Callable]] = {}


def register_pytree_node(cls: type, flatten_fn: Callable[[Any], tuple[list, Any]],
                         unflatten_fn: Callable[[list, Any], Any], **kwargs: Any) -> None:
    """Make ``cls`` a container: ``flatten_fn(obj) -> (children, context)``, ``unflatten_fn(children, context)``
    rebuilds it (torch's ``torch.utils._pytree.register_pytree_node``; its serialization keywords are accepted)."""
    if cls in _REGISTERED:
        raise ValueError(f"{cls} is already registered as pytree node.")
    _REGISTERED[cls] = (flatten_fn, unflatten_fn)


def _node(tree: Any) -> tuple[type, Any, list] | None:
    """(type, context, children) of a container, None for a leaf."""
    kind = type(tree)
    registered = _REGISTERED.get(kind)
    if registered is not None:
        children, context = registered[0](tree)
        return kind, context, list(children)
    if kind in (tuple, list) or _is_namedtuple(tree):
        return kind, None, list(tree)
    if kind in (dict, OrderedDict):
        return kind, tuple(tree), list(tree.values())
    if kind is defaultdict:
        return kind, (tree.default_factory, tuple(tree)), list(tree.values())
    return None


def _rebuild(spec: TreeSpec, children: list) -> Any:
    kind = spec.kind
    registered = _REGISTERED.get(kind)
    if registered is not None:
        return registered[1](children, spec.context)
    if kind in (tuple, list):
        return kind(children)
    if kind in (dict, OrderedDict):
        return kind(zip(spec.context, children))
    if kind is defaultdict:
        factory, keys = spec.context
        return defaultdict(factory, zip(keys, children))
    return kind(*children)  # a namedtuple


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` (depth first) and its spec."""
    leaves: list = []

    def walk(node: Any) -> TreeSpec:
        found = _node(node)
        if found is None:
            leaves.append(node)
            return LEAF
        kind, context, children = found
        return TreeSpec(kind, context, tuple(walk(c) for c in children))

    return leaves, walk(tree)


def tree_unflatten(leaves: list | tuple, spec: TreeSpec) -> Any:
    """The pytree of ``spec`` holding ``leaves`` (in :func:`tree_flatten`'s order)."""
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten: {len(leaves)} leaves given for a spec with {spec.num_leaves}")
    items = iter(leaves)

    def build(node: TreeSpec) -> Any:
        if node.kind is None:
            return next(items)
        return _rebuild(node, [build(c) for c in node.children])

    return build(spec)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix: Any, spec: TreeSpec) -> list | None:
    """One value of ``prefix`` per leaf of ``spec``: a leaf of ``prefix`` stands for every leaf below its place in
    the full tree (``(None, 0)`` over ``(params_dict, x)`` gives None for each entry of the dict and 0 for ``x``).
    None when ``prefix`` is not a prefix of ``spec`` (other container types, lengths or keys)."""
    found = _node(prefix)
    if found is None:
        return [prefix] * spec.num_leaves
    kind, context, children = found
    if kind is not spec.kind or len(children) != len(spec.children):
        return None
    if kind in (dict, OrderedDict, defaultdict):
        keys = spec.context[1] if kind is defaultdict else spec.context
        if set(prefix) != set(keys):
            return None
        children = [prefix[k] for k in keys]  # by key, in the full tree's order
    result: list = []
    for child, child_spec in zip(children, spec.children):
        part = broadcast_prefix(child, child_spec)
        if part is None:
            return None
        result += part
    return result
