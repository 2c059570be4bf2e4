"""``Variable``, the pre-0.4 PyTorch wrapper that old scripts still call: ``Variable(x, requires_grad=True)``.

As in torch since 0.4, a Variable is a tensor: ``Variable(x)`` returns a leaf tensor sharing ``x``'s memory, and
``isinstance(t, Variable)`` holds for every tensor.
"""

from __future__ import annotations

from typing import Any

from genesis.autograd import function as _fn


class _VariableMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _fn.Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)``: ``data`` as a leaf tensor (sharing its memory) that
    requires grad as asked; ``volatile`` is ignored (torch ignores it too, with a warning)."""

    def __new__(cls, data: Any, requires_grad: bool = False, volatile: bool = False) -> Any:
        if not isinstance(data, _fn.Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
