"""``genesis.optim.radam``: torch's module path of ``RAdam`` (defined with the other Adam-moment variants in
``nadam.py``), for scripts that import it from here or name it in a checkpoint's safe globals."""

from __future__ import annotations

from genesis.optim.nadam import RAdam

__all__ = ["RAdam"]
