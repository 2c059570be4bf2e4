"""Learning-rate schedules (``genesis.optim.lr_scheduler``, as ``torch.optim.lr_scheduler``).

A scheduler rewrites ``group["lr"]`` of its optimizer's parameter groups each time ``step()`` is called (after
``optimizer.step()``). The update rules are torch's chainable ones: most schedules multiply the current learning
rate, so several schedulers can act on one optimizer, and the sequence of ``get_last_lr()`` values equals
torch's step for step. ``state_dict()`` holds every attribute but the optimizer (and functions, which cannot be
saved).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable, Sequence

from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor


def _check_optimizer(optimizer: Any) -> Optimizer:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
    return optimizer


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    """One value per parameter group: a list as given (length checked) or a scalar repeated."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(value)} values, param_groups has {len(optimizer.param_groups)}.")
        return list(value)
    return [value] * len(optimizer.param_groups)


class LRScheduler:
    """Base class of the schedules: subclasses implement :meth:`get_lr` from ``last_epoch`` and the current lrs.

    Args:
        optimizer: the optimizer whose learning rates are scheduled.
        last_epoch: index of the last step taken; -1 starts a new schedule (and records ``initial_lr``).
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        self.optimizer = _check_optimizer(optimizer)
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]  # a tensor learning rate is changed in place: record its value
                group.setdefault("initial_lr", float(lr.item()) if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming a "
                                   "scheduler with last_epoch >= 0")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Take the step that sets the learning rates for epoch 0."""
        self._step_count = 0
        self._is_initial = True
        self.step()
        self._is_initial = False

    def get_lr(self) -> list[float]:
        """The learning rates for ``last_epoch`` (called by :meth:`step`; use :meth:`get_last_lr` to read)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rates set by the last :meth:`step`, one per parameter group."""
        return self._last_lr

    def _closed_form_lr(self) -> list[float]:
        """The learning rates at ``last_epoch`` computed from ``base_lrs`` (SequentialLR restarts with it)."""
        return self.get_lr()

    def step(self) -> None:
        """Advance the schedule one step and write the new learning rates into the optimizer."""
        self._step_count += 1
        self.last_epoch += 1
        self._set_lrs(self.get_lr())

    def _set_lrs(self, values: Sequence[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, values):
            if isinstance(group["lr"], Tensor):
                group["lr"].fill_(lr)  # in place, as torch: a captured optimizer step reads the tensor
            else:
                group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _current_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer and functions (lambdas cannot be saved)."""
        return {key: value for key, value in self.__dict__.items()
                if key != "optimizer" and not callable(value) and key != "lr_lambdas"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(epoch)``; ``lr_lambda`` is a function or one function per group."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.lr_lambdas = _per_group("lr_lambda", optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` steps."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each milestone step (by ``gamma**k`` for a repeated one)."""

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._current_lrs()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        passed = sum(count for m, count in self.milestones.items() if m <= self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["milestones"] = dict(self.milestones)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self.milestones = Counter({int(k): v for k, v in state_dict["milestones"].items()})


class ConstantLR(LRScheduler):
    """Multiply the learning rate by ``factor`` for the first ``total_iters`` steps."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError(f"Constant multiplicative factor expected to be between 0 and 1, got {factor}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._current_lrs()]
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return [lr * (1.0 / self.factor) for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        done = self.last_epoch >= self.total_iters
        return [base * (self.factor + done * (1 - self.factor)) for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the learning rate by a factor moving linearly from ``start_factor`` to ``end_factor``."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1, "
                             f"got {start_factor}")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"Ending multiplicative factor expected to be between 0 and 1, got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        span = self.end_factor - self.start_factor
        ratio = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [lr * ratio for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * done) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every step."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr to ``eta_min`` over ``T_max`` steps (SGDR without restarts).

    ``lr_t = eta_min + (lr_0 - eta_min) * (1 + cos(pi * t / T_max)) / 2``, applied in torch's recursive form.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, t_max, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current_lrs()
        if self._step_count == 1 and t > 0:
            return [eta_min + (base - eta_min) * (1 + math.cos(t * math.pi / t_max)) / 2 for base in self.base_lrs]
        if (t - 1 - t_max) % (2 * t_max) == 0:
            return [lr + (base - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
                    for base, lr in zip(self.base_lrs, self._current_lrs())]
        return [(1 + math.cos(math.pi * t / t_max)) / (1 + math.cos(math.pi * (t - 1) / t_max)) * (lr - eta_min)
                + eta_min for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        cos = math.cos(math.pi * self.last_epoch / self.T_max)
        return [self.eta_min + (base - self.eta_min) * (1 + cos) / 2 for base in self.base_lrs]


class SequentialLR(LRScheduler):
    """Run ``schedulers[i]`` between ``milestones[i-1]`` and ``milestones[i]`` (each restarts at its milestone)."""

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler], milestones: Sequence[int],
                 last_epoch: int = -1) -> None:
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        for i, scheduler in enumerate(schedulers):
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(f"SequentialLR does not support `ReduceLROnPlateau` scheduler (index {i}): it "
                                 "needs a metric in step()")
            if scheduler.optimizer is not optimizer:
                raise ValueError(f"SequentialLR expects all schedulers to belong to the same optimizer, but "
                                 f"scheduler {type(scheduler).__name__} at index {i} has another one")
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
        # Undo the initial step each scheduler took when it was built; the first one restarts now.
        for scheduler in self._schedulers:
            scheduler.last_epoch -= 1
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = self._schedulers[idx].get_last_lr()

    def step(self) -> None:
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler.last_epoch = 0
            scheduler._set_lrs(scheduler._closed_form_lr())
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        for scheduler, saved in zip(self._schedulers, state.pop("_schedulers")):
            scheduler.load_state_dict(saved)
        self.__dict__.update(state)


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
        self.anneal_strategy = anneal_strategy
        # Each phase: (last step of the phase, start lr key, end lr key, start momentum key, end momentum key).
        n = self.total_steps
        if three_phase:
            self._phases = [
                (float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (float(2 * pct_start * n) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._phases = [
                (float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, _per_group("max_lr", optimizer, max_lr)):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            if last_epoch == -1:
                for group, top, base in zip(optimizer.param_groups,
                                            _per_group("max_momentum", optimizer, max_momentum),
                                            _per_group("base_momentum", optimizer, base_momentum)):
                    self._set_momentum(group, top)
                    group["max_momentum"] = top
                    group["base_momentum"] = base
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, (end_step, lr0, lr1, m0, m1) in enumerate(self._phases):
                if step <= end_step or i == len(self._phases) - 1:
                    pct = (step - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[lr0], group[lr1], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[m0], group[m1], pct))
                    break
                start_step = end_step
        return lrs


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
            raise ValueError(f"Factor should be < 1.0, got {factor}")
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.optimizer = _check_optimizer(optimizer)
        self.factor = factor
        self.min_lrs = _per_group("min_lr", optimizer, min_lr)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.last_epoch = 0
        self.best = math.inf if mode == "min" else -math.inf
        self.cooldown_counter = 0
        self.num_bad_epochs = 0
        self._last_lr = self._current_lrs()

    def _is_better(self, value: float) -> bool:
        if self.threshold_mode == "rel":
            scale = 1.0 - self.threshold if self.mode == "min" else 1.0 + self.threshold
            return value < self.best * scale if self.mode == "min" else value > self.best * scale
        return value < self.best - self.threshold if self.mode == "min" else value > self.best + self.threshold

    def step(self, metrics: Any) -> None:  # type: ignore[override]
        """Record one value of the monitored metric (a number or 0-d tensor) and reduce the lr if it plateaued."""
        current = float(metrics)
        self.last_epoch += 1
        if self._is_better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs):
                old_lr = float(group["lr"])
                new_lr = max(old_lr * self.factor, min_lr)
                if old_lr - new_lr > self.eps:
                    group["lr"] = new_lr
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current_lrs()


def warmup_cosine(optimizer: Optimizer, warmup_steps: int, total_steps: int, min_lr_ratio: float = 0.0,
                  warmup_start_factor: float = 0.0) -> LambdaLR:
    """Linear warmup then cosine decay, the usual schedule for transformer training.

    For ``t < warmup_steps`` the factor rises linearly from ``warmup_start_factor`` to 1; afterwards it follows
    ``min_lr_ratio + (1 - min_lr_ratio) * (1 + cos(pi * progress)) / 2`` with ``progress`` going from 0 to 1 at
    ``total_steps`` (and staying there). Returns a :class:`LambdaLR` on ``optimizer``.
    """
    if warmup_steps < 0 or total_steps <= 0 or warmup_steps > total_steps:
        raise ValueError(f"warmup_cosine: need 0 <= warmup_steps <= total_steps and total_steps > 0, got "
                         f"warmup_steps={warmup_steps}, total_steps={total_steps}")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError(f"warmup_cosine: min_lr_ratio must be in [0, 1], got {min_lr_ratio}")

    def factor(step: int) -> float:
        if step < warmup_steps:
            return warmup_start_factor + (1.0 - warmup_start_factor) * step / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_lr_ratio + (1.0 - min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))

    return LambdaLR(optimizer, factor)


__all__ = ["ConstantLR", "CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR",
           "MultiStepLR", "OneCycleLR", "ReduceLROnPlateau", "SequentialLR", "StepLR", "warmup_cosine"]
