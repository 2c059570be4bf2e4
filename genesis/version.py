"""``genesis.version``, as ``torch.version``: the package version and the CUDA version the GPU path runs on.

``cuda`` is the CUDA version of the installed ``cuda-bindings`` package (``"12.9"``), read from its metadata without
loading CUDA, or None where it is not installed (as torch's CPU builds report None). ``hip`` is always None.
"""

from __future__ import annotations

from importlib import metadata


def _cuda_version() -> str | None:
    for dist in ("cuda-bindings", "cuda-python"):
        try:
            parts = metadata.version(dist).split(".")
        except metadata.PackageNotFoundError:
            continue
        return ".".join(parts[:2])
    return None


__version__ = "0.1.0"
cuda = _cuda_version()
hip = None
debug = False
git_version = "unknown"
