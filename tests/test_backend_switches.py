"""torch.backends-style switches: ``genesis.backends.cuda`` and ``genesis.backends.cudnn`` work on every machine."""

from __future__ import annotations

import subprocess
import sys

import genesis


def test_cuda_matmul_tf32_switch_is_shared() -> None:
    switches = genesis.backends.cuda
    assert switches.matmul.allow_tf32 is False  # off by default, as in torch
    try:
        genesis.backends.cuda.matmul.allow_tf32 = True
        assert switches.matmul.allow_tf32 is True
        genesis.cuda.set_allow_tf32(False)
        assert switches.matmul.allow_tf32 is False
    finally:
        genesis.cuda.set_allow_tf32(False)


def test_switch_namespaces_import_without_gpu_packages() -> None:
    """The switch modules are plain settings: importing them loads no backend and no GPU package (nor torch)."""
    code = ("import sys, genesis.backends.cuda, genesis.backends.cudnn; "
            "loaded = [m for m in sys.modules if m.split('.')[0] in ('torch', 'triton', 'cuda', 'cudnn', 'nvmath') "
            "or m in ('genesis._impl.cpu', 'genesis._impl.cuda') or m.startswith('genesis._impl.cuda.')]; "
            "print(loaded)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out


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
    if not genesis.cuda.is_available():
        assert cudnn.is_available() is False and cudnn.version() is None
