"""``nn.Parameter``: a tensor that a Module registers as a learnable parameter when assigned as an attribute;
``nn.Buffer``; and the placeholders of the lazy layers, ``UninitializedParameter`` and ``UninitializedBuffer``."""

from __future__ import annotations

from typing import Any

from genesis.tensor import Tensor, empty


class Parameter(Tensor):
    """A Tensor that is a module parameter (``torch.nn.Parameter``).

    It shares memory with ``data`` and requires gradients unless ``requires_grad=False``. Ops on a Parameter return
    plain Tensors; assigning a Parameter to a Module attribute registers it in ``module._parameters``.

    Args:
        data: the initial values (an empty 1-D tensor when omitted).
        requires_grad: whether the parameter takes part in autograd.
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: data must be a Tensor, got {type(data).__name__}")
        param = cls._wrap(data.ndarray)
        param._vc = data._vc
        param.requires_grad_(requires_grad)
        return param

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Everything happens in __new__; Tensor.__init__ must not run again on the shared storage. Any arguments are
        # accepted, as by torch's Parameter (which has no __init__): a subclass's __new__ may take more (quantized
        # parameters' ``quant_state``, ``blocksize``...).
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        out = Parameter(self.detach().clone(), self.requires_grad)  # no .grad: torch's copy leaves it None
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """Marks a tensor as a buffer when assigned to a Module attribute (``torch.nn.Buffer``).

    Args:
        data: the buffer's values.
        persistent: whether the buffer is part of the module's ``state_dict``.
    """

    def __new__(cls, data: Tensor, *, persistent: bool = True) -> Buffer:
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer: data must be a Tensor, got {type(data).__name__}")
        buf = cls._wrap(data.ndarray)
        buf._vc = data._vc
        buf.persistent = persistent
        return buf

    def __init__(self, data: Tensor, *, persistent: bool = True) -> None:
        pass


class UninitializedTensorMixin:
    """A placeholder without a shape yet (the lazy layers' parameters and buffers): :meth:`materialize` gives it one
    and turns it into its ``cls_to_become``."""

    cls_to_become: type

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give this placeholder the (uninitialized) values of ``shape``, on ``device`` in ``dtype`` (its own by
        default), and make it a ``cls_to_become`` in place: the same object, so holders of it stay valid."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.data = empty(shape, device=self.device if device is None else device,
                          dtype=self.dtype if dtype is None else dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (``torch.nn.parameter.UninitializedParameter``): a lazy layer's until
    its first call; :meth:`materialize` makes it a :class:`Parameter`."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> UninitializedParameter:
        return super().__new__(cls, empty((0,), device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (``torch.nn.parameter.UninitializedBuffer``); :meth:`materialize` makes
    it a plain Tensor."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None) -> UninitializedBuffer:
        buf = cls._wrap(empty((0,), device=device, dtype=dtype).ndarray)
        buf.requires_grad_(requires_grad)
        return buf

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None) -> None:
        pass
