"""Test configuration: one switch picks the device every test file runs on.

``GENESIS_TEST_DEVICE=cuda pytest tests`` (or ``pytest --device cuda``) runs the same files on the GPU; CUDA-only
tests skip on machines without one. On CUDA the suite runs with ``GENESIS_SYNC_CHECKS=1`` (eager validity checks).
"""

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--device", default=None, help="device the tests run on: cpu (default) or cuda")


def pytest_configure(config: pytest.Config) -> None:
    device = config.getoption("--device")
    if device:
        os.environ["GENESIS_TEST_DEVICE"] = device
    if os.environ.get("GENESIS_TEST_DEVICE") == "cuda":
        # The shared suite compares exception classes with torch's CPU at the call: CUDA's device-side checks raise
        # there too in this mode. tests/test_device_checks.py turns it off to test the deferred reports.
        os.environ.setdefault("GENESIS_SYNC_CHECKS", "1")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Parallel workers already fill the cores: one compute thread each avoids oversubscription.
        import torch

        torch.set_num_threads(1)


@pytest.fixture
def full_float32():
    """float32 at full precision in cuDNN (convolutions, recurrent layers) unless a test turns TF32 on: torch's CPU
    oracle has no TF32. Modules comparing those layers with it use it (``pytest.mark.usefixtures``)."""
    import genesis

    with genesis.backends.cudnn.flags(allow_tf32=False):
        yield
