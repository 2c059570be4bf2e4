"""Schedules built from others (SequentialLR, ChainedScheduler) and the metric-driven ReduceLROnPlateau."""

from __future__ import annotations

import math
import warnings
from bisect import bisect_right
from typing import Any, Sequence

from genesis.optim.lr_scheduler.scheduler import EPOCH_DEPRECATION_WARNING, LRScheduler, _check_optimizer, _per_group
from genesis.optim.optimizer import Optimizer


def _check_schedulers(owner: str, optimizer: Optimizer, schedulers: Sequence[LRScheduler]) -> None:
    """The schedulers a SequentialLR or ChainedScheduler combines: stepped without a metric, on ``optimizer``."""
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                             f"kwargs to be specified when calling `step`, but got one at index {i} in the given "
                             "schedulers sequence.")
        if scheduler.optimizer is not optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{type(scheduler).__name__} at index {i} has {scheduler.optimizer}, which is "
                             f"different from {type(optimizer).__name__}.")


class _ComposedLR(LRScheduler):
    """Base of SequentialLR and ChainedScheduler: their state holds each inner scheduler's own state dict."""

    _schedulers: list[LRScheduler]

    def state_dict(self) -> dict[str, Any]:
        """The attributes, with ``_schedulers`` as the list of the inner schedulers' state dicts."""
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes and every inner scheduler's state."""
        state = dict(state_dict)
        for scheduler, saved in zip(self._schedulers, state.pop("_schedulers")):
            scheduler.load_state_dict(saved)
        self.__dict__.update(state)


class SequentialLR(_ComposedLR):
    """Run ``schedulers[i]`` between ``milestones[i-1]`` and ``milestones[i]`` (each restarts at its milestone)."""

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler], milestones: Sequence[int],
                 last_epoch: int = -1) -> None:
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        _check_schedulers(type(self).__name__, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)  # the scheduler for epoch 0 restarts now
        self._schedulers[idx]._initial_step()
        self._last_lr = self._schedulers[idx].get_last_lr()

    def recursive_undo(self, sched: LRScheduler | None = None) -> None:
        """Take back the initial step each scheduler took when it was built (inside nested composed ones too)."""
        scheduler = self if sched is None else sched
        if isinstance(scheduler, _ComposedLR):
            for inner in scheduler._schedulers:
                self.recursive_undo(inner)
        else:
            scheduler.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        """Step the scheduler of the current phase (restarting it, in closed form, at its milestone)."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_ComposedLR):
    """Step several schedulers of one optimizer together, so their chainable updates compose.

    Args:
        schedulers: the schedulers, stepped in this order by each ``step()``.
        optimizer: their optimizer (default: the first scheduler's).
    """

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError("ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers(type(self).__name__, optimizer, schedulers)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = self._current_lrs()

    def step(self) -> None:  # type: ignore[override]
        """Step every scheduler once, in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._current_lrs()


class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rate by ``factor`` when a metric has stopped improving for ``patience`` steps.

    ``step(metric)`` takes the monitored value (``mode="min"`` for a loss, ``"max"`` for an accuracy); a value
    counts as better when it beats the best by ``threshold`` (relative or absolute). After a reduction,
    ``cooldown`` steps pass before bad steps count again; no learning rate falls below ``min_lr``.
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | list[float] = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        # Attributes in torch's order: a state dict lists its keys as torch's does.
        self.factor = factor
        self.optimizer = _check_optimizer(optimizer)
        self.default_min_lr = None if isinstance(min_lr, (list, tuple)) else min_lr  # torch's attributes
        if isinstance(min_lr, (list, tuple)) and len(min_lr) != len(optimizer.param_groups):
            raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
        self.min_lrs = _per_group("min_lr", optimizer, min_lr)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = self._current_lrs()
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self._reset()

    def _reset(self) -> None:
        """Forget the best value, the cooldown and the bad steps counted (as torch's)."""
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        """Whether the steps right after a reduction, in which bad steps do not count, are still running."""
        return self.cooldown_counter > 0

    def _is_better(self, value: float) -> bool:
        if self.threshold_mode == "rel":
            scale = 1.0 - self.threshold if self.mode == "min" else 1.0 + self.threshold
            return value < self.best * scale if self.mode == "min" else value > self.best * scale
        return value < self.best - self.threshold if self.mode == "min" else value > self.best + self.threshold

    def step(self, metrics: Any, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record one value of the monitored metric (a number or 0-d tensor) and reduce the lr if it plateaued.

        ``epoch`` is deprecated, as in torch: it warns and sets ``last_epoch``.
        """
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current_lrs()

    def _reduce_lr(self) -> None:
        """Multiply every group's learning rate by ``factor``, down to its ``min_lr``. Groups added to the optimizer
        since construction take the one ``min_lr`` given then; a per-group list cannot cover them (RuntimeError,
        as torch's)."""
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"The number of param groups in the `optimizer` ({len(groups)}) differs from when "
                                   f"`ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due to a new "
                                   "param group being added to the optimizer. Please modify the `min_lrs` field to "
                                   "match the length of the `optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr

