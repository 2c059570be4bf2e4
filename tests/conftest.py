"""Test configuration: one switch picks the device every test file runs on.

``GENESIS_TEST_DEVICE=cuda pytest tests`` (or ``pytest --device cuda``) runs the same files on the GPU; CUDA-only
tests skip on machines without one.
"""

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--device", default=None, help="device the tests run on: cpu (default) or cuda")


def pytest_configure(config: pytest.Config) -> None:
    device = config.getoption("--device")
    if device:
        os.environ["GENESIS_TEST_DEVICE"] = device
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Parallel workers already fill the cores: one compute thread each avoids oversubscription.
        import torch

        torch.set_num_threads(1)
