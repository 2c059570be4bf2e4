"""torch.backends-style switches: ``genesis.backends.cuda`` and ``genesis.backends.cudnn`` work on every machine."""

from __future__ import annotations

import genesis


def test_cuda_matmul_tf32_switch_is_shared() -> None:
    switches = genesis.backends.cuda
    assert switches.matmul.allow_tf32 is False  # off by default, as in torch
    try:
        switches.matmul.allow_tf32 = True
        assert genesis.backends.cuda_switches.matmul.allow_tf32 is True
        genesis.cuda.set_allow_tf32(False)
        assert switches.matmul.allow_tf32 is False
    finally:
        genesis.cuda.set_allow_tf32(False)


def test_cuda_attention_switches() -> None:
    switches = genesis.backends.cuda
    assert switches.flash_sdp_enabled() and switches.cudnn_sdp_enabled() and switches.math_sdp_enabled()
    try:
        switches.enable_flash_sdp(False)
        assert not switches.flash_sdp_enabled()
    finally:
        switches.enable_flash_sdp(True)


def test_cudnn_switches() -> None:
    cudnn = genesis.backends.cudnn
    assert cudnn.enabled is True and cudnn.allow_tf32 is True and cudnn.benchmark is False
    with cudnn.flags(benchmark=True):
        assert cudnn.benchmark is True
    assert cudnn.benchmark is False
