"""CPU backend: the backend contract (see ``genesis._impl.contract``) on PyTorch CPU tensors.

An NDArray's buffer here is a torch tensor that owns (or shares) the storage; the torch view matching the NDArray's
shape, strides and offset is built once with ``as_strided`` and cached on the NDArray.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from genesis import dtypes
from genesis._impl import cuda_probe
from genesis.device import cpu as _cpu
from genesis.device import device as Device
from genesis.ndarray import NDArray, check_tensor_lists

TORCH_DTYPE = {
    dtypes.bool_: torch.bool, dtypes.uint8: torch.uint8, dtypes.int8: torch.int8, dtypes.int16: torch.int16,
    dtypes.int32: torch.int32, dtypes.int64: torch.int64, dtypes.float16: torch.float16,
    dtypes.bfloat16: torch.bfloat16, dtypes.float32: torch.float32, dtypes.float64: torch.float64,
}
GENESIS_DTYPE = {v: k for k, v in TORCH_DTYPE.items()}


def wrap(t: torch.Tensor, shape: tuple[int, ...] | None = None) -> NDArray:
    """Wrap a torch CPU tensor as an NDArray sharing its memory.

    ``shape``, when the caller knows it (an elementwise result has its input's shape), saves converting ``t.shape``.
    """
    return NDArray(t, tuple(t.shape) if shape is None else shape, t.stride(), t.storage_offset(),
                   GENESIS_DTYPE[t.dtype], _cpu, t)


def native(x: NDArray) -> torch.Tensor:
    """The torch view of an NDArray (built on first use, then cached)."""
    t = x._native
    if t is None:
        t = x._native = torch.as_strided(x.buffer, x.shape, x.strides, x.offset)
    return t


def _arg(b: NDArray | int | float | bool) -> torch.Tensor | int | float | bool:
    return native(b) if isinstance(b, NDArray) else b


# ---------------------------------------------------------------- memory and creation

def empty(shape: tuple[int, ...], dtype: dtypes.dtype, device: object) -> NDArray:
    return wrap(torch.empty(shape, dtype=TORCH_DTYPE[dtype]))


def full(shape: tuple[int, ...], value: int | float | bool, dtype: dtypes.dtype, device: object) -> NDArray:
    return wrap(torch.full(shape, value, dtype=TORCH_DTYPE[dtype]))


def arange(start: float, end: float, step: float, dtype: dtypes.dtype, device: object) -> NDArray:
    return wrap(torch.arange(start, end, step, dtype=TORCH_DTYPE[dtype]))


def from_numpy(array: np.ndarray, dtype: dtypes.dtype, device: object, non_blocking: bool = False) -> NDArray:
    if dtype is dtypes.bfloat16:
        bits = np.ascontiguousarray(array).view(np.int16).reshape(array.shape)  # keeps 0-d arrays 0-d
        return wrap(torch.from_numpy(bits.copy()).view(torch.bfloat16))
    return wrap(torch.from_numpy(np.array(array, copy=True)))


def from_numpy_shared(array: np.ndarray) -> NDArray:
    """Wrap a numpy array without copying (``genesis.from_numpy``)."""
    return wrap(torch.from_numpy(array))


def to_numpy(x: NDArray) -> np.ndarray:
    t = native(x)
    if t.dtype is torch.bfloat16:  # numpy has no bfloat16: hand out the bits as ml_dtypes.bfloat16
        return t.contiguous().view(torch.int16).numpy().view(dtypes.to_numpy(dtypes.bfloat16))
    return t.numpy()


def copy_(dst: NDArray, src: NDArray | int | float | bool) -> NDArray:
    if isinstance(src, NDArray):
        native(dst).copy_(native(src))
    else:
        native(dst).fill_(src)
    return dst


def pin_memory(x: NDArray) -> NDArray:
    """A contiguous copy in page-locked memory, from the CUDA backend's pinned cache (``Tensor.pin_memory``)."""
    if not cuda_probe.is_available():
        raise RuntimeError("pin_memory: Cannot access accelerator device when none is available (no CUDA GPU can be "
                           "used here, and page-locked memory comes from the CUDA driver)")
    t = native(x)
    host = Device("cuda").backend.pinned.empty(t.numel() * t.element_size())
    out = torch.from_numpy(host).view(t.dtype).view(t.shape)
    out.copy_(t)
    return wrap(out)


def is_pinned(x: NDArray) -> bool:
    """Whether the array lies in page-locked memory (only the CUDA backend's pinned cache hands it out)."""
    return cuda_probe.is_available() and Device("cuda").backend.pinned.contains(data_ptr(x))


def cast(x: NDArray, dtype: dtypes.dtype) -> NDArray:
    return wrap(native(x).to(TORCH_DTYPE[dtype], copy=True))


def contiguous(x: NDArray) -> NDArray:
    return wrap(native(x).clone(memory_format=torch.contiguous_format))


def data_ptr(x: NDArray) -> int:
    return native(x).data_ptr()


def to_dlpack(x: NDArray, stream: object = None, max_version: tuple[int, int] | None = None) -> object:
    # A consumer that names max_version reads versioned capsules, which also carry writability.
    return native(x).__dlpack__(max_version=max_version) if max_version else native(x).__dlpack__()


def from_dlpack(obj: object) -> NDArray:
    return wrap(torch.from_dlpack(obj))


# ---------------------------------------------------------------- elementwise

_F = torch.nn.functional
_UNARY = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "exp2": torch.exp2, "log": torch.log, "log2": torch.log2,
    "log1p": torch.log1p, "expm1": torch.expm1, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "relu": torch.relu, "gelu": _F.gelu,
    "gelu_tanh": lambda t: _F.gelu(t, approximate="tanh"),
    "silu": _F.silu, "softplus": _F.softplus, "erf": torch.erf, "sign": torch.sign, "floor": torch.floor,
    "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc, "isnan": torch.isnan, "isinf": torch.isinf,
    "logical_not": torch.logical_not, "bitwise_not": torch.bitwise_not,
    "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh,
    "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh, "erfc": torch.erfc, "erfinv": torch.erfinv,
    "lgamma": torch.lgamma, "digamma": torch.digamma, "trigamma": lambda t: torch.polygamma(1, t),
    "i0": torch.i0, "i1": torch.special.i1, "signbit": torch.signbit,
}


