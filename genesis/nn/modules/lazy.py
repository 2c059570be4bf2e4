"""Lazy layers: ``LazyLinear`` and ``LazyConv1d/2d/3d`` infer their input size from the first input.

Until then their parameters are empty placeholders (``has_uninitialized_params()``); the first call (or loading a
state dict that holds the parameters) gives them their shapes in place, so optimizers built beforehand keep
holding the same Parameter objects, initializes them as the eager layer would, and turns the module into that
layer (``cls_to_become``: ``Linear``, ``Conv1d``...).
"""

from __future__ import annotations

from typing import Any, Sequence

from genesis.autograd import no_grad
from genesis.nn.modules.conv import Conv1d, Conv2d, Conv3d, _ConvNd
from genesis.nn.modules.linear import Linear
from genesis.nn.modules.module import Module
from genesis.nn.parameter import Parameter
from genesis.tensor import Tensor, empty


class _LazyMixin:
    """Placeholder parameters, their materialization, and the switch to the eager class."""

    cls_to_become: type[Module]
    _lazy_names: tuple[str, ...] = ()

    def _placeholders(self, names: Sequence[str], device: Any, dtype: Any) -> None:
        self._lazy_names = tuple(names)
        for name in names:
            setattr(self, name, Parameter(empty((0,), device=device, dtype=dtype)))

    def has_uninitialized_params(self) -> bool:
        """Whether the parameters still wait for their shapes."""
        return bool(self._lazy_names)

    def _shapes(self, size: int) -> dict[str, tuple[int, ...]]:
        """Each placeholder's shape once the inferred input size is ``size``."""
        raise NotImplementedError

    def _materialize(self, size: int) -> None:
        with no_grad():
            for name, shape in self._shapes(size).items():
                param = getattr(self, name)
                param.data = empty(shape, device=param.device, dtype=param.dtype)
        self._lazy_names = ()
        self.__class__ = self.cls_to_become
        self.reset_parameters()

    def _upgrade_state_dict(self, state_dict: dict, prefix: str) -> None:
        # A checkpoint of the initialized layer gives the shapes: materialize before the shapes are compared.
        key = prefix + "weight"
        if self.has_uninitialized_params() and key in state_dict:
            self._materialize(self._size_from_weight(tuple(state_dict[key].shape)))

    def _size_from_weight(self, shape: tuple[int, ...]) -> int:
        raise NotImplementedError


class LazyLinear(_LazyMixin, Linear):
    """A ``Linear`` whose ``in_features`` is taken from ``input.shape[-1]`` on the first call."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        Linear.__init__(self, 0, out_features, False, device, dtype)
        self._placeholders(("weight", "bias") if bias else ("weight",), device, dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            Linear.reset_parameters(self)

    def _shapes(self, size: int) -> dict[str, tuple[int, ...]]:
        self.in_features = size
        shapes = {"weight": (self.out_features, size)}
        if "bias" in self._lazy_names:
            shapes["bias"] = (self.out_features,)
        return shapes

    def _size_from_weight(self, shape: tuple[int, ...]) -> int:
        return shape[1]

    def forward(self, input: Tensor) -> Tensor:
        if self.has_uninitialized_params():
            self._materialize(input.shape[-1])
        return type(self).forward(self, input)


class _LazyConvNd(_LazyMixin, _ConvNd):
    def __init__(self, out_channels: int, kernel_size: int | Sequence[int], stride: int | Sequence[int] = 1,
                 padding: int | str | Sequence[int] = 0, dilation: int | Sequence[int] = 1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        _ConvNd.__init__(self, 0, out_channels, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                         device, dtype)
        self._placeholders(("weight", "bias") if bias else ("weight",), device, dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            _ConvNd.reset_parameters(self)

    def _shapes(self, size: int) -> dict[str, tuple[int, ...]]:
        if size % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        self.in_channels = size
        shapes = {"weight": (self.out_channels, size // self.groups, *self.kernel_size)}
        if "bias" in self._lazy_names:
            shapes["bias"] = (self.out_channels,)
        return shapes

    def _size_from_weight(self, shape: tuple[int, ...]) -> int:
        return shape[1] * self.groups

    def forward(self, input: Tensor) -> Tensor:
        if self.has_uninitialized_params():
            n = self._n
            if input.ndim not in (n + 1, n + 2):
                raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                                   f"{type(self).__name__}, but got input of size: {list(input.shape)}")
            self._materialize(input.shape[1] if input.ndim == n + 2 else input.shape[0])
        return type(self).forward(self, input)


class LazyConv1d(_LazyConvNd, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` is taken from the first input (``input.shape[-2]``)."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConvNd, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` is taken from the first input (``input.shape[-3]``)."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConvNd, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` is taken from the first input (``input.shape[-4]``)."""

    cls_to_become = Conv3d
