"""Autocast: the mixed-precision policy of the ops (as ``torch.autocast``).

Autocast runs selected ops in a lower precision. The policy is a small table per device type, torch's: ops that
gain from bfloat16/float16 arithmetic (matrix products, convolutions, attention) cast their floating-point inputs
down; ops that need range or accuracy (losses; on CUDA also softmax, norms, exp, log, sum, pow ...) cast them up to
float32; a few ops that mix inputs promote them to the widest one. Each op that the table names calls
:func:`autocast_args` on its tensor arguments first; outside autocast that call returns at once. float64 tensors
are never cast. The state is torch's, per thread: an on/off switch and a lower dtype per device type
(:func:`set_autocast_enabled`, :func:`set_autocast_dtype`), which each region sets when it enters and restores
when it exits; each thread starts with autocast off.

Cast cache (torch's): inside a region, the lower-precision copy of a float32 parameter (a leaf that requires grad,
not a view) is made once and reused by every op of the region; the cache empties when the outermost region exits.

``genesis.amp`` re-exports everything public here, next to its gradient scaler.
"""

from __future__ import annotations

import functools
import threading
import warnings
from typing import Any, Callable

from genesis import dtypes
from genesis._impl import cuda_probe
from genesis.autograd import enable_grad, is_inference_mode_enabled
from genesis.tensor import Tensor

# ------------------------------------------------------------------ the policy

LOWER, FP32, PROMOTE, BANNED = "lower", "fp32", "promote", "banned"
FP16 = "fp16"  # float16 whatever the region's dtype: torch's rule for cuDNN's recurrent layers

#: device type -> op name -> how autocast treats the op's floating-point inputs. Filled from the rules the op registry
#: declares (``genesis.ops.registry``) by its binding step.
POLICY: dict[str, dict[str, str]] = {"cpu": {}, "cuda": {}}

_SUPPORTED_DTYPES = {"cpu": (dtypes.bfloat16, dtypes.float16), "cuda": (dtypes.float16, dtypes.bfloat16)}
_DEFAULT_DTYPE = {"cpu": dtypes.bfloat16, "cuda": dtypes.float16}

# ------------------------------------------------------------------ thread-local state


class _State(threading.local):
    def __init__(self) -> None:
        # torch's per-thread switches: autocast on or off and its lower dtype, per device type. A region sets both
        # when it enters and restores them when it exits (so does ``one_op``).
        self.enabled: dict[str, bool] = {}
        self.dtypes: dict[str, dtypes.dtype] = dict(_DEFAULT_DTYPE)
        self.active: dict[str, dtypes.dtype] = {}  # device type -> autocast dtype, for enabled ones
        self.nesting = 0  # open regions: the cache empties when the outermost one exits
        self.cache_enabled = True
        # (id(parameter), dtype) -> (parameter, its cast). Holding the parameter keeps its id from being reused.
        self.cache: dict[tuple[int, dtypes.dtype], tuple[Tensor, Tensor]] = {}
        # The same for casts folded into an op's own node (cast_parameter): (parameter, its cast NDArray).
        self.arrays: dict[tuple[int, dtypes.dtype], tuple[Tensor, Any]] = {}


_state = _State()


def _refresh() -> None:
    _state.active = {device_type: _state.dtypes[device_type] for device_type, on in _state.enabled.items() if on}


