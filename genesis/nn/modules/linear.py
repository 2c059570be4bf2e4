"""Identity, Linear, Bilinear, Flatten and Unflatten."""

from __future__ import annotations

import math
from typing import Any, Sequence

from genesis.nn import functional as F
from genesis.nn import init
from genesis.nn.modules.lazy import _LazyMixin
from genesis.nn.modules.module import Module
from genesis.nn.parameter import Parameter
from genesis.tensor import Tensor, empty


def _factory(device: Any, dtype: Any) -> dict:
    return {"device": device, "dtype": dtype}


class Identity(Module):
    """Returns its input unchanged (accepts and ignores any constructor arguments)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """``y = x W^T + b`` with ``W`` of shape (out_features, in_features).

    Initialization as torch: ``W ~ U(-1/sqrt(in), 1/sqrt(in))`` (kaiming_uniform with a=sqrt(5)) and the same
    bound for ``b``.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), **_factory(device, dtype)))
        if bias:
            self.bias = Parameter(empty((out_features,), **_factory(device, dtype)))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """The ``Linear`` of ``MultiheadAttention.out_proj``, as torch's: a class of its own, so that code telling
    layers apart by ``type(m) is nn.Linear`` treats the attention projection as torch's code does."""


class Bilinear(Module):
    """``y_k = x1^T W_k x2 + b_k`` with ``W`` of shape (out_features, in1_features, in2_features)."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features),
                                                   **_factory(device, dtype)))
        if bias:
            self.bias = Parameter(empty((out_features,), **_factory(device, dtype)))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    """Flattens dims ``start_dim..end_dim`` into one (default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim ``dim`` into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class LazyLinear(_LazyMixin, Linear):
    """A ``Linear`` whose ``in_features`` is taken from ``input.shape[-1]`` on the first call."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        Linear.__init__(self, 0, out_features, False, device, dtype)
        self._placeholders(("weight", "bias") if bias else ("weight",), (), device, dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            Linear.reset_parameters(self)

    def _shapes(self, size: int) -> dict[str, tuple[int, ...]]:
        self.in_features = size
        shapes = {"weight": (self.out_features, size)}
        if "bias" in self._lazy_names:
            shapes["bias"] = (self.out_features,)
        return shapes

    def _size_from_checkpoint(self, name: str, shape: tuple[int, ...]) -> int | None:
        return shape[1] if name == "weight" else None

    def forward(self, input: Tensor) -> Tensor:
        if self.has_uninitialized_params():
            self._materialize(input.shape[-1])
        return type(self).forward(self, input)
