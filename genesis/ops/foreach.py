"""Multi-tensor ops: torch's ``_foreach_*`` functions over lists of tensors.

On GPUs each launches one kernel per (device, dtype) group of its list, whatever the number of tensors, in place of
one launch per tensor: ``_foreach_norm`` (two launches: per-block partials, then one program per tensor),
``_foreach_mul_`` by a number or a 0-d tensor (read on the device: no host sync), ``_foreach_zero_`` and
``_foreach_copy_``, on the backend's ``multi_norm`` / ``multi_scale_`` / ``multi_fill_`` / ``multi_copy_``
primitives. ``_foreach_add_`` and the list forms of ``_foreach_mul_`` run one in-place op per tensor.
:func:`foreach_clamp_` serves ``clip_grad_value_``.

Differentiability: as in torch, when grad mode is on and a tensor requires grad, every op here falls back to one
differentiable op per tensor (``norm``, ``mul_``, ``zero_``), so a graph is recorded (or a leaf's in-place change
refused) exactly as those ops do. The fused paths are the no-grad case, where ``clip_grad_norm_``, GradScaler and
the optimizers run.
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Sequence

from genesis import dtypes
from genesis.autograd import is_grad_enabled
from genesis.ndarray import NDArray
from genesis.ops.reduce import norm
from genesis.ops.sparse_base import SparseBase
from genesis.tensor import Tensor


def _tensors(op: str, tensors: Sequence[Tensor]) -> list[Tensor]:
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if not tensors:
        raise RuntimeError(f"{op}: Tensor list must have at least one tensor.")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected a sequence of tensors, got an element of type {type(t).__name__}")
    return tensors


def _recorded(tensors: list[Tensor], other: Any = None) -> bool:
    """Whether the op must record a graph (or refuse a leaf's in-place change): one op per tensor then."""
    if not is_grad_enabled():
        return False
    return any(t.requires_grad for t in tensors) or (isinstance(other, Tensor) and other.requires_grad)


def group_by_device_dtype(tensors: list[Tensor]) -> dict[tuple, list[int]]:
    """Positions of ``tensors`` grouped by (device, dtype), groups in order of first appearance."""
    groups: dict[tuple, list[int]] = {}
    for i, t in enumerate(tensors):
        groups.setdefault((t.device, t.dtype), []).append(i)
    return groups


def _check_identity(tensors: list[Tensor], ord: float) -> None:
    """torch's error for a norm without identity (max, min, negative p) of an empty tensor."""
    if (ord < 0 or ord == math.inf) and any(t.numel() == 0 for t in tensors):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the "
                           "operation does not have an identity")


def group_norms(tensors: list[Tensor], ord: float) -> NDArray:
    """The ``ord``-norms of same-device tensors as one (len,) float32 NDArray (float64 if any is float64)."""
    _check_identity(tensors, ord)
    return tensors[0].ndarray.backend.multi_norm([t.ndarray for t in tensors], float(ord))


def _foreach_norm(self: Sequence[Tensor], ord: float = 2, dtype: Any = None) -> tuple[Tensor, ...]:
    """The ``ord``-norm of each tensor (``torch._foreach_norm``): 2, 1, inf, -inf, 0 or any p.

    Each result is a 0-d tensor of its input's dtype (or ``dtype``), accumulated in float32 (float64 for float64
    inputs) as torch does; on GPUs two launches per (device, dtype) group.
    """
    tensors = _tensors("_foreach_norm", self)
    target = None if dtype is None else dtypes.to_dtype(dtype)
    for t in tensors:
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"_foreach_norm: expected floating point tensors, got {t.dtype.name}")
        if target is not None and dtypes.promote_types(t.dtype, target) is not target:
            raise RuntimeError(f"_foreach_norm: the dtype of the input ({t.dtype.name}) should be convertible "
                               f"without narrowing to the specified dtype ({target.name})")
    _check_identity(tensors, ord)
    if _recorded(tensors):
        return tuple(norm(t, ord, dtype=target) for t in tensors)
    out: list[Tensor | None] = [None] * len(tensors)
    for (_, dt), idx in group_by_device_dtype(tensors).items():
        group = [tensors[i] for i in idx]
        if target is dtypes.float64 and dt is not target:  # accumulate in float64, as torch's dtype= does
            group = [t.to(target) for t in group]
        norms = group_norms(group, ord).astype(target or dt)
        for j, i in enumerate(idx):
            out[i] = Tensor._wrap(norms._view((), (), norms.offset + j))
    return tuple(out)


def _scale_array(other: Tensor | Number, dtype: dtypes.dtype, device: Any) -> NDArray:
    """A 0-d array on ``device`` holding the multiplier (float64 for float64 tensors, else float32)."""
    if isinstance(other, Tensor):
        if other.ndim:
            raise RuntimeError(f"_foreach_mul_: expected a 0-d tensor or a number, got a tensor of shape "
                               f"{list(other.shape)}")
        return other.ndarray.to(device)
    wide = dtypes.float64 if dtype is dtypes.float64 else dtypes.float32
    return NDArray.full((), other, wide, device)


def _foreach_mul_(self: Sequence[Tensor], other: Any) -> Sequence[Tensor]:
    """``t.mul_(other)`` for every tensor (``torch._foreach_mul_``); ``other`` a number, a 0-d tensor or a list.

    A number or 0-d tensor takes one launch per (device, dtype) group on GPUs; the tensor is read on the device,
    so a clip coefficient computed there never syncs with the host.
    """
    tensors = _tensors("_foreach_mul_", self)
    if isinstance(other, (list, tuple)):
        if len(other) != len(tensors):
            raise RuntimeError(f"_foreach_mul_: expected {len(tensors)} multipliers, got {len(other)}")
        for t, o in zip(tensors, other):
            t.mul_(o)
        return self
    if _recorded(tensors, other) or any(not t.dtype.is_floating_point for t in tensors):
        for t in tensors:  # graphs; integer tensors (torch's promotion rules and errors)
            t.mul_(other)
        return self
    for (device, dt), idx in group_by_device_dtype(tensors).items():
        group = [tensors[i] for i in idx]
        device.backend.multi_scale_([t.ndarray for t in group], _scale_array(other, dt, device))
        for t in group:
            t._bump_version()
    return self


def _foreach_add_(self: Sequence[Tensor], other: Any, alpha: Number = 1) -> Sequence[Tensor]:
    """``t.add_(other, alpha=alpha)`` for every tensor (``torch._foreach_add_``); ``other`` a number, a tensor or a
    list of numbers or tensors. One in-place op per tensor."""
    tensors = _tensors("_foreach_add_", self)
    if isinstance(other, (list, tuple)):
        if len(other) != len(tensors):
            raise RuntimeError(f"_foreach_add_: expected {len(tensors)} addends, got {len(other)}")
        for t, o in zip(tensors, other):
            t.add_(o, alpha=alpha)
        return self
    for t in tensors:
        t.add_(other, alpha=alpha)
    return self


def _foreach_zero_(self: Sequence[Tensor]) -> Sequence[Tensor]:
    """``t.zero_()`` for every tensor (``torch._foreach_zero_``): one launch per (device, dtype) group on GPUs."""
    tensors = _tensors("_foreach_zero_", self)
    if _recorded(tensors):
        for t in tensors:
            t.zero_()
        return self
    for (device, _), idx in group_by_device_dtype(tensors).items():
        group = [tensors[i] for i in idx]
        device.backend.multi_fill_([t.ndarray for t in group], 0)
        for t in group:
            t._bump_version()
    return self


