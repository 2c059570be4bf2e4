"""Errors of the CUDA backend, importable without its packages (``genesis.cuda`` exposes them on every machine)."""


class OutOfMemoryError(RuntimeError):
    """The CUDA caching allocator could not serve a request, even after releasing its cache."""
