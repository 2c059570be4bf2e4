"""Helpers shared by the distributions: broadcasting parameters, probabilities ↔ logits, cached properties, lower
triangles ↔ vectors."""

from __future__ import annotations

from numbers import Number
from typing import Any, Callable, Sequence

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


def clipped_sigmoid(x: Tensor) -> Tensor:
    """``sigmoid(x)`` clamped into ``[tiny, 1 - eps]`` of its dtype, so its logarithm and ``log(1 - y)`` stay finite."""
    return x.sigmoid().clamp(min=tiny(x.dtype), max=1.0 - eps(x.dtype))


def check_piece_dim(what: str, value: Tensor, dim: int, size: int | None = None) -> None:
    """Check that ``dim`` indexes ``value`` and, when given, that ``value.size(dim) == size``: the checks of torch's
    ``CatTransform``/``StackTransform`` and their constraints, which raise ``AssertionError`` (so does this, for the
    same exception class)."""
    if not -value.ndim <= dim < value.ndim:
        raise AssertionError(f"dim {dim} out of range for {what} with {value.ndim} dimensions")
    if size is not None and value.shape[dim] != size:
        raise AssertionError(f"{what}.size({dim}) = {value.shape[dim]} must equal {size}")


def narrow_pieces(value: Tensor, dim: int, lengths: Sequence[int]) -> list[Tensor]:
    """``value`` cut along ``dim`` into consecutive pieces of ``lengths`` entries (views, as ``narrow``)."""
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    return [value.narrow(dim, start, length) for start, length in zip(starts, lengths)]


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of ``mat``'s lower triangle (at and below diagonal ``diag``), row by row, as the last dimension:
    ``(..., n, n) -> (..., m)``."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = F.tril_indices(n, n, diag, device=mat.device)
    return mat.reshape(tuple(mat.shape[:-2]) + (n * n,))[..., rows * n + cols]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of :func:`tril_matrix_to_vec`: a vector of ``m`` entries laid row by row into the lower triangle
    (at and below diagonal ``diag``) of an ``(n, n)`` matrix of zeros."""
    # The positive root of the quadratic in n that counts the entries (i, j) of an n x n matrix with j <= i + diag.
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if abs(round(n) - n) > eps(vec.dtype):
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the lower "
                         f"triangular part of a square D x D matrix.")
    n = round(n)
    # Entry k of the triangle (1-based) reads vec[k - 1]; every other entry reads the zero padded in front.
    arange = F.arange(n, device=vec.device)
    mask = (arange <= arange.unsqueeze(-1) + diag).reshape(-1).long()
    index = mask.cumsum(0) * mask
    padded = F.cat([F.zeros(tuple(vec.shape[:-1]) + (1,), dtype=vec.dtype, device=vec.device), vec], -1)
    return padded[..., index].reshape(tuple(vec.shape[:-1]) + (n, n))


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
