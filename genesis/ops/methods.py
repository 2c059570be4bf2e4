"""Tensor methods that are not a ``genesis.*`` function of the same name: the ``*_as`` forms, ``where`` with the
tensor first, ``split`` under its method parameter name, ``polygamma`` with the tensor first, the complex conversions,
the operators that need a rule of their own, the transposing properties, the device predicates of devices Genesis
does not have, and the legacy API of old scripts (``type``, ``new``, ``resize_``, ``resize_as_``, ``resize``,
``apply_``, ``map_``, ``map2_``). Bound by the registry.
"""

from __future__ import annotations

import builtins
import math
import numbers
import warnings
from typing import Any, Callable

from genesis import dtypes
from genesis import memory_format as _mf
from genesis.autograd import no_grad
from genesis.ndarray import NDArray
from genesis.ops import arithmetic, compare, complex, join, math_special, reduce, unary, views
from genesis.ops._args import check_tensors, python_number
from genesis.tensor import Size, Tensor


def expand_as(self: Tensor, other: Tensor) -> Tensor:
    """``self`` expanded to ``other``'s shape."""
    check_tensors("expand_as", other=other)
    return views.expand(self, other.shape)


def view_as(self: Tensor, other: Tensor) -> Tensor:
    """A view of ``self`` with ``other``'s shape."""
    check_tensors("view_as", other=other)
    return views.view(self, other.shape)


def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """``self`` reshaped to ``other``'s shape."""
    check_tensors("reshape_as", other=other)
    return views.reshape(self, other.shape)


def where(self: Tensor, condition: Tensor, other: Any) -> Tensor:
    """``self`` where ``condition`` holds, else ``other`` (torch's ``Tensor.where``)."""
    return compare.where(condition, self, other)


def split(self: Tensor, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of ``split_size`` (an int, the last piece may be smaller) or of the listed sizes along ``dim``: the
    function ``genesis.split``, whose parameter torch calls ``split_size_or_sections`` there and ``split_size``
    here."""
    return join.split(self, split_size, dim)


def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """Sum over the dims broadcast from ``size`` (which must expand to this tensor's shape)."""
    target = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    lead = self.ndim - len(target)
    if lead < 0 or any(t not in (1, n) for t, n in zip(target, self.shape[lead:])):
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(self.shape)}}}.")
    dims = [*range(lead), *(lead + k for k, t in enumerate(target) if t == 1 and self.shape[lead + k] != 1)]
    return reduce.sum(self, dims, keepdim=True).reshape(target) if dims else self


def is_conj(input: Tensor) -> bool:
    """Never: Genesis conjugates eagerly, so no tensor is a lazily conjugated (or negated) view."""
    return False


def is_inference(input: Tensor) -> bool:
    """Whether the tensor was made inside an ``inference_mode`` block (or is a view or detached copy of such a
    tensor)."""
    return input._inference or (input._base is not None and input._base._inference)


def never(input: Tensor) -> bool:
    """False: the predicates of devices and layouts Genesis does not have (``is_mps``, ``is_quantized`` ...)."""
    return False


def detach(input: Tensor) -> Tensor:
    """``input.detach()``: the same values, out of the graph (torch's function spelling)."""
    return input.detach()


def output_nr(input: Tensor) -> int:
    """Which output of its ``grad_fn`` node this tensor is (0 for leaves and single-output ops)."""
    return input._output_nr


def polygamma(self: Tensor, n: int) -> Tensor:
    """``genesis.polygamma(n, self)`` (the method takes the tensor first)."""
    return math_special.polygamma(n, self)


def python_complex(self: Tensor) -> builtins.complex:
    """``complex(t)``: the one element of ``t`` (of any dtype) as a Python complex number."""
    if self.numel() != 1:
        raise ValueError(f"only one element tensors can be converted to Python scalars (got {self.numel()} elements)")
    return builtins.complex(self.item())


def cfloat(self: Tensor) -> Tensor:
    """This tensor as complex64 (``self.to(genesis.cfloat)``)."""
    return self.to(dtypes.complex64)


def cdouble(self: Tensor) -> Tensor:
    """This tensor as complex128 (``self.to(genesis.cdouble)``)."""
    return self.to(dtypes.complex128)


def reflected(fn: Callable) -> Callable:
    """The reflected operator of ``fn`` (``__rsub__`` ...): the tensor is the right operand, the left one a number
    (numpy scalars included: ``np.float32(1) - t``)."""
    def method(self: Tensor, other: Any) -> Tensor:
        return fn(python_number(other), self)

    method.__name__ = f"__r{fn.__name__}__"
    return method


