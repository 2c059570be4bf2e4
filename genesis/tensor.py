"""Tensor: the user-facing array with autograd metadata, and the creation functions.

A Tensor holds an NDArray (``.ndarray``) and the autograd fields (``requires_grad``, ``grad``, ``grad_fn``). Its
operators and most methods are the ops of ``genesis.ops``, bound by the op registry (``genesis.ops.registry.bind``):
every op is a ``Function`` with forward and backward, and the Tensor itself never computes."""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from genesis import autograd, dtypes
from genesis import memory_format as _mf
from genesis.autograd import AccumulateGrad, RemovableHandle
from genesis.autograd.grad_mode import _state as _grad_state
from genesis.device import cpu as _cpu
from genesis.device import device as Device
from genesis.device import factory_device, to_device
from genesis.ndarray import NDArray, normalize_dim
from genesis.tensor_data import infer_dtype, nested_to_numpy, plain, scalars_to_numpy


def _dim_of_shape(op: str, dim: Any, ndim: int) -> int:
    """``dim`` of ``size(dim)`` / ``stride(dim)`` checked as torch: an int (TypeError for a bool or a float), in
    range, and no dim at all of a 0-d tensor."""
    try:
        index = operator.index(dim)  # ints, numpy ints, 0-d integer tensors
    except TypeError:
        index = None
    if index is None or isinstance(dim, bool):
        raise TypeError(f"{op}(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
    if ndim == 0:
        raise IndexError(f"{op}: Dimension specified as {index} but tensor has no dimensions")
    return normalize_dim(op, index, ndim)


class Tensor:
    """A multi-dimensional array with automatic differentiation (see ``genesis.tensor`` for construction)."""

    __array_priority__ = 1000

    def __init__(self, *args: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> None:
        if len(args) == 0:
            args = ([],)
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            # Tensor(2, 3): uninitialized storage of that shape, as torch.Tensor(2, 3).
            d = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
            nd = NDArray.empty(tuple(args), d, factory_device(device))
        else:
            (data,) = args
            d = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
            nd = _to_ndarray(data, d, factory_device(device))
        self.ndarray = nd
        self._vc = [0]
        if _grad_state.inference:
            self._inference = True
        if requires_grad:
            self.requires_grad_(True)

    # Autograd fields default at class level so wrapping a result sets only what differs (cheap per op).
    _requires_grad = False
    _grad: Tensor | None = None
    _grad_fn: Any = None
    _output_nr = 0
    _base: Tensor | None = None
    _hooks: list | None = None
    _post_accumulate_hooks: list | None = None
    _retains_grad = False
    _grad_accumulator: Any = None
    _view_version = 0  # version of the base when a view's history was recorded (stale histories are rebuilt)
    _inference = False  # made inside an inference_mode block (Tensor.is_inference)

    @classmethod
    def _wrap(cls, nd: NDArray) -> Tensor:
        """A new Tensor around an NDArray (no autograd history)."""
        t = object.__new__(cls)
        t.ndarray = nd
        t._vc = [0]
        if _grad_state.inference:
            t._inference = True
        return t

    @property
    def grad_fn(self) -> Any:
        """The graph node that produced this tensor (None for leaves): a view gets its history through its base
        first when the base changed in place since."""
        if self._base is not None and self._view_version != self._vc[0] and self._requires_grad \
                and self._base._requires_grad:
            autograd.refresh_view_history(self)
        return self._grad_fn

    @grad_fn.setter
    def grad_fn(self, node: Any) -> None:
        self._grad_fn = node

    @property
    def _version(self) -> int:
        """In-place changes made to this tensor's memory through it or a view (torch's counter; kept in ``_vc``)."""
        return self._vc[0]

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by backward (None until one reaches this tensor)."""
        if self._grad is None and self._grad_fn is not None and not self._retains_grad:
            autograd.warn_non_leaf_grad()  # as torch: a non-leaf's .grad that backward does not fill
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            # The arrays' tuples: .shape would build two Sizes. A sparse COO gradient has no array but a size.
            shape = value.ndarray.shape if value.__class__ is Tensor or not value.is_sparse else tuple(value.shape)
            if shape != self.ndarray.shape:
                raise RuntimeError(f"assigned grad has data of a different size: {list(value.shape)} for a tensor "
                                   f"of size {list(self.shape)}")
            if value.dtype is not self.dtype:
                raise RuntimeError(f"assigned grad has data of a different type: {value.dtype} for a tensor of "
                                   f"type {self.dtype}")
            if value.device != self.device:
                raise RuntimeError(f"assigned grad has data located on a different device: {value.device} for a "
                                   f"tensor on {self.device}")
        self._grad = value

    @property
    def requires_grad(self) -> bool:
        """Whether operations on this tensor are recorded for differentiation."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and self.ndarray.dtype.category < 2:
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require gradients "
                               f"(got {self.dtype})")
        if value and self._inference and not _grad_state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = bool(value)

    @staticmethod
    def _scalar_like(value: Any, like: Any) -> Tensor:
        """A 0-d tensor for a Python number on the left of an op with ``like`` (promotes like a scalar)."""
        if not isinstance(like, Tensor):
            raise TypeError(f"unsupported operand types: {type(value).__name__} and {type(like).__name__}")
        if not isinstance(value, (bool, int, float)):
            raise TypeError(f"unsupported operand type: {type(value).__name__}")
        return Tensor._wrap(NDArray.scalar(value, dtypes.result_type_scalar(like.dtype, value), like.device))

    # ------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return Size(self.ndarray.shape)

    def size(self, dim: int | None = None) -> Any:
        """The shape as a ``Size``, or the length of dim ``dim``."""
        shape = self.ndarray.shape
        if dim is None:
            return Size(shape)
        if dim.__class__ is int and -len(shape) <= dim < len(shape):  # the common case, checked in place
            return shape[dim]
        return shape[_dim_of_shape("size", dim, len(shape))]

    @property
    def dtype(self) -> dtypes.dtype:
        return self.ndarray.dtype

    @property
    def device(self) -> Device:
        return self.ndarray.device

    @property
    def ndim(self) -> int:
        return len(self.ndarray.shape)

    def dim(self) -> int:
        return len(self.ndarray.shape)

    ndimension = dim

    def numel(self) -> int:
        return self.ndarray.size

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    def stride(self, dim: int | None = None) -> Any:
        """The strides in elements, or the stride of dim ``dim``."""
        strides = self.ndarray.strides
        if dim is None:
            return tuple(strides)
        if dim.__class__ is int and -len(strides) <= dim < len(strides):
            return strides[dim]
        return strides[_dim_of_shape("stride", dim, len(strides))]

    def storage_offset(self) -> int:
        return self.ndarray.offset

    def data_ptr(self) -> int:
        """Address of the first element (host or device memory)."""
        return self.ndarray.backend.data_ptr(self.ndarray)

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the elements are dense in row-major order, or in ``memory_format``'s order (channels_last)."""
        if memory_format is None or memory_format is _mf.contiguous_format or memory_format is _mf.preserve_format:
            return self.ndarray.is_contiguous()
        nd = self.ndarray
        return _mf.is_dense_in(nd.shape, nd.strides, _mf.check("is_contiguous", memory_format))

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        return self.device.type == "meta"

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def get_device(self) -> int:
        return -1 if self.device.type == "cpu" else self.device.index

    # ------------------------------------------------------------ autograd
    @property
    def data(self) -> Tensor:
        """This tensor's memory outside autograd, with a version counter of its own as torch's (assign to replace)."""
        t = Tensor._wrap(self.ndarray.alias())
        if self._inference:
            t._inference = True
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data: expected a Tensor, got {type(value).__name__}")
        self.ndarray = value.ndarray.alias()

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if requires_grad and self.dtype.category < 2:
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require gradients "
                               f"(got {self.dtype})")
        self.requires_grad = requires_grad
        return self

    def detach(self) -> Tensor:
        """A tensor sharing memory and version counter with this one, outside the graph."""
        t = Tensor._wrap(self.ndarray.alias())
        t._vc = self._vc
        if self._inference:
            t._inference = True
        return t

    def detach_(self) -> Tensor:
        """Take this tensor out of the graph in place (it becomes a leaf that does not require grad)."""
        if self._base is not None:
            raise RuntimeError("detach_: can't detach views in-place. Use detach() instead.")
        self._grad_fn = None
        self.requires_grad = False
        return self

    def _accumulator(self) -> AccumulateGrad:
        ref = self._grad_accumulator
        node = ref() if ref is not None else None
        if node is None:
            import weakref

            node = AccumulateGrad(self)
            self._grad_accumulator = weakref.ref(node)
        return node

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulate the gradient of this tensor with respect to the graph leaves into their ``.grad``."""
        from genesis.autograd import backward

        backward(self, gradient, retain_graph, create_graph, inputs)

    def register_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces the gradient."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            hooks = self._hooks = self._hooks if self._hooks is not None else []
        else:
            node = self.grad_fn
            node._output_hooks = node._output_hooks if node._output_hooks is not None else {}
            hooks = node._output_hooks.setdefault(self._output_nr, [])
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable) -> RemovableHandle:
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = []
        self._post_accumulate_hooks.append(hook)
        return RemovableHandle(self._post_accumulate_hooks, hook)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        autograd.retain_grad(self)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def _bump_version(self) -> None:  # after an in-place change
        self._vc[0] += 1

    # ------------------------------------------------------------ conversion
    def cpu(self) -> Tensor:
        return self.to(_cpu)

    def cuda(self, device: Any = None, non_blocking: bool = False) -> Tensor:
        return self.to(Device("cuda", device) if isinstance(device, int) else (device or "cuda"),
                       non_blocking=non_blocking)

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    def float(self) -> Tensor:
        return self.to(dtypes.float32)

    def double(self) -> Tensor:
        return self.to(dtypes.float64)

    def half(self) -> Tensor:
        return self.to(dtypes.float16)

    def bfloat16(self) -> Tensor:
        return self.to(dtypes.bfloat16)

    def long(self) -> Tensor:
        return self.to(dtypes.int64)

    def int(self) -> Tensor:
        return self.to(dtypes.int32)

    def short(self) -> Tensor:
        return self.to(dtypes.int16)

    def char(self) -> Tensor:
        return self.to(dtypes.int8)

    def byte(self) -> Tensor:
        return self.to(dtypes.uint8)

    def bool(self) -> Tensor:
        return self.to(dtypes.bool_)

    def numpy(self, force: bool = False) -> np.ndarray:
        """The values as a numpy array (sharing memory on the CPU); refused if it requires grad in grad mode."""
        if self.requires_grad and _grad_state.enabled and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self.device.type != "cpu" and not force:
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the "
                            "tensor to host memory first.")
        return self.ndarray.numpy()

    def tolist(self) -> Any:
        values = self.ndarray.numpy()
        return (values if self.dtype is not dtypes.bfloat16 else values.astype(np.float32)).tolist()

    def item(self) -> Any:
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        if self.device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        value = self.ndarray.numpy().reshape(-1)[0]
        if self.dtype is dtypes.bool_:
            return bool(value)
        return float(value) if self.dtype.is_floating_point else complex(value) if self.dtype.is_complex else int(value)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray(t)``: the CPU values (sharing memory when possible); like ``numpy()``, not for grad tensors."""
        if self.requires_grad and _grad_state.enabled:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        needs_copy = self.device.type != "cpu" or (dtype is not None and np.dtype(dtype) != dtypes.to_numpy(self.dtype))
        if copy is False and needs_copy:
            raise ValueError(f"__array__: cannot share memory (tensor on {self.device} of dtype {self.dtype}, numpy "
                             f"dtype {dtype} asked); pass copy=None or True")
        array = self.cpu().ndarray.numpy()
        if dtype is not None:
            array = array.astype(dtype, copy=bool(copy))
        elif copy:
            array = array.copy()
        return array

    def __dlpack__(self, stream: Any = None, max_version: tuple[int, int] | None = None, dl_device: Any = None,
                   copy: bool | None = None) -> Any:
        """A DLPack capsule over this tensor's memory (zero-copy exchange with numpy, torch, ...)."""
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        if copy:
            raise BufferError("__dlpack__: copy=True is not supported; export a clone() instead")
        if max_version is None or tuple(max_version) < (1, 0):
            return self.ndarray.backend.to_dlpack(self.ndarray, stream)
        return self.ndarray.backend.to_dlpack(self.ndarray, stream, max_version=tuple(max_version))

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0) if self.device.type == "cpu" else (2, self.device.index)

    def __float__(self) -> float:
        self._check_one_element("double")
        return float(self.item())

    def __int__(self) -> int:
        self._check_one_element("int64_t")
        return int(self.item())

    def _check_one_element(self, real: str | None = None) -> None:
        if self.numel() != 1:
            raise ValueError(f"only one element tensors can be converted to Python scalars (got {self.numel()} "
                             "elements)")
        if real is not None and self.dtype.is_complex:  # as torch: complex(t) reads a complex element
            raise RuntimeError(f"value cannot be converted to type {real} without overflow")

    def __index__(self) -> int:
        if self.dtype.category != 1 or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if (n := self.numel()) != 1:
            what = "more than one value" if n else "no values"
            raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
        return bool(self.item())

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.ndarray.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        from genesis.printing import tensor_repr
        return tensor_repr(self)

    def __str__(self) -> str:
        return self.__repr__()

    def __format__(self, spec: str) -> str:
        # As torch: a 0-d tensor formats as its Python number, any other tensor only with an empty spec.
        if self.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_rebuild, (self.detach().cpu().numpy(), self.dtype.name, str(self.device), self.requires_grad))

    def __deepcopy__(self, memo: dict) -> Tensor:
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               f"protocol (got a tensor with grad_fn=<{self.grad_fn.name()}>)")
        if id(self) in memo:
            return memo[id(self)]
        out = self.detach().clone()
        out.requires_grad = self.requires_grad
        if self.grad is not None:
            out.grad = self.grad.clone()
        memo[id(self)] = out
        return out