def foreach_clamp_(tensors: Sequence[Tensor], min: float | None, max: float | None) -> None:
    """``t.clamp_(min, max)`` for every tensor in one launch per (device, dtype) group on GPUs (nan stays nan)."""
    tensors = list(tensors)
    if _recorded(tensors):
        for t in tensors:
            t.clamp_(min=min, max=max)
        return
    for (device, _), idx in group_by_device_dtype(tensors).items():
        group = [tensors[i] for i in idx]
        device.backend.multi_clamp_([t.ndarray for t in group], min, max)
        for t in group:
            t._bump_version()


# ---------------------------------------------------------------- the per-tensor family
# torch's other common _foreach_* ops (EMA updates, optimizer code written with them): one op per tensor, with
# torch's argument forms: a number or tensor for every element, or a list with one entry per element.


def _each(op: str, other: Any, n: int) -> list:
    """``other`` per element: its entries when it is a list or tuple (one per tensor), else itself ``n`` times."""
    if isinstance(other, (list, tuple)):
        if len(other) != n:
            raise RuntimeError(f"{op}: Tensor lists must have the same number of tensors, got {n} and {len(other)}.")
        return list(other)
    return [other] * n


def _foreach_sub_(self: Sequence[Tensor], other: Any, alpha: Number = 1) -> Sequence[Tensor]:
    """``t.sub_(other, alpha=alpha)`` for every tensor."""
    tensors = _tensors("_foreach_sub_", self)
    for t, o in zip(tensors, _each("_foreach_sub_", other, len(tensors))):
        t.sub_(o, alpha=alpha)
    return self


def _foreach_div_(self: Sequence[Tensor], other: Any) -> Sequence[Tensor]:
    """``t.div_(other)`` for every tensor."""
    tensors = _tensors("_foreach_div_", self)
    for t, o in zip(tensors, _each("_foreach_div_", other, len(tensors))):
        t.div_(o)
    return self


def _foreach_lerp_(self: Sequence[Tensor], tensors1: Sequence[Tensor], weight: Any) -> Sequence[Tensor]:
    """``t.lerp_(end, weight)`` for every tensor (EMA updates: ``_foreach_lerp_(ema, params, 1 - decay)``)."""
    tensors = _tensors("_foreach_lerp_", self)
    ends = _each("_foreach_lerp_", list(tensors1), len(tensors))
    for t, e, w in zip(tensors, ends, _each("_foreach_lerp_", weight, len(tensors))):
        t.lerp_(e, w)
    return self


def _foreach_addcmul_(self: Sequence[Tensor], tensor1: Sequence[Tensor], tensor2: Sequence[Tensor],
                      value: Any = 1) -> Sequence[Tensor]:
    """``t.addcmul_(a, b, value=v)`` for every tensor (``value`` a number or one number per tensor)."""
    tensors = _tensors("_foreach_addcmul_", self)
    n = len(tensors)
    for t, a, b, v in zip(tensors, _each("_foreach_addcmul_", list(tensor1), n),
                          _each("_foreach_addcmul_", list(tensor2), n), _each("_foreach_addcmul_", value, n)):
        t.addcmul_(a, b, value=v)
    return self


def _foreach_addcdiv_(self: Sequence[Tensor], tensor1: Sequence[Tensor], tensor2: Sequence[Tensor],
                      value: Any = 1) -> Sequence[Tensor]:
    """``t.addcdiv_(a, b, value=v)`` for every tensor (``value`` a number or one number per tensor)."""
    tensors = _tensors("_foreach_addcdiv_", self)
    n = len(tensors)
    for t, a, b, v in zip(tensors, _each("_foreach_addcdiv_", list(tensor1), n),
                          _each("_foreach_addcdiv_", list(tensor2), n), _each("_foreach_addcdiv_", value, n)):
        t.addcdiv_(a, b, value=v)
    return self


