"""In-place ops: the mechanism every ``Tensor.op_`` method shares, and the in-place methods themselves.

An in-place method writes into the tensor's memory directly through the backend's ``out=`` when no graph is
recorded; otherwise it records the out-of-place op and the tensor takes over that node's history
(:func:`assign_inplace`), with the view machinery of :mod:`genesis.autograd.function` keeping bases and views right.
The registry (:mod:`genesis.ops.registry`) builds each op's in-place method with one of the factories below.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from genesis import autograd, dtypes
from genesis._impl.contract import COMPARISON_OPS
from genesis.autograd import Overwrite, forward_ad, is_grad_enabled, is_inference_mode_enabled
from genesis.ndarray import broadcast_shapes, check_same_device
from genesis.ops import _args, arithmetic, compare, views
from genesis.tensor import Tensor, tensor

# ------------------------------------------------------------------ the shared mechanism


def check_not_inference(t: Tensor) -> None:
    """Refuse an in-place change of an inference tensor (or a view of one) outside ``inference_mode`` (torch's
    error)."""
    if (t._inference or (t._base is not None and t._base._inference)) and not is_inference_mode_enabled():
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
                           "clone to get a normal tensor before doing inplace update.See "
                           "https://github.com/pytorch/rfcs/pull/17 for more details.")


def check_inplace(t: Tensor, op: str) -> None:
    """Refuse an in-place change of an inference tensor outside ``inference_mode``, or of a leaf that requires grad,
    or of a view of one (torch's errors)."""
    check_not_inference(t)
    if not (t.requires_grad and is_grad_enabled()):
        return
    if t.grad_fn is None:
        raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an in-place operation.")
    base = t._base
    if base is not None and base.requires_grad and base.grad_fn is None:
        raise RuntimeError(
            f"{op}: a view of a leaf Variable that requires grad is being used in an in-place operation."
        )


def check_no_internal_overlap(t: Tensor) -> None:
    """Refuse to write in place into a tensor whose elements share memory (a dimension of size > 1 with stride 0,
    as ``expand`` makes): torch's error, raised here so that every backend refuses before writing anything. Every
    in-place write passes here, so an inference tensor is refused here too."""
    check_not_inference(t)
    nd = t.ndarray
    if 0 in nd.strides and any(stride == 0 and size > 1 for size, stride in zip(nd.shape, nd.strides)):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a single "
                           "memory location. Please clone() the tensor before performing the operation.")


def assign_inplace(t: Tensor, result: Tensor) -> Tensor:
    """Finish an in-place op: write ``result`` into ``t``'s memory and ``t`` takes over its history."""
    check_inplace(t, "in-place operation")
    check_no_internal_overlap(t)
    if result.shape != t.shape:
        raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast shape "
                           f"{list(result.shape)}")
    if result.dtype is not t.dtype:
        if t.dtype.category < result.dtype.category or (t.dtype.is_complex and not result.dtype.is_complex):
            # A real result (abs, angle) would drop the imaginary parts: torch refuses too.
            raise RuntimeError(f"result type {dtypes.SCALAR_TYPE_NAMES[result.dtype]} can't be cast to the desired "
                               f"output type {dtypes.SCALAR_TYPE_NAMES[t.dtype]}")
        result = result.to(t.dtype)
    if t.requires_grad and not result.requires_grad and is_grad_enabled():
        result = Overwrite.apply(t, result)
    if result.grad_fn is not None:
        result.grad_fn._snapshot_saved(t)
    t.ndarray.copy_(result.ndarray)
    return _written(t, result)


def _written(t: Tensor, result: Tensor) -> Tensor:
    """The end of an in-place op whose value is now in ``t``'s memory: ``t`` takes over ``result``'s history (when
    recorded) and its version moves on, and a base it views records the write."""
    recorded = result.requires_grad and is_grad_enabled()
    if recorded:
        # The node's output now lives in this tensor's memory.
        autograd.take_history(t, result)
        result.ndarray = t.ndarray
    t._bump_version()
    if recorded:
        autograd.record_write_through_view(t)  # a base this views records the write too
    forward_ad.written_in_place(t, result)
    return t


def inplace_source(t: Tensor) -> Tensor:
    """This tensor's values as an op input whose graph records an in-place change of this tensor.

    The op may save its input for backward; the in-place write then overwrites this memory, so the op reads a
    differentiable copy instead (torch keeps the original values of ``t`` the same way).
    """
    check_inplace(t, "in-place operation")
    return t.clone()