def parse_to_args(*args: Any, **kwargs: Any) -> tuple[Device | None, dtypes.dtype | None, bool]:
    """The (device, dtype, copy) that ``to(...)`` asks for: a device, a dtype, both, or a tensor to match. Shared by
    ``Tensor.to`` and ``nn.Module.to``; ``non_blocking`` and ``memory_format`` are read before, by ``Tensor.to``."""
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (dtypes.dtype, type)) or (isinstance(a, str) and a in dtypes.BY_NAME):
            dtype = a
        elif isinstance(a, bool):
            continue
        elif a is not None:
            device = a
    return (to_device(device) if device is not None else None,
            dtypes.to_dtype(dtype) if dtype is not None else None, bool(copy))


def _rebuild(array: np.ndarray, dtype_name: str, device: str, requires_grad: bool) -> Tensor:
    return tensor(array, dtype=dtypes.BY_NAME[dtype_name], device=device, requires_grad=requires_grad)


class Size(tuple):
    """A tensor shape: a tuple of ints that prints like torch.Size; slices, sums and products of sizes are sizes."""

    def __repr__(self) -> str:
        return f"genesis.Size({list(self)})"

    def __getitem__(self, index: Any) -> Any:
        item = super().__getitem__(index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other: Any) -> Any:
        return Size(tuple(self) + tuple(other)) if isinstance(other, tuple) else NotImplemented

    def __radd__(self, other: Any) -> Any:
        return Size(tuple(other) + tuple(self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, n: Any) -> Any:
        return Size(tuple(self) * n) if isinstance(n, int) else NotImplemented

    __rmul__ = __mul__

    def numel(self) -> int:
        return math.prod(self)


# ------------------------------------------------------------------ creation

def _to_ndarray(data: Any, dtype: dtypes.dtype | None, device: Device) -> NDArray:
    if isinstance(data, Tensor):
        nd = data.ndarray
        nd = nd.astype(dtype) if dtype is not None and dtype is not nd.dtype else nd
        nd = nd.to(device)
        if nd is data.ndarray:
            nd = nd.backend.contiguous(nd) if not nd.is_contiguous() else nd.backend.cast(nd, nd.dtype)
        return nd
    if isinstance(data, np.ndarray) or (hasattr(data, "__array__") and not isinstance(data, (list, tuple))):
        if hasattr(data, "__dlpack__") and not isinstance(data, np.ndarray) and type(data).__module__.startswith(
                "torch"):
            data = data.detach().cpu().numpy() if str(data.dtype) != "torch.bfloat16" else \
                data.detach().cpu().float().numpy()
        array = np.asarray(data)
        d = dtype or dtypes.from_numpy(array.dtype)
        if array.dtype != dtypes.to_numpy(d):
            array = array.astype(dtypes.to_numpy(d))
        return device.backend.from_numpy(array, d, device)
    if isinstance(data, (bool, int, float)) or isinstance(data, numbers.Number):
        d = dtype or infer_dtype(data, Tensor)
        if isinstance(data, float) and math.isnan(data) and d.category < 2:
            raise RuntimeError(f"tensor(): cannot convert float NaN to integer dtype {d.name}")
        return NDArray.full((), data, d, device)
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):  # lists, tuples, deques, ranges...
        array = scalars_to_numpy(data, dtype)
        if array is not None:
            return device.backend.from_numpy(array, dtype or dtypes.from_numpy(array.dtype), device)
        data = plain(data)
        d = dtype or infer_dtype(data, Tensor)
        return device.backend.from_numpy(nested_to_numpy(data, d, Tensor), d, device)
    if isinstance(data, (str, bytes)):
        raise TypeError(f"tensor(): invalid data type '{type(data).__name__}'")
    raise RuntimeError(f"tensor(): Could not infer dtype of {type(data).__name__}")


