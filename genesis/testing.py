"""``genesis.testing`` (torch.testing): ``assert_close`` with torch's default tolerances, rules and messages, the
deprecated ``assert_allclose``, and ``make_tensor``.

``assert_close`` compares tensors (and numpy arrays), Python numbers, booleans and None, recursing through sequences
and mappings as torch's does; a failure raises AssertionError whose message has torch's shape::

    Tensor-likes are not close!

    Mismatched elements: 1 / 3 (33.3%)
    Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
    Greatest relative difference: 0.2 at index (1,) (up to 1.3e-06 allowed)
"""

from __future__ import annotations

import cmath
import collections.abc
import math
import warnings
from typing import Any, Callable, NoReturn, Sequence

import numpy as np

from genesis import dtypes, random
from genesis import memory_format as _mf
from genesis.ops import isclose
from genesis.ops.complex import complex as _complex
from genesis.ops.sparse import strided
from genesis.tensor import Tensor, as_tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

#: dtype -> (rtol, atol): torch's defaults; other dtypes compare exactly.
_DTYPE_PRECISIONS = {
    dtypes.float16: (1e-3, 1e-5), dtypes.bfloat16: (1.6e-2, 1e-5), dtypes.float32: (1.3e-6, 1e-5),
    dtypes.float64: (1e-7, 1e-7), dtypes.complex64: (1.3e-6, 1e-5), dtypes.complex128: (1e-7, 1e-7),
}
# The Python number types and the dtype whose tolerances they take.
_NUMBER_DTYPES = {int: dtypes.int64, float: dtypes.float64, complex: dtypes.complex128}


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise, its message, and the path of the item that failed."""

    def __init__(self, kind: type[Exception], message: str, path: tuple = ()) -> None:
        super().__init__(message)
        self.kind, self.message, self.path = kind, message, path

    def error(self, msg: str | Callable[[str], str] | None) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        message = self.message
        if self.path:
            message += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.path)}"
        return self.kind(msg(message) if callable(msg) else message)


class _Unsupported(Exception):
    """This kind of comparison does not handle the inputs: the next kind is tried."""


def _tolerances(kinds: Sequence[dtypes.dtype], rtol: float | None, atol: float | None, path: tuple,
                precisions: dict = _DTYPE_PRECISIONS) -> tuple[float, float]:
    """The (rtol, atol) to use: both given, or the loosest defaults of the dtypes; ValueError for only one."""
    if (rtol is None) != (atol is None):
        raise _Mismatch(ValueError, f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                                    f"{'rtol' if rtol is None else 'atol'}.", path)
    if rtol is not None:
        return rtol, atol
    found = [precisions.get(d, (0.0, 0.0)) for d in kinds]
    return max(r for r, _ in found), max(a for _, a in found)


def _mismatch_message(kind: str, extra: str, abs_diff: Any, abs_index: Any, rel_diff: Any, rel_index: Any,
                      rtol: float, atol: float) -> str:
    """torch's message for numbers that are not close (or not equal, with zero tolerances)."""
    equality = rtol == 0 and atol == 0

    def line(name: str, diff: Any, index: Any, tol: float) -> str:
        text = f"{name.title()} difference: {diff}" if index is None else \
            f"Greatest {name} difference: {diff} at index {index}"
        return text + ("" if equality else f" (up to {tol} allowed)") + "\n"

    text = f"{kind} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
    text += line("absolute", abs_diff, abs_index, atol) + line("relative", rel_diff, rel_index, rtol)
    return text.strip()


