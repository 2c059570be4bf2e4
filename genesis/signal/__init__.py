"""``genesis.signal``: torch.signal's signal-processing helpers; :mod:`genesis.signal.windows` holds its window
functions."""

from genesis.signal import windows

__all__ = ["windows"]