def _check_device_type(device_type: str) -> str:
    """``device_type`` if autocast knows it; torch's error otherwise."""
    if device_type not in POLICY:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return device_type


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for ``device_type`` in this thread."""
    return device_type in _state.active


def get_autocast_dtype(device_type: str = "cuda") -> dtypes.dtype:
    """The lower-precision dtype autocast uses for ``device_type`` (the last one a region or
    :func:`set_autocast_dtype` set, also while autocast is off)."""
    return _state.dtypes[_check_device_type(device_type)]


def set_autocast_enabled(device_type: str | bool, enabled: bool | None = None) -> None:
    """Turn autocast on or off for ``device_type`` in this thread (``torch.set_autocast_enabled``); an enclosing
    region restores the previous setting when it exits. The old one-argument form ``set_autocast_enabled(flag)``
    means CUDA, as torch's."""
    if enabled is None:
        device_type, enabled = "cuda", bool(device_type)
    _state.enabled[_check_device_type(device_type)] = bool(enabled)
    _refresh()


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """The lower-precision dtype autocast uses for ``device_type`` in this thread (``torch.set_autocast_dtype``)."""
    _state.dtypes[_check_device_type(device_type)] = dtypes.to_dtype(dtype)
    _refresh()


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"genesis.{old}() is deprecated. Please use genesis.{new} instead.", DeprecationWarning,
                  stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated spelling of ``is_autocast_enabled("cpu")`` (as torch's, with its DeprecationWarning)."""
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype() -> dtypes.dtype:
    """Deprecated spelling of ``get_autocast_dtype("cpu")`` (as torch's, with its DeprecationWarning)."""
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype() -> dtypes.dtype:
    """Deprecated spelling of ``get_autocast_dtype("cuda")`` (as torch's, with its DeprecationWarning)."""
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def is_autocast_cache_enabled() -> bool:
    """Whether autocast regions of this thread cache the casts of parameters (``torch.is_autocast_cache_enabled``)."""
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn the cast cache on or off for this thread; an ``autocast`` region restores the flag when it exits."""
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop this thread's cached casts (done by itself when the outermost ``autocast`` region exits)."""
    _state.cache.clear()
    _state.arrays.clear()


def autocast_rule(op: str, device_type: str) -> str | None:
    """The rule autocast applies to ``op`` on ``device_type`` now: None outside autocast or for ops it leaves
    alone."""
    if device_type not in _state.active:
        return None
    return POLICY[device_type].get(op)


def _eligible(x: Any) -> bool:
    """Whether autocast may cast ``x``: a floating-point tensor other than float64 (read on its array: no dtype
    object is built)."""
    if not isinstance(x, Tensor):
        return False
    dt = x.ndarray.dtype
    return dt.category == 2 and dt is not dtypes.float64


def _cast(x: Tensor, target: dtypes.dtype, lower: dtypes.dtype) -> Tensor:
    """``x.to(target)``, through the cast cache when torch's ``cached_cast`` would use it.

    The rule (``aten/src/ATen/autocast_mode.cpp``): cache a cast to the autocast dtype ``lower`` of a float32 leaf
    that requires grad and is not a view, while the cache is on and inference mode is off. A cast made under
    ``no_grad`` is recorded all the same, so that a later use with grad on still reaches the parameter. As in
    torch, an in-place change of a parameter inside the region is not seen by the ops after it: they reuse the
    cast made before the change (the cache empties only when the outermost region exits). Unlike torch's, the
    cache is per thread and keyed by the target dtype too, so a nested region with another dtype casts anew.
    """
    if target is not lower or x.dtype is not dtypes.float32 or not _cacheable(x):
        return x.to(target)
    return _cached(_state.cache, x, target, _cast_recorded)


def _cacheable(x: Tensor) -> bool:
    """torch's cache rule for a float32 tensor: a leaf that requires grad and is not a view, while the cache is on
    and inference mode is off."""
    return (x.requires_grad and x._base is None and x.is_leaf and _state.cache_enabled
            and not is_inference_mode_enabled())


def _cached(cache: dict, x: Tensor, dtype: dtypes.dtype, make: Callable[[Tensor, dtypes.dtype], Any]) -> Any:
    """``make(x, dtype)``, made once per region in ``cache`` (keyed by the tensor's id; the entry holds the tensor,
    so its id is not reused while the entry lives)."""
    key = (id(x), dtype)
    hit = cache.get(key)
    if hit is not None and hit[0] is x:
        return hit[1]
    out = make(x, dtype)
    cache[key] = (x, out)
    return out


def _cast_recorded(x: Tensor, dtype: dtypes.dtype) -> Tensor:
    """The cached cast of a parameter as a graph node, recorded even under ``no_grad``."""
    with enable_grad():
        return x.to(dtype)


def _convert(x: Tensor, dtype: dtypes.dtype) -> Any:
    """The NDArray of ``x`` cast to ``dtype``: the cast :func:`cast_parameter` makes (one place, so that tests can
    count casts)."""
    return x.ndarray.astype(dtype)


def cast_parameter(x: Tensor, lower: dtypes.dtype) -> Any:
    """The NDArray of the float32 tensor ``x`` cast to the autocast dtype ``lower``, for an op that folds the cast of
    its parameters into its own graph node (``genesis.ops.nn.CastLinear``): cached in the region under the rule of
    :func:`_cast`, in a cache of its own (arrays, not graph nodes)."""
    if not _cacheable(x):
        return _convert(x, lower)
    return _cached(_state.arrays, x, lower, _convert)


def lower_dtype(op: str, x: Any) -> dtypes.dtype | None:
    """The autocast dtype when autocast would cast ``op``'s floating-point inputs, ``x`` among them, down to it
    (None otherwise)."""
    active = _state.active
    if not active or not _eligible(x):
        return None
    device_type = x.ndarray.device.type
    target = active.get(device_type)
    if target is None or POLICY[device_type].get(op) != LOWER:
        return None
    return target


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
    lower = target
    if rule == FP32:
        target = dtypes.float32
    elif rule == FP16:
        target = dtypes.float16
    elif rule == PROMOTE:
        widest = [x.dtype for x in args if _eligible(x)]
        target = functools.reduce(dtypes.promote_types, widest)
    return tuple(_cast(x, target, lower) if _eligible(x) and x.dtype is not target and x.device.type == device_type
                 else x for x in args)


def one_op(name: str) -> Callable:
    """Decorator for an op written with other ops whose torch counterpart is one kernel (a factorization, a
    distance): under autocast its positional tensor arguments get ``name``'s rule, and its body runs with autocast
    off. Otherwise the products inside would take their own rule (a Cholesky factorization computed in bfloat16)."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Any:
            if not _state.active:
                return fn(*args, **kwargs)
            args = autocast_args(name, *args)
            enabled = _state.enabled
            _state.enabled = {}
            _refresh()
            try:
                return fn(*args, **kwargs)
            finally:
                _state.enabled = enabled
                _refresh()
        return op
    return decorate


class autocast:
    """Run the ops of a region in mixed precision (a context manager and a decorator; nestable).

    Args:
        device_type: "cpu" or "cuda".
        dtype: the lower precision (default: the device type's current one, :func:`get_autocast_dtype`, which is
            bfloat16 on the CPU and float16 on CUDA unless a region or :func:`set_autocast_dtype` changed it).
        enabled: False turns autocast off inside the region (also inside an enclosing autocast). A "cuda" region
            where CUDA is not available is disabled with a warning, as in torch.
        cache_enabled: whether the region caches the casts of parameters (default: the thread's current setting,
            :func:`is_autocast_cache_enabled`, on unless changed). The cache empties when the outermost region exits.
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in POLICY:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device_type = device_type
        self.fast_dtype = dtypes.to_dtype(dtype) if dtype is not None else get_autocast_dtype(device_type)
        self._enabled = bool(enabled)
        if self._enabled and device_type == "cuda" and not cuda_probe.is_available():
            # torch's rule: a CUDA region on a machine without CUDA (older scripts' unconditional
            # ``torch.cuda.amp.autocast()``) runs in full precision.
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
            self._enabled = False
        elif self._enabled and self.fast_dtype not in _SUPPORTED_DTYPES[device_type]:
            warnings.warn(f"In {device_type.upper()} autocast, but the target dtype {self.fast_dtype} is not "
                          "supported. Disabling autocast.", stacklevel=2)
            self._enabled = False
        self.cache_enabled = _state.cache_enabled if cache_enabled is None else bool(cache_enabled)

    def __enter__(self) -> autocast:
        device_type = self.device_type
        self._prev = (_state.enabled.get(device_type, False), _state.dtypes[device_type], _state.cache_enabled)
        _state.enabled[device_type] = self._enabled
        _state.dtypes[device_type] = self.fast_dtype
        _state.cache_enabled = self.cache_enabled
        _state.nesting += 1
        _refresh()
        return self

    def __exit__(self, *exc: object) -> None:
        _state.enabled[self.device_type], _state.dtypes[self.device_type], _state.cache_enabled = self._prev
        _state.nesting -= 1
        if _state.nesting == 0:  # leaving the outermost region: cached casts must not outlive it
            clear_autocast_cache()
        _refresh()

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device_type, self.fast_dtype, self._enabled, self.cache_enabled):
                return fn(*args, **kwargs)

        return wrapper
