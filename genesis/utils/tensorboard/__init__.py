"""``genesis.utils.tensorboard``: torch's ``torch.utils.tensorboard.SummaryWriter``, writing TensorBoard event
files with the standard library and numpy only (no ``tensorboard`` or ``protobuf`` package). ``writer.py`` holds
the API, ``summary.py`` builds the messages, ``event_file.py`` encodes and writes them."""

from genesis.utils.tensorboard.writer import SummaryWriter

__all__ = ["SummaryWriter"]