def _scalar_message(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = math.inf if expected == 0 else abs_diff / abs(expected)
    return _mismatch_message("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, rel_diff, None,
                             rtol, atol)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        flat, rest = divmod(flat, size)
        index.append(rest)
    return tuple(reversed(index))


def _tensor_message(actual: Tensor, expected: Tensor, matches: Tensor, rtol: float, atol: float) -> str:
    """torch's message for tensors that are not close: mismatch count and the greatest differences."""
    total = matches.numel()
    mismatched = total - int(matches.sum().item())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    a, e, ok = actual.reshape(-1), expected.reshape(-1), matches.reshape(-1)
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        a, e = a.to(dtypes.int64), e.to(dtypes.int64)
    abs_diff = (a - e).abs().masked_fill(ok, 0)
    rel_diff = (abs_diff / e.abs()).masked_fill(ok, 0)
    worst_abs, worst_rel = abs_diff.max(0), rel_diff.max(0)
    shape = tuple(actual.shape)
    return _mismatch_message("Tensor-likes", extra, worst_abs.values.item(), _unravel(int(worst_abs.indices), shape),
                             worst_rel.values.item(), _unravel(int(worst_rel.indices), shape), rtol, atol)


def _fail_attribute(name: str, actual: Any, expected: Any, path: tuple) -> NoReturn:
    raise _Mismatch(AssertionError, f"The values for attribute '{name}' do not match: {actual} != {expected}.", path)


def _as_tensor(value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value
    try:
        return as_tensor(value)
    except Exception:
        raise _Unsupported() from None


def _compare_tensors(actual: Any, expected: Any, path: tuple, options: dict) -> None:
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if not related or not isinstance(actual, (Tensor, np.ndarray)):
        raise _Unsupported()
    if not options["allow_subclasses"] and type(actual) is not type(expected):
        raise _Unsupported()
    actual, expected = _as_tensor(actual), _as_tensor(expected)
    rtol, atol = _tolerances((actual.dtype, expected.dtype), options["rtol"], options["atol"], path)
    if actual.shape != expected.shape:
        _fail_attribute("shape", actual.shape, expected.shape, path)
    if actual.layout != expected.layout:
        if options["check_layout"]:
            _fail_attribute("layout", actual.layout, expected.layout, path)
    elif options["check_stride"] and actual.layout == strided and actual.stride() != expected.stride():
        _fail_attribute("stride()", actual.stride(), expected.stride(), path)
    if options["check_device"] and actual.device != expected.device:
        _fail_attribute("device", actual.device, expected.device, path)
    if options["check_dtype"] and actual.dtype is not expected.dtype:
        _fail_attribute("dtype", actual.dtype, expected.dtype, path)
    actual, expected = actual.detach(), expected.detach()
    if actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype is not expected.dtype:
        common = dtypes.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    if getattr(actual, "is_sparse", False):
        actual = actual.to_dense()
    if getattr(expected, "is_sparse", False):
        expected = expected.to_dense()
    matches = isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=options["equal_nan"])
    if bool(matches.all().item()):
        return
    if actual.ndim == 0:
        message = _scalar_message(actual.item(), expected.item(), rtol, atol)
    else:
        message = _tensor_message(actual, expected, matches, rtol, atol)
    raise _Mismatch(AssertionError, message, path)


def _compare_numbers(actual: Any, expected: Any, path: tuple, options: dict) -> None:
    kinds = (int, float, complex, np.number)
    if isinstance(actual, (bool, np.bool_)) or isinstance(expected, (bool, np.bool_)) or not (
            isinstance(actual, kinds) and isinstance(expected, kinds)):
        raise _Unsupported()
    actual, expected = (v.item() if isinstance(v, np.number) else v for v in (actual, expected))
    rtol, atol = _tolerances([_NUMBER_DTYPES[type(v)] for v in (actual, expected)], options["rtol"],
                             options["atol"], path)
    if options["check_dtype"] and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", path)
    if actual == expected:
        return
    if options["equal_nan"] and cmath.isnan(actual) and cmath.isnan(expected):
        return
    diff = abs(actual - expected)
    if cmath.isfinite(diff) and diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_message(actual, expected, rtol, atol), path)


def _compare_leaves(actual: Any, expected: Any, path: tuple, options: dict) -> None:
    if actual is None or expected is None:
        if not (actual is None and expected is None):
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", path)
        return
    booleans = (bool, np.bool_)
    if isinstance(actual, booleans) and isinstance(expected, booleans):
        if bool(actual) is not bool(expected):
            raise _Mismatch(AssertionError, f"Booleans mismatch: {bool(actual)} is not {bool(expected)}", path)
        return
    for compare in (_compare_numbers, _compare_tensors):
        try:
            return compare(actual, expected, path, options)
        except _Unsupported:
            continue
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                               f"{type(expected)}.", path)


