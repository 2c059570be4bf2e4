"""Python data for ``genesis.tensor``: the dtype torch would infer for nested numbers, and their numpy array.

``tensor([1, 2.5])`` and friends walk nested lists, tuples and other sequences of Python numbers, numpy scalars and
tensors. The common case, a flat list or a rectangular list of rows of Python numbers, converts through numpy in
one call (:func:`scalars_to_numpy`); the rest takes the general walk. The tensor class is passed in by the caller
(``genesis.tensor``), which imports this module. Also the host values of ``linspace`` in half precision
(:func:`linspace_half`), rounded operation by operation as torch's CPU kernel.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from genesis import dtypes


def _check_one_element(t: Any) -> None:
    if t.numel() != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")


def infer_dtype(data: Any, tensor_type: type) -> dtypes.dtype:
    """The dtype torch.tensor would pick for nested Python data: tensors, numpy scalars and numpy arrays inside count
    as numbers of their own dtype, promoted with the others (``[tensor(2), 1.5]`` is float32, ``[bfloat16 tensor,
    2.0]`` float32, a list of float64 arrays float64)."""
    _sizes(data)  # torch reads the shape first: a string there is its ValueError, before any dtype error
    kind = 0
    typed = None  # numpy scalars carry their own dtype, which torch keeps
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, tensor_type):  # a one-element tensor is a number of its dtype, as a numpy scalar
            _check_one_element(item)
            typed = item.dtype if typed is None else dtypes.promote_types(typed, item.dtype)
            continue
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, (np.generic, np.ndarray)):  # an array in a list fills the remaining dims, typed
            d = dtypes.from_numpy(item.dtype)
            typed = d if typed is None else dtypes.promote_types(typed, d)
        elif isinstance(item, bool):
            kind = kind or 0
        elif isinstance(item, numbers.Integral):
            kind = max(kind, 1)
        elif isinstance(item, numbers.Real):
            kind = max(kind, 2)
        elif isinstance(item, numbers.Complex):
            kind = 3
        elif isinstance(item, (str, bytes)):
            raise TypeError(f"tensor(): invalid data type '{type(item).__name__}'")
        else:
            raise RuntimeError(f"tensor(): Could not infer dtype of {type(item).__name__}")
    if typed is not None:
        return dtypes.promote_types(typed, dtypes.scalar_kind_dtype(kind) if kind else typed)
    if kind == 0 and _has_leaf(data):
        return dtypes.bool_
    return dtypes.scalar_kind_dtype(kind) if _has_leaf(data) else dtypes.get_default_dtype()


def _has_leaf(data: Any) -> bool:
    if isinstance(data, (list, tuple)):
        return any(_has_leaf(d) for d in data)
    return True


def _sizes(data: Any) -> list[int]:
    """The shape torch reads from nested lists: the length at each depth along the chain of first elements (a numpy
    array there adds its whole shape)."""
    sizes = []
    while isinstance(data, list):
        sizes.append(len(data))
        if not data:
            break
        data = data[0]
    if isinstance(data, str):  # a string is a sequence of strings, without end
        raise ValueError("tensor(): too many dimensions 'str'")
    if isinstance(data, np.ndarray):
        sizes.extend(data.shape)
    return sizes


def _check_nested(data: list, tensor_type: type) -> None:
    """torch's errors for nested lists that do not form a tensor of the shape their first elements give: a row of
    another length (ValueError), a number where a list belongs or a list where a number belongs (TypeError), and a
    leaf that is no number (TypeError)."""
    sizes = _sizes(data)
    if 0 in sizes:
        return
    stack = [(data, 0)]
    while stack:
        item, dim = stack.pop()
        if isinstance(item, tensor_type) and dim == len(sizes):
            _check_one_element(item)
        elif isinstance(item, np.ndarray):  # fills the remaining dimensions: their lengths are checked here
            for d, (want, got) in enumerate(zip(sizes[dim:], item.shape), dim):
                if want != got:
                    raise ValueError(f"tensor(): expected sequence of length {want} at dim {d} (got {got})")
        elif isinstance(item, tensor_type) or hasattr(item, "__array__"):
            continue  # converted whole (tensors and arrays fill the remaining dimensions)
        elif dim == len(sizes):
            if not isinstance(item, (numbers.Number, np.bool_)):
                raise TypeError(f"tensor(): must be a number at dim {dim}, not {type(item).__name__}")
        elif not isinstance(item, list):
            raise TypeError(f"tensor(): not a sequence at dim {dim} (got {type(item).__name__}, expected a sequence "
                            f"of length {sizes[dim]})")
        elif len(item) != sizes[dim]:
            raise ValueError(f"tensor(): expected sequence of length {sizes[dim]} at dim {dim} (got {len(item)})")
        else:
            stack.extend((x, dim + 1) for x in reversed(item))  # in order, so the first bad element reports


def nested_to_numpy(data: Any, dtype: dtypes.dtype, tensor_type: type) -> np.ndarray:
    """Nested Python data as a numpy array of ``dtype`` (tensors inside converted through numpy). Ragged nesting and
    leaves that are no numbers raise torch's errors rather than reaching numpy, which would pad or convert them."""
    _check_nested(data, tensor_type)
    def convert(item: Any) -> Any:
        if isinstance(item, tensor_type):  # one element (torch reads it as a number; anything larger raises)
            _check_one_element(item)
            return item.item()
        if isinstance(item, (list, tuple)):
            return [convert(i) for i in item]
        return item

    converted = convert(data)
    if dtype is dtypes.bfloat16:
        return np.asarray(np.array(converted, dtype=np.float64), dtype=dtypes.to_numpy(dtype))
    try:
        return np.array(converted, dtype=dtypes.to_numpy(dtype))
    except (ValueError, OverflowError) as err:
        leaves = list(_leaves(converted))
        if any(isinstance(x, int) and not -(1 << 63) <= x < 1 << 63 for x in leaves):
            # torch reads every Python int as a 64-bit one first
            raise ValueError("tensor(): Overflow when unpacking long long (a Python int beyond the range of "
                             "int64)") from None
        if dtype.category == 1 and not dtype.is_signed and _wraps_unsigned(leaves, dtype):
            return np.array(converted, dtype=np.int64).astype(dtypes.to_numpy(dtype))
        if isinstance(err, ValueError) and not (dtype.category == 1 and any(x != x for x in leaves)):
            raise ValueError(f"tensor(): {err}") from None
        # torch's checked conversion: NaN and numbers outside an integer type's range do not convert
        raise RuntimeError(f"tensor(): value cannot be converted to type {dtype.name} without overflow") from None


