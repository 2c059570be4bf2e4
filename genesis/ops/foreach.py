"""Multi-tensor ops: torch's ``_foreach_*`` functions over lists of tensors.

On GPUs each launches one kernel per (device, dtype) group of its list, whatever the number of tensors, in place of
one launch per tensor: ``_foreach_norm`` (two launches: per-block partials, then one program per tensor),
``_foreach_mul_`` by a number or a 0-d tensor (read on the device: no host sync) and ``_foreach_zero_``, on the
backend's ``multi_norm`` / ``multi_scale_`` / ``multi_fill_`` primitives. ``_foreach_add_`` and the list forms of
``_foreach_mul_`` run one in-place op per tensor. :func:`foreach_clamp_` serves ``clip_grad_value_``.

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


def _foreach_mul_(self: Sequence[Tensor], other: Any) -> None:
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
        return
    if _recorded(tensors, other) or any(not t.dtype.is_floating_point for t in tensors):
        for t in tensors:  # graphs; integer tensors (torch's promotion rules and errors)
            t.mul_(other)
        return
    for (device, dt), idx in group_by_device_dtype(tensors).items():
        group = [tensors[i] for i in idx]
        device.backend.multi_scale_([t.ndarray for t in group], _scale_array(other, dt, device))
        for t in group:
            t._bump_version()


def _foreach_add_(self: Sequence[Tensor], other: Any, alpha: Number = 1) -> None:
    """``t.add_(other, alpha=alpha)`` for every tensor (``torch._foreach_add_``); ``other`` a number, a tensor or a
    list of numbers or tensors. One in-place op per tensor."""
    tensors = _tensors("_foreach_add_", self)
    if isinstance(other, (list, tuple)):
        if len(other) != len(tensors):
            raise RuntimeError(f"_foreach_add_: expected {len(tensors)} addends, got {len(other)}")
        for t, o in zip(tensors, other):
            t.add_(o, alpha=alpha)
        return
    for t in tensors:
        t.add_(other, alpha=alpha)


def _foreach_zero_(self: Sequence[Tensor]) -> None:
    """``t.zero_()`` for every tensor (``torch._foreach_zero_``): one launch per (device, dtype) group on GPUs."""
    tensors = _tensors("_foreach_zero_", self)
    if _recorded(tensors):
        for t in tensors:
            t.zero_()
        return
    for (device, _), idx in group_by_device_dtype(tensors).items():
        group = [tensors[i] for i in idx]
        device.backend.multi_fill_([t.ndarray for t in group], 0)
        for t in group:
            t._bump_version()


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
