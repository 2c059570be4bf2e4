"""``segment_reduce`` (torch.segment_reduce): values and gradients of every reduction, with and without
``initial``, over lengths and offsets, batched along a later axis, and torch's errors."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tests.helpers import check, check_error, rand

# Ties inside segments (2, 2), zeros for prod, and an empty segment.
DATA = [2.0, 2.0, 1.0, 0.0, 3.0, 0.0, 5.0, 0.0, 4.0]
LENGTHS = [3, 2, 0, 4]


def _on(lib: Any, like: Any, values: Any, **kwargs: Any) -> Any:
    """``lib.tensor(values)`` on ``like``'s device (lengths and offsets live with the data)."""
    return lib.tensor(values, device=like.device, **kwargs)


def _data(requires_grad: bool = True) -> torch.Tensor:
    return torch.tensor(DATA, dtype=torch.float64, requires_grad=requires_grad)


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "max", "min", "amax", "amin"])
@pytest.mark.parametrize("initial", [None, 2.0, 5.0])
def test_segment_reduce_lengths_values_and_gradients(reduce: str, initial: float | None) -> None:
    # Without initial an empty segment is the reduction's identity (NaN for a mean, whose gradient is then NaN too).
    weight = [1.0, 2.0, 0.0 if initial is None else 3.0, 4.0]
    check(lambda lib, d: lib.segment_reduce(d, reduce, lengths=_on(lib, d, LENGTHS), initial=initial)
          * _on(lib, d, weight, dtype=lib.float64), _data())


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "prod"])
def test_segment_reduce_offsets_and_batched_axis(reduce: str) -> None:
    check(lambda lib, d: lib.segment_reduce(d, reduce, offsets=_on(lib, d, [0, 3, 5, 5, 9])), _data())
    # Offsets may start late and end early; the elements outside are left out (as torch).
    check(lambda lib, d: lib.segment_reduce(d, reduce, offsets=_on(lib, d, [1, 3, 8])), _data())
    lengths = [[1, 2, 3], [6, 0, 0]]
    check(lambda lib, x: lib.segment_reduce(x, reduce, lengths=_on(lib, x, lengths, dtype=lib.int32), axis=1),
          rand(2, 6, 3))
    check(lambda lib, x: lib.segment_reduce(x, reduce, offsets=_on(lib, x, [[0, 2, 6], [0, 3, 6]]), axis=-1),
          rand(2, 6))


def test_segment_reduce_dtypes_and_nan() -> None:
    check(lambda lib, d: lib.segment_reduce(d.float(), "mean", lengths=_on(lib, d, [3, 6])), _data(False))
    nan = torch.tensor([1.0, float("nan"), 2.0])
    check(lambda lib, d: lib.segment_reduce(d, "max", lengths=_on(lib, d, [2, 1])), nan)
    check(lambda lib, d: lib.segment_reduce(d, "min", lengths=_on(lib, d, [2, 1]), initial=0.0), nan)


def test_segment_reduce_errors_as_torch() -> None:
    d = _data(False)
    check_error(RuntimeError, lambda lib, d: lib.segment_reduce(d, "MAX", lengths=_on(lib, d, [9])), d,
                match="reduce argument must be either")
    check_error(RuntimeError, lambda lib, d: lib.segment_reduce(d, "sum"), d, match="Either lengths or offsets")
    check_error(RuntimeError, lambda lib, d: lib.segment_reduce(d, "sum", indices=_on(lib, d, [9])), d,
                match="indices based reduction")
    check_error(RuntimeError, lambda lib, d: lib.segment_reduce(d, "sum", lengths=_on(lib, d, [3, 3])), d,
                match="to sum to data.size")
    check_error(RuntimeError, lambda lib, d: lib.segment_reduce(d, "sum", lengths=_on(lib, d, [10, -1])), d,
                match="negative")
    check_error(RuntimeError, lambda lib, x: lib.segment_reduce(x, "sum", lengths=_on(lib, x, [[2, 4], [3, 3]])),
                rand(2, 6), match="last dimension of lengths")
    check_error(NotImplementedError, lambda lib, d: lib.segment_reduce(d, "sum", lengths=_on(lib, d, [9.0])), d)
    check_error(NotImplementedError, lambda lib: lib.segment_reduce(lib.arange(4), "sum", lengths=lib.tensor([4])))
