"""``genesis.nn.modules.channelshuffle``: torch's module path of ``ChannelShuffle`` (defined in ``shuffle.py``)."""

from genesis.nn.modules.shuffle import ChannelShuffle

__all__ = ["ChannelShuffle"]
