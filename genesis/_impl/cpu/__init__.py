"""CPU backend: the backend contract (see ``genesis._impl.contract``) on PyTorch CPU tensors.

An NDArray's buffer here is a torch tensor that owns (or shares) the storage; the torch view matching the NDArray's
shape, strides and offset is built once with ``as_strided`` and cached on the NDArray.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import torch

from genesis import dtypes
from genesis._impl import cuda_probe
from genesis._impl.cpu.nn import (  # noqa: F401 - the backend's neural-network primitives
    adaptive_pool,
    adaptive_pool_backward,
    attention,
    attention_backward,
    batch_norm,
    batch_norm_backward,
    conv,
    conv_backward,
    cross_entropy,
    cross_entropy_backward,
    decode_attention,
    embedding_backward,
    grid_sample_2d,
    grid_sample_2d_backward,
    group_norm,
    group_norm_backward,
    kv_cache_write_,
    layer_norm,
    layer_norm_backward,
    nll_loss,
    nll_loss_backward,
    pad,
    pad_backward,
    pool,
    pool_backward,
    rnn_cell_,
    rnn_cell_backward_,
    rope,
    rope_kv_cache_write_,
    softmax_backward,
    swiglu,
    swiglu_backward,
    upsample,
    upsample_backward,
)
from genesis._impl.cpu.tensors import GENESIS_DTYPE, TORCH_DTYPE, _arg, check_index, native, wrap  # noqa: F401
from genesis._impl.recurrent_loop import rnn_layer, rnn_layer_backward  # noqa: F401 - the time loop
from genesis.device import device as Device
from genesis.ndarray import NDArray, check_tensor_lists

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
    """Wrap a numpy array without copying (``genesis.from_numpy``); ml_dtypes.bfloat16 arrays (what ``to_numpy``
    hands out for bfloat16) are read through their bits."""
    if array.dtype == dtypes.to_numpy(dtypes.bfloat16):
        return wrap(torch.from_numpy(array.view(np.int16)).view(torch.bfloat16))
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
    t = native(x)
    if t.is_complex() and not dtype.is_complex:  # the real part, as torch's cast, without its warning
        t = t.real
    return wrap(t.to(TORCH_DTYPE[dtype], copy=True))


def contiguous(x: NDArray) -> NDArray:
    return wrap(native(x).clone(memory_format=torch.contiguous_format))


def cat(arrays: list[NDArray], dim: int) -> NDArray:
    return wrap(torch.cat([native(a) for a in arrays], dim))


def stack(arrays: list[NDArray], dim: int) -> NDArray:
    return wrap(torch.stack([native(a) for a in arrays], dim))


def data_ptr(x: NDArray) -> int:
    return native(x).data_ptr()


def storage_nbytes(x: NDArray) -> int:
    return x.buffer.untyped_storage().nbytes()


def record_stream(x: NDArray, stream: object) -> None:
    raise NotImplementedError("Could not run 'aten::record_stream' with arguments from the 'CPU' backend: "
                              "record_stream is only implemented for CUDA tensors")


def reinterpret_buffer(x: NDArray, dtype: dtypes.dtype) -> torch.Tensor:
    """An empty tensor of ``dtype`` over x's storage: ``native`` builds views of any part of the storage from it."""
    target = TORCH_DTYPE[dtype]
    if x.buffer.dtype is target:
        return x.buffer
    return torch.empty(0, dtype=target).set_(x.buffer.untyped_storage(), 0, (0,), (1,))


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
    "logaddexp": torch.logaddexp, "logaddexp2": torch.logaddexp2,
    "gelu_backward": _activation_backward(lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="none")),
    "gelu_tanh_backward": _activation_backward(lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="tanh")),
    "silu_backward": _activation_backward(torch.ops.aten.silu_backward),
    "relu_backward": _activation_backward(lambda g, out: torch.ops.aten.threshold_backward(g, out, 0)),
}
_SCALAR_SECOND_UNSUPPORTED = frozenset(("maximum", "minimum", "atan2", "hypot"))


def leaky_relu(x: NDArray, negative_slope: float) -> NDArray:
    return wrap(torch.ops.aten.leaky_relu(native(x), negative_slope))


def leaky_relu_backward(grad: NDArray, x: NDArray, negative_slope: float) -> NDArray:
    return wrap(torch.ops.aten.leaky_relu_backward(native(grad), native(x), negative_slope, False))


