"""torch's ``out=`` argument of the functions of the ``genesis`` namespace: ``genesis.add(a, b, out=c)``.

The op runs as usual, then its result is written into the given tensor(s) under torch's rules: the result's dtype
must be castable to the output's (``int`` outputs refuse a float result), an output of another shape is resized
(with torch's UserWarning unless it held no elements), ops with several results (``max(dim=)``, ``sort``) take a
tuple of outputs, and the outputs are returned. As in torch, no gradient flows through ``out=``: a result that
requires grad is an error.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

from genesis.autograd import is_grad_enabled, no_grad
from genesis.dtypes import SCALAR_TYPE_NAMES, to_dtype
from genesis.ops.compare import can_cast
from genesis.ops.registry import rename_numpy_names
from genesis.tensor import Tensor

#: The reductions and scans whose output tensor sets the dtype they compute in when no ``dtype=`` is given (torch
#: builds their reduction from the output's type): a float input summed into an int64 ``out`` is cast first.
_OUT_SETS_DTYPE = frozenset(("sum", "prod", "cumsum", "cumprod"))

#: The factories whose output tensor is the dtype they make when no ``dtype=`` is given, and must be it when one is.
_OUT_IS_DTYPE = frozenset(("zeros", "ones", "full", "empty", "eye", "linspace", "logspace", "rand", "randn"))

#: The joins that torch writes through ``cat``'s kernel, whose refusal of an output dtype is a TypeError.
_CAT_KERNEL = frozenset(("cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
                         "row_stack"))


def with_out(name: str, fn: Callable) -> Callable:
    """``fn`` taking torch's keyword ``out=``; without it, ``fn`` runs unchanged. Where ``fn`` is the registry's
    wrapper for numpy's keyword names, this one wrapper renames them itself and calls the op directly (one Python
    call fewer per op)."""
    aliases = getattr(fn, "numpy_aliases", None)
    op = fn.__wrapped__ if aliases else fn

    @functools.wraps(fn)
    def call(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if kwargs and aliases:
            rename_numpy_names(name, aliases, kwargs)
        if out is None:
            return op(*args, **kwargs)
        if name in _OUT_SETS_DTYPE | _OUT_IS_DTYPE and isinstance(out, Tensor) and kwargs.get("dtype") is None:
            kwargs["dtype"] = out.dtype
        elif name in _OUT_IS_DTYPE and isinstance(out, Tensor) and to_dtype(kwargs["dtype"]) is not out.dtype:
            raise RuntimeError(f"{name}: dtype {SCALAR_TYPE_NAMES[to_dtype(kwargs['dtype'])]} does not match dtype of "
                               f"out parameter ({SCALAR_TYPE_NAMES[out.dtype]})")
        return write_out(name, op(*args, **kwargs), out)

    return call


def write_out(name: str, result: Any, out: Any) -> Any:
    """Write ``result`` (a tensor or a tuple of tensors) into ``out`` (the same structure) and return ``out``."""
    if not isinstance(result, (Tensor, tuple)):
        raise TypeError(f"{name}() got an unexpected keyword argument 'out'")
    results = (result,) if isinstance(result, Tensor) else tuple(result)
    outs = (out,) if isinstance(out, Tensor) else tuple(out)
    if len(outs) != len(results) or not all(isinstance(t, Tensor) for t in (*results, *outs)):
        expected = "a Tensor" if len(results) == 1 else f"a tuple of {len(results)} Tensors"
        raise TypeError(f"{name}(): argument 'out' must be {expected}, not {type(out).__name__}")
    if is_grad_enabled() and any(t.requires_grad for t in (*results, *outs)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    for r, o in zip(results, outs):
        if not can_cast(r.dtype, o.dtype):
            if name in _CAT_KERNEL:
                raise TypeError(f"{name}(): input types can't be cast to the desired output type "
                                f"{SCALAR_TYPE_NAMES[o.dtype]}")
            raise RuntimeError(f"{name}: result type {SCALAR_TYPE_NAMES[r.dtype]} can't be cast to the desired "
                               f"output type {SCALAR_TYPE_NAMES[o.dtype]}")
        if r.device != o.device:
            raise RuntimeError(f"{name}: Expected out tensor to have device {r.device}, but got {o.device} instead")
        if o.shape != r.shape:
            if o.numel():
                warnings.warn(f"{name}: An output with one or more elements was resized since it had shape "
                              f"{list(o.shape)}, which does not match the required output shape {list(r.shape)}. "
                              "This behavior is deprecated, and in a future PyTorch release outputs will not be "
                              "resized unless they have zero elements. You can explicitly reuse an out tensor t by "
                              "resizing it, inplace, to zero elements with t.resize_(0).", UserWarning, stacklevel=3)
            o.resize_(r.shape)
        with no_grad():
            o.copy_(r)
    return out if isinstance(out, Tensor) else type(result)(*outs) if hasattr(result, "_fields") else tuple(outs)
