"""Report the environment Genesis runs in, as torch's ``collect_env``: ``python -m genesis.utils.collect_env``.

It prints the Python, OS and Genesis versions, the PyTorch build behind the CPU backend, each GPU package of the
``cuda`` extra (its installed version, or that it is missing), the NVIDIA driver and GPUs found, and when
``genesis.cuda.is_available()`` is False, what is missing. Paste its output into bug reports.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys

import genesis
from genesis._impl import cuda_probe

# The `cuda` extra of pyproject.toml (tests/test_install_extras.py keeps the two lists equal): distribution names.
GPU_PACKAGES = ("cuda-bindings", "cuda-core", "triton", "nvmath-python", "nvidia-cudnn-frontend",
                "nvidia-cudnn-cu13", "nvidia-cublas", "nvidia-nccl-cu13", "nccl4py")
# Environment variables that change which GPU or which code path Genesis uses.
ENV_VARS = ("CUDA_VISIBLE_DEVICES", "GENESIS_SYNC_CHECKS", "GENESIS_TEST_DEVICE", "TRITON_INTERPRET")


def package_version(name: str) -> str | None:
    """The installed version of the distribution ``name``, or None when it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def get_env_info() -> dict[str, object]:
    """The environment as a dict: ``python``, ``os``, ``genesis``, ``torch``, ``gpu_packages`` (name to version or
    None), ``driver``, ``devices``, ``cuda_available``, ``problems`` (what keeps CUDA from being used) and ``env``."""
    probe = cuda_probe.report()
    packages = {name: package_version(name) for name in GPU_PACKAGES}
    problems = list(probe["problems"])  # type: ignore[call-overload]
    missing = [name for name, version in packages.items() if version is None]
    if missing:
        problems.insert(0, f"GPU packages not installed: {', '.join(missing)} (pip install -e '.[cuda]')")
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})",
        "os": platform.platform(),
        "genesis": f"{genesis.__version__} ({os.path.dirname(os.path.abspath(genesis.__file__))})",
        "torch": package_version("torch"),
        "gpu_packages": packages,
        "driver": probe["driver"],
        "devices": probe["devices"],
        "cuda_available": cuda_probe.is_available(),
        "problems": problems,
        "env": {name: os.environ[name] for name in ENV_VARS if name in os.environ},
    }


def pretty_str(info: dict[str, object]) -> str:
    """``info`` from :func:`get_env_info` as the lines ``python -m genesis.utils.collect_env`` prints."""
    lines = [
        f"Genesis version: {info['genesis']}",
        f"Python version: {info['python']}",
        f"OS: {info['os']}",
        f"PyTorch (CPU backend and test oracle): {info['torch'] or 'not installed'}",
        "",
        "GPU packages (the `cuda` extra):",
    ]
    lines += [f"  {name:<24} {version or 'not installed'}" for name, version in info["gpu_packages"].items()]
    lines += [
        "",
        f"NVIDIA driver (CUDA version it supports): {info['driver'] or 'not found'}",
        *([] if info["devices"] else ["GPUs: none found"]),
        *[f"GPU {index}: {device}" for index, device in enumerate(info["devices"])],
        f"genesis.cuda.is_available(): {info['cuda_available']}",
    ]
    if info["problems"]:
        title = "Missing (optional with a GPU)" if info["cuda_available"] else "Why CUDA cannot be used"
        lines += [f"{title}:", *[f"  - {problem}" for problem in info["problems"]]]
    if info["env"]:
        lines += ["", "Environment:", *[f"  {name}={value}" for name, value in info["env"].items()]]
    return "\n".join(lines)


def main() -> None:
    """Print the environment report."""
    print(pretty_str(get_env_info()))


if __name__ == "__main__":
    main()
