"""cuDNN through NVIDIA's cudnn-frontend (``import cudnn``): the library handle and workspace shared by every user.

The frontend is optional: :func:`is_available` is False when the package or ``libcudnn`` is missing, and callers
then use their Triton or cuBLASLt path. One handle per device is created on first use; :func:`handle` binds it to
the current Genesis stream whenever that stream changed since the last call (every cuDNN call of Genesis goes
through it), so cuDNN work is ordered with Genesis's own kernels. The workspace is one
device buffer per device from the caching allocator, grown when a plan needs more and kept for the process.
"""

from __future__ import annotations

from typing import Any

from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import storage

_module: Any = None
_load_error: str | None = None
_handles: dict[int, list] = {}  # device -> [cudnn.Handle, its backend handle (int), the stream it is bound to]


def _load() -> Any:
    """The ``cudnn`` module, imported once; None (with the reason kept) when it cannot be used."""
    global _module, _load_error
    if _module is None and _load_error is None:
        try:
            import cudnn

            cudnn.backend_version()  # loads libcudnn: fails here, not in the middle of a call, when it is missing
            _module = cudnn
        except Exception as exc:  # any import or loader failure means "not available"
            _load_error = f"{type(exc).__name__}: {exc}"
    return _module


def is_available() -> bool:
    """True when cudnn-frontend imports and finds ``libcudnn``."""
    return _load() is not None


def unavailable_reason() -> str | None:
    """Why :func:`is_available` is False, or None."""
    _load()
    return _load_error


def version() -> int:
    """cuDNN's version number (e.g. 91900); raises RuntimeError when cuDNN cannot be used."""
    return int(module().backend_version())


def module() -> Any:
    """The ``cudnn`` module; raises RuntimeError when cuDNN cannot be used."""
    mod = _load()
    if mod is None:
        raise RuntimeError(f"cuDNN is not available: {_load_error}")
    return mod


def handle() -> int:
    """The current device's cuDNN handle (the backend's int handle), bound to the current Genesis stream."""
    entry = _handles.get(rt.state.device)
    if entry is None:
        device = rt.current_device()  # sets the first device when none is current yet
        entry = _handles.get(device)
        if entry is None:
            h = module().create_handle()
            entry = _handles[device] = [h, h.backend_handle, None]
    stream = rt.stream_handle()
    if entry[2] != stream:
        module().set_stream(entry[0], stream)
        entry[2] = stream
    return entry[1]


def workspace(nbytes: int) -> Any:
    """Scratch memory for one cuDNN call on the current stream, as torch allocates its cuDNN workspaces: a block of
    the caching allocator (None when no memory is needed), to hold until the call is enqueued. Dropped then, the
    block goes back to the stream's free list, and only work queued later on that stream, which runs after the
    call, gets it again: the workspace counts in the peak only around the call, not for the process's lifetime."""
    return storage.alloc(nbytes, rt.current_device()) if nbytes > 0 else None


def pointer(scratch: Any) -> int:
    """The device address of a ``workspace`` (0 for None)."""
    return 0 if scratch is None else scratch.ptr