def _foreach_copy_(self: Sequence[Tensor], src: Sequence[Tensor], non_blocking: bool = False) -> Sequence[Tensor]:
    """``t.copy_(s)`` for every pair (``torch._foreach_copy_``).

    Pairs of one shape on one device with a contiguous destination take one launch per (device, dtype pair) group
    on GPUs; a pair that broadcasts or crosses devices, a strided destination (``copy_`` checks it for overlapping
    elements), and any pair while a graph is recorded, take ``copy_``.
    """
    tensors = _tensors("_foreach_copy_", self)
    sources = _each("_foreach_copy_", list(src), len(tensors))
    if _recorded(tensors) or (is_grad_enabled() and any(isinstance(s, Tensor) and s.requires_grad for s in sources)):
        fused = []
    else:
        fused = [i for i, (t, s) in enumerate(zip(tensors, sources))
                 if isinstance(s, Tensor) and s.shape == t.shape and s.device == t.device
                 and not isinstance(t, SparseBase) and not isinstance(s, SparseBase) and t.ndarray.is_contiguous()]
    groups: dict[Any, list[int]] = {}
    for i in fused:
        groups.setdefault(tensors[i].device, []).append(i)
    for device, idx in groups.items():
        device.backend.multi_copy_([tensors[i].ndarray for i in idx], [sources[i].ndarray for i in idx])
        for i in idx:
            tensors[i]._bump_version()
    done = set(fused)
    for i, (t, s) in enumerate(zip(tensors, sources)):
        if i not in done:
            t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_sqrt_(self: Sequence[Tensor]) -> Sequence[Tensor]:
    """``t.sqrt_()`` for every tensor."""
    for t in _tensors("_foreach_sqrt_", self):
        t.sqrt_()
    return self


def _foreach_add(self: Sequence[Tensor], other: Any, alpha: Number = 1) -> tuple[Tensor, ...]:
    """``t.add(other, alpha=alpha)`` for every tensor, as a new tuple (torch's return type)."""
    tensors = _tensors("_foreach_add", self)
    return tuple(t.add(o, alpha=alpha) for t, o in zip(tensors, _each("_foreach_add", other, len(tensors))))


def _foreach_sub(self: Sequence[Tensor], other: Any, alpha: Number = 1) -> tuple[Tensor, ...]:
    """``t.sub(other, alpha=alpha)`` for every tensor, as a new tuple (torch's return type)."""
    tensors = _tensors("_foreach_sub", self)
    return tuple(t.sub(o, alpha=alpha) for t, o in zip(tensors, _each("_foreach_sub", other, len(tensors))))


def _foreach_mul(self: Sequence[Tensor], other: Any) -> tuple[Tensor, ...]:
    """``t.mul(other)`` for every tensor, as a new tuple (torch's return type)."""
    tensors = _tensors("_foreach_mul", self)
    return tuple(t.mul(o) for t, o in zip(tensors, _each("_foreach_mul", other, len(tensors))))


def _foreach_div(self: Sequence[Tensor], other: Any) -> tuple[Tensor, ...]:
    """``t.div(other)`` for every tensor, as a new tuple (torch's return type)."""
    tensors = _tensors("_foreach_div", self)
    return tuple(t.div(o) for t, o in zip(tensors, _each("_foreach_div", other, len(tensors))))


def _foreach_lerp(self: Sequence[Tensor], tensors1: Sequence[Tensor], weight: Any) -> tuple[Tensor, ...]:
    """``t.lerp(end, weight)`` for every tensor, as a new tuple (torch's return type)."""
    tensors = _tensors("_foreach_lerp", self)
    ends = _each("_foreach_lerp", list(tensors1), len(tensors))
    return tuple(t.lerp(e, w) for t, e, w in zip(tensors, ends, _each("_foreach_lerp", weight, len(tensors))))


def _foreach_sqrt(self: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """``t.sqrt()`` for every tensor, as a new tuple (torch's return type)."""
    return tuple(t.sqrt() for t in _tensors("_foreach_sqrt", self))


def _foreach_neg(self: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """``t.neg()`` for every tensor, as a new tuple (torch's return type)."""
    return tuple(t.neg() for t in _tensors("_foreach_neg", self))