def _made(nd: NDArray, requires_grad: bool, pin_memory: bool = False) -> Tensor:
    """A creation function's result: ``nd`` as a new leaf. ``pin_memory=True`` copies it into page-locked host memory
    first: RuntimeError for a GPU tensor, or where no CUDA GPU is available, as torch."""
    t = Tensor._wrap(nd.pin_memory() if pin_memory else nd)
    return t.requires_grad_(True) if requires_grad else t


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, *,
           pin_memory: bool = False) -> Tensor:
    """A new tensor copied from ``data`` (numbers, nested lists, numpy arrays, tensors)."""
    d = dtypes.to_dtype(dtype) if dtype is not None else None
    dev = factory_device(device) if device is not None or not isinstance(data, Tensor) else data.device
    return _made(_to_ndarray(data, d, dev), requires_grad, pin_memory)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like ``tensor``, but returns ``data`` itself when it already is a tensor of that dtype and device."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if (dtype or device) else data
    if isinstance(data, np.ndarray) and device in (None, "cpu") and dtype is None:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a numpy array."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(ndarray).__name__})")
    dtypes.from_numpy(ndarray.dtype)
    return Tensor._wrap(_cpu.backend.from_numpy_shared(ndarray))


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor sharing memory with any object implementing the DLPack protocol."""
    device_type = ext_tensor.__dlpack_device__()[0] if hasattr(ext_tensor, "__dlpack_device__") else 1
    dev = _cpu if device_type == 1 else Device("cuda", ext_tensor.__dlpack_device__()[1])
    return Tensor._wrap(dev.backend.from_dlpack(ext_tensor))


def _size_args(size: tuple) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if all(s.__class__ is int and s >= 0 for s in size):  # plain non-negative ints: no abstract-class checks
        return size
    for s in size:
        if not isinstance(s, numbers.Integral):
            raise TypeError(f"size must be a sequence of ints, got {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


def _factory(op: str, shape: tuple[int, ...], value: Any, dtype: Any, layout: Any, device: Any, requires_grad: bool,
             pin_memory: bool) -> Tensor:
    """``value`` everywhere in a new dense tensor (``layout`` None or ``strided``; see :func:`_made`)."""
    _mf.check_strided(op, layout)
    d = dtypes.to_dtype(dtype) if dtype is not None else (
        dtypes.scalar_dtype(value) if isinstance(value, (int, float, complex)) else dtypes.get_default_dtype())
    return _made(NDArray.full(shape, value, d, factory_device(device)), requires_grad, pin_memory)


def _shape_from(sizes: tuple, size: Any) -> tuple[int, ...]:
    """The shape from positional sizes or the ``size=`` keyword (torch accepts either)."""
    if size is not None:
        if sizes:
            raise TypeError("got the shape both as positional sizes and as size=")
        sizes = (size,)
    elif not sizes:
        raise TypeError("missing 1 required positional argument: \"size\"")
    return _size_args(sizes)


def zeros(*sizes: Any, size: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
          requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Zeros of the given shape (``layout`` None or ``strided``; ``pin_memory`` as :func:`_made`)."""
    return _factory("zeros", _shape_from(sizes, size), 0.0 if dtype is None else 0, dtype, layout, device,
                    requires_grad, pin_memory)


