"""Which kernels ``scaled_dot_product_attention`` may use: torch's ``torch.backends.cuda.*_sdp`` switches.

- ``flash``: Genesis's own Triton FlashAttention-2 kernels (forward and backward).
- ``cudnn``: cuDNN's fused attention graphs through ``nvidia-cudnn-frontend``.
- ``math``: the composite of matrix products and softmax (every device, every dtype, dropout, double backward).

All three are enabled by default; where both fused kernels apply, Genesis times each once per shape class and runs
the faster (``genesis.backends.cuda.sdpa``). ``genesis.nn.attention.sdpa_kernel`` changes these switches for a
``with`` block; the functions here change them for the process. They are also reachable as
``genesis.backends.cuda.enable_flash_sdp`` and so on, the names torch users know.
"""

from __future__ import annotations

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
