"""Small helpers that layer code imports as ``torch.nn.modules.utils``: argument tuples for N-d layers and the
``module.`` prefix that ``DistributedDataParallel`` / ``DataParallel`` checkpoints carry."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Any


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    """A parser that turns a single value into an ``n``-tuple of it and passes any other iterable on as a tuple
    (``_pair(3) == (3, 3)``, ``_pair((1, 2)) == (1, 2)``)."""

    def parse(x: Any) -> tuple:
        if isinstance(x, Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: tuple, n: int) -> tuple:
    """Each element of ``t`` repeated ``n`` times, in reverse order: ``((1, 2), 2) -> (2, 2, 1, 1)``, the layout
    ``F.pad`` expects for per-dimension padding."""
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` from every key of ``state_dict`` that starts with it, in place (the renamed entries move to
    the end, as torch's); the keys of its ``_metadata`` attribute too, where the wrapper's own entry (``"module"``)
    becomes the root entry. A checkpoint saved from a model wrapped in ``DistributedDataParallel`` (keys
    ``module.…``) loads into the bare model this way."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix):]] = metadata.pop(key)
