"""Autocast: the mixed-precision policy of the ops (as ``torch.autocast``).

Autocast runs selected ops in a lower precision. The policy is a small table per device type, torch's: ops that
gain from bfloat16/float16 arithmetic (matrix products, convolutions, attention) cast their floating-point inputs
down; ops that need range or accuracy (losses; on CUDA also softmax, norms, exp, log, sum, pow ...) cast them up to
float32; a few ops that mix inputs promote them to the widest one. Each op that the table names calls
:func:`autocast_args` on its tensor arguments first; outside autocast that call returns at once. float64 tensors
are never cast. The state is thread-local: each thread starts with autocast off.

``genesis.amp`` re-exports everything public here, next to its gradient scaler.
"""

from __future__ import annotations

import functools
import threading
import warnings
from typing import Any, Callable

from genesis import dtypes
from genesis.tensor import Tensor

# ------------------------------------------------------------------ the policy

LOWER, FP32, PROMOTE, BANNED = "lower", "fp32", "promote", "banned"

#: device type -> op name -> how autocast treats the op's floating-point inputs. Filled from the rules the op registry
#: declares (``genesis.ops.registry``) by its binding step.
POLICY: dict[str, dict[str, str]] = {"cpu": {}, "cuda": {}}

_SUPPORTED_DTYPES = {"cpu": (dtypes.bfloat16, dtypes.float16), "cuda": (dtypes.float16, dtypes.bfloat16)}
_DEFAULT_DTYPE = {"cpu": dtypes.bfloat16, "cuda": dtypes.float16}

# ------------------------------------------------------------------ thread-local state


class _State(threading.local):
    def __init__(self) -> None:
        self.stack: list[tuple[str, bool, dtypes.dtype]] = []
        self.active: dict[str, dtypes.dtype] = {}  # device type -> autocast dtype, for enabled ones


_state = _State()


def _refresh() -> None:
    active: dict[str, dtypes.dtype] = {}
    for device_type, enabled, dtype in _state.stack:
        if enabled:
            active[device_type] = dtype
        else:
            active.pop(device_type, None)
    _state.active = active


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for ``device_type`` in this thread."""
    return device_type in _state.active


def get_autocast_dtype(device_type: str = "cuda") -> dtypes.dtype:
    """The lower-precision dtype autocast uses for ``device_type`` (its default when autocast is off)."""
    return _state.active.get(device_type, _DEFAULT_DTYPE[device_type])


def _eligible(x: Any) -> bool:
    return isinstance(x, Tensor) and x.dtype.is_floating_point and x.dtype is not dtypes.float64


def autocast_args(op: str, *args: Any) -> tuple[Any, ...]:
    """``args`` cast as the active autocast policy wants for ``op`` (unchanged outside autocast).

    Called at the top of every op named in :data:`POLICY`:
    ``input, weight = amp.autocast_args("linear", input, weight)``. Only floating-point tensors other than
    float64 that live on a device type with autocast enabled are cast; the casts are differentiable.
    """
    active = _state.active
    if not active:
        return args
    for x in args:
        if _eligible(x):
            device_type = x.device.type
            break
    else:
        return args
    target = active.get(device_type)
    rule = POLICY[device_type].get(op) if target is not None else None
    if rule is None:
        return args
    if rule == BANNED:
        raise RuntimeError(
            f"genesis.nn.functional.{op} and its module are unsafe to autocast on {device_type}. Use "
            "binary_cross_entropy_with_logits (BCEWithLogitsLoss), which combines the sigmoid and the loss and is "
            "safe to autocast, or disable autocast around this op."
        )
    if rule == FP32:
        target = dtypes.float32
    elif rule == PROMOTE:
        widest = [x.dtype for x in args if _eligible(x)]
        target = functools.reduce(dtypes.promote_types, widest)
    return tuple(x.to(target) if _eligible(x) and x.dtype is not target and x.device.type == device_type else x
                 for x in args)


class autocast:
    """Run the ops of a region in mixed precision (a context manager and a decorator; nestable).

    Args:
        device_type: "cpu" or "cuda".
        dtype: the lower precision (default bfloat16 on the CPU, float16 on CUDA).
        enabled: False turns autocast off inside the region (also inside an enclosing autocast).
        cache_enabled: accepted for torch compatibility (casts are not cached).
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in POLICY:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device_type = device_type
        self.fast_dtype = dtypes.to_dtype(dtype) if dtype is not None else _DEFAULT_DTYPE[device_type]
        self._enabled = bool(enabled)
        if self._enabled and self.fast_dtype not in _SUPPORTED_DTYPES[device_type]:
            warnings.warn(f"In {device_type.upper()} autocast, but the target dtype {self.fast_dtype} is not "
                          "supported. Disabling autocast.", stacklevel=2)
            self._enabled = False
        self.cache_enabled = cache_enabled

    def __enter__(self) -> autocast:
        _state.stack.append((self.device_type, self._enabled, self.fast_dtype))
        _refresh()
        return self

    def __exit__(self, *exc: object) -> None:
        _state.stack.pop()
        _refresh()

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device_type, self.fast_dtype, self._enabled, self.cache_enabled):
                return fn(*args, **kwargs)

        return wrapper


__all__ = ["POLICY", "autocast", "autocast_args", "get_autocast_dtype", "is_autocast_enabled"]