def ones(*sizes: Any, size: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Ones of the given shape (``layout`` None or ``strided``; ``pin_memory`` as :func:`_made`)."""
    return _factory("ones", _shape_from(sizes, size), 1.0 if dtype is None else 1, dtype, layout, device,
                    requires_grad, pin_memory)


def full(size: Sequence[int], fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
         *, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``fill_value`` everywhere (``layout`` None or ``strided``; ``pin_memory`` as :func:`_made`)."""
    if isinstance(fill_value, (Tensor, np.integer)):
        fill_value = fill_value.item()  # a numpy integer fills an int64 tensor, as torch reads it
    return _factory("full", _size_args((size,) if isinstance(size, int) else tuple(size)), fill_value, dtype,
                    layout, device, requires_grad, pin_memory)


def empty(*sizes: Any, size: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
          requires_grad: bool = False, pin_memory: bool = False, memory_format: Any = None) -> Tensor:
    """Uninitialized memory of the given shape, strided as ``memory_format`` asks (``pin_memory`` as :func:`_made`)."""
    _mf.check_strided("empty", layout)
    d = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    out = _made(NDArray.empty(_shape_from(sizes, size), d, factory_device(device)), requires_grad, pin_memory)
    return out if memory_format is None else _like(out, out, memory_format, "empty")


def _like(input: Tensor, new: Tensor, memory_format: Any, op: str) -> Tensor:
    """``new`` (a fresh row-major tensor of ``input``'s shape holding one value everywhere) laid out as
    ``memory_format`` asks: ``preserve_format`` keeps a dense ``input``'s strides (channels_last, a transpose...),
    as torch's ``*_like`` functions."""
    shape = tuple(input.shape)
    fmt = _mf.check(op, memory_format)
    if fmt is _mf.preserve_format:
        strides = _mf.preserved_strides(shape, input.stride())
    else:
        strides = _mf.strides(shape, fmt)
    nd = new.ndarray
    if strides == nd.strides:
        return new
    out = Tensor._wrap(NDArray(nd.buffer, nd.shape, strides, 0, nd.dtype, nd.device))
    return out.requires_grad_(True) if new.requires_grad else out


def zeros_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False,
               memory_format: Any = _mf.preserve_format, *, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Zeros shaped and (``preserve_format``) laid out like ``input`` (``layout`` None or ``strided``;
    ``pin_memory`` as :func:`_made`)."""
    _mf.check_strided("zeros_like", layout)
    return _like(input, zeros(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                              requires_grad=requires_grad, pin_memory=pin_memory), memory_format, "zeros_like")


def ones_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False,
              memory_format: Any = _mf.preserve_format, *, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Ones shaped and (``preserve_format``) laid out like ``input`` (``layout`` None or ``strided``;
    ``pin_memory`` as :func:`_made`)."""
    _mf.check_strided("ones_like", layout)
    return _like(input, ones(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                             requires_grad=requires_grad, pin_memory=pin_memory), memory_format, "ones_like")


def full_like(input: Tensor, fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
              memory_format: Any = _mf.preserve_format, *, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``fill_value`` everywhere, shaped and (``preserve_format``) laid out like ``input`` (``layout`` None or
    ``strided``; ``pin_memory`` as :func:`_made`)."""
    _mf.check_strided("full_like", layout)
    return _like(input, full(input.shape, fill_value, dtype=dtype or input.dtype, device=device or input.device,
                             requires_grad=requires_grad, pin_memory=pin_memory), memory_format, "full_like")


def empty_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False,
               memory_format: Any = _mf.preserve_format, *, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Uninitialized, shaped and (``preserve_format``) laid out like ``input`` (``layout`` None or ``strided``;
    ``pin_memory`` as :func:`_made`)."""
    _mf.check_strided("empty_like", layout)
    return _like(input, empty(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                              requires_grad=requires_grad, pin_memory=pin_memory), memory_format, "empty_like")


def arange(start: Any = 0, end: Any = None, step: Any = 1, dtype: Any = None, device: Any = None,
           requires_grad: bool = False, *, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) spaced by ``step``; int64 unless an argument is a float
    (``layout`` None or ``strided``; ``pin_memory`` as :func:`_made`)."""
    _mf.check_strided("arange", layout)
    if end is None:
        start, end = 0, start
    # tensors and numpy scalars (np.float32 is no Python float) as the Python numbers torch reads them as
    start, end, step = (v.item() if isinstance(v, (Tensor, np.generic)) else v for v in (start, end, step))
    is_float = any(isinstance(v, float) for v in (start, end, step))
    d = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype() if is_float else dtypes.int64
    if d is dtypes.bool_:
        raise NotImplementedError("arange: not implemented for 'bool'")
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign (start={start}, "
                           f"end={end}, step={step})")
    dev = factory_device(device)
    return _made(dev.backend.arange(start, end, step, d, dev), requires_grad, pin_memory)