_aten = torch.ops.aten
# op -> (forward, backward) over torch tensors, with the parameters of contract.ACTIVATION_OPS in their order.
_ACTIVATIONS: dict[str, tuple[Callable, Callable]] = {
    "elu": (_aten.elu, lambda g, x, a, s, i: _aten.elu_backward(g, a, s, i, False, x)),
    "hardswish": (_aten.hardswish, _aten.hardswish_backward),
    "hardsigmoid": (_aten.hardsigmoid, _aten.hardsigmoid_backward),
    "hardtanh": (_aten.hardtanh, _aten.hardtanh_backward),
    "softplus": (_aten.softplus, _aten.softplus_backward),
    "softshrink": (_aten.softshrink, _aten.softshrink_backward),
    "hardshrink": (_aten.hardshrink, _aten.hardshrink_backward),
    "threshold": (_aten.threshold, lambda g, x, threshold, value: _aten.threshold_backward(g, x, threshold)),
    "mish": (_aten.mish, _aten.mish_backward),
    # The backward reads the buffer exp(-|x|) that the forward also returns: made again from x.
    "log_sigmoid": (lambda x: _aten.log_sigmoid_forward(x)[0],
                    lambda g, x: _aten.log_sigmoid_backward(g, x, _aten.log_sigmoid_forward(x)[1])),
    "logit": (lambda x, eps: _aten.logit(x, None if eps < 0 else eps),
              lambda g, x, eps: _aten.logit_backward(g, x, None if eps < 0 else eps)),
}


def activation(op: str, x: NDArray, params: tuple) -> NDArray:
    return wrap(_ACTIVATIONS[op][0](native(x), *params))


def activation_backward(op: str, grad: NDArray, x: NDArray, params: tuple) -> NDArray:
    return wrap(_ACTIVATIONS[op][1](native(grad), native(x), *params))


def qr(A: NDArray, complete: bool) -> tuple[NDArray, NDArray]:
    Q, R = torch.linalg.qr(native(A), mode="complete" if complete else "reduced")
    return wrap(Q), wrap(R)


def glu(x: NDArray, dim: int) -> NDArray:
    return wrap(_aten.glu(native(x), dim))


def glu_backward(grad: NDArray, x: NDArray, dim: int) -> NDArray:
    return wrap(_aten.glu_backward(native(grad), native(x), dim))


def binary_cross_entropy(p: NDArray, t: NDArray) -> NDArray:
    return wrap(_aten.binary_cross_entropy(native(p), native(t), None, 0))


def binary_cross_entropy_backward(grad: NDArray, p: NDArray, t: NDArray) -> NDArray:
    return wrap(_aten.binary_cross_entropy_backward(native(grad), native(p), native(t), None, 0))


def add_scaled(a: NDArray, b: NDArray, alpha: float, out: NDArray | None = None) -> NDArray:
    if out is None:
        return wrap(torch.add(native(a), native(b), alpha=alpha))
    torch.add(native(a), native(b), alpha=alpha, out=native(out))
    return out


def clamp(x: NDArray, lo: float | None, hi: float | None) -> NDArray:
    return wrap(torch.clamp(native(x), lo, hi))


def clamp_backward(grad: NDArray, x: NDArray, lo: float | None, hi: float | None) -> NDArray:
    t = native(x)
    inside = t >= lo if lo is not None else None
    if hi is not None:
        inside = t <= hi if inside is None else inside & (t <= hi)
    return wrap(torch.where(inside, native(grad), 0))


def lerp(start: NDArray, end: NDArray, weight: NDArray | float) -> NDArray:
    return wrap(torch.lerp(native(start), native(end), _arg(weight)))


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


_COMPLEX = {
    "view_as_real": torch.view_as_real, "view_as_complex": torch.view_as_complex, "real": torch.real,
    "imag": torch.imag, "conj": torch.conj_physical, "abs": torch.abs, "angle": torch.angle,
}


def complex_op(op: str, x: NDArray) -> NDArray:
    return wrap(_COMPLEX[op](native(x)))


def where(cond: NDArray, a: NDArray | float, b: NDArray | float) -> NDArray:
    return wrap(torch.where(native(cond), _arg(a), _arg(b)))


def masked_fill_(x: NDArray, mask: NDArray, value: float | int | bool) -> NDArray:
    native(x).masked_fill_(native(mask), value)
    return x


# ---------------------------------------------------------------- reductions

def variance(x: NDArray, dims: tuple[int, ...], correction: float, keepdim: bool, root: bool) -> NDArray:
    return wrap((torch.std if root else torch.var)(native(x), dim=dims, correction=correction, keepdim=keepdim))