def _activation_backward(fn: Callable) -> Callable:
    """An ``aten.*_backward(grad, x)`` as a ``_BINARY`` entry: operands broadcast first (the oneDNN float32/bfloat16
    exact gelu_backward rejects operands of different shapes, not expanded views), ``out=`` written by copy."""
    def run(grad: torch.Tensor, x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        if grad.shape != x.shape:
            grad, x = torch.broadcast_tensors(grad, x)
        result = fn(grad, x)
        return result if out is None else out.copy_(result)
    return run


_BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "floor_divide": torch.floor_divide,
    "remainder": torch.remainder, "pow": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum,
    "atan2": torch.atan2, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
    "ge": torch.ge, "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor, "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor, "hypot": torch.hypot, "copysign": torch.copysign,
    "gelu_backward": _activation_backward(lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="none")),
    "gelu_tanh_backward": _activation_backward(lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="tanh")),
    "silu_backward": _activation_backward(torch.ops.aten.silu_backward),
}
_SCALAR_SECOND_UNSUPPORTED = frozenset(("maximum", "minimum", "atan2", "hypot"))


def unary(op: str, x: NDArray, out: NDArray | None = None) -> NDArray:
    result = _UNARY[op](x._native if x._native is not None else native(x))
    if out is None:
        return wrap(result, x.shape)
    native(out).copy_(result)
    return out


def binary(op: str, a: NDArray, b: NDArray | int | float | bool, out: NDArray | None = None) -> NDArray:
    ta = a._native if a._native is not None else native(a)
    shape = a.shape  # the result's shape, unless b broadcasts a
    if b.__class__ is NDArray:
        tb = b._native if b._native is not None else native(b)
        if b.shape != shape:
            shape = None
    elif op in _SCALAR_SECOND_UNSUPPORTED:
        tb = torch.tensor(b, dtype=TORCH_DTYPE[a.dtype])
    else:
        tb = b
    if out is None:
        return wrap(_BINARY[op](ta, tb), shape)
    _BINARY[op](ta, tb, out=native(out))
    return out


def where(cond: NDArray, a: NDArray | float, b: NDArray | float) -> NDArray:
    return wrap(torch.where(native(cond), _arg(a), _arg(b)))


# ---------------------------------------------------------------- reductions

def reduce(op: str, x: NDArray, dims: tuple[int, ...], keepdim: bool) -> NDArray:
    t = native(x)
    if op == "sum":
        # The NDArray layer already chose the accumulation dtype; torch would widen integers to int64 again.
        return wrap(torch.sum(t, dim=dims, keepdim=keepdim, dtype=t.dtype))
    if op == "amax":
        return wrap(torch.amax(t, dim=dims, keepdim=keepdim))
    if op == "amin":
        return wrap(torch.amin(t, dim=dims, keepdim=keepdim))
    if op in ("prod", "any", "all"):
        fn = getattr(torch, op)
        # torch's prod/any/all reduce one dim at a time; go from the last dim down so indices stay valid.
        if not dims:
            return wrap(t.clone())
        for d in sorted(dims, reverse=True):
            t = fn(t, dim=d, keepdim=keepdim)
        return wrap(t)
    raise ValueError(f"reduce: unknown op {op}")


def arg_reduce(op: str, x: NDArray, dim: int, keepdim: bool) -> NDArray:
    fn = torch.argmax if op == "argmax" else torch.argmin
    return wrap(fn(native(x), dim=dim, keepdim=keepdim))


def cumulative(op: str, x: NDArray, dim: int) -> NDArray:
    fn = torch.cumsum if op == "cumsum" else torch.cumprod
    t = native(x)
    return wrap(fn(t, dim=dim, dtype=t.dtype))  # the NDArray layer chose the dtype; torch would widen integers


