"""Switches that steer the backends, as ``torch.backends``: ``genesis.backends.cuda`` (TF32 matrix products, which
attention kernels may run), ``genesis.backends.cudnn`` (cuDNN convolutions), ``genesis.backends.mps`` (never
available: Genesis runs on CPUs and NVIDIA GPUs), ``genesis.backends.mkldnn`` (never available: Genesis has no
oneDNN backend; its switches are settings only) and the deterministic-algorithms switch.

These are plain settings: they import no GPU package and work on every machine. The backends themselves live in
``genesis._impl`` and read these switches at every call.
"""

from genesis.backends import cuda, cudnn, mkldnn, mps  # noqa: F401 - the switch namespaces (torch.backends.cuda...)

_deterministic = False
_warn_only = False


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """torch's ``use_deterministic_algorithms``: while on, convolutions pick deterministic cuDNN plans (as
    ``cudnn.deterministic``). Genesis's other kernels reduce in a fixed order, except the atomic accumulations of
    ``index_add_``, ``index_put_(accumulate=True)`` and ``scatter_add_`` on cuda, which are not refused here."""
    global _deterministic, _warn_only
    _deterministic, _warn_only = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in effect."""
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode was set with ``warn_only=True``."""
    return _warn_only
