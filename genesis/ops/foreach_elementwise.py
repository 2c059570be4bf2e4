"""torch's elementwise ``_foreach_*`` functions beyond the fused ones of :mod:`genesis.ops.foreach`: one op per
tensor with torch's argument forms (optimizers written with them, such as timm's foreach paths, run unchanged).

- unary: ``_foreach_exp(tensors)`` returns a new list, ``_foreach_exp_(tensors)`` works in place; the same for
  abs, acos, asin, atan, ceil, cos, cosh, erf, erfc, expm1, floor, frac, lgamma, log, log10, log1p, log2, neg
  (in place; the new-list form is :mod:`genesis.ops.foreach`'s, as are both forms of sqrt), reciprocal, round,
  rsqrt, sigmoid, sign, sin, sinh, tan, tanh and trunc;
- binary, with a number, a 0-d tensor or a list (one number or tensor per element) as the other operand:
  ``clamp_min``, ``clamp_max``, ``maximum``, ``minimum`` and ``pow`` (also ``_foreach_pow(number, tensors)``),
  each also in place;
- ``_foreach_addcmul`` / ``_foreach_addcdiv`` (new lists), ``_foreach_clone`` and ``_foreach_max`` (each tensor's
  maximum, a 0-d tensor).

These record a graph as the per-tensor ops do when grad mode is on and a tensor requires grad.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from genesis.ops.foreach import _each, _tensors
from genesis.tensor import Tensor

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
          "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin",
          "sinh", "sqrt", "tan", "tanh", "trunc")
# (foreach name, tensor method): the other operand is a number, a tensor, or one of them per element.
_BINARY = {"clamp_min": "clamp_min", "clamp_max": "clamp_max", "maximum": "maximum", "minimum": "minimum",
           "pow": "pow"}
# maximum and minimum take tensors only: with a number they are clamps (NaN propagates either way).
_WITH_NUMBER = {"maximum": "clamp_min", "maximum_": "clamp_min_", "minimum": "clamp_max", "minimum_": "clamp_max_"}


def _unary(name: str, inplace: bool) -> Callable[[Sequence[Tensor]], Any]:
    op = f"_foreach_{name}" + ("_" if inplace else "")
    method = name + ("_" if inplace else "")

    def fn(self: Sequence[Tensor]) -> Any:
        tensors = _tensors(op, self)
        results = tuple(getattr(t, method)() for t in tensors)
        return self if inplace else results

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"``t.{method}()`` for every tensor" + ("." if inplace else ", as a new tuple.")
    return fn


def _binary(name: str, method: str, inplace: bool) -> Callable[..., Any]:
    op = f"_foreach_{name}" + ("_" if inplace else "")
    call = method + ("_" if inplace else "")

    def fn(self: Any, other: Any) -> Any:
        if name == "pow" and not inplace and not isinstance(self, (list, tuple, Tensor)):
            # _foreach_pow(number, tensors): the number raised to each tensor
            return tuple(self ** e for e in _tensors(op, other))
        tensors = _tensors(op, self)
        results = tuple(getattr(t, call if isinstance(o, Tensor) else _WITH_NUMBER.get(call, call))(o)
                        for t, o in zip(tensors, _each(op, other, len(tensors))))
        return self if inplace else results

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = (f"``t.{call}(other)`` for every tensor (``other``: a number, a tensor, or one per element)"
                  + ("." if inplace else ", as a new tuple."))
    return fn


def _pointwise(name: str) -> Callable[..., tuple[Tensor, ...]]:
    """``_foreach_addcmul`` / ``_foreach_addcdiv``: ``t.<name>(a, b, value=v)`` for every tensor, as a new tuple."""
    op = f"_foreach_{name}"

    def fn(self: Sequence[Tensor], tensor1: Sequence[Tensor], tensor2: Sequence[Tensor],
           value: Any = 1) -> tuple[Tensor, ...]:
        tensors = _tensors(op, self)
        n = len(tensors)
        return tuple(getattr(t, name)(a, b, value=v) for t, a, b, v in zip(
            tensors, _each(op, list(tensor1), n), _each(op, list(tensor2), n), _each(op, value, n)))

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"``t.{name}(a, b, value=v)`` for every tensor, as a new tuple (``value`` a number or one per tensor)."
    return fn


def _foreach_clone(self: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """``t.clone()`` for every tensor, as a new tuple."""
    return tuple(t.clone() for t in _tensors("_foreach_clone", self))


def _foreach_max(self: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """The maximum of each tensor, a 0-d tensor each (``torch._foreach_max``)."""
    return tuple(t.max() for t in _tensors("_foreach_max", self))


def _functions() -> dict[str, Callable[..., Any]]:
    table: dict[str, Callable[..., Any]] = {}
    declared = ("_foreach_neg", "_foreach_sqrt", "_foreach_sqrt_")  # genesis.ops.foreach's
    for name in _UNARY:
        for inplace in (False, True):
            op = f"_foreach_{name}" + ("_" if inplace else "")
            if op not in declared:
                table[op] = _unary(name, inplace)
    for name, method in _BINARY.items():
        table[f"_foreach_{name}"] = _binary(name, method, False)
        table[f"_foreach_{name}_"] = _binary(name, method, True)
    for name in ("addcmul", "addcdiv"):
        table[f"_foreach_{name}"] = _pointwise(name)
    for fn in (_foreach_clone, _foreach_max):
        table[fn.__name__] = fn
    return table


#: name -> function: the registry declares one op each.
FUNCTIONS = _functions()
