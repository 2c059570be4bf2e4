"""``genesis.nn.modules.flatten``: torch's module path of ``Flatten`` and ``Unflatten`` (defined in ``linear.py``)."""

from genesis.nn.modules.linear import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]
