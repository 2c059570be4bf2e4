"""``genesis.backends.cuda`` where the CUDA backend's packages (cuda-python, Triton) are not installed.

torch users set ``torch.backends.cuda.matmul.allow_tf32`` and call ``torch.backends.cuda.enable_flash_sdp`` on any
machine. With the CUDA backend installed, ``genesis.backends.cuda`` is that backend, which carries the same
switches; without it, this module stands in so those lines still run (the switches then have nothing to steer).
Either way the TF32 switch of matrix products lives here, so setting it never needs the GPU packages.
"""

from __future__ import annotations

from genesis.backends.sdp import (  # noqa: F401 - torch.backends.cuda's attention switches
    cudnn_sdp_enabled,
    enable_cudnn_sdp,
    enable_flash_sdp,
    enable_math_sdp,
    flash_sdp_enabled,
    math_sdp_enabled,
)


class _MatmulSwitches:
    """``torch.backends.cuda.matmul``: whether float32 products may use TF32 tensor cores (off by default)."""

    allow_tf32 = False


matmul = _MatmulSwitches()
