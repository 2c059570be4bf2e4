"""``genesis.nn.modules.fold``: torch's module path of ``Fold`` and ``Unfold`` (defined in ``conv.py``)."""

from genesis.nn.modules.conv import Fold, Unfold

__all__ = ["Fold", "Unfold"]
