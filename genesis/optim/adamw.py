"""``genesis.optim.adamw``: torch's module path of ``AdamW`` (defined beside ``Adam`` in ``adam.py``), for scripts
that import it from here or name it in a checkpoint's safe globals."""

from __future__ import annotations

from genesis.optim.adam import AdamW

__all__ = ["AdamW"]
