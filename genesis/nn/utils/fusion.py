"""Folding an inference-mode batch norm into the convolution or linear layer before it (torch.nn.utils.fusion).

In eval mode a batch norm is the affine map ``y = (x - mean) / sqrt(var + eps) * w + b`` per channel, so it can be
merged into the layer that feeds it: the layer's weight is scaled per output channel by ``w / sqrt(var + eps)`` and
its bias becomes ``(bias - mean) * w / sqrt(var + eps) + b``. The fused layer computes the same outputs with one op
less. The results are new ``Parameter`` objects in the layer's dtypes.
"""

from __future__ import annotations

import copy
from typing import Any

from genesis import ops as T
from genesis.nn.parameter import Parameter
from genesis.tensor import Tensor


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                         bn_w: Tensor | None, bn_b: Tensor | None, transpose: bool = False) -> tuple[Parameter,
                                                                                                 Parameter]:
    """The weight and bias of a convolution followed by an eval-mode batch norm, as one convolution's parameters.

    ``transpose``: the weight is a transposed convolution's, whose output channels are its second dim.
    """
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    conv_b = T.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = T.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = T.zeros_like(bn_rm) if bn_b is None else bn_b
    rsqrt = T.rsqrt(bn_rv + bn_eps)
    shape = [1, -1] if transpose else [-1, 1]
    shape += [1] * (conv_w.ndim - 2)
    fused_w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(weight_dtype)
    fused_b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(bias_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_conv_bn_eval(conv: Any, bn: Any, transpose: bool = False) -> Any:
    """A copy of the eval-mode convolution ``conv`` with the eval-mode batch norm ``bn`` that follows it folded in."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                           bn_w: Tensor, bn_b: Tensor) -> tuple[Parameter, Parameter]:
    """The weight and bias of a linear layer followed by an eval-mode batch norm, as one linear layer's."""
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    linear_b = T.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * T.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * scale.unsqueeze(-1).to(weight_dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)


def fuse_linear_bn_eval(linear: Any, bn: Any) -> Any:
    """A copy of the eval-mode linear layer ``linear`` with the eval-mode batch norm ``bn`` after it folded in (the
    norm's features must be the layer's outputs, or one)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]