def ctc_loss(log_probs: NDArray, targets: NDArray, input_lengths: tuple[int, ...], target_lengths: tuple[int, ...],
             blank: int) -> tuple[NDArray, NDArray]:
    t = native(targets)
    used = t[torch.arange(t.shape[1]) < torch.tensor(target_lengths).unsqueeze(1)] if t.ndim == 2 else t
    if used.numel():
        low, high = (int(v) for v in torch.aminmax(used))
        if low < 0 or high >= log_probs.shape[2]:  # torch's kernel would read past the row
            raise RuntimeError(f"ctc_loss: target {low if low < 0 else high} is out of range for "
                               f"{log_probs.shape[2]} classes")
    nll, log_alpha = torch._ctc_loss(native(log_probs), t, list(input_lengths), list(target_lengths), blank, False)
    return wrap(nll), wrap(log_alpha)


def ctc_loss_backward(grad: NDArray, log_probs: NDArray, targets: NDArray, input_lengths: tuple[int, ...],
                      target_lengths: tuple[int, ...], nll: NDArray, log_alpha: NDArray, blank: int,
                      zero_infinity: bool) -> NDArray:
    return wrap(torch.ops.aten._ctc_loss_backward(native(grad), native(log_probs), native(targets), list(input_lengths),
                                         list(target_lengths), native(nll), native(log_alpha), blank, zero_infinity))


def logsumexp(x: NDArray, dims: tuple[int, ...]) -> NDArray:
    return wrap(torch.logsumexp(native(x), dims, keepdim=True))


def triangle(x: NDArray, k: int, upper: bool) -> NDArray:
    return wrap((torch.triu if upper else torch.tril)(native(x), k))


def nan_to_num(x: NDArray, nan: float | NDArray, posinf: float | NDArray, neginf: float | NDArray) -> NDArray:
    if nan.__class__ is NDArray or posinf.__class__ is NDArray or neginf.__class__ is NDArray:
        # A replacement that rounds to an infinity in x's dtype: torch's nan_to_num takes only finite numbers.
        t = native(x)
        out = torch.where(t == float("inf"), _arg(posinf), t)
        out = torch.where(t == float("-inf"), _arg(neginf), out)
        return wrap(torch.where(torch.isnan(t), _arg(nan), out))
    return wrap(torch.nan_to_num(native(x), nan, posinf, neginf))


def reduce(op: str, x: NDArray, dims: tuple[int, ...], keepdim: bool) -> NDArray:
    t = native(x)
    if op == "sum":
        # The NDArray layer already chose the accumulation dtype; torch would widen integers to int64 again.
        return wrap(torch.sum(t, dim=dims, keepdim=keepdim, dtype=t.dtype))
    if op == "mean":
        return wrap(torch.mean(t, dim=dims, keepdim=keepdim))
    if op == "sumsq":  # half types squared and summed in float32 (the result's dtype)
        t = t.float() if t.dtype in (torch.float16, torch.bfloat16) else t
        return wrap(torch.sum(t * t, dim=dims, keepdim=keepdim))
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


def extremum_with_index(op: str, x: NDArray, dim: int, keepdim: bool) -> tuple[NDArray, NDArray]:
    values, indices = (torch.max if op == "max" else torch.min)(native(x), dim=dim, keepdim=keepdim)
    return wrap(values), wrap(indices)


def cumulative(op: str, x: NDArray, dim: int) -> NDArray:
    fn = torch.cumsum if op == "cumsum" else torch.cumprod
    t = native(x)
    return wrap(fn(t, dim=dim, dtype=t.dtype))  # the NDArray layer chose the dtype; torch would widen integers


def softmax(x: NDArray, dim: int, log: bool, safe: bool) -> NDArray:
    if safe and not log:
        return wrap(torch._safe_softmax(native(x), dim))
    fn = torch.log_softmax if log else torch.softmax
    return wrap(fn(native(x), dim=dim))


# ---------------------------------------------------------------- linear algebra

def matmul(a: NDArray, b: NDArray) -> NDArray:
    return wrap(torch.matmul(native(a), native(b)))


def linear(x: NDArray, w: NDArray, bias: NDArray | None) -> NDArray:
    return wrap(torch.nn.functional.linear(native(x), native(w), None if bias is None else native(bias)))


def eig(A: NDArray) -> tuple[NDArray, NDArray]:
    values, vectors = torch.linalg.eig(native(A))
    return wrap(values), wrap(vectors)


def cholesky(A: NDArray) -> tuple[NDArray, NDArray]:
    L, info = torch.linalg.cholesky_ex(native(A))
    return wrap(L), wrap(info)


