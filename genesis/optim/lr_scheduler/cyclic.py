"""Cyclic schedules: cosine annealing with warm restarts, CyclicLR and the 1cycle policy (with momentum cycling)."""

from __future__ import annotations

import math
from typing import Any, Callable

from genesis.optim.lr_scheduler.scheduler import (
    LRScheduler,
    _check_optimizer,
    _per_group,
    _restore_callable,
    _saved_callable,
    _warn_get_lr_called_within_step,
)
from genesis.optim.optimizer import Optimizer


def _uses_beta1(optimizer: Optimizer) -> bool:
    """Whether momentum cycling drives Adam's ``betas[0]`` (True) or SGD's ``momentum`` (False)."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    return "betas" in optimizer.defaults


def _set_momentum(group: dict[str, Any], value: float, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _start_momentum_cycle(optimizer: Optimizer, base_momentum: float | list[float], max_momentum: float | list[float],
                          use_beta1: bool) -> None:
    """Record each group's momentum bounds and start it at the top (the momentum cycles against the lr)."""
    for group, top, base in zip(optimizer.param_groups, _per_group("max_momentum", optimizer, max_momentum),
                                _per_group("base_momentum", optimizer, base_momentum)):
        _set_momentum(group, top, use_beta1)
        group["max_momentum"] = top
        group["base_momentum"] = base


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov & Hutter, 2017): cosine annealing from the initial lr to ``eta_min``, with warm restarts.

    ``lr = eta_min + (lr_0 - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2``, where ``T_cur`` counts the epochs since
    the last restart and the period ``T_i`` starts at ``T_0`` and is multiplied by ``T_mult`` at each restart.
    ``step(epoch)`` accepts fractional epochs (``step(epoch + i / iters)`` after batch ``i``), as torch.
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        cos = math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (base - self.eta_min) * (1 + cos) / 2 for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance one step, or move to ``epoch`` (fractional allowed; no deprecation warning, as in torch)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:
                # Restart n happens at epoch T_0 * (T_mult**n - 1) / (T_mult - 1).
                n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult**n
        else:
            self.T_i = self.T_0
            self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self._lrs_within_step(self.get_lr))


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith, 2017): the learning rate cycles between ``base_lr`` and ``max_lr``.

    A cycle rises for ``step_size_up`` steps and falls for ``step_size_down`` (default: as many). The amplitude
    ``max_lr - base_lr`` is scaled by ``mode``: "triangular" (constant), "triangular2" (halved every cycle),
    "exp_range" (``gamma ** iteration``), or by ``scale_fn`` of the cycle number or of the iteration
    (``scale_mode``). With ``cycle_momentum``, momentum (or Adam's beta1) cycles inversely between ``max_momentum``
    and ``base_momentum``. Call ``step()`` after every batch.
    """

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float], max_lr: float | list[float],
                 step_size_up: int = 2000, step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum: float | list[float] = 0.8,
                 max_momentum: float | list[float] = 0.9, last_epoch: int = -1) -> None:
        self.optimizer = _check_optimizer(optimizer)
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            self._write_lrs(base_lrs)
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        if scale_fn is None:  # the built-in modes fix what their scale is a function of
            scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.scale_mode = scale_mode
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer)
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                _start_momentum_cycle(optimizer, self.base_momentums, self.max_momentums, self.use_beta1)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle number or iteration ``x``: ``scale_fn`` if given, else the mode's."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle  # position in the cycle, in [0, 1)
        height = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [base + (top - base) * height * self.scale_fn(at) for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, base, top in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                _set_momentum(group, top - (top - base) * height * self.scale_fn(at), self.use_beta1)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """The attributes, with ``scale_fn`` as torch saves it: ``None`` for a function, a callable object's
        ``__dict__``."""
        state = super().state_dict()
        state.pop("_scale_fn_custom", None)  # last, as torch lists it
        state["_scale_fn_custom"] = _saved_callable(self._scale_fn_custom)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes, and those of a callable-object ``scale_fn``."""
        state = dict(state_dict)
        saved = state.pop("_scale_fn_custom")
        super().load_state_dict(state)
        _restore_callable(self._scale_fn_custom, saved)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin, 2017): warm up to ``max_lr``, then anneal far below the start.

    The learning rate rises from ``max_lr / div_factor`` to ``max_lr`` over ``pct_start`` of ``total_steps`` and
    falls to ``initial_lr / final_div_factor``; momentum (or Adam's beta1) cycles inversely when
    ``cycle_momentum``. Call ``step()`` after every batch.
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True, base_momentum: float = 0.85,
                 max_momentum: float = 0.95, div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        # Each phase: its last step and the group keys of the lr and momentum it anneals between.
        n = self.total_steps
        if three_phase:
            phases = [
                (float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (float(2 * pct_start * n) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            phases = [
                (float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        keys = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")
        self._schedule_phases = [dict(zip(keys, phase)) for phase in phases]
        # torch's attribute names in torch's order, so that state dicts load both ways and list the same keys.
        self._anneal_func_type = anneal_strategy
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, _per_group("max_lr", optimizer, max_lr)):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer)
            if last_epoch == -1:
                _start_momentum_cycle(optimizer, base_momentum, max_momentum, self.use_beta1)
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                        _set_momentum(group, momentum, self.use_beta1)
                    break
                start_step = end_step
        return lrs