def write_recorded(t: Tensor, writer: Any, *args: Any) -> Tensor:
    """A recorded in-place op computed straight into ``t``'s memory: ``writer.apply(t, *args, out=t's array)``, whose
    forward must not save ``t``'s old value (its output, or nothing of ``t``). ``t`` takes over the node's history,
    and the values the node saved are versioned as the write left them."""
    check_inplace(t, "in-place operation")
    result = writer.apply(t, *args, out=t.ndarray)
    node = result.grad_fn
    _written(t, result)
    if node is not None:
        node._record_versions((t,))
    return t


def _writes_directly(t: Tensor, op: str, writer: Any, other: Any) -> bool:
    """Whether the recorded ``t op= other`` may compute straight into ``t``'s memory: a result of ``t``'s dtype and
    shape, ``other`` not overlapping ``t`` other than as the very same elements, and (for ``mul``) ``t``'s old value
    not needed by backward (``other`` needs no gradient)."""
    if writer is None or not t.dtype.is_floating_point:
        return False
    if other.__class__ is float or other.__class__ is int:
        return dtypes.result_type_scalar(t.dtype, other) is t.dtype
    if not isinstance(other, Tensor) or not other.dtype.is_floating_point or (op == "mul" and other.requires_grad):
        return False
    a, b = t.ndarray, other.ndarray
    if b.buffer is a.buffer and (b.shape != a.shape or b.strides != a.strides or b.offset != a.offset):
        return False
    return (b.ndim <= a.ndim and all(m == 1 or m == n for m, n in zip(reversed(b.shape), reversed(a.shape)))
            and dtypes.result_type(a.dtype, a.ndim, b.dtype, b.ndim) is a.dtype)


def _check_fits(op: str, t: Tensor, other: Tensor) -> None:
    """torch's error where ``other`` broadcast against ``t`` would need more room than ``t`` has."""
    shape = broadcast_shapes(op, t.shape, other.shape)
    if shape != t.shape:
        raise RuntimeError(f"{op}: output with shape {list(t.shape)} doesn't match the broadcast shape {list(shape)}")


#: The backend's binary primitive behind each alias with an in-place method (``subtract_`` writes as ``sub_``).
_PRIMITIVE_OF = {"subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div"}


def inplace_binary(t: Tensor, op: str, fn: Callable, other: Any, writer: Any = None) -> Tensor:
    """``t op= other``: written straight into memory when no graph is needed, or when ``writer`` (the op's Function,
    for ops whose backward needs no old value of ``t``) can write it while recording; else through ``fn``."""
    check_no_internal_overlap(t)
    kernel = _PRIMITIVE_OF.get(op, op)
    if forward_ad.involves_dual(t, other):
        return assign_inplace(t, fn(t, other))
    if (is_grad_enabled() and (t.requires_grad or (isinstance(other, Tensor) and other.requires_grad))):
        if _writes_directly(t, op, writer, other):
            return write_recorded(t, writer, other)
        return assign_inplace(t, fn(t, other))
    if other.__class__ is Tensor:
        a, b = t.ndarray, other.ndarray
        if b.shape == a.shape and b.dtype is a.dtype and b.device is a.device and a.dtype.category == 2:
            # The common case, a floating tensor of this one's shape, dtype and device: nothing to promote or check.
            a.binary(kernel, b, out=a)
            t._bump_version()
            return t
    if isinstance(other, Tensor):
        if other.ndim:
            check_same_device(op, t.device, other.device)
        target = dtypes.result_type(t.dtype, t.ndim, other.dtype, other.ndim)
        other_nd: Any = other.ndarray
        _check_fits(op, t, other)
    elif isinstance(other, (int, float, bool)):
        target = dtypes.result_type_scalar(t.dtype, other)
        other_nd = other
    else:
        return inplace_binary(t, op, fn, tensor(other, device=t.device))
    if kernel in ("div", "atan2") and target.category < 2:  # integer operands give a float
        target = dtypes.get_default_dtype()
    elif kernel in COMPARISON_OPS:
        target = dtypes.bool_  # compared in the promoted dtype; the bool result fits any tensor, as in torch
    if target.category > t.dtype.category:
        raise RuntimeError(f"{op}_: result type {dtypes.SCALAR_TYPE_NAMES[target]} can't be cast to the desired "
                           f"output type {dtypes.SCALAR_TYPE_NAMES[t.dtype]}")
    if target is t.dtype:
        t.ndarray.binary(kernel, other_nd, out=t.ndarray)
    else:
        t.ndarray.copy_(t.ndarray.binary(kernel, other_nd))
    t._bump_version()
    return t