def triangular_solve(A: NDArray, B: NDArray, upper: bool, unitriangular: bool) -> NDArray:
    return wrap(torch.linalg.solve_triangular(native(A), native(B), upper=upper, unitriangular=unitriangular))


def eigh(A: NDArray) -> tuple[NDArray, NDArray]:
    values, vectors = torch.linalg.eigh(native(A))
    return wrap(values), wrap(vectors)


def svd(A: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    U, S, Vh = torch.linalg.svd(native(A), full_matrices=False)
    return wrap(U), wrap(S), wrap(Vh)


def lu_factor(A: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    LU, pivots, info = torch.linalg.lu_factor_ex(native(A))
    return wrap(LU), wrap(pivots), wrap(info)


def pivot_order(pivots: NDArray, m: int) -> NDArray:
    p = native(pivots)
    # lu_unpack's permutation matrix P (A = P L U) has its one of column i in row order[i].
    P = torch.lu_unpack(torch.empty((*p.shape[:-1], m, p.shape[-1])), p, unpack_data=False)[0]
    return wrap(P.argmax(-2))


def ldl_factor(A: NDArray, hermitian: bool) -> tuple[NDArray, NDArray, NDArray]:
    LD, pivots, info = torch.linalg.ldl_factor_ex(native(A), hermitian=hermitian)
    return wrap(LD), wrap(pivots), wrap(info)


def ldl_solve(LD: NDArray, pivots: NDArray, B: NDArray, hermitian: bool) -> NDArray:
    solved = torch.linalg.ldl_solve(native(LD).contiguous(), native(pivots).contiguous(), native(B).contiguous(),
                                    hermitian=hermitian)
    return wrap(solved)


# ---------------------------------------------------------------- indexing

_ALL = slice(None)


def index(x: NDArray, indices: tuple) -> NDArray:
    # torch's Python-level indexing is aten's index with None read as a whole-dim slice, at half the host cost of
    # the operator call; but it selects (a view) through 0-d integer indices, where aten's index always copies.
    if all(i is None or i.shape for i in indices):
        return wrap(native(x)[tuple(_ALL if i is None else native(i) for i in indices)])
    return wrap(torch.ops.aten.index.Tensor(native(x), [None if i is None else native(i) for i in indices]))


def index_put_(x: NDArray, indices: tuple, values: NDArray, accumulate: bool) -> NDArray:
    native(x).index_put_(tuple(native(i) for i in indices), native(values), accumulate=accumulate)
    return x


def gather(x: NDArray, dim: int, index: NDArray) -> NDArray:
    return wrap(torch.gather(native(x), dim, native(index)))


def scatter(x: NDArray, dim: int, index: NDArray, src: NDArray | float, mode: str) -> NDArray:
    return scatter_(wrap(native(x).clone()), dim, index, src, mode)


def scatter_(out: NDArray, dim: int, index: NDArray, src: NDArray | float, mode: str) -> NDArray:
    t = native(out)
    if mode == "add":
        t.scatter_add_(dim, native(index), native(src))
    elif isinstance(src, NDArray):
        t.scatter_(dim, native(index), native(src))
    else:
        t.scatter_(dim, native(index), src)
    return out


def index_add_(x: NDArray, dim: int, index: NDArray, src: NDArray) -> NDArray:
    native(x).index_add_(dim, native(index), native(src))
    return x


def scatter_reduce(x: NDArray, dim: int, index: NDArray, src: NDArray, reduce: str, include_self: bool) -> NDArray:
    return wrap(torch.scatter_reduce(native(x), dim, native(index), native(src), reduce, include_self=include_self))


def index_select(x: NDArray, dim: int, index: NDArray) -> NDArray:
    return wrap(torch.index_select(native(x), dim, native(index)))


def nonzero(x: NDArray) -> NDArray:
    return wrap(torch.nonzero(native(x)))


def sort(x: NDArray, dim: int, descending: bool, stable: bool) -> tuple[NDArray, NDArray]:
    values, indices = torch.sort(native(x), dim=dim, descending=descending, stable=stable)
    return wrap(values), wrap(indices)


def topk(x: NDArray, k: int, dim: int, largest: bool) -> tuple[NDArray, NDArray]:
    values, indices = torch.topk(native(x), k, dim, largest, True)
    return wrap(values), wrap(indices)


def unique(x: NDArray, return_inverse: bool, return_counts: bool) -> tuple[NDArray, NDArray | None, NDArray | None]:
    values, inverse, counts = torch.unique(native(x), sorted=True, return_inverse=True, return_counts=True)
    return wrap(values), wrap(inverse) if return_inverse else None, wrap(counts) if return_counts else None


def searchsorted(seq: NDArray, values: NDArray, right: bool) -> NDArray:
    return wrap(torch.searchsorted(native(seq), native(values), right=right))


_STEP: list[tuple] = [(None, None)]  # (step, its float tensor): every parameter of one optimizer step shares it


def _step_tensor(step: int) -> torch.Tensor:
    """The step count as the fused kernel reads it (it only reads it), made once per step value."""
    cached = _STEP[0]  # one tuple read: consistent even when another thread replaces it
    if cached[0] != step:
        cached = _STEP[0] = (step, torch.tensor(float(step)))
    return cached[1]


# The lists of the Adam steps, as their errors name them.
_ADAM_NAMES = ("params", "grads", "exp_avgs", "exp_avg_sqs", "masters")


def adam_step_(param: NDArray, grad: NDArray, exp_avg: NDArray, exp_avg_sq: NDArray, lr: float, beta1: float,
               beta2: float, eps: float, weight_decay: float, decoupled: bool, step: int) -> None:
    if not (param.shape == grad.shape == exp_avg.shape == exp_avg_sq.shape
            and param.device is grad.device is exp_avg.device is exp_avg_sq.device):
        check_tensor_lists("adam_step_", _ADAM_NAMES[:4], [param], [grad], [exp_avg], [exp_avg_sq])  # raises
    p, g, m, v = native(param), native(grad), native(exp_avg), native(exp_avg_sq)
    if p.dtype == g.dtype == m.dtype == v.dtype:
        # torch's fused CPU kernel: one pass over parameter, gradient and both moments.
        fused = torch._fused_adamw_ if decoupled else torch._fused_adam_
        fused([p], [g], [m], [v], [], [_step_tensor(step)], lr=lr, beta1=beta1, beta2=beta2,
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
    dtype = params[0].dtype
    if masters is None and all(x.dtype is dtype for lst in (params, grads, exp_avgs, exp_avg_sqs) for x in lst):
        # One call of torch's fused kernel over the whole lists (the same arithmetic as one call per parameter).
        fused = torch._fused_adamw_ if decoupled else torch._fused_adam_
        lists = [[native(x) for x in lst] for lst in (params, grads, exp_avgs, exp_avg_sqs)]
        fused(*lists, [], [_step_tensor(step)] * len(params), lr=lr, beta1=beta1, beta2=beta2,
              weight_decay=weight_decay, eps=eps, amsgrad=False, maximize=maximize)
        return
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
        p, g = native(param), native(grad)
        b = native(bufs[i]) if bufs is not None else None
        if p.dtype in (torch.float32, torch.float64) and g.dtype == p.dtype and (b is None or b.dtype == p.dtype):
            # torch.optim.SGD's own arithmetic on the CPU (its single-tensor loop), in place: the same roundings.
            d = -g if maximize else g
            if weight_decay != 0:
                d = d.add(p, alpha=weight_decay)
            if b is not None:
                if first:
                    b.copy_(d)
                else:
                    b.mul_(momentum).add_(d, alpha=1 - dampening)
                d = d.add(b, alpha=momentum) if nesterov else b
            p.add_(d, alpha=-lr)
            continue
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


def multi_copy_(dsts: list[NDArray], srcs: list[NDArray]) -> None:
    if dsts:
        torch._foreach_copy_([native(d) for d in dsts], [native(s) for s in srcs])


def multi_clamp_(xs: list[NDArray], min: float | None, max: float | None) -> None:
    ts = [native(x) for x in xs]
    if ts and min is not None:
        torch._foreach_clamp_min_(ts, min)
    if ts and max is not None:
        torch._foreach_clamp_max_(ts, max)


# ---------------------------------------------------------------- random

_GENERATORS = threading.local()  # one torch generator per thread, re-seeded at each draw


def _generator(seed: int, offset: int) -> torch.Generator:
    # Counter-based semantics on top of torch's Mersenne twister: each (seed, offset) pair names its own stream.
    g = getattr(_GENERATORS, "g", None)
    if g is None:
        g = _GENERATORS.g = torch.Generator()
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


def set_num_interop_threads(n: int) -> None:
    """Inter-op threads of torch's CPU runtime (RuntimeError, torch's, once parallel work has started)."""
    torch.set_num_interop_threads(n)


def get_num_interop_threads() -> int:
    """Inter-op threads of torch's CPU runtime."""
    return torch.get_num_interop_threads()


def set_flush_denormal(mode: bool) -> bool:
    """Flush denormal floats to zero in torch's CPU kernels; whether the processor supports it (SSE3 on x86)."""
    return torch.set_flush_denormal(mode)