def softmax(x: NDArray, dim: int, log: bool) -> NDArray:
    fn = torch.log_softmax if log else torch.softmax
    return wrap(fn(native(x), dim=dim))


# ---------------------------------------------------------------- linear algebra

def matmul(a: NDArray, b: NDArray) -> NDArray:
    return wrap(torch.matmul(native(a), native(b)))


def linear(x: NDArray, w: NDArray, bias: NDArray | None) -> NDArray:
    return wrap(torch.nn.functional.linear(native(x), native(w), None if bias is None else native(bias)))


# ---------------------------------------------------------------- indexing

def _torch_indices(indices: tuple) -> tuple:
    return tuple(slice(None) if i is None else native(i) for i in indices)


def index(x: NDArray, indices: tuple) -> NDArray:
    return wrap(native(x)[_torch_indices(indices)])


def index_put_(x: NDArray, indices: tuple, values: NDArray, accumulate: bool) -> NDArray:
    native(x).index_put_(tuple(native(i) for i in indices), native(values), accumulate=accumulate)
    return x


def gather(x: NDArray, dim: int, index: NDArray) -> NDArray:
    return wrap(torch.gather(native(x), dim, native(index)))


def scatter(x: NDArray, dim: int, index: NDArray, src: NDArray | float, mode: str) -> NDArray:
    t = native(x).clone()
    if mode == "add":
        t.scatter_add_(dim, native(index), native(src))
    elif isinstance(src, NDArray):
        t.scatter_(dim, native(index), native(src))
    else:
        t.scatter_(dim, native(index), src)
    return wrap(t)


def index_select(x: NDArray, dim: int, index: NDArray) -> NDArray:
    return wrap(torch.index_select(native(x), dim, native(index)))


def nonzero(x: NDArray) -> NDArray:
    return wrap(torch.nonzero(native(x)))


def sort(x: NDArray, dim: int, descending: bool, stable: bool) -> tuple[NDArray, NDArray]:
    values, indices = torch.sort(native(x), dim=dim, descending=descending, stable=stable)
    return wrap(values), wrap(indices)


def unique(x: NDArray, return_inverse: bool, return_counts: bool) -> tuple[NDArray, NDArray | None, NDArray | None]:
    values, inverse, counts = torch.unique(native(x), sorted=True, return_inverse=True, return_counts=True)
    return wrap(values), wrap(inverse) if return_inverse else None, wrap(counts) if return_counts else None


def searchsorted(seq: NDArray, values: NDArray, right: bool) -> NDArray:
    return wrap(torch.searchsorted(native(seq), native(values), right=right))


def check_index(x: NDArray, low: int, high: int, ignore: int | None, error: type[Exception], message: str) -> NDArray:
    """Eager check: raises ``error`` naming the first bad value (in row-major order) at the call."""
    t = native(x)
    bad = (t < low) | (t >= high)
    if ignore is not None:
        bad &= t != ignore
    if bad.any():
        raise error(message.format(value=int(t[bad][0]), size=high))
    if low < 0 and (t < 0).any():
        return wrap(torch.where(t < 0, t + high, t))
    return x


# ---------------------------------------------------------------- neural network

def conv(x: NDArray, w: NDArray, bias: NDArray | None, stride: tuple, padding: tuple, dilation: tuple, groups: int,
         transposed: bool, output_padding: tuple) -> NDArray:
    b = native(bias) if bias is not None else None
    return wrap(torch.ops.aten.convolution(native(x), native(w), b, list(stride), list(padding), list(dilation),
                                           transposed, list(output_padding), groups))


def conv_backward(grad: NDArray, x: NDArray, w: NDArray, stride: tuple, padding: tuple, dilation: tuple, groups: int,
                  transposed: bool, output_padding: tuple, output_mask: tuple) -> tuple:
    grads = torch.ops.aten.convolution_backward(
        native(grad), native(x), native(w), [w.shape[1 if transposed else 0] * (groups if transposed else 1)],
        list(stride), list(padding), list(dilation), transposed, list(output_padding), groups, list(output_mask))
    return tuple(wrap(g) if m else None for g, m in zip(grads, output_mask))


_MAX_POOL = {2: (torch.ops.aten.max_pool2d_with_indices, torch.ops.aten.max_pool2d_with_indices_backward),
             3: (torch.ops.aten.max_pool3d_with_indices, torch.ops.aten.max_pool3d_with_indices_backward)}
_AVG_POOL = {2: (torch.ops.aten.avg_pool2d, torch.ops.aten.avg_pool2d_backward),
             3: (torch.ops.aten.avg_pool3d, torch.ops.aten.avg_pool3d_backward)}


def pool(x: NDArray, mode: str, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, ceil_mode: bool,
         count_include_pad: bool, divisor_override: int | None) -> tuple[NDArray, NDArray | None]:
    if mode == "max":
        values, indices = _MAX_POOL[len(kernel)][0](native(x), list(kernel), list(stride), list(padding),
                                                    list(dilation), ceil_mode)
        return wrap(values), wrap(indices)
    return wrap(_AVG_POOL[len(kernel)][0](native(x), list(kernel), list(stride), list(padding), ceil_mode,
                                          count_include_pad, divisor_override)), None


