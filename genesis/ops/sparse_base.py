"""What every sparse layout shares: :class:`SparseBase`, the Tensor subclass under COO (``genesis.ops.sparse``) and
CSR (``genesis.ops.sparse_csr``) tensors: a size and a ``values`` tensor that carries dtype, device and autograd, and
no strided array, so that an op without a sparse version raises NotImplementedError naming itself and listing what
the layout supports. The :class:`layout` objects themselves are ``genesis.memory_format``'s.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from genesis import dtypes
from genesis.device import device as Device
from genesis.device import factory_device
from genesis.ndarray import normalize_dim
from genesis.tensor import Size, Tensor, parse_to_args
from genesis.tensor import tensor as _from_data


def _unsupported_op() -> str:
    """The name of the outermost Genesis op or Tensor method on the call stack (the one the user called)."""
    from genesis.ops import registry  # the registry imports the sparse ops, hence this module: look it up late

    codes: dict = {}
    for op in registry.OPS:  # the first name of an op wins over its aliases (mul, not multiply)
        codes.setdefault(getattr(op.fn, "__code__", None), op.name)
    methods: dict = {}
    for name, attr in vars(Tensor).items():
        fn = attr.fget if isinstance(attr, property) else attr
        methods.setdefault(getattr(fn, "__code__", None), set()).add(name)
    for code, names in methods.items():
        if len(names) == 1:  # a code shared by several methods (a generated wrapper) names none of them
            codes.setdefault(code, names.pop())
    found = "this op"
    frame = sys._getframe(2)
    while frame is not None:
        found = codes.get(frame.f_code, found)
        frame = frame.f_back
    return found


class SparseBase(Tensor):
    """What sparse COO and CSR tensors share: a size and a ``values`` tensor that carries the dtype, the device and
    autograd, and no strided array (an op without a sparse version raises NotImplementedError naming itself)."""

    _values_t: Tensor
    _size: Size
    #: The layout's name in messages ("COO", "CSR") and the ops it supports.
    _KIND = ""
    _SUPPORTED: tuple[str, ...] = ()

    @property
    def ndarray(self) -> Any:
        """Sparse tensors have no strided array: reaching for one means an op without sparse support was called."""
        raise NotImplementedError(f"{_unsupported_op()}: not supported for sparse {self._KIND} tensors (layout "
                                  f"{self.layout}); they support only {', '.join(self._SUPPORTED)}. Call .to_dense() "
                                  "first")

    def _with_values(self, values: Tensor) -> SparseBase:
        """The same sparsity pattern over other values."""
        raise NotImplementedError

    # ------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return self._size

    def size(self, dim: int | None = None) -> Any:
        return self._size if dim is None else self._size[normalize_dim("size", dim, len(self._size))]

    @property
    def dtype(self) -> dtypes.dtype:
        return self._values_t.dtype

    @property
    def device(self) -> Device:
        return self._values_t.device

    @property
    def ndim(self) -> int:
        return len(self._size)

    def dim(self) -> int:
        return len(self._size)

    def numel(self) -> int:
        """The number of elements of the dense tensor it stands for, as torch's (not the stored ones: ``_nnz()``)."""
        return math.prod(self._size)

    nelement = numel

    def __len__(self) -> int:
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    # ------------------------------------------------------------ autograd, through the values
    @property
    def requires_grad(self) -> bool:
        return self._values_t.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._values_t.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> SparseBase:
        self._values_t.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self) -> Any:
        return self._values_t.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._values_t.grad_fn is None

    @property
    def grad(self) -> SparseBase | None:
        """The gradient of a leaf sparse tensor: a sparse tensor of its layout over its (coalesced) pattern."""
        g = self._values_t.grad
        return None if g is None else self._grad_from(g)

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            raise RuntimeError(f"grad: only None can be assigned to the gradient of a sparse {self._KIND} tensor")
        self._values_t.grad = None

    def _grad_from(self, g: Tensor) -> SparseBase:
        """A leaf's gradient, from the gradient of its stored values."""
        return self._with_values(g)

    def detach(self) -> SparseBase:
        return self._with_values(self._values_t.detach())

    @property
    def data(self) -> SparseBase:
        """This tensor outside autograd, sharing its parts (``p.grad.data`` of a sparse gradient)."""
        return self.detach()

    def _to_device(self, device: Device) -> SparseBase:
        """The same tensor with every part (indices and values) on ``device``."""
        raise NotImplementedError

    def to(self, *args: Any, **kwargs: Any) -> SparseBase:
        """The tensor on another device (indices and values moved) and/or with its values cast to another dtype,
        differentiable in the values, as ``Tensor.to``. Returns the tensor itself when nothing changes
        (``copy=True``: a copy)."""
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        device, dtype, copy = parse_to_args(*args, **kwargs)
        out = self if device is None or device is self.device else self._to_device(device)
        if dtype is not None and dtype is not out.dtype:
            out = out._with_values(out._values_t.to(dtype))
        return out.clone() if copy and out is self else out


def coerce_tensor(data: Any, dtype: dtypes.dtype | None, device: Any, data_device: Any = None) -> Tensor:
    """A tensor argument of a sparse constructor as a Tensor, as torch's constructors take it: a Tensor stays on its
    device unless ``device`` is given; other data becomes a tensor (as ``genesis.tensor`` makes it) on ``device``,
    else on ``data_device`` (the values' device, for indices given as data), else on the default device."""
    if isinstance(data, Tensor):
        return data if device is None else data.to(factory_device(device))
    return _from_data(data, dtype=dtype, device=device if device is not None else data_device)
