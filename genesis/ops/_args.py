"""Argument handling shared by the op themes: operand coercion, dtype checks, shape and index arguments, and
the small tensor constructors the ops build their masks and index ranges from.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

from genesis import dtypes
from genesis import memory_format as _mf
from genesis.ndarray import NDArray, broadcast_shapes, check_same_device
from genesis.tensor import Tensor
from genesis.tensor import tensor as _from_data

Number = (int, float, bool)


def check_tensors(op: str, **arguments: Any) -> None:
    """torch's TypeError where an argument that must be a tensor is something else (a Python number, a list):
    ``arguments`` are the op's tensor parameters by torch's names, in signature order (positions count from 1)."""
    for position, (name, value) in enumerate(arguments.items(), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")


#: torch's C++ names of the element types, as its overflow errors print them.
_OVERFLOW_NAMES = {
    **dtypes.CPP_TYPE_NAMES, dtypes.uint8: "uint8_t", dtypes.int8: "int8_t", dtypes.int16: "int16_t",
    dtypes.int32: "int", dtypes.int64: "int64_t",
}


def check_scalar_fits(value: Any, dtype: dtypes.dtype) -> None:
    """torch's RuntimeError where the Python number ``value`` does not convert to ``dtype`` (its checked Scalar
    conversion, as ``masked_fill`` and ``index_fill`` make): a finite number beyond a floating dtype's range (a
    complex number by either part; infinities and NaN convert), or outside an integer dtype's (NaN never converts;
    integers down to minus an unsigned dtype's max wrap around)."""
    if isinstance(value, bool) or dtype is dtypes.bool_:
        return
    if dtype.category >= 2:
        limit = dtypes.finfo(dtype).max
        parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
        fits = all(not math.isfinite(p) or -limit <= p <= limit for p in parts)
    elif isinstance(value, complex) or value != value:
        fits = False
    else:
        info = dtypes.iinfo(dtype)
        low = -info.max if not dtype.is_signed and isinstance(value, int) else info.min
        fits = low <= value <= info.max
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {_OVERFLOW_NAMES[dtype]} without overflow")


def python_number(value: Any) -> Any:
    """A numpy scalar (``np.float32(0.5)``, ``np.int64(3)``: a replay buffer's reward or done flag) as the Python
    number torch reads it as; anything else unchanged."""
    if isinstance(value, (Tensor, int, float)) or not hasattr(value, "dtype") or getattr(value, "ndim", 1) != 0:
        return value
    return value.item()


def _as_operand(op: str, other: Any, like: Tensor) -> Any:
    """A second operand: Tensors and Python numbers pass; lists and numpy arrays become tensors; anything else (None,
    a string, an object) is a TypeError, as torch's."""
    if isinstance(other, (Tensor, int, float, bool)):
        return other
    if hasattr(other, "item") and getattr(other, "ndim", 1) == 0:
        return other.item()
    try:
        return _from_data(other, device=like.device)
    except (TypeError, ValueError, RuntimeError):  # RuntimeError: no dtype can hold it (None, an object)
        raise TypeError(f"{op}(): unsupported operand type {type(other).__name__}") from None


def _result_dtype(a: Tensor, b: Any) -> dtypes.dtype:
    if isinstance(b, Tensor):
        return dtypes.result_type(a.dtype, a.ndim, b.dtype, b.ndim)
    return dtypes.result_type_scalar(a.dtype, b)


def _float_operands(op: str, input: Any, other: Any) -> tuple[Tensor, Tensor]:
    """Both operands as tensors of their promoted dtype, integers promoted to the default float dtype."""
    if not isinstance(input, Tensor):
        if not isinstance(other, Tensor):
            raise TypeError(f"{op}(): expected at least one Tensor argument, got {type(input).__name__} and "
                            f"{type(other).__name__}")
        input = Tensor._scalar_like(input, other)
    other = _as_operand(op, other, input)
    target = _result_dtype(input, other)
    if not target.is_floating_point:
        target = dtypes.get_default_dtype()
    if not isinstance(other, Tensor):
        other = Tensor._scalar_like(other, input)
    broadcast_shapes(op, input.shape, other.shape)  # named for this op, not the ops that compute it
    return input.to(target), other.to(target)


def _reject_integers(op: str, dtype: dtypes.dtype) -> None:
    if not dtype.is_floating_point:
        raise NotImplementedError(f"{op}: not implemented for '{dtypes.SCALAR_TYPE_NAMES[dtype]}'")


def check_floating_kernel(op: str, kernel: str, input: Tensor) -> None:
    """torch's dispatch error where the op's kernel (``kernel``, torch's name for it) has floating-point and complex
    implementations only: NotImplementedError for an integer or bool input, which Genesis would otherwise promote."""
    if input.dtype.category < 2:
        raise NotImplementedError(f"{op}: \"{kernel}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")


def check_real_kernel(op: str, kernel: str, *operands: Any, bools: bool = False) -> None:
    """torch's dispatch error where the op's kernel (``kernel``) takes real numbers only, as its order statistics
    and running extremes: NotImplementedError for a complex operand (a tensor or a Python number), and for a bool
    tensor unless ``bools``."""
    for x in operands:
        dtype = x.dtype if isinstance(x, Tensor) else dtypes.complex64 if isinstance(x, complex) else None
        if dtype is not None and (dtype.is_complex or dtype is dtypes.bool_ and not bools):
            raise NotImplementedError(f"{op}: \"{kernel}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[dtype]}'")


