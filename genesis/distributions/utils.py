"""Helpers shared by the distributions: broadcasting parameters, probabilities ↔ logits, cached properties."""

from __future__ import annotations

from numbers import Number
from typing import Any, Callable

import genesis.ops as F
from genesis import dtypes
from genesis.autograd import enable_grad
from genesis.tensor import Tensor, tensor


def eps(dtype: dtypes.dtype) -> float:
    """The machine epsilon of a floating dtype."""
    return dtypes.finfo(dtype).eps


def tiny(dtype: dtypes.dtype) -> float:
    """The smallest positive normal number of a floating dtype."""
    return dtypes.finfo(dtype).tiny


def lowest(dtype: dtypes.dtype) -> float:
    """The most negative finite number of a floating dtype."""
    return dtypes.finfo(dtype).min


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Broadcast tensors and numbers to one shape; numbers become tensors of the tensors' dtype and device.

    Without any tensor, numbers become tensors of the default dtype, as torch.
    """
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError(f"Input arguments must all be instances of numbers.Number or genesis.Tensor, got "
                         f"{[type(v).__name__ for v in values]}")
    tensors = [v for v in values if isinstance(v, Tensor)]
    if not tensors:
        return tuple(tensor(float(v), dtype=dtypes.get_default_dtype()) for v in values)
    ref = tensors[0]
    converted = [v if isinstance(v, Tensor) else tensor(v, dtype=ref.dtype, device=ref.device) for v in values]
    return tuple(F.broadcast_tensors(*converted))


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities clamped into ``[eps, 1 - eps]`` of their dtype."""
    e = eps(probs.dtype)
    return probs.clamp(min=e, max=1 - e)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits of probabilities: ``log p - log(1 - p)`` for Bernoulli, ``log p`` for categorical ones."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ps_clamped.log() - (-ps_clamped).log1p()
    return ps_clamped.log()


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: sigmoid for Bernoulli, softmax over the last dimension otherwise."""
    if is_binary:
        return logits.sigmoid()
    return F.softmax(logits, -1)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the rightmost ``dim`` dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:value.ndim - dim] + (-1,)).sum(-1)


class lazy_property:
    """A property computed on first use and then stored on the instance (torch's ``lazy_property``).

    Reading it on the class gives the property object, so ``Normal.mean`` still documents itself. The value is
    computed with gradients enabled, as torch's: a first read inside ``no_grad`` (``sample`` deriving ``probs`` from
    ``logits``, say) must not cache a value cut off from the parameters.
    """

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value