def reflected_div(self: Tensor, other: Any) -> Tensor:
    """``other / self`` for a number ``other``: ``self.reciprocal() * other``, as torch computes it (the same values,
    and the same graph: MulBackward0 over ReciprocalBackward0)."""
    return arithmetic.mul(unary.reciprocal(self), python_number(other))


def contains(self: Tensor, element: Any) -> bool:
    """``element in self``: whether some element equals ``element`` (a tensor or a number), as torch's."""
    if not isinstance(element, (Tensor, numbers.Number)):
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}.")
    return builtins.bool((self == element).any().item())


def equality(fn: Callable) -> Callable:
    """``==`` / ``!=`` as torch's operators: an operand no tensor op takes (None, a string...) gives
    ``NotImplemented``, so Python falls back to identity (``t == None`` is False, ``t != None`` True) where the
    function (``genesis.eq``) raises TypeError."""
    def method(self: Tensor, other: Any) -> Any:
        try:
            return fn(self, other)
        except TypeError:
            return NotImplemented

    method.__name__ = f"__{fn.__name__}__"
    return method


def invert(self: Tensor) -> Tensor:
    """``~t``: logical not of a bool tensor, bitwise not of an integer one."""
    if self.dtype.is_floating_point:
        raise TypeError(f"~ (operator.invert) is only implemented on integer and Boolean-type tensors, got "
                        f"{self.dtype.name}")
    return compare.logical_not(self) if self.dtype is dtypes.bool_ else compare.bitwise_not(self)


def reversed_dims(self: Tensor) -> Tensor:
    """``t.T``: the dims in reverse order."""
    return views.permute(self, tuple(reversed(range(self.ndim))))


def matrix_transpose(self: Tensor) -> Tensor:
    """``t.mT``: the last two dims swapped."""
    return views.matrix_transpose(self)


def conj_reversed_dims(self: Tensor) -> Tensor:
    """``t.H`` of a matrix (or a 0-d tensor): transposed, conjugated (``T`` for real tensors)."""
    if self.ndim not in (0, 2):
        hint = " For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.{hint}")
    return complex.conj(reversed_dims(self))


# ---------------------------------------------------------------- the legacy tensor API


def legacy_type(self: Tensor, dtype: Any = None, non_blocking: bool = False) -> Any:
    """Without ``dtype``, the legacy type name (``"genesis.FloatTensor"``, ``"genesis.cuda.LongTensor"``,
    ``"genesis.sparse.FloatTensor"`` for a sparse COO tensor, ``"genesis.cuda.sparse.FloatTensor"`` on a GPU); with
    one, this tensor converted to it: a dtype, a legacy type (``genesis.LongTensor``, a CPU type as torch's) or a
    legacy type name (``"torch.LongTensor"``, ``"torch.cuda.FloatTensor"``: a ``cuda.`` name also moves it to the
    GPU, a plain one to the CPU; a ``sparse.`` name changes the dtype only, as torch's)."""
    if dtype is None:
        where = ("cuda." if self.device.type == "cuda" else "") + ("sparse." if self.layout is _mf.sparse_coo else "")
        return f"genesis.{where}{dtypes.LEGACY_TYPE_NAMES.get(self.dtype, self.dtype.name)}"
    if isinstance(dtype, type) and hasattr(dtype, "device_type"):  # genesis.LongTensor, genesis.cuda.FloatTensor
        return self.to(dtype.device_type, dtype.dtype, non_blocking=non_blocking)
    if isinstance(dtype, str) and not dtype.endswith("Tensor"):
        try:  # a dtype's name ("float64"); any other string is no type, as torch's ValueError says
            dtype = dtypes.to_dtype(dtype)
        except TypeError:
            raise ValueError(f"invalid type: '{dtype}'") from None
    if not (isinstance(dtype, str) and dtype.endswith("Tensor")):
        return self.to(dtypes.to_dtype(dtype), non_blocking=non_blocking)
    parts = dtype.split(".")
    if parts[-1] not in dtypes.BY_LEGACY_NAME or set(parts[:-1]) - {"torch", "genesis", "cuda", "sparse"}:
        raise ValueError(f"invalid type: '{dtype}'")
    device = "cuda" if "cuda" in parts else "cpu"
    return self.to(device, dtypes.BY_LEGACY_NAME[parts[-1]], non_blocking=non_blocking)

def new(self: Tensor, *args: Any) -> Tensor:
    """Legacy constructor of this tensor's dtype and device: ``x.new(2, 3)`` (sizes, uninitialized),
    ``x.new([1, 2])`` (data), ``x.new()`` (empty)."""
    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])
    return Tensor(*args, dtype=self.dtype, device=self.device)

def _sizes(sizes: tuple) -> tuple[int, ...]:
    """The sizes of ``resize_`` / ``resize``: varargs or one sequence."""
    return tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)


