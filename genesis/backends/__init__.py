"""Switches that steer the backends, as ``torch.backends``: ``genesis.backends.cuda`` (TF32 matrix products, which
attention kernels may run), ``genesis.backends.cudnn`` (cuDNN convolutions), ``genesis.backends.mps`` (never
available: Genesis runs on CPUs and NVIDIA GPUs), ``genesis.backends.mkldnn`` (never available: Genesis has no
oneDNN backend; its switches are settings only), ``genesis.backends.mha`` (the transformer fast path
switch) and the deterministic-algorithms switch.

These are plain settings: they import no GPU package and work on every machine. The backends themselves live in
``genesis._impl`` and read these switches at every call.
"""

from genesis.backends import cuda, cudnn, mha, mkldnn, mps  # noqa: F401 - the switch namespaces (torch.backends.*)

_deterministic = False
_warn_only = False


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """torch's ``use_deterministic_algorithms``: while on, convolutions pick deterministic cuDNN plans (as
    ``cudnn.deterministic``). Genesis's other kernels reduce in a fixed order, except the atomic accumulations of
    ``index_add_``, ``index_put_(accumulate=True)`` and ``scatter_add_`` on cuda, which are not refused here."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    global _deterministic, _warn_only
    _deterministic, _warn_only = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in effect."""
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode was set with ``warn_only=True``."""
    return _warn_only


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """torch's other spelling of :func:`use_deterministic_algorithms`: ``"default"``/0 off, ``"warn"``/1 on with
    ``warn_only``, ``"error"``/2 on."""
    if not isinstance(debug_mode, (int, str)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """The deterministic mode as :func:`set_deterministic_debug_mode` numbers it: 0 off, 1 warn only, 2 on."""
    if not _deterministic:
        return 0
    return 1 if _warn_only else 2
