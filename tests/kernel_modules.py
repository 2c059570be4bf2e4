"""Import Genesis's Triton kernel modules on machines without cuda-python or a GPU driver (for the CI kernel tests).

The kernel modules need only Triton; their package ``genesis.backends.cuda`` initializes the CUDA runtime on import.
Where that fails, the kernels are loaded through a bare stand-in package, which is removed again afterwards.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Iterable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kernel_modules(names: Iterable[str]) -> dict[str, types.ModuleType]:
    """``{name: genesis.backends.cuda.kernels.<name>}``, importable without cuda-python or a driver."""
    saved = {k: v for k, v in sys.modules.items() if k.startswith("genesis.backends.cuda")}
    try:
        importlib.import_module("genesis.backends.cuda")
        loaded = True
    except Exception:  # noqa: BLE001 - no cuda-python here: load the kernels through a bare package
        loaded = False
        pkg = types.ModuleType("genesis.backends.cuda")
        pkg.__path__ = [os.path.join(ROOT, "genesis", "backends", "cuda")]
        sys.modules["genesis.backends.cuda"] = pkg
    try:
        return {n: importlib.import_module(f"genesis.backends.cuda.kernels.{n}") for n in names}
    finally:
        if not loaded:
            for k in [k for k in sys.modules if k.startswith("genesis.backends.cuda")]:
                del sys.modules[k]
            sys.modules.update(saved)
