"""``genesis.nn.attention``: choose the kernels of ``scaled_dot_product_attention`` (``torch.nn.attention``'s shape).

    from genesis.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):          # only cuDNN's fused attention
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):   # Genesis's Triton kernel, else the composite
        ...
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION], set_priority=True):
        ...                                                 # cuDNN where it applies, Triton otherwise, no timing

The backward of an attention call always runs on the kernel its forward used, whatever the switches are then.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterable, Iterator

from genesis.backends import cuda as sdp

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """The kernels of ``scaled_dot_product_attention`` (torch's names and values).

    FLASH_ATTENTION is Genesis's own Triton FlashAttention-2 (on the CPU: torch's flash kernel for the CPU);
    EFFICIENT_ATTENTION and OVERRIDEABLE name kernels Genesis does not have, so enabling one alone leaves only what
    else is enabled (as on a torch build without that kernel). A member prints as torch's: ``SDPBackend.MATH``.
    """

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    __str__ = enum.Enum.__str__
    __format__ = enum.Enum.__format__


_NAMES = {SDPBackend.MATH: sdp.MATH, SDPBackend.FLASH_ATTENTION: sdp.FLASH, SDPBackend.CUDNN_ATTENTION: sdp.CUDNN}


@contextlib.contextmanager
def sdpa_kernel(backends: SDPBackend | Iterable[SDPBackend], set_priority: bool = False) -> Iterator[None]:
    """Within the block, ``scaled_dot_product_attention`` uses only ``backends``.

    Args:
        backends: one backend or a list of them.
        set_priority: try the fused kernels in the order given instead of timing them once per shape.
    """
    chosen = [backends] if isinstance(backends, SDPBackend) else list(backends)
    for b in chosen:
        if not isinstance(b, SDPBackend):
            raise TypeError(f"sdpa_kernel: backends must be SDPBackend members, got {b!r}")
    names = [_NAMES[b] for b in chosen if b in _NAMES]
    order = tuple(n for n in names if n != sdp.MATH) if set_priority else None
    saved = sdp.state()
    sdp.restore(({name: name in names for name in sdp.BACKENDS}, order))
    try:
        yield
    finally:
        sdp.restore(saved)
