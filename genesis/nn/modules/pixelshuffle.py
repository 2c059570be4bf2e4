"""``genesis.nn.modules.pixelshuffle``: torch's module path of ``PixelShuffle`` and ``PixelUnshuffle`` (defined in
``shuffle.py``)."""

from genesis.nn.modules.shuffle import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
