"""Mixed precision: ``genesis.autocast`` and ``genesis.amp.GradScaler`` (as ``torch.autocast`` / ``torch.amp``).

Autocast runs selected ops in a lower precision. The policy is a small table per device type, torch's: ops that
gain from bfloat16/float16 arithmetic (matrix products, convolutions, attention) cast their floating-point inputs
down; ops that need range or accuracy (losses; on CUDA also softmax, norms, exp, log, sum, pow ...) cast them up to
float32; a few ops that mix inputs promote them to the widest one. Each op that the table names calls
:func:`autocast_args` on its tensor arguments first; outside autocast that call returns at once. float64 tensors
are never cast. The state is thread-local: each thread starts with autocast off.

The gradient scaler multiplies the loss by a large factor so that small float16 gradients do not flush to zero,
unscales the gradients before the optimizer step, skips the step when any gradient is inf or nan, and adapts the
factor: halve it after an overflow, double it after ``growth_interval`` clean steps.
"""

from __future__ import annotations

import functools
import math
import struct
import threading
import warnings
from typing import Any, Callable

from genesis import dtypes
from genesis.device import to_device
from genesis.tensor import Tensor, full

# ------------------------------------------------------------------ the policy

_LOWER, _FP32, _PROMOTE, _BANNED = "lower", "fp32", "promote", "banned"

_CPU_LOWER = ("matmul", "mm", "bmm", "baddbmm", "addmm", "addbmm", "linear", "conv1d", "conv2d", "conv3d",
              "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu", "scaled_dot_product_attention")
_CPU_FP32 = ("cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
             "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "prod", "poisson_nll_loss",
             "cosine_embedding_loss", "margin_ranking_loss", "soft_margin_loss", "gaussian_nll_loss")
_CUDA_LOWER = ("matmul", "mm", "bmm", "baddbmm", "addmm", "addbmm", "addmv", "mv", "linear", "conv1d", "conv2d",
               "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
               "scaled_dot_product_attention")
_CUDA_FP32 = ("softmax", "log_softmax", "softmin", "layer_norm", "group_norm", "rms_norm", "norm", "normalize",
              "exp", "expm1", "log", "log2", "log10", "log1p", "sum", "prod", "cumsum", "cumprod", "pow",
              "reciprocal", "rsqrt", "tan", "softplus", "cosine_similarity", "cross_entropy", "nll_loss",
              "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy_with_logits", "kl_div",
              "poisson_nll_loss", "cosine_embedding_loss", "margin_ranking_loss", "soft_margin_loss",
              "gaussian_nll_loss", "acos", "asin", "cosh", "sinh", "erfinv")
_PROMOTE_OPS = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "index_put", "scatter_add", "stack",
                "cat")

#: device type -> op name -> how autocast treats the op's floating-point inputs.
POLICY: dict[str, dict[str, str]] = {
    "cpu": {**{op: _PROMOTE for op in _PROMOTE_OPS}, **{op: _LOWER for op in _CPU_LOWER},
            **{op: _FP32 for op in _CPU_FP32}},
    "cuda": {**{op: _PROMOTE for op in _PROMOTE_OPS}, **{op: _LOWER for op in _CUDA_LOWER},
             **{op: _FP32 for op in _CUDA_FP32},
             # As torch: probabilities that came out of a float16 sigmoid are unsafe to feed to this loss.
             "binary_cross_entropy": _BANNED},
}

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
    if rule == _BANNED:
        raise RuntimeError(
            f"genesis.nn.functional.{op} and its module are unsafe to autocast on {device_type}. Use "
            "binary_cross_entropy_with_logits (BCEWithLogitsLoss), which combines the sigmoid and the loss and is "
            "safe to autocast, or disable autocast around this op."
        )
    if rule == _FP32:
        target = dtypes.float32
    elif rule == _PROMOTE:
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
                warnings.warn("GradScaler is enabled, but CUDA is not available. Disabling.", stacklevel=2)
                self._enabled = False
        if growth_factor <= 1.0:
            raise ValueError(f"The growth factor must be > 1.0, got {growth_factor}")
        if backoff_factor >= 1.0:
            raise ValueError(f"The backoff factor must be < 1.0, got {backoff_factor}")
        if growth_interval <= 0:
            raise ValueError(f"growth_interval must be a positive integer, got {growth_interval}")
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

    def _lazy_init(self, device: Any) -> None:
        if self._scale is None:
            self._scale = full((1,), self._init_scale, dtype=dtypes.float32, device=device)
            self._growth_tracker = self._init_growth_tracker

    def _opt_state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": None})

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor or nested lists/tuples of tensors) multiplied by the current scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            self._lazy_init(outputs.device)
            return outputs * self._scale.to(outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer: Any, allow_fp16: bool = False) -> None:
        """Divide the optimizer's gradients by the scale in place and record whether any is inf or nan."""
        if not self._enabled:
            return
        state = self._opt_state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        if self._scale is None:
            raise RuntimeError("Attempted unscale_ but _scale is None. This may indicate your script did not use "
                               "scaler.scale(loss or outputs) earlier in the iteration.")
        from genesis.autograd import no_grad
        from genesis.functional.fused import fused_unscale_  # fused imports amp: a top-level import would cycle

        # torch computes 1/scale in float64 and rounds it to float32.
        inv_scale = _round_f32(1.0 / float(self._scale.item()))
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        if not allow_fp16 and any(g.dtype is dtypes.float16 for g in grads):
            raise ValueError("Attempting to unscale FP16 gradients.")
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
        state["found_inf"] = 1.0 if found_inf else 0.0
        state["stage"] = _UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale (unless done already) and run ``optimizer.step`` unless a gradient was inf or nan."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._opt_state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        result = None
        if not state["found_inf"]:
            result = optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Set the scale for the next iteration: back off after an inf/nan, grow after enough clean steps."""
        if not self._enabled:
            return
        if self._scale is None:
            raise RuntimeError("update() called before any scale() call")
        if new_scale is not None:
            value = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
            self._scale.fill_(value)
        else:
            found = [s["found_inf"] for s in self._per_optimizer.values() if s["found_inf"] is not None]
            if not found:
                raise RuntimeError("No inf checks were recorded prior to update().")
            scale = float(self._scale.item())
            if sum(found) > 0:
                self._scale.fill_(scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = _round_f32(scale * self._growth_factor)
                    if math.isfinite(grown):
                        self._scale.fill_(grown)
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


def _round_f32(value: float) -> float:
    """``value`` rounded to the nearest float32 (the scale lives in a float32 tensor, as torch's)."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.inf


__all__ = ["GradScaler", "POLICY", "autocast", "autocast_args", "get_autocast_dtype", "is_autocast_enabled"]
