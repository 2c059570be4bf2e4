"""Lazy layers: the mixin that lets a layer infer its input size from the first input, and the lazy batch and
instance norms (``LazyBatchNorm1d/2d/3d``, ``LazyInstanceNorm1d/2d/3d``). ``LazyLinear`` and ``LazyConv1d/2d/3d``,
``LazyConvTranspose1d/2d/3d`` live beside their eager layers (``linear.py``, ``conv.py``), as in torch.

Until the first input their parameters and buffers are placeholders (``UninitializedParameter``,
``UninitializedBuffer``: ``has_uninitialized_params()``); the first call (or loading a state dict that holds the
parameters) gives them their shapes in place, so optimizers built beforehand keep holding the same Parameter
objects, initializes them as the eager layer would, and turns the module into that layer (``cls_to_become``:
``Linear``, ``Conv1d``...).
"""

from __future__ import annotations

from typing import Any, Sequence

from genesis.autograd import no_grad
from genesis.nn.modules.module import Module
from genesis.nn.modules.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _NormBase,
)
from genesis.nn.parameter import UninitializedBuffer, UninitializedParameter, UninitializedTensorMixin
from genesis.tensor import Tensor, empty


class _LazyMixin:
    """Placeholder parameters and buffers, their materialization, and the switch to the eager class."""

    cls_to_become: type[Module]
    _lazy_names: tuple[str, ...] = ()
    _pending = False

    def _placeholders(self, parameters: Sequence[str], buffers: Sequence[str], device: Any, dtype: Any) -> None:
        """Placeholders in place of the named parameters and buffers that the eager layer registered."""
        self._lazy_names = (*parameters, *buffers)
        self._pending = True
        for name in parameters:
            setattr(self, name, UninitializedParameter(device=device, dtype=dtype))
        for name in buffers:
            self.register_buffer(name, UninitializedBuffer(device=device, dtype=dtype))

    def has_uninitialized_params(self) -> bool:
        """Whether the parameters still wait for their shapes."""
        return self._pending

    def _shapes(self, size: int) -> dict[str, tuple[int, ...]]:
        """Each placeholder's shape once the inferred input size is ``size`` (and the size recorded)."""
        raise NotImplementedError

    def _size_from_checkpoint(self, name: str, shape: tuple[int, ...]) -> int | None:
        """The input size that a checkpoint entry of this shape implies (None: the entry does not tell)."""
        raise NotImplementedError

    def _materialize(self, size: int) -> None:
        with no_grad():
            for name, shape in self._shapes(size).items():
                target = getattr(self, name)
                if isinstance(target, UninitializedTensorMixin):
                    target.materialize(shape)
                else:  # a placeholder buffer that Module.to replaced with a plain tensor
                    target.data = empty(shape, device=target.device, dtype=target.dtype)
        self._lazy_names = ()
        self._pending = False
        self.__class__ = self.cls_to_become
        self.reset_parameters()

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        # A checkpoint of the initialized layer gives the shapes: materialize before the shapes are compared.
        for name in self._lazy_names:
            if prefix + name in state_dict:
                size = self._size_from_checkpoint(name, tuple(state_dict[prefix + name].shape))
                if size is not None:
                    self._materialize(size)
                    break
        args = (state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        if isinstance(self, _LazyMixin):
            super()._load_from_state_dict(*args)
        else:
            # Materialized: the eager class's own loading (e.g. num_batches_tracked of old checkpoints) applies.
            type(self)._load_from_state_dict(self, *args)


class _LazyNorm(_LazyMixin, _NormBase):
    """Batch/instance norm whose ``num_features`` is ``input.shape[1]`` of the first input (as torch's)."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        _NormBase.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        parameters = [name for name in ("weight", "bias") if getattr(self, name) is not None]
        buffers = ("running_mean", "running_var") if track_running_stats else ()
        self._placeholders(parameters, buffers, device, dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            _NormBase.reset_parameters(self)

    def _shapes(self, size: int) -> dict[str, tuple[int, ...]]:
        # As torch: a layer without parameters or running statistics keeps num_features=0.
        if self._lazy_names:
            self.num_features = size
        return {name: (size,) for name in self._lazy_names}

    def _size_from_checkpoint(self, name: str, shape: tuple[int, ...]) -> int | None:
        return shape[0]

    def forward(self, input: Tensor) -> Tensor:
        if self.has_uninitialized_params():
            if input.ndim < 2:
                raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
            self._materialize(input.shape[1])
        return type(self).forward(self, input)


class LazyBatchNorm1d(_LazyNorm, BatchNorm1d):
    """A ``BatchNorm1d`` whose ``num_features`` is taken from the first input."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNorm, BatchNorm2d):
    """A ``BatchNorm2d`` whose ``num_features`` is taken from the first input."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNorm, BatchNorm3d):
    """A ``BatchNorm3d`` whose ``num_features`` is taken from the first input."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNorm, InstanceNorm1d):
    """An ``InstanceNorm1d`` whose ``num_features`` is taken from the first input (torch's lazy defaults:
    ``affine=True``, ``track_running_stats=True``)."""

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNorm, InstanceNorm2d):
    """An ``InstanceNorm2d`` whose ``num_features`` is taken from the first input."""

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNorm, InstanceNorm3d):
    """An ``InstanceNorm3d`` whose ``num_features`` is taken from the first input."""

    cls_to_become = InstanceNorm3d