def _compare(actual: Any, expected: Any, path: tuple, options: dict) -> None:
    """Recurse through sequences and mappings (as torch's ``originate_pairs``), comparing the leaves."""
    sequence = collections.abc.Sequence
    if isinstance(actual, sequence) and isinstance(expected, sequence) and not isinstance(actual, str) and \
            not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != "
                                            f"{len(expected)}", path)
        for i in range(len(actual)):
            _compare(actual[i], expected[i], (*path, i), options)
        return
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        keys, expected_keys = set(actual.keys()), set(expected.keys())
        if keys != expected_keys:
            raise _Mismatch(AssertionError, f"The keys of the mappings do not match:\n"
                                            f"Missing keys in the actual mapping: {sorted(expected_keys - keys)}\n"
                                            f"Additional keys in the actual mapping: {sorted(keys - expected_keys)}",
                            path)
        try:
            ordered = sorted(keys)
        except TypeError:
            ordered = list(keys)
        for key in ordered:
            _compare(actual[key], expected[key], (*path, key), options)
        return
    _compare_leaves(actual, expected, path, options)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Assert that ``actual`` and ``expected`` are close: ``|actual - expected| <= atol + rtol * |expected|``
    elementwise, with shape, device, dtype and layout equal (each check optional; a dtype difference is compared in
    the promoted dtype). Defaults per dtype as torch's: float16 (1e-3, 1e-5), bfloat16 (1.6e-2, 1e-5), float32 and
    complex64 (1.3e-6, 1e-5), float64 and complex128 (1e-7, 1e-7), exact otherwise; give both or neither.

    Raises:
        AssertionError: the inputs are not close, with torch's message (``msg``: a replacement string, or a
            function of the generated message).
        ValueError: only one of ``rtol`` and ``atol`` is given.
        TypeError: inputs of types that cannot be compared.
    """
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride)
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as failure:
        raise failure.error(msg) from None


_ALLCLOSE_PRECISIONS = {dtypes.float16: (1e-3, 1e-3), dtypes.float32: (1e-4, 1e-5), dtypes.float64: (1e-5, 1e-8)}


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated (with torch's FutureWarning): ``assert_close`` with NaNs equal, no dtype check and its older
    default tolerances (float16 (1e-3, 1e-3), float32 (1e-4, 1e-5), float64 (1e-5, 1e-8))."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = as_tensor(actual)
    if not isinstance(expected, Tensor):
        expected = as_tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _tolerances((actual.dtype, expected.dtype), None, None, (), _ALLCLOSE_PRECISIONS)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True, check_dtype=False,
                 check_stride=False, msg=msg or None)


def _bounds(dtype: dtypes.dtype, low: float | None, high: float | None, lowest: float, highest: float,
            default_low: float, default_high: float) -> tuple[float, float]:
    """torch's ``make_tensor`` bounds: defaults, checks, clamped to what the dtype holds (integers rounded up)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and (dtype.is_floating_point or dtype.is_complex):
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is deprecated "
                      "since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.", FutureWarning,
                      stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} only "
                         f"supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype.category < 2:
        return math.ceil(low), math.ceil(high)
    return low, high


def _uniform(shape: tuple[int, ...], low: float, high: float, dtype: dtypes.dtype, device: Any) -> Tensor:
    """Uniform values in [low, high), drawn in float64 (no overflow of ``high - low``) and rounded to ``dtype``."""
    u = random.rand(shape, dtype=dtypes.float64, device=device)
    return (u * (high / 2 - low / 2) * 2 + low).to(dtype)


def make_tensor(*shape: Any, dtype: Any, device: Any, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Tensor:
    """A tensor of ``shape`` with values drawn uniformly from [low, high) (torch's ``make_tensor``).

    Defaults: bool [0, 2), integers [-9, 10) ([0, 10) unsigned), floating and complex [-9, 9) (each part of a complex
    number); bounds outside the dtype's range are clamped to it. ``noncontiguous`` gives a strided view of a larger
    tensor (for more than one element), ``memory_format`` a layout, ``exclude_zero`` replaces zeros by 1 (bool and
    integers) or the dtype's smallest normal number. The values come from Genesis's generator, not torch's.

    Raises:
        ValueError: ``requires_grad`` for a bool or integer dtype, NaN bounds, ``low >= high``, an interval the
            dtype cannot hold, or both ``noncontiguous`` and ``memory_format``.
        TypeError: a dtype Genesis does not have.
    """
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = tuple(shape[0])
    shape = tuple(shape)
    try:
        dtype = dtypes.to_dtype(dtype)
    except (TypeError, ValueError, KeyError):
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor().") from None
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    integral = dtype.category < 2
    if requires_grad and integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is dtypes.bool_:
        low, high = _bounds(dtype, low, high, 0, 2, 0, 2)
        result = random.randint(low, high, shape, device=device).to(dtype)
    elif integral:
        info = dtypes.iinfo(dtype)
        low, high = _bounds(dtype, low, high, info.min, info.max + (1 if dtype is not dtypes.int64 else 0), -9, 10)
        result = random.randint(low, high, shape, device=device).to(dtype)
    else:
        info = dtypes.finfo(dtype)
        low, high = _bounds(dtype, low, high, info.min, info.max, -9, 9)
        if dtype.is_complex:
            part = dtypes.float32 if dtype is dtypes.complex64 else dtypes.float64
            result = _complex(_uniform(shape, low, high, part, device), _uniform(shape, low, high, part, device))
        else:
            result = _uniform(shape, low, high, dtype, device)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=_mf.check("make_tensor", memory_format))
    if exclude_zero:
        result.masked_fill_(result == 0, 1 if integral else dtypes.finfo(dtype).tiny)
    if not integral:
        result.requires_grad_(requires_grad)
    return result