def pool_backward(grad: NDArray, x: NDArray, indices: NDArray | None, mode: str, kernel: tuple, stride: tuple,
                  padding: tuple, dilation: tuple, ceil_mode: bool, count_include_pad: bool,
                  divisor_override: int | None) -> NDArray:
    if mode == "max":
        return wrap(_MAX_POOL[len(kernel)][1](native(grad), native(x), list(kernel), list(stride), list(padding),
                                              list(dilation), ceil_mode, native(indices)))
    return wrap(_AVG_POOL[len(kernel)][1](native(grad), native(x), list(kernel), list(stride), list(padding),
                                          ceil_mode, count_include_pad, divisor_override))


def _opt(x: NDArray | None) -> torch.Tensor | None:
    return native(x) if x is not None else None


def batch_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, running_mean: NDArray | None,
               running_var: NDArray | None, training: bool, momentum: float, eps: float) -> tuple:
    out, mean, invstd = torch.ops.aten.native_batch_norm(native(x), _opt(weight), _opt(bias), _opt(running_mean),
                                                         _opt(running_var), training, momentum, eps)
    return wrap(out), wrap(mean), wrap(invstd)


def batch_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, running_mean: NDArray | None,
                        running_var: NDArray | None, save_mean: NDArray, save_invstd: NDArray, training: bool,
                        eps: float, output_mask: tuple) -> tuple:
    grads = torch.ops.aten.native_batch_norm_backward(native(grad), native(x), _opt(weight), _opt(running_mean),
                                                      _opt(running_var), native(save_mean), native(save_invstd),
                                                      training, eps, list(output_mask))
    return tuple(wrap(g) if m and g is not None else None for g, m in zip(grads, output_mask))


def adaptive_pool(x: NDArray, mode: str, output_size: tuple) -> tuple[NDArray, NDArray | None]:
    if mode == "max":
        values, indices = torch.ops.aten.adaptive_max_pool2d(native(x), list(output_size))
        return wrap(values), wrap(indices)
    return wrap(torch.ops.aten._adaptive_avg_pool2d(native(x), list(output_size))), None


def adaptive_pool_backward(grad: NDArray, x: NDArray, indices: NDArray | None, mode: str) -> NDArray:
    if mode == "max":
        return wrap(torch.ops.aten.adaptive_max_pool2d_backward(native(grad), native(x), native(indices)))
    return wrap(torch.ops.aten._adaptive_avg_pool2d_backward(native(grad), native(x)))


def group_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, num_groups: int,
               eps: float) -> tuple[NDArray, NDArray, NDArray]:
    t = native(x)
    N, C = t.shape[:2]
    out, mean, rstd = torch.ops.aten.native_group_norm(t, _opt(weight), _opt(bias), N, C, math.prod(t.shape[2:]),
                                                       num_groups, eps)
    return wrap(out), wrap(mean), wrap(rstd)


def group_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, mean: NDArray, rstd: NDArray,
                        num_groups: int, output_mask: tuple) -> tuple:
    t = native(x)
    # torch's kernel reads dy in x's layout: give both one layout
    fmt = next((f for f in (torch.channels_last, torch.channels_last_3d) if t.dim() == (4 if f is torch.channels_last
                else 5) and t.is_contiguous(memory_format=f) and not t.is_contiguous()), torch.contiguous_format)
    t, g = t.contiguous(memory_format=fmt), native(grad).contiguous(memory_format=fmt)
    N, C = t.shape[:2]
    grads = torch.ops.aten.native_group_norm_backward(g, t, native(mean), native(rstd), _opt(weight), N,
                                                      C, math.prod(t.shape[2:]), num_groups, list(output_mask))
    return tuple(wrap(g) if m and g is not None else None for g, m in zip(grads, output_mask))


_UPSAMPLE = {"nearest": (torch.ops.aten.upsample_nearest2d, torch.ops.aten.upsample_nearest2d_backward),
             "nearest-exact": (torch.ops.aten._upsample_nearest_exact2d,
                               torch.ops.aten._upsample_nearest_exact2d_backward),
             "bilinear": (torch.ops.aten.upsample_bilinear2d, torch.ops.aten.upsample_bilinear2d_backward)}


def upsample(x: NDArray, output_size: tuple, mode: str, align_corners: bool | None, scales: tuple) -> NDArray:
    op = _UPSAMPLE[mode][0].default
    if mode == "bilinear":
        return wrap(op(native(x), list(output_size), bool(align_corners), *scales))
    return wrap(op(native(x), list(output_size), *scales))


def upsample_backward(grad: NDArray, input_size: tuple, mode: str, align_corners: bool | None,
                      scales: tuple) -> NDArray:
    op = _UPSAMPLE[mode][1].default
    out_size = list(grad.shape[2:])
    if mode == "bilinear":
        return wrap(op(native(grad), out_size, list(input_size), bool(align_corners), *scales))
    return wrap(op(native(grad), out_size, list(input_size), *scales))


