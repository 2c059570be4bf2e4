"""Tensor methods that are not a ``genesis.*`` function of the same name: the ``*_as`` forms, ``where`` with the
tensor first, the operators that need a rule of their own, and the transposing properties. Bound by the registry.
"""

from __future__ import annotations

from typing import Any, Callable

from genesis import dtypes
from genesis import linalg as LA
from genesis.ops import compare, complex, reduce, views
from genesis.tensor import Tensor


def expand_as(self: Tensor, other: Tensor) -> Tensor:
    """``self`` expanded to ``other``'s shape."""
    return views.expand(self, other.shape)


def view_as(self: Tensor, other: Tensor) -> Tensor:
    """A view of ``self`` with ``other``'s shape."""
    return views.view(self, other.shape)


def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """``self`` reshaped to ``other``'s shape."""
    return views.reshape(self, other.shape)


def where(self: Tensor, condition: Tensor, other: Any) -> Tensor:
    """``self`` where ``condition`` holds, else ``other`` (torch's ``Tensor.where``)."""
    return compare.where(condition, self, other)


def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """Sum over the dims broadcast from ``size`` (which must expand to this tensor's shape)."""
    target = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    lead = self.ndim - len(target)
    if lead < 0 or any(t not in (1, n) for t, n in zip(target, self.shape[lead:])):
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(self.shape)}}}.")
    dims = [*range(lead), *(lead + k for k, t in enumerate(target) if t == 1 and self.shape[lead + k] != 1)]
    return reduce.sum(self, dims, keepdim=True).reshape(target) if dims else self


def is_conj(self: Tensor) -> bool:
    """Never: Genesis conjugates eagerly, so no tensor is a lazily conjugated (or negated) view."""
    return False


def cholesky(self: Tensor, upper: bool = False) -> Tensor:
    """The Cholesky factor (lower unless ``upper``)."""
    return LA.cholesky(self, upper=upper)


def reflected(fn: Callable) -> Callable:
    """The reflected operator of ``fn`` (``__rsub__`` ...): the tensor is the right operand."""
    def method(self: Tensor, other: Any) -> Tensor:
        return fn(other, self)

    method.__name__ = f"__r{fn.__name__}__"
    return method


def invert(self: Tensor) -> Tensor:
    """``~t``: logical not of a bool tensor, bitwise not of an integer one."""
    if self.dtype.is_floating_point:
        raise TypeError(f"~ (operator.invert) is only implemented on integer and Boolean-type tensors, got "
                        f"{self.dtype.name}")
    return compare.logical_not(self) if self.dtype is dtypes.bool_ else compare.bitwise_not(self)


def reversed_dims(self: Tensor) -> Tensor:
    """``t.T``: the dims in reverse order."""
    return views.permute(self, tuple(reversed(range(self.ndim))))


def matrix_transpose(self: Tensor) -> Tensor:
    """``t.mT``: the last two dims swapped."""
    return views.transpose(self, -2, -1)


def conj_reversed_dims(self: Tensor) -> Tensor:
    """``t.H``: the dims in reverse order, conjugated (``T`` for real tensors)."""
    return complex.conj(reversed_dims(self))