def _leaves(item: Any) -> Any:
    """The numbers of nested lists, in order."""
    if isinstance(item, list):
        for i in item:
            yield from _leaves(i)
    else:
        yield item


def _wraps_unsigned(leaves: list, dtype: dtypes.dtype) -> bool:
    """Whether every number converts to the unsigned ``dtype`` under torch's checked conversion, negative integers
    down to minus its maximum wrapping around (``-1`` is 255 in uint8)."""
    top = dtypes.iinfo(dtype).max
    return all(isinstance(x, (int, float)) and (-top if isinstance(x, int) else 0) <= x <= top for x in leaves)


_SCALARS = frozenset((bool, int, float))


def _scalar_kind(row: Any) -> int | None:
    """For a list or tuple of Python bools, ints and floats: 0 (all bools), 1 (ints among them) or 2 (floats among
    them); None for anything else."""
    kinds = set(map(type, row))
    if not kinds <= _SCALARS:
        return None
    return 2 if float in kinds else 1 if int in kinds else 0


def scalars_to_numpy(data: Any, dtype: dtypes.dtype | None) -> np.ndarray | None:
    """The common case of ``tensor(data)`` without walking each element in Python: a flat list or tuple of Python
    numbers, or a rectangular list of such rows. None where the general path must decide (other element types,
    ragged rows, complex or bfloat16 results, out-of-range integers)."""
    if type(data) not in (list, tuple) or not data:
        return None
    if type(data[0]) in (list, tuple):
        width = len(data[0])
        if not width or any(type(r) not in (list, tuple) or len(r) != width for r in data):
            return None
        kinds = [_scalar_kind(r) for r in data]
        if None in kinds:
            return None
        kind = max(kinds)
    else:
        kind = _scalar_kind(data)
        if kind is None:
            return None
    d = dtype or (dtypes.bool_, dtypes.int64, dtypes.get_default_dtype())[kind]
    if d.category == 3 or d is dtypes.bfloat16 or (kind == 2 and d.category < 2):
        return None  # complex, bfloat16 and float-to-integer conversions keep the general path's rules
    try:
        with np.errstate(over="ignore"):  # a number beyond a float dtype's range becomes inf silently, as in torch
            return np.array(data, dtype=dtypes.to_numpy(d))
    except (OverflowError, ValueError):
        return None


def plain(data: Any) -> Any:
    """Nested sequences of any kind (deque, range, tuple...) as the nested lists the converters walk."""
    return [plain(x) for x in data] if isinstance(data, Sequence) and not isinstance(data, (str, bytes)) else data


def _round_half(x: Any, d: dtypes.dtype) -> np.ndarray:
    """float32 values rounded to float16 or bfloat16 (to nearest, ties to even), kept as float32."""
    return np.asarray(x, dtype=np.float32).astype(dtypes.to_numpy(d)).astype(np.float32)


def linspace_half(start: float, end: float, steps: int, d: dtypes.dtype) -> np.ndarray:
    """``linspace`` in float16 or bfloat16 with torch's CPU arithmetic: every operation (the step, each product and
    sum) computed in float32 and rounded to ``d``, counting up from start for the first half, down from end after."""
    with np.errstate(invalid="ignore", over="ignore"):
        first, last = _round_half(start, d), _round_half(end, d)
        step = _round_half(_round_half(last - first, d) / np.float32(steps - 1), d) if steps > 1 else np.float32(0)
        i = np.arange(steps, dtype=np.float32)
        rising = steps // 2 if steps > 1 else 1
        up = _round_half(first + _round_half(step * i, d), d)
        down = _round_half(last - _round_half(step * (np.float32(steps - 1) - i), d), d)
    return np.where(np.arange(steps) < rising, up, down)