# ------------------------------------------------------------------ method factories (one per kind of in-place op)

def binary_method(op: str, fn: Callable, writer: Any = None) -> Callable:
    """``t.op_(other, alpha=, rounding_mode=)`` of a binary op: straight into memory when no graph is recorded, and
    when one is, through ``writer`` where it can (``add_``, ``sub_``, ``mul_`` by a number or a constant tensor:
    one kernel, as torch's). ``add_``, ``sub_`` and ``mul_`` take a sparse ``other`` as the strided tensor it
    stands for, as torch's."""
    takes_sparse = _PRIMITIVE_OF.get(op, op) in ("add", "sub", "mul")

    def method(self: Tensor, other: Any, alpha: float | None = None, rounding_mode: str | None = None) -> Tensor:
        if isinstance(alpha, Tensor):  # a 0-dim tensor, or torch's deprecated ``add_(alpha, other)``
            other, alpha = arithmetic.alpha_argument(f"{op}_", other, alpha)
        if op in ("sub", "subtract"):
            arithmetic.check_sub_operands(f"{op}_", self, other)
        elif op in ("bitwise_and", "bitwise_or", "bitwise_xor") and self.dtype.category >= 2:
            raise NotImplementedError(f"{op}_: \"{op}_cpu\" not implemented for "
                                      f"'{dtypes.SCALAR_TYPE_NAMES[self.dtype]}' (integer or bool tensors only)")
        if takes_sparse and other.__class__ is not Tensor:  # a sparse gradient added into a parameter by hand
            other = arithmetic.densified(op, self, other)
        if alpha is not None and alpha.__class__ is not int:
            arithmetic.check_alpha(self.dtype, alpha)
        if alpha is not None and self.dtype is dtypes.bool_:
            alpha = bool(alpha)  # a bool sum is a logical or, as add's
        if alpha is not None and alpha != 1:
            if (rounding_mode is None and arithmetic.fuses_scale(self, other)
                    and dtypes.result_type(self.dtype, self.ndim, other.dtype, other.ndim) is self.dtype
                    and not (is_grad_enabled() and (self.requires_grad or other.requires_grad))
                    and not forward_ad.involves_dual(self, other)):
                scale = -float(alpha) if op in ("sub", "subtract") else float(alpha)
                return _add_scaled_inplace(self, op, other, scale)
            other = arithmetic.scaled_operand(self, other, alpha)
        if rounding_mode is not None:
            recording = is_grad_enabled() and (self.requires_grad or isinstance(other, Tensor) and other.requires_grad)
            source = inplace_source(self) if recording else self
            return assign_inplace(self, arithmetic.div(source, other, rounding_mode=rounding_mode))
        return inplace_binary(self, op, fn, other, writer)

    method.__name__ = f"{op}_"
    method.__doc__ = f"In-place {op}."
    return method


def _add_scaled_inplace(t: Tensor, op: str, other: Tensor, alpha: float) -> Tensor:
    """``t += alpha * other`` straight into memory, rounded once (torch's ``add_`` / ``sub_`` with ``alpha``)."""
    check_no_internal_overlap(t)
    _check_fits(op, t, other)
    nd = t.ndarray
    b = other.ndarray if other.dtype is t.dtype else other.ndarray.astype(t.dtype)
    nd.backend.add_scaled(nd, b, alpha, out=nd)
    t._bump_version()
    return t