def _shape_args(op: str, shape: tuple) -> tuple[int, ...]:
    """torch's varargs-or-one-sequence shape arguments as a tuple of ints (TypeError naming ``op`` otherwise)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    for s in shape:  # the common case, plain ints, needs no conversion
        if s.__class__ is not int:
            break
    else:
        return shape
    try:
        return tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"{op}(): shape must be a sequence of ints, got {shape}") from None


def _varargs_or_keyword(op: str, args: tuple, name: str, value: Any) -> tuple:
    """The sizes or dims of ``op`` as :func:`_shape_args` takes them: the varargs, or the sequence given as the keyword
    ``name`` (``x.reshape(shape=(2, 3))``), with torch's TypeError for both at once or a keyword that is no sequence."""
    if value is None:
        return args
    if args:
        raise TypeError(f"{op}() got multiple values for argument '{name}'")
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(value).__name__}")
    return (value,)


def _tensor_args(tensors: tuple) -> tuple[Tensor, ...]:
    """torch's varargs-or-one-sequence convention for functions such as meshgrid and atleast_1d; TypeError, worded
    as torch's, for an element that is no tensor."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return tensors


def _to_index_tensor(op: str, index: Any, like: Tensor, error: type[Exception] = RuntimeError,
                     long_only: bool = False) -> Tensor:
    """An int64 index tensor on ``like``'s device; ``error`` (torch's type for ``op``) for an index of a dtype
    ``op`` refuses in torch: all but int64 and int32 (all but int64 with ``long_only``: take, index_copy...)."""
    if not isinstance(index, Tensor):
        index = like.new_tensor(index, dtype=dtypes.int64)
    if index.dtype is not dtypes.int64 and (long_only or index.dtype is not dtypes.int32):
        raise error(f"{op}(): Expected dtype {'int64' if long_only else 'int32 or int64'} for index, but got "
                    f"{index.dtype}")
    check_same_device(op, like.device, index.device)
    return index if index.dtype is dtypes.int64 else index.to(dtypes.int64)


#: torch's wording of each index or scatter write's refusal of a source of another dtype.
_SAME_DTYPE_MESSAGES = {
    "index_add": "index_add_(): self ({self}) and source ({source}) must have the same scalar type",
    "index_reduce": "index_reduce_(): self ({self}) and source ({source}) must have the same scalar type",
    "index_copy": "index_copy_(): self and source expected to have the same dtype, but got (self) {self} and "
                  "(source) {source}",
    "index_put": "index_put: Index put requires the source and destination dtypes match, got {self} for the "
                 "destination and {source} for the source.",
    "masked_scatter": "masked_scatter: expected self and source to have same dtypes but got {self} and {source}",
    "scatter": "scatter(): Expected self.dtype to be equal to src.dtype",
}


def _check_same_dtype(op: str, input: Tensor, source: Tensor) -> None:
    """torch's index and scatter writes refuse a source of another dtype rather than casting it (``op`` is a key of
    ``_SAME_DTYPE_MESSAGES``: the scatter family all word it as ``scatter``)."""
    if source.dtype is not input.dtype:
        names = dtypes.SCALAR_TYPE_NAMES
        raise RuntimeError(_SAME_DTYPE_MESSAGES[op].format(self=names[input.dtype], source=names[source.dtype]))


def _zeros(shape: Sequence[int], dtype: dtypes.dtype, like: Tensor) -> Tensor:
    return Tensor._wrap(NDArray.full(tuple(shape), 0, dtype, like.device))


def _full(shape: tuple[int, ...], value: Any, dtype: dtypes.dtype, like: Tensor) -> Tensor:
    return Tensor._wrap(NDArray.full(shape, value, dtype, like.device))


def zeros_like_detached(x: Tensor) -> Tensor:
    """Zeros with the shape, dtype and device of ``x`` (no history)."""
    return Tensor._wrap(NDArray.full(x.shape, 0, x.dtype, x.device))


def _check_range(x: Tensor, low: int, high: int, error: type[Exception], message: str,
                 ignore: int | None = None) -> Tensor:
    """``x`` checked to lie in [low, high) (or equal ``ignore``), negatives in [low, 0) wrapped by +high: the
    backend's ``check_index``. ``message`` names ``{value}`` (the offending value) and ``{size}`` (high). The CPU
    raises ``error`` at the call; CUDA raises RuntimeError at the next synchronization, with no host read here."""
    nd = x.ndarray
    checked = nd.device.backend.check_index(nd, low, high, ignore, error, message)
    return x if checked is nd else Tensor._wrap(checked)


def ones_like_bool(x: Tensor) -> Tensor:
    return Tensor._wrap(NDArray.full(x.shape, True, dtypes.bool_, x.device))


def arange_like(n: int, like: Tensor) -> Tensor:
    return Tensor._wrap(like.device.backend.arange(0, n, 1, dtypes.int64, like.device))


def new_memory(out: Tensor, input: Tensor) -> Tensor:
    """``out``, or a copy of it when it shares memory with ``input``: for ops that torch documents as always
    returning a new tensor (repeat, roll, pad, pixel_shuffle...) but that Genesis builds from views, which come out
    as views of the input for trivial arguments (a repeat of ones, a zero shift, a pad of zeros)."""
    return out.clone() if out.ndarray.buffer is input.ndarray.buffer else out


def keep_memory_format(out: Tensor, input: Tensor) -> Tensor:
    """``out`` laid out in ``input``'s channels_last format when ``input`` is stored so (as torch's ops that allocate
    their result like their input return it: resampling, shuffling, constant padding, flips, unpooling), else
    ``out`` as it is."""
    if input.ndim not in (4, 5) or out.ndim != input.ndim:
        return out
    fmt = _mf.suggest(tuple(input.shape), input.stride())
    if fmt is _mf.contiguous_format or out.is_contiguous(memory_format=fmt):
        return out
    return out.contiguous(memory_format=fmt)