def resize_(self: Tensor, *sizes: Any) -> Tensor:
    """Give this tensor the shape ``sizes`` in place (torch's legacy ``resize_``): the elements kept are the
    first ones in memory order; new ones are uninitialized."""
    shape = _sizes(sizes)
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if any(not isinstance(n, int) or n < 0 for n in shape):
        raise RuntimeError(f"resize_: sizes must be non-negative integers, got {list(shape)}")
    if shape == self.ndarray.shape:
        return self
    nd = self.ndarray
    new = NDArray.empty(shape, nd.dtype, nd.device)
    keep = min(new.size, nd.size)
    if keep:
        flat = nd.reshape((nd.size,)) if nd.is_contiguous() else nd.backend.contiguous(nd).reshape((nd.size,))
        new.reshape((new.size,)).narrow(0, 0, keep).copy_(flat.narrow(0, 0, keep))
    self.ndarray = new
    self._bump_version()
    return self


def resize_as_(self: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    """``resize_(the_template.shape)``; a ``memory_format`` then lays the memory out in that format
    (``preserve_format``: the template's when it is channels_last, else row-major), as torch's ``resize_as_``."""
    resize_(self, tuple(the_template.shape))
    if memory_format is None:
        return self
    fmt = _mf.check("resize_as_", memory_format)
    shape = tuple(self.shape)
    if fmt is _mf.preserve_format:  # the template's format, as torch's suggest_memory_format: channels_last or not
        fmt = _mf.suggest(shape, the_template.stride())
    strides = _mf.strides(shape, fmt)
    nd = self.ndarray
    if strides != nd.strides:
        self.ndarray = NDArray(nd.buffer, nd.shape, strides, nd.offset, nd.dtype, nd.device)
    return self


def resize(self: Tensor, *sizes: Any) -> Tensor:
    """This tensor reshaped to ``sizes`` (torch's deprecated out-of-place ``resize``: the number of elements must
    stay the same; differentiable)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resize(self, _sizes(sizes))


def resize_as(self: Tensor, the_template: Tensor) -> Tensor:
    """``resize(the_template.shape)`` (torch's deprecated out-of-place ``resize_as``)."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resize(self, tuple(the_template.shape))


def _resize(self: Tensor, shape: tuple[int, ...]) -> Tensor:
    numel = math.prod(shape)
    if numel != self.numel():
        def text(s: tuple) -> str:
            return "x".join(str(n) for n in s) if s else "[]"
        raise RuntimeError(f"requested resize to {text(shape)} ({numel} elements in total), but the given tensor has "
                           f"a size of {text(tuple(self.shape))} ({self.numel()} elements). autograd's resize can only "
                           "change the shape of a given tensor, while preserving the number of elements. ")
    return views.reshape(self, shape)


def _map_in_place(self: Tensor, op: str, fn: Callable, *others: Tensor) -> Tensor:
    """``self[i] = fn(self[i], others[i]...)`` element by element in Python (CPU tensors only, as torch's)."""
    if self.device.type != "cpu":
        raise RuntimeError(f"{op} is only implemented on CPU tensors")
    if self._requires_grad:
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")
    flat = views.reshape(self, (-1,)).tolist()
    flat_others = [views.reshape(views.expand(o, self.shape), (-1,)).tolist() for o in others]
    values = [fn(*args) for args in zip(flat, *flat_others)]
    with no_grad():
        self.copy_(Tensor(values, dtype=self.dtype).reshape(self.shape))
    return self


def apply_(self: Tensor, callable: Callable) -> Tensor:
    """Replace each element ``x`` with ``callable(x)`` in place (CPU only, slow: one Python call per element)."""
    return _map_in_place(self, "apply_", callable)


def map_(self: Tensor, tensor: Tensor, callable: Callable) -> Tensor:
    """``self[i] = callable(self[i], tensor[i])`` in place, ``tensor`` broadcast to this shape (CPU only)."""
    return _map_in_place(self, "map_", callable, tensor)


def map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable) -> Tensor:
    """``self[i] = callable(self[i], x[i], y[i])`` in place, ``x`` and ``y`` broadcast to this shape (CPU only)."""
    return _map_in_place(self, "map2_", callable, x, y)


def _make_subclass(cls: type, data: Tensor, require_grad: bool = False) -> Tensor:
    """torch's ``Tensor._make_subclass(cls, data, require_grad)``, called on the class: a tensor of type ``cls`` over
    ``data``'s memory, sharing its version counter (how the Parameter subclasses of quantization libraries are
    built)."""
    t = cls._wrap(data.ndarray)
    t._vc = data._vc
    t.requires_grad_(require_grad)
    return t
