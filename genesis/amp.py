"""Mixed precision: ``genesis.autocast`` and ``genesis.amp.GradScaler`` (as ``torch.autocast`` / ``torch.amp``).

Autocast, the policy that casts the inputs of selected ops, belongs to the ops (``genesis.ops.autocast``); it is
re-exported here under torch's names.

The gradient scaler multiplies the loss by a large factor so that small float16 gradients do not flush to zero,
unscales the gradients before the optimizer step, skips the step when any gradient is inf or nan, and adapts the
factor: halve it after an overflow, double it after ``growth_interval`` clean steps.
"""

from __future__ import annotations

import functools
import math
import struct
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from genesis import dtypes
from genesis.autograd import no_grad
from genesis.device import to_device
from genesis.ops.autocast import (
    POLICY,
    autocast,
    autocast_args,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from genesis.ops.fused import fused_unscale_
from genesis.tensor import Tensor, full

# ------------------------------------------------------------------ gradient scaling

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """Dynamic loss scaling for mixed-precision training (``torch.amp.GradScaler``'s algorithm).

    Typical use::

        scaler.scale(loss).backward()
        scaler.step(optimizer)      # unscales, then steps unless a gradient is inf/nan
        scaler.update()             # backoff after an overflow, growth after growth_interval clean steps

    Args:
        device: the device of the loss ("cuda" by default, as in torch; "cpu" works too).
        init_scale: the starting scale.
        growth_factor: multiplies the scale after ``growth_interval`` steps without inf/nan.
        backoff_factor: multiplies the scale after a step with inf/nan gradients.
        growth_interval: clean steps needed before the scale grows.
        enabled: False makes every method a pass-through.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = to_device(device)
        self._enabled = enabled
        if enabled and self._device.type == "cuda":
            from genesis import cuda

            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled and growth_factor <= 1.0:
            raise AssertionError("The growth factor must be > 1.0.")
        if self._enabled and backoff_factor >= 1.0:
            raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._scale: Tensor | None = None
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict[str, Any]] = {}

    def is_enabled(self) -> bool:
        return self._enabled

    def _get_growth_tracker(self) -> int:
        """Clean steps since the last growth or backoff (0 when disabled)."""
        return self._growth_tracker if self._enabled else 0

    def _lazy_init(self, device: Any) -> None:
        if self._scale is None:
            self._scale = full((), self._init_scale, dtype=dtypes.float32, device=device)
            self._growth_tracker = self._init_growth_tracker

    def _check_scale(self, funcname: str) -> Tensor:
        """The scale tensor; torch's AssertionError when no ``scale()`` call has created it yet."""
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate your script did not "
                                 "use scaler.scale(loss or outputs) earlier in the iteration.")
        return self._scale

    def _opt_state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": None})

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor or nested iterables of tensors) multiplied by the current scale; lists and tuples keep
        their type, other iterables come back as a lazy ``map``, as torch's."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            self._lazy_init(outputs.device)
            return outputs * self._scale.to(outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, Iterable):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer: Any, allow_fp16: bool = False) -> None:
        """Divide the optimizer's gradients by the scale in place and record whether any is inf or nan."""
        if not self._enabled:
            return
        scale = self._check_scale("unscale_")
        state = self._opt_state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # torch computes 1/scale in float64 and rounds it to float32.
        inv_scale = _round_f32(1.0 / float(scale.item()))
        params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        if not allow_fp16 and any(p.grad.dtype is dtypes.float16 for p in params):
            raise ValueError("Attempting to unscale FP16 gradients.")
        grads = [_stored_gradient(p) for p in params]
        # On GPUs, gradients of one device and dtype are checked and unscaled in one fused pass, with one flag to
        # read back per group; elsewhere (and for non-contiguous gradients) one gradient at a time.
        groups: dict[tuple, list[Tensor]] = {}
        single = []
        for g in grads:
            if g.device.type != "cpu" and g.is_contiguous():
                groups.setdefault((g.device, g.dtype), []).append(g)
            else:
                single.append(g)
        found_inf = False
        with no_grad():
            for group_grads in groups.values():
                flag = fused_unscale_(group_grads, inv_scale)
                if flag is None:
                    single.extend(group_grads)
                else:
                    found_inf = found_inf or bool(flag.item())
            for g in single:
                found_inf = found_inf or not bool(g.isfinite().all().item())
                g.mul_(inv_scale)
        # No gradient, no check recorded: step() and update() then refuse, as torch's.
        state["found_inf"] = None if not params else 1.0 if found_inf else 0.0
        state["stage"] = _UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale (unless done already) and run ``optimizer.step`` unless a gradient was inf or nan."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale("step")
        state = self._opt_state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        if state["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None
        if not state["found_inf"]:
            result = optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Set the scale for the next iteration: back off after an inf/nan, grow after enough clean steps."""
        if not self._enabled:
            return
        scale_tensor = self._check_scale("update")
        if isinstance(new_scale, Tensor):
            if (new_scale.device.type != self._device.type or new_scale.numel() != 1
                    or new_scale.requires_grad):
                raise AssertionError("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                                     "torch.FloatTensor with requires_grad=False.")
            scale_tensor.fill_(float(new_scale.item()))
        elif new_scale is not None:
            scale_tensor.fill_(float(new_scale))
        else:
            found = [s["found_inf"] for s in self._per_optimizer.values() if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            scale = float(scale_tensor.item())
            if sum(found) > 0:
                scale_tensor.fill_(scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = _round_f32(scale * self._growth_factor)
                    if math.isfinite(grown):
                        scale_tensor.fill_(grown)
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
        self._per_optimizer = {}

    def get_scale(self) -> float:
        """The current scale (``init_scale`` before the first ``scale()``; 1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def state_dict(self) -> dict[str, Any]:
        """Scale, factors, interval and growth tracker (empty when disabled), torch's keys."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        self._growth_tracker = self._init_growth_tracker


    def __getstate__(self) -> dict[str, Any]:
        """The pickled state, as torch's: only between iterations, with the scale recreated lazily."""
        state = self.__dict__.copy()
        if self._enabled:
            if self._per_optimizer:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._growth_tracker
            state["_scale"] = None
        return state


def _deprecated_spelling(old: str, new: str) -> None:
    """torch's FutureWarning for a deprecated ``torch.cuda.amp`` / ``torch.cpu.amp`` name, at its caller's line."""
    warnings.warn(f"`{old}(args...)` is deprecated. Please use `{new}` instead.", FutureWarning, stacklevel=3)


def _stored_gradient(p: Tensor) -> Tensor:
    """The tensor that holds ``p``'s gradient values, to check and unscale in place: the gradient itself, or the
    stored values of a sparse one (coalesced first in float16, where duplicates of scaled values may overflow when
    added, as torch's)."""
    if not p.grad.is_sparse:
        return p.grad
    if p.grad.dtype is dtypes.float16:
        p.grad = p.grad.coalesce()
    return p.grad._values()


def _round_f32(value: float) -> float:
    """``value`` rounded to the nearest float32 (the scale lives in a float32 tensor, as torch's)."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.inf


# ------------------------------------------------------------------ custom autograd Functions under autocast


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports ``device_type`` ("cpu" and "cuda")."""
    return device_type in POLICY


def _cast_floating(value: Any, device_type: str, dtype: dtypes.dtype) -> Any:
    """``value`` with every floating tensor on ``device_type`` (float64 excepted) cast to ``dtype``, looking into
    lists, tuples and dicts."""
    if isinstance(value, Tensor):
        keep = not value.dtype.is_floating_point or value.dtype is dtypes.float64 or value.device.type != device_type
        return value if keep else value.to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_floating(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast_floating(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs: Any = None) -> Callable:
    """Decorator for the ``forward`` of a custom ``autograd.Function`` (``torch.amp.custom_fwd``).

    Without ``cast_inputs`` the forward runs under the caller's autocast state, which is recorded on ``ctx`` for
    :func:`custom_bwd`. With ``cast_inputs`` (a dtype) and autocast on for ``device_type``, the forward runs with
    autocast off and its floating tensor arguments on that device cast to ``cast_inputs``; with autocast off it
    runs unchanged. Usable bare (``@custom_fwd(device_type="cuda")``) or called on a function.
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    target = None if cast_inputs is None else dtypes.to_dtype(cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        enabled = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = enabled and target is None
        if target is None or not enabled:
            return fwd(*args, **kwargs)
        with autocast(device_type, enabled=False):
            return fwd(*_cast_floating(args, device_type, target), **_cast_floating(kwargs, device_type, target))

    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorator for the ``backward`` of a custom ``autograd.Function`` whose forward has :func:`custom_fwd`
    (``torch.amp.custom_bwd``): the backward runs under the autocast state the forward ran with."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type, dtype=ctx._dtype, enabled=ctx._fwd_used_autocast):
            return bwd(*args, **kwargs)

    return decorate_bwd


__all__ = ["GradScaler", "POLICY", "autocast", "autocast_args", "clear_autocast_cache", "custom_bwd", "custom_fwd",
           "get_autocast_dtype", "is_autocast_available", "is_autocast_cache_enabled", "is_autocast_enabled",
           "set_autocast_cache_enabled", "set_autocast_dtype", "set_autocast_enabled"]
