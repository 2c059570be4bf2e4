"""``torch.backends.mps`` as Genesis answers it: Apple's Metal backend is never available (Genesis computes on CPUs
and NVIDIA GPUs), so device-picking code such as ``"mps" if torch.backends.mps.is_available() else "cpu"`` falls
through to the next choice."""


def is_available() -> bool:
    """False: Genesis has no Metal backend."""
    return False


def is_built() -> bool:
    """False: Genesis has no Metal backend."""
    return False