def kernel_method(name: str, kernel: str, fn: Callable, writer: Any = None) -> Callable:
    """``t.name_()`` of a unary op with a backend kernel, which writes in place when no graph is recorded. ``writer``,
    the op's Function when its backward reads only its output (``relu_``, ``sigmoid_``, ``exp_``...), writes in place
    when a graph is recorded too: one kernel into the tensor's memory, as torch's, not a new result copied back. The
    op's own arguments (``round_(decimals=2)``), which no kernel takes, run the op and write its result back."""
    general = general_method(name, fn)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if args or kwargs:
            return general(self, *args, **kwargs)
        floating = self.dtype.is_floating_point
        recorded = is_grad_enabled() and self.requires_grad
        dual = forward_ad.involves_dual(self)  # forward AD carries tangents through the out-of-place op
        if recorded and floating and writer is not None and not dual:
            check_no_internal_overlap(self)
            return write_recorded(self, writer)
        if recorded or not floating or dual:
            return assign_inplace(self, fn(self))
        check_no_internal_overlap(self)
        self.ndarray.unary(kernel, out=self.ndarray)
        self._bump_version()
        return self

    method.__name__ = f"{name}_"
    method.__doc__ = f"In-place {name}."
    return method


def general_method(name: str, fn: Callable, direct: Callable | None = None) -> Callable:
    """``t.name_(*args)`` of any op: the out-of-place op, written back (reading a copy when a graph records it).

    ``direct(t, *args, **kwargs)``, where given, writes the result straight into ``t``'s memory when no graph or
    tangent is recorded and no tensor argument shares ``t``'s memory (it would be read while written: the general
    path reads a copy); one backend write instead of a new result and its copy back. It returns False for the
    arguments it leaves to the general path."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        operands = (*args, *kwargs.values())
        recording = is_grad_enabled() and (self.requires_grad or any(
            isinstance(a, Tensor) and a.requires_grad for a in operands))
        if (direct is not None and not recording and not forward_ad.involves_dual(self, *operands)
                and not any(isinstance(a, Tensor) and a.ndarray.buffer is self.ndarray.buffer for a in operands)):
            check_no_internal_overlap(self)
            if direct(self, *args, **kwargs):
                self._bump_version()
                return self
        return assign_inplace(self, fn(inplace_source(self) if recording else self, *args, **kwargs))

    method.__name__ = f"{name}_"
    method.__doc__ = f"In-place {name}."
    return method


# ------------------------------------------------------------------ in-place methods with their own rules

def _reshape_inplace(self: Tensor, op: str, view: Callable[[Tensor], Tensor]) -> Tensor:
    """Finish an in-place op that only changes the shape (``squeeze_``, ``transpose_`` ...): this tensor takes the
    view's shape and strides and, when autograd records, the view's history (as torch's in-place view ops do)."""
    check_inplace(self, op)
    out = view(self)
    if out.grad_fn is not None and is_grad_enabled():
        autograd.take_history(self, out)
    self.ndarray = out.ndarray
    return self


def squeeze_(self: Tensor, dim: Any = None) -> Tensor:
    """In-place squeeze."""
    return _reshape_inplace(self, "squeeze_", lambda t: views.squeeze(t, dim))


def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    """In-place unsqueeze."""
    return _reshape_inplace(self, "unsqueeze_", lambda t: views.unsqueeze(t, dim))


def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """In-place transpose."""
    return _reshape_inplace(self, "transpose_", lambda t: views.transpose(t, dim0, dim1))


def as_strided_(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """In-place as_strided: the tensor becomes the view of its memory with ``size`` and ``stride``."""
    return _reshape_inplace(input, "as_strided_", lambda t: views.as_strided(t, size, stride, storage_offset))


def t_(self: Tensor) -> Tensor:
    """In-place t: a matrix is transposed, a tensor of fewer dimensions is left as it is."""
    if self.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return transpose_(self, 0, 1) if self.ndim == 2 else self


def fill_from(self: Tensor, nd: Any) -> Tensor:
    """Overwrite the contents in place from an NDArray or number (no gradient flows)."""
    check_inplace(self, "fill")
    self.ndarray.copy_(nd)
    self._bump_version()
    return self


def fill_(self: Tensor, value: Any) -> Tensor:
    """Fill with a number (or a 0-d tensor, differentiably)."""
    return _fill(self, value, Fill)


def _fill(self: Tensor, value: Any, node: type[compare.Where]) -> Tensor:
    """``fill_``, recorded (where it is) as a node of class ``node`` for a number value."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               "dimensions.")
        if not (value.requires_grad and is_grad_enabled()):
            value = value.item()
    if is_grad_enabled() and (self.requires_grad or isinstance(value, Tensor)):
        if isinstance(value, Tensor):
            return assign_inplace(self, _overwrite(self, value.to(self.dtype), FillTensor))
        return assign_inplace(self, _overwrite(self, value, node))
    return fill_from(self, value)


def fill(input: Tensor, value: Any) -> Tensor:
    """A copy of ``input`` filled with ``value`` (a number or a 0-d tensor, which receives the gradient)."""
    return fill_(views.clone(input), value)


# ``where`` recorded under the names torch gives the nodes of the ops that overwrite a tensor.
class Fill(compare.Where):
    """``fill_`` with a number (FillBackward2)."""


class FillTensor(compare.Where):
    """``fill_`` with a 0-d tensor (FillBackward3)."""


class Zero(compare.Where):
    """``zero_`` (ZeroBackward0)."""


class Copy(compare.Where):
    """``copy_`` (CopyBackwards)."""


def _overwrite(self: Tensor, value: Any, node: type[compare.Where]) -> Tensor:
    """``value`` broadcast to ``self`` as a graph node of class ``node``: the old values of ``self`` receive a zero
    gradient."""
    return node.apply(_args.ones_like_bool(self), _args.python_number(value), self)


def zero_(self: Tensor) -> Tensor:
    """Fill with zeros."""
    return _fill(self, 0, Zero)


def copy_(self: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, cast, any device) into this tensor; differentiable with respect to ``src``.

    ``non_blocking``: a copy from pinned host memory to the GPU is queued on the current stream without waiting.
    """
    if not isinstance(src, (Tensor, int, float, bool)):
        src = tensor(src, dtype=self.dtype, device=self.device)
    if isinstance(src, Tensor) and broadcast_shapes("copy_", self.shape, src.shape) != self.shape:
        raise RuntimeError(f"copy_: the size of src {list(src.shape)} cannot be broadcast to the destination "
                           f"size {list(self.shape)}")
    check_no_internal_overlap(self)
    needs_graph = is_grad_enabled() and (self.requires_grad or (isinstance(src, Tensor) and src.requires_grad))
    if needs_graph or forward_ad.involves_dual(self, src):
        value = src.to(self.device, non_blocking=non_blocking).to(self.dtype) if isinstance(src, Tensor) else src
        return assign_inplace(self, _overwrite(self, value, Copy))
    return fill_from(self, src.ndarray.to(self.device, non_blocking) if isinstance(src, Tensor) else src)


def _pointwise_update(name: str, fn: Callable, combine: Callable, symbol: str) -> Callable:
    """``self += value * tensor1 <symbol> tensor2`` in place (``addcmul_``, ``addcdiv_``), rounded as ``fn`` (the
    out-of-place op, written back where half-precision operands need its single rounding, and for integer and bool
    tensors, whose ``value`` and division ``fn`` treats as torch's kernels do); torch's deprecated
    ``name_(value, tensor1, tensor2)`` is accepted with its warning."""
    written_back = general_method(name, fn)

    def method(self: Tensor, tensor1: Tensor, tensor2: Tensor, *value_first_args: Tensor, value: float = 1) -> Tensor:
        if value_first_args:
            tensor1, tensor2, value = arithmetic.value_first(f"{name}_", tensor1, tensor2, value_first_args)
        shape = broadcast_shapes(f"{name}_", self.shape, tensor1.shape, tensor2.shape)
        if shape != self.shape:
            raise RuntimeError(f"{name}_: output with shape {list(self.shape)} doesn't match the broadcast shape "
                               f"{list(shape)}")
        if arithmetic._half_operands(self, tensor1, tensor2) or self.dtype.category < 2:
            return written_back(self, tensor1, tensor2, value=value)
        return self.add_(combine(tensor1 * value if value != 1 else tensor1, tensor2))

    method.__name__ = f"{name}_"
    method.__doc__ = (f"``self += value * tensor1 {symbol} tensor2`` in place, rounded as ``{name}``; torch's "
                      f"deprecated ``{name}_(value, tensor1, tensor2)`` is accepted with its warning.")
    return method


addcmul_ = _pointwise_update("addcmul", arithmetic.addcmul, operator.mul, "*")
addcdiv_ = _pointwise_update("addcdiv", arithmetic.addcdiv, operator.truediv, "/")


_float_power_written_back = general_method("float_power", arithmetic.float_power)


def float_power_(self: Tensor, exponent: Any) -> Tensor:
    """In-place float_power: the tensor must already be float64, the dtype of the result."""
    if self.dtype is not dtypes.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.name} but the operation's result "
                           "requires dtype float64")
    return _float_power_written_back(self, exponent)
