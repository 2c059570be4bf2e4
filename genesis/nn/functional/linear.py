"""Linear maps: ``linear`` and ``bilinear``."""

from __future__ import annotations

from genesis import amp, dtypes
from genesis import ops as T
from genesis.nn.functional._out import write_out
from genesis.ops.autocast import cast_parameter, lower_dtype
from genesis.ops.nn import CastLinear, Linear
from genesis.tensor import Tensor


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None, *, out: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` for ``input`` of shape (*, in_features) and ``weight`` (out_features, in_features).

    ``out=`` writes the result into a preallocated tensor (inference only, no autograd).
    """
    lower = lower_dtype("linear", input)
    if (lower is not None and _one_node(input, weight, bias, dtypes.float32)
            and weight.ndarray.device is input.ndarray.device
            and (bias is None or bias.ndarray.device is input.ndarray.device)):
        # float32 parameters under autocast: the casts fold into the product's node (one node, not up to four).
        if input.ndarray.shape[-1] != weight.ndarray.shape[-1]:
            _shape_error(input, weight)
        result = CastLinear.apply(input, weight, bias, dtype=lower, w_low=cast_parameter(weight, lower),
                                  b_low=None if bias is None else cast_parameter(bias, lower))
        return write_out("linear", result, out)
    input, weight, bias = amp.autocast_args("linear", input, weight, bias)
    x, w = input.ndarray, weight.ndarray
    if x.shape[-1:] != w.shape[-1:]:
        _shape_error(input, weight)
    if x.dtype is w.dtype and _one_node(input, weight, bias, w.dtype):
        # One node and one 2-D product over all leading dims (flattened inside the node).
        result = Linear.apply(input, weight, bias)
    else:
        result = T.matmul(input, weight.t() if weight.ndim == 2 else weight)
        if bias is not None:
            result = result + bias
    return write_out("linear", result, out)


def _one_node(input: Tensor, weight: Tensor, bias: Tensor | None, dtype: dtypes.dtype) -> bool:
    """Whether the layer is one ``Linear`` node: a 2-D weight of ``dtype``, an input of two dims or more and no bias
    or an (out_features,) bias of ``dtype``."""
    w, b = weight.ndarray, None if bias is None else bias.ndarray
    return len(w.shape) == 2 and len(input.ndarray.shape) >= 2 and w.dtype is dtype and (
        b is None or (b.dtype is dtype and b.shape == w.shape[:1]))


def _shape_error(input: Tensor, weight: Tensor) -> None:
    if not (input.ndim and weight.ndim):
        raise RuntimeError(f"linear: both arguments to linear need to be at least 1D, but they are {input.ndim}D and "
                           f"{weight.ndim}D")
    raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, input.shape))} "
                       f"and {weight.shape[-1]}x{weight.shape[0] if weight.ndim == 2 else 1})")


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_k = x1^T W_k x2 + b_k`` for ``weight`` of shape (out, in1, in2)."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear: input1 and input2 must have the same leading dims, got {tuple(input1.shape)} "
                           f"and {tuple(input2.shape)}")
    if weight.shape[1] != input1.shape[-1] or weight.shape[2] != input2.shape[-1]:
        raise RuntimeError(f"bilinear: weight of shape {tuple(weight.shape)} does not match input sizes "
                           f"{input1.shape[-1]} and {input2.shape[-1]}")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    out_features, in1, in2 = weight.shape
    # (N, in1) @ (in1, out * in2) -> (N, out, in2), then contract in2 with x2.
    tmp = T.matmul(x1, weight.permute(1, 0, 2).reshape(in1, out_features * in2)).reshape(-1, out_features, in2)
    result = (tmp * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        result = result + bias
    return result.reshape(*lead, out_features)
