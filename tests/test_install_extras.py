"""The GPU install: the ``cuda`` extra resolves against the package registry, ``genesis.utils.collect_env`` reports
each of its packages, and ``genesis.cuda.is_available()`` stays a bool that points to the report."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import genesis
from genesis.utils import collect_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cuda_extra() -> list[str]:
    """The requirements of pyproject.toml's ``cuda`` extra."""
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        block = re.search(r"^cuda = \[(.*?)^\]", f.read(), re.MULTILINE | re.DOTALL).group(1)
    return re.findall(r'"([^"]+)"', block)


def _gpu_torch_pin() -> str:
    """The torch requirement ``make demo DEVICE=cuda`` installs beside the ``cuda`` extra."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        return re.search(r"^TORCH := (torch==\S+)$", f.read(), re.MULTILINE).group(1)


def _pip(*args: str, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def test_collect_env_lists_the_cuda_extra() -> None:
    names = [re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0] for req in _cuda_extra()]
    assert list(collect_env.GPU_PACKAGES) == names


def test_cuda_extra_resolves() -> None:
    """What ``make demo DEVICE=cuda`` installs on a fresh GPU machine (the GPU suite's torch, then ``.[cuda]``)
    resolves, with the metadata of the registry's wheels only (``--dry-run`` installs nothing)."""
    try:
        probe = _pip("index", "versions", "cuda-bindings", timeout=60)
    except subprocess.TimeoutExpired:
        pytest.skip("the package registry did not answer within 60 s")
    if probe.returncode != 0:
        pytest.skip(f"the package registry is unreachable: {probe.stderr.strip()[-300:]}")
    result = _pip("install", "--dry-run", "--ignore-installed", "--quiet", _gpu_torch_pin(), "-e", ".[cuda]",
                  timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def test_collect_env_report() -> None:
    info = collect_env.get_env_info()
    assert info["genesis"].startswith(genesis.__version__)
    assert set(info["gpu_packages"]) == set(collect_env.GPU_PACKAGES)
    assert info["cuda_available"] is genesis.cuda.is_available()
    text = collect_env.pretty_str(info)
    for name in collect_env.GPU_PACKAGES:
        assert name in text
    if not info["cuda_available"]:
        assert info["problems"], "CUDA is unavailable but the report names nothing missing"
        assert "Why CUDA cannot be used:" in text


def test_collect_env_runs_as_a_module() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (ROOT, os.environ.get("PYTHONPATH")))))
    result = subprocess.run([sys.executable, "-m", "genesis.utils.collect_env"], capture_output=True, text=True,
                            env=env, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "Genesis version:" in result.stdout and "genesis.cuda.is_available():" in result.stdout


def test_is_available_is_a_bool_and_points_to_collect_env() -> None:
    assert isinstance(genesis.cuda.is_available(), bool)
    assert "collect_env" in genesis.cuda.is_available.__doc__
