"""Collation (``genesis.utils.data._utils.collate``, as torch's): samples into batches, numpy data into tensors.

:func:`default_collate` is a DataLoader's default ``collate_fn`` when it batches; :func:`default_convert` when it
yields single samples (``batch_size=None``). Both recurse into mappings, named tuples and sequences and rebuild
each container with its own type where it can, as torch does.
"""

from __future__ import annotations

import collections.abc
import copy
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from genesis import dtypes
from genesis.ops import stack
from genesis.tensor import Tensor, as_tensor, tensor

# numpy dtype kinds that have no tensor dtype: byte strings, unicode strings, Python objects.
_NON_NUMERIC_KINDS = "SUO"
_COLLATE_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def rebuild_mapping(like: Mapping, values: dict) -> Mapping:
    """``values`` in a mapping of the same type as ``like``, as torch's collate and pin_memory build it.

    A mutable mapping is copied and updated (a defaultdict keeps its factory, a subclass its attributes); an
    immutable one is rebuilt from ``values``; a type that supports neither gives a plain dict.
    """
    try:
        if isinstance(like, collections.abc.MutableMapping):
            clone = copy.copy(like)
            clone.update(values)
            return clone
        return type(like)(values)
    except TypeError:
        return values


def rebuild_sequence(like: Sequence, items: list) -> Sequence:
    """``items`` in a sequence of the same type as ``like``, as torch's collate and pin_memory build it.

    A mutable sequence is copied and its items replaced; another sequence is rebuilt from the list; a type that
    supports neither (``range``) gives the list.
    """
    try:
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(like)(items)
    except TypeError:
        return items


def collate(batch: Sequence[Any], *, collate_fn_map: dict[type | tuple[type, ...], Callable] | None = None) -> Any:
    """Combine a list of samples into a batch, as torch's ``collate``: by the type of the first sample.

    The type is looked up in ``collate_fn_map`` (its exact type first, then each key in insertion order that it is
    an instance of); the function found is called as ``fn(batch, collate_fn_map=collate_fn_map)``. Containers that
    no key claims are collated here:

    - mappings: collated key by key, in a mapping of the sample's type;
    - named tuples: collated field by field, in the same named tuple;
    - other sequences: collated position by position (all samples of equal length, else RuntimeError), in a list
      for tuples and in the sample's type otherwise.

    Anything else raises TypeError.

    Args:
        batch: the samples.
        collate_fn_map: element type (or tuple of types) -> collate function.

    Returns:
        The batch.
    """
    elem = batch[0]
    if collate_fn_map is not None:
        if type(elem) in collate_fn_map:
            return collate_fn_map[type(elem)](batch, collate_fn_map=collate_fn_map)
        for collate_type, fn in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return rebuild_mapping(elem, {key: collate([sample[key] for sample in batch], collate_fn_map=collate_fn_map)
                                      for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(collate(fields, collate_fn_map=collate_fn_map) for fields in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        collated = [collate(fields, collate_fn_map=collate_fn_map) for fields in zip(*batch)]
        return collated if isinstance(elem, tuple) else rebuild_sequence(elem, collated)
    raise TypeError(_COLLATE_ERROR.format(type(elem)))


def collate_tensor_fn(batch: Sequence[Tensor], *, collate_fn_map: dict | None = None) -> Tensor:
    """Tensors stacked along a new first dimension."""
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch: Sequence[np.ndarray], *, collate_fn_map: dict | None = None) -> Any:
    """Numpy arrays as tensors, collated again through ``collate_fn_map`` (string and object arrays raise
    TypeError)."""
    if batch[0].dtype.kind in _NON_NUMERIC_KINDS:
        raise TypeError(_COLLATE_ERROR.format(batch[0].dtype))
    return collate([as_tensor(sample) for sample in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: Sequence[Any], *, collate_fn_map: dict | None = None) -> Tensor:
    """Numpy scalars in a tensor of their dtype."""
    return tensor(list(batch))


def collate_float_fn(batch: Sequence[float], *, collate_fn_map: dict | None = None) -> Tensor:
    """Python floats in a float64 tensor."""
    return tensor(list(batch), dtype=dtypes.float64)


def collate_int_fn(batch: Sequence[int], *, collate_fn_map: dict | None = None) -> Tensor:
    """Python ints in an int64 tensor (bools, a subclass of int, in a bool tensor)."""
    return tensor(list(batch))


def collate_str_fn(batch: Sequence[Any], *, collate_fn_map: dict | None = None) -> Sequence[Any]:
    """Strings and bytes: the batch itself, unchanged (so one string field of tuple samples comes back as a
    tuple)."""
    return batch


# torch's registry of the leaf types ``default_collate`` knows; users extend it in place or pass their own map to
# ``collate``.
default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch: Sequence[Any]) -> Any:
    """Combine a list of samples into a batch, as torch's ``default_collate``: :func:`collate` with
    ``default_collate_fn_map``.

    - tensors and numpy arrays: stacked along a new first dimension (string and object arrays raise TypeError);
    - numpy scalars: a tensor of their dtype; Python floats: float64; ints: int64; bools: bool;
    - strings and bytes: the batch itself, unchanged;
    - mappings, named tuples and other sequences: collated element-wise, as :func:`collate` describes.

    Args:
        batch: the samples.

    Returns:
        The batch.
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data: Any) -> Any:
    """One sample as a DataLoader with ``batch_size=None`` yields it, as torch's ``default_convert``: numpy arrays
    (but string and object arrays) and numpy scalars become tensors, recursing into mappings, named tuples and
    sequences (a plain tuple becomes a list); anything else is returned as it is.

    Args:
        data: the sample.

    Returns:
        The converted sample.
    """
    if isinstance(data, np.ndarray):
        return data if data.dtype.kind in _NON_NUMERIC_KINDS else as_tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return rebuild_sequence(data, [default_convert(d) for d in data])
    return data


__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]
