"""CUDA switches, as ``torch.backends.cuda``: TF32 matrix products and the kernels ``scaled_dot_product_attention``
may use. They work on every machine (they need no GPU package); the CUDA backend reads them at every call.

``matmul.allow_tf32`` lets float32 matrix products use TF32 tensor cores (off by default, as in torch).

Attention kernels (torch's ``*_sdp`` switches):

- ``flash``: Genesis's own Triton FlashAttention-2 kernels (forward and backward).
- ``cudnn``: cuDNN's fused attention graphs through ``nvidia-cudnn-frontend``.
- ``math``: the composite of matrix products and softmax (every device, every dtype, dropout, double backward).

All three are enabled by default; where both fused kernels apply, the CUDA backend times each once per shape class
and runs the faster. ``genesis.nn.attention.sdpa_kernel`` changes these switches for a ``with`` block (through
:func:`state`, :func:`restore` and a fixed :func:`priority` order), as does torch's deprecated :func:`sdp_kernel`;
the ``enable_*`` functions change them for the process.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator


class _MatmulSwitches:
    """``torch.backends.cuda.matmul``: whether float32 products may use TF32 tensor cores (off by default)."""

    allow_tf32 = False


matmul = _MatmulSwitches()

_PRECISIONS = ("highest", "high", "medium")
_precision = "highest"  # the last precision set, while allow_tf32 agrees with it


def set_float32_matmul_precision(precision: str) -> None:
    """torch's ``set_float32_matmul_precision``: "highest" keeps float32 products in float32; "high" and "medium"
    let them use TF32 tensor cores (``matmul.allow_tf32``). Another value warns and changes nothing, as torch."""
    global _precision
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", stacklevel=2)
        return
    _precision = precision
    matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision() -> str:
    """The float32 matrix-product precision: "highest" unless TF32 is allowed (then the precision last set, "high"
    when ``matmul.allow_tf32`` was set directly)."""
    if not matmul.allow_tf32:
        return "highest"
    return _precision if _precision != "highest" else "high"

FLASH, CUDNN, MATH = "flash", "cudnn", "math"
BACKENDS = (FLASH, CUDNN, MATH)

_enabled = {FLASH: True, CUDNN: True, MATH: True}
_priority: tuple[str, ...] | None = None  # a fixed preference order instead of measuring (sdpa_kernel)


def enable_flash_sdp(enabled: bool) -> None:
    """Allow or forbid Genesis's Triton flash-attention kernels."""
    _enabled[FLASH] = bool(enabled)


def flash_sdp_enabled() -> bool:
    """Whether Genesis's Triton flash-attention kernels may run."""
    return _enabled[FLASH]


def enable_cudnn_sdp(enabled: bool) -> None:
    """Allow or forbid cuDNN's fused attention."""
    _enabled[CUDNN] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    """Whether cuDNN's fused attention may run."""
    return _enabled[CUDNN]


def enable_math_sdp(enabled: bool) -> None:
    """Allow or forbid the composite (matmul + softmax) attention."""
    _enabled[MATH] = bool(enabled)


def math_sdp_enabled() -> bool:
    """Whether the composite (matmul + softmax) attention may run."""
    return _enabled[MATH]


def priority() -> tuple[str, ...] | None:
    """The fused kernels in the order to try them, or None to pick the faster by measurement."""
    return _priority


def state() -> tuple[dict[str, bool], tuple[str, ...] | None]:
    """The switches and the priority order, to restore them later with :func:`restore`."""
    return dict(_enabled), _priority


def restore(saved: tuple[dict[str, bool], tuple[str, ...] | None]) -> None:
    """Set the switches and the priority order saved by :func:`state` (or built by ``sdpa_kernel``)."""
    global _priority
    enabled, order = saved
    _enabled.update(enabled)
    _priority = order


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True) -> Iterator[None]:
    """torch's deprecated ``torch.backends.cuda.sdp_kernel`` (it warns ``FutureWarning`` as torch): within the block,
    ``scaled_dot_product_attention`` may use only the kernels enabled here, as
    ``genesis.nn.attention.sdpa_kernel`` with the matching list of backends (the switches are restored after it).

    ``enable_flash`` is Genesis's Triton FlashAttention-2, ``enable_cudnn`` cuDNN's fused attention and
    ``enable_math`` the composite; ``enable_mem_efficient`` names a kernel Genesis does not have and changes nothing.
    """
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be "
                  "removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with updated "
                  "signature.", FutureWarning, stacklevel=3)
    saved = state()
    restore(({FLASH: bool(enable_flash), CUDNN: bool(enable_cudnn), MATH: bool(enable_math)}, None))
    try:
        yield
    finally:
        restore(saved)