_PAD_BACKWARD = {("reflect", 1): torch.ops.aten.reflection_pad1d_backward,
                 ("reflect", 2): torch.ops.aten.reflection_pad2d_backward,
                 ("reflect", 3): torch.ops.aten.reflection_pad3d_backward,
                 ("replicate", 1): torch.ops.aten.replication_pad1d_backward,
                 ("replicate", 2): torch.ops.aten.replication_pad2d_backward,
                 ("replicate", 3): torch.ops.aten.replication_pad3d_backward}


def pad(x: NDArray, pad: tuple, mode: str) -> NDArray:
    return wrap(torch.nn.functional.pad(native(x), list(pad), mode=mode))


def pad_backward(grad: NDArray, input_shape: tuple, pad: tuple, mode: str) -> NDArray:
    g = native(grad)
    if mode != "circular":
        like = g.new_empty(()).expand(input_shape)  # torch reads only the input's sizes
        return wrap(_PAD_BACKWARD[mode, len(pad) // 2].default(g, like, list(pad)))
    for i in range(len(pad) // 2):  # fold each padded dim back: the wrapped bands land on the opposite edge
        dim, size = g.ndim - 1 - i, input_shape[-1 - i]
        before, after = pad[2 * i], pad[2 * i + 1]
        out = g.narrow(dim, before, size).clone()
        out.narrow(dim, size - before, before).add_(g.narrow(dim, 0, before))
        out.narrow(dim, 0, after).add_(g.narrow(dim, before + size, after))
        g = out
    return wrap(g)


def embedding_backward(grad: NDArray, index: NDArray, num_weights: int) -> NDArray:
    return wrap(torch.ops.aten.embedding_dense_backward(native(grad), native(index), num_weights, -1, False))


# ---------------------------------------------------------------- fused neural-network kernels (torch composites)

# Recurrent cells: torch's gate order (LSTM i, f, g, o; GRU r, z, n); half precision computes in float32.

def _f32(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _tanh_(x: torch.Tensor) -> torch.Tensor:
    """``tanh(x) = 2 sigmoid(2x) - 1`` in place: torch's CPU tanh of a (20, 650) block right after a matrix product
    took a median 8 ms on a shared 2-core machine (its threaded path), the sigmoid form 0.13 ms."""
    return x.mul_(2).sigmoid_().mul_(2).sub_(1)


def rnn_cell_(mode: str, gi: NDArray, gh: NDArray, h: NDArray, c: NDArray | None, h_out: NDArray,
              saved: NDArray | None) -> None:
    H = h_out.shape[-1]
    gi, gh, out, s = _f32(native(gi)), _f32(native(gh)), native(h_out), _opt(saved)
    if mode == "LSTM":
        act = gi + gh  # (B, 4H) pre-activations, activated in place
        act[:, :2 * H].sigmoid_()
        _tanh_(act[:, 2 * H:3 * H])
        act[:, 3 * H:].sigmoid_()
        i, f, g, o = act.split(H, 1)
        c_new = torch.addcmul(f * _f32(native(c)), i, g)
        out.copy_(o * _tanh_(c_new * 1))
        s[:, :4 * H].copy_(act)
        s[:, 4 * H:].copy_(c_new)
    elif mode == "GRU":
        rz = torch.sigmoid(gi[:, :2 * H] + gh[:, :2 * H])
        r, z = rz.split(H, 1)
        n = _tanh_(torch.addcmul(gi[:, 2 * H:], r, gh[:, 2 * H:]))
        out.copy_(torch.addcmul(n, z, _f32(native(h)) - n))  # (1 - z) n + z h
        s[:, :2 * H].copy_(rz)
        s[:, 2 * H:3 * H].copy_(n)
        s[:, 3 * H:].copy_(gh[:, 2 * H:])
    else:
        pre = gi + gh
        out.copy_(_tanh_(pre) if mode == "RNN_TANH" else pre.relu_())


def _grad_sum(parts: tuple[NDArray | None, ...], like: NDArray) -> torch.Tensor:
    """The float sum of the given gradients (zeros where none is given)."""
    total = None
    for p in parts:
        if p is not None:
            total = _f32(native(p)).clone() if total is None else total.add_(native(p))
    return total if total is not None else torch.zeros(like.shape, dtype=_f32(native(like)).dtype)


def rnn_cell_backward_(mode: str, grad_out: NDArray | None, grad_h: NDArray | None, grad_state: NDArray | None,
                       h: NDArray, c: NDArray | None, saved: NDArray, grad_gi: NDArray, grad_gh: NDArray | None,
                       grad_state_prev: NDArray | None) -> None:
    H = h.shape[-1]
    s, d_gi = _f32(native(saved)), native(grad_gi)
    if mode == "LSTM":
        dh = _grad_sum((grad_out, grad_h), h)
        i, f, g, o, c_new = s.split(H, 1)
        tc = _tanh_(c_new * 1)
        dc = dh * o * (1 - tc * tc)
        if grad_state is not None:
            dc += native(grad_state)
        d_gi[:, :H].copy_(dc * g * i * (1 - i))
        d_gi[:, H:2 * H].copy_(dc * _f32(native(c)) * f * (1 - f))
        d_gi[:, 2 * H:3 * H].copy_(dc * i * (1 - g * g))
        d_gi[:, 3 * H:].copy_(dh * tc * o * (1 - o))
        native(grad_state_prev).copy_(dc * f)
    elif mode == "GRU":
        dh = _grad_sum((grad_out, grad_h, grad_state), h)
        r, z, n, gh_n = s.split(H, 1)
        dn = dh * (1 - z) * (1 - n * n)
        dr = dn * gh_n * r * (1 - r)
        dz = dh * (_f32(native(h)) - n) * z * (1 - z)
        d_gh = native(grad_gh)
        for d in (d_gi, d_gh):
            d[:, :H].copy_(dr)
            d[:, H:2 * H].copy_(dz)
        d_gi[:, 2 * H:].copy_(dn)
        d_gh[:, 2 * H:].copy_(dn * r)
        native(grad_state_prev).copy_(dh * z)
    else:
        dh = _grad_sum((grad_out, grad_h), h)
        d_gi.copy_(dh * (1 - s * s) if mode == "RNN_TANH" else dh * (s > 0))


def softmax_backward(grad: NDArray, out: NDArray, dim: int, log: bool) -> NDArray:
    g, y = native(grad), native(out)
    if log:
        return wrap(torch._log_softmax_backward_data(g, y, dim, y.dtype))
    return wrap(torch._softmax_backward_data(g, y, dim, y.dtype))


def _norm_stats(x: torch.Tensor, eps: float, rms: bool) -> tuple[torch.Tensor, torch.Tensor]:
    mean = torch.zeros(x.shape[:-1]) if rms else x.mean(-1)
    centered = x if rms else x - mean.unsqueeze(-1)
    return mean, torch.rsqrt((centered * centered).mean(-1) + eps)


def layer_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, eps: float, rms: bool) -> tuple:
    xf = native(x).float()
    mean, rstd = _norm_stats(xf, eps, rms)
    out = (xf - mean.unsqueeze(-1)) * rstd.unsqueeze(-1)
    if weight is not None:
        out = out * native(weight).float()
    if bias is not None:
        out = out + native(bias).float()
    return wrap(out.to(native(x).dtype)), wrap(mean), wrap(rstd)


def layer_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, mean: NDArray, rstd: NDArray, rms: bool,
                        output_mask: tuple, bias_dtype: dtypes.dtype | None = None) -> tuple:
    g, xt = native(grad).float(), native(x)
    r = native(rstd).unsqueeze(-1)
    xhat = (xt.float() - native(mean).unsqueeze(-1)) * r
    wg = g * native(weight).float() if weight is not None else g
    dx = wg - xhat * (xhat * wg).mean(-1, keepdim=True)
    if not rms:
        dx = dx - wg.mean(-1, keepdim=True)
    lead = tuple(range(xt.ndim - 1))
    grad_w = wrap((g * xhat).sum(lead).to(native(weight).dtype)) if output_mask[1] and weight is not None else None
    grad_b = wrap(g.sum(lead).to(TORCH_DTYPE[bias_dtype or dtypes.float32])) if output_mask[2] and not rms else None
    return (wrap((dx * r).to(xt.dtype)) if output_mask[0] else None), grad_w, grad_b


def cross_entropy(x: NDArray, target: NDArray, ignore_index: int, label_smoothing: float) -> tuple:
    xf, t = native(x).float(), native(target)
    lse = torch.logsumexp(xf, 1)
    valid = t != ignore_index
    picked = xf.gather(1, torch.where(valid, t, 0).unsqueeze(1)).squeeze(1)
    loss = lse - picked
    if label_smoothing > 0:
        loss = (1 - label_smoothing) * loss + label_smoothing * (lse - xf.mean(1))
    return wrap(torch.where(valid, loss, 0.0)), wrap(lse)


def cross_entropy_backward(grad: NDArray, x: NDArray, target: NDArray, lse: NDArray, ignore_index: int,
                           label_smoothing: float) -> NDArray:
    xf, t = native(x).float(), native(target)
    valid = t != ignore_index
    d = torch.exp(xf - native(lse).unsqueeze(1)) - label_smoothing / xf.shape[1]
    d.scatter_add_(1, torch.where(valid, t, 0).unsqueeze(1), torch.full((xf.shape[0], 1), label_smoothing - 1.0))
    scale = torch.where(valid, native(grad).float(), 0.0)
    return wrap((d * scale.unsqueeze(1)).to(native(x).dtype))


def swiglu(gate: NDArray, up: NDArray) -> NDArray:
    g = native(gate).float()
    return wrap((torch.nn.functional.silu(g) * native(up).float()).to(native(gate).dtype))


def swiglu_backward(grad: NDArray, gate: NDArray, up: NDArray) -> tuple[NDArray, NDArray]:
    d, g, u = native(grad).float(), native(gate).float(), native(up).float()
    sg = torch.sigmoid(g)
    dgate = d * u * sg * (1 + g * (1 - sg))
    return wrap(dgate.to(native(gate).dtype)), wrap((d * g * sg).to(native(up).dtype))


def rope(x: NDArray, cos: NDArray, sin: NDArray, inverse: bool) -> NDArray:
    xt = native(x)
    xf = xt.float()
    # Tables are rounded to x's dtype first, as the composite ``x * cos.to(x.dtype)`` does.
    c, s = native(cos).to(xt.dtype).float(), native(sin).to(xt.dtype).float()
    half = xt.shape[-1] // 2

    def rotate_half(v: torch.Tensor) -> torch.Tensor:
        return torch.cat([-v[..., half:], v[..., :half]], -1)

    out = xf * c - rotate_half(xf * s) if inverse else xf * c + rotate_half(xf) * s
    return wrap(out.to(xt.dtype))


def _attention_fp32(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: NDArray | None, is_causal: bool,
                    scale: float) -> torch.Tensor:
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        scores = scores + native(mask).float()
    if is_causal:
        L, S = scores.shape[-2:]
        scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, -1) @ v


def attention(q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, is_causal: bool, scale: float) -> tuple:
    qt = native(q)
    out = _attention_fp32(qt.float(), native(k).float(), native(v).float(), mask, is_causal, scale)
    # The CPU backward recomputes the forward with torch autograd: no row statistics are needed.
    return wrap(out.to(qt.dtype)), wrap(torch.empty(0))


def attention_backward(grad: NDArray, q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, out: NDArray,
                       lse: NDArray, is_causal: bool, scale: float) -> tuple:
    inputs = [native(t).detach().float().requires_grad_() for t in (q, k, v)]
    with torch.enable_grad():
        result = _attention_fp32(*inputs, mask, is_causal, scale)
        grads = torch.autograd.grad(result, inputs, native(grad).float())
    return tuple(wrap(g.to(native(t).dtype)) for g, t in zip(grads, (q, k, v)))


def kv_cache_write_(cache: NDArray, new: NDArray, position: NDArray) -> None:
    c = native(cache)
    start = int(native(position).reshape(-1)[0])
    c[:, :, start:start + new.shape[2]] = native(new).to(c.dtype)


def rope_kv_cache_write_(q: NDArray, k: NDArray, v: NDArray, cos: NDArray, sin: NDArray, k_cache: NDArray,
                         v_cache: NDArray, position: NDArray) -> NDArray:
    tables = [wrap(native(t).reshape(t.shape[0], 1, 1, t.shape[-1])) for t in (cos, sin)]
    q_out = rope(wrap(native(q).transpose(1, 2)), *tables, False)
    kv_cache_write_(k_cache, rope(wrap(native(k).transpose(1, 2)), *tables, False), position)
    kv_cache_write_(v_cache, wrap(native(v).transpose(1, 2)), position)
    return wrap(native(q_out).contiguous())


def decode_attention(q: NDArray, k: NDArray, v: NDArray, length: NDArray, key_mask: NDArray | None,
                     scale: float) -> NDArray:
    n = int(native(length).reshape(-1)[0])
    qt = native(q)
    mask = None
    if key_mask is not None:
        keep = native(key_mask)[:, :n].bool()  # (B, n)
        mask = wrap(torch.zeros(keep.shape, dtype=torch.float32).masked_fill(~keep, float("-inf"))[:, None, None])
    kt, vt = native(k)[:, :, :n].float(), native(v)[:, :, :n].float()
    return wrap(_attention_fp32(qt.float(), kt, vt, mask, False, scale).to(qt.dtype))


# The lists of the Adam steps, as their errors name them.
_ADAM_NAMES = ("params", "grads", "exp_avgs", "exp_avg_sqs", "masters")


def adam_step_(param: NDArray, grad: NDArray, exp_avg: NDArray, exp_avg_sq: NDArray, lr: float, beta1: float,
               beta2: float, eps: float, weight_decay: float, decoupled: bool, step: int) -> None:
    check_tensor_lists("adam_step_", _ADAM_NAMES[:4], [param], [grad], [exp_avg], [exp_avg_sq])
    p, g, m, v = native(param), native(grad), native(exp_avg), native(exp_avg_sq)
    if p.dtype == g.dtype == m.dtype == v.dtype:
        # torch's fused CPU kernel: one pass over parameter, gradient and both moments.
        fused = torch._fused_adamw_ if decoupled else torch._fused_adam_
        fused([p], [g], [m], [v], [], [torch.tensor(float(step))], lr=lr, beta1=beta1, beta2=beta2,
              weight_decay=weight_decay, eps=eps, amsgrad=False, maximize=False)
        return
    # Low-precision parameters with float32 moments: update in float32, round the parameter once.
    pf, gf = p.float(), g.float()
    if decoupled:
        pf = pf * (1 - lr * weight_decay)
    else:
        gf = gf + weight_decay * pf
    mf = m.float().lerp(gf, 1 - beta1)
    vf = v.float() * beta2 + (1 - beta2) * gf * gf
    denom = vf.sqrt() / (1 - beta2 ** step) ** 0.5 + eps
    p.copy_(pf - lr / (1 - beta1 ** step) * mf / denom)
    m.copy_(mf)
    v.copy_(vf)


def adam_multi_step_(params: list[NDArray], grads: list[NDArray], exp_avgs: list[NDArray],
                     exp_avg_sqs: list[NDArray], masters: list[NDArray] | None, lr: float, beta1: float, beta2: float,
                     eps: float, weight_decay: float, decoupled: bool, step: int, maximize: bool) -> None:
    check_tensor_lists("adam_multi_step_", _ADAM_NAMES, params, grads, exp_avgs, exp_avg_sqs, masters)
    for i, (p, g, m, v) in enumerate(zip(params, grads, exp_avgs, exp_avg_sqs)):
        target = masters[i] if masters is not None else p
        grad = wrap(-native(g)) if maximize else g
        adam_step_(target, grad, m, v, lr, beta1, beta2, eps, weight_decay, decoupled, step)
        if masters is not None:
            native(p).copy_(native(target))


def sgd_multi_step_(params: list[NDArray], grads: list[NDArray], bufs: list[NDArray] | None, lr: float,
                    momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool,
                    first: bool) -> None:
    check_tensor_lists("sgd_multi_step_", ("params", "grads", "bufs"), params, grads, bufs)
    for i, (param, grad) in enumerate(zip(params, grads)):
        p = native(param)
        acc = torch.float64 if p.dtype == torch.float64 else torch.float32  # half precision rounds once
        g = native(grad).to(acc) * (-1.0 if maximize else 1.0) + weight_decay * p.to(acc)
        if bufs is not None:
            b = native(bufs[i])
            nb = g if first else momentum * b.to(acc) + (1 - dampening) * g
            b.copy_(nb)
            g = g + momentum * nb if nesterov else nb
        p.copy_(p.to(acc) - lr * g)


def unscale_grads_(grads: list[NDArray], inv_scale: float) -> NDArray:
    found = False
    for grad in grads:
        g = native(grad)
        found = found or not bool(torch.isfinite(g).all())
        g.mul_(inv_scale)
    return wrap(torch.tensor([1.0 if found else 0.0]))


# ---------------------------------------------------------------- multi-tensor

def multi_norm(xs: list[NDArray], norm_type: float) -> NDArray:
    if not xs:
        raise ValueError("multi_norm: expected at least one array")
    for x in xs:
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"multi_norm: expected floating-point arrays, got {x.dtype}")
    acc = torch.float64 if any(x.dtype is dtypes.float64 for x in xs) else torch.float32
    return wrap(torch.stack(torch._foreach_norm([native(x) for x in xs], float(norm_type), dtype=acc)))


def multi_scale_(xs: list[NDArray], scale: NDArray) -> None:
    if xs:
        torch._foreach_mul_([native(x) for x in xs], native(scale))


def multi_fill_(xs: list[NDArray], value: int | float | bool) -> None:
    for x in xs:
        native(x).fill_(value)


def multi_clamp_(xs: list[NDArray], min: float | None, max: float | None) -> None:
    ts = [native(x) for x in xs]
    if ts and min is not None:
        torch._foreach_clamp_min_(ts, min)
    if ts and max is not None:
        torch._foreach_clamp_max_(ts, max)


# ---------------------------------------------------------------- random

def _generator(seed: int, offset: int) -> torch.Generator:
    # Counter-based semantics on top of torch's Mersenne twister: each (seed, offset) pair names its own stream.
    g = torch.Generator()
    g.manual_seed((seed * 0x9E3779B97F4A7C15 + offset) % (1 << 63))
    return g


def uniform(shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int, offset: int) -> NDArray:
    return wrap(torch.rand(shape, generator=_generator(seed, offset), dtype=TORCH_DTYPE[dtype]))


def dropout(x: NDArray, p: float, seed: int, offset: int) -> NDArray:
    xt = native(x)
    keep = torch.rand(xt.shape, generator=_generator(seed, offset), dtype=torch.float32) >= p  # as on cuda
    return wrap(xt * (keep.to(xt.dtype) * (1.0 / (1.0 - p))))


def normal(shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int, offset: int) -> NDArray:
    return wrap(torch.randn(shape, generator=_generator(seed, offset), dtype=TORCH_DTYPE[dtype]))


def randint(low: int, high: int, shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int,
            offset: int) -> NDArray:
    return wrap(torch.randint(low, high, shape, generator=_generator(seed, offset), dtype=TORCH_DTYPE[dtype]))


def synchronize(device: object = None) -> None:
    """Nothing to wait for: CPU work is synchronous."""


def set_num_threads(n: int) -> None:
    """Intra-op threads of torch's CPU kernels (``genesis.set_num_threads`` checks ``n``)."""
    torch.set_num_threads(n)


def get_num_threads() -> int:
    """Intra-op threads of torch's CPU kernels."""
    return torch.get_num_threads()
