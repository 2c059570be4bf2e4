"""The scheduler base class: the chainable update loop, `step(epoch)`, state dicts and per-group values."""

from __future__ import annotations

import functools
import types
import warnings
import weakref
from typing import Any, Callable, Sequence

from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please use "
    "`scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the closed "
    "form is used instead of the new chainable form, where available. Please open an issue if you are unable to "
    "replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose."
)


STEP_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call "
    "them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result in "
    "PyTorch skipping the first value of the learning rate schedule. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)
STEP_OVERRIDDEN_WARNING = (
    "Seems like `optimizer.step()` has been overridden after learning rate scheduler initialization. Please, make "
    "sure to call `optimizer.step()` before `lr_scheduler.step()`. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)


def _track_optimizer_steps(optimizer: Optimizer) -> None:
    """Wrap ``optimizer.step`` (once per optimizer) so that a call records itself in ``optimizer._opt_called``, as
    torch does: a scheduler's first ``step()`` warns when the optimizer has not stepped yet."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    optimizer_ref = weakref.ref(optimizer)  # the wrapper lives on the optimizer: no reference cycle
    func = optimizer.step.__func__

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        opt = optimizer_ref()
        opt._opt_called = True
        return func.__get__(opt, opt.__class__)(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


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


def _saved_callable(fn: Callable | None) -> dict[str, Any] | None:
    """How torch saves a user function: nothing for a plain function or lambda, the attributes of a callable object."""
    if fn is None or isinstance(fn, types.FunctionType):
        return None
    return fn.__dict__.copy()


def _warn_get_lr_called_within_step(scheduler: LRScheduler) -> None:
    """torch's warning when a built-in schedule's ``get_lr`` is called outside ``step``: it computes the next step's
    learning rates there, not the current ones."""
    if not scheduler._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                      UserWarning, stacklevel=3)


def _restore_callable(fn: Callable | None, saved: dict[str, Any] | None) -> None:
    if saved is not None:
        fn.__dict__.update(saved)


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
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "scheduler with last_epoch >= 0.\nThis typically happens when:\n1. You're trying "
                                   "to resume training from a checkpoint but haven't properly loaded the optimizer "
                                   "state\n2. You're using last_epoch >= 0 for a fresh training run (not "
                                   "recommended)")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        _track_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        """Take the step that sets the learning rates for epoch 0."""
        self._step_count = 0
        self._is_initial = True
        self._get_lr_called_within_step = False  # True while step() computes the learning rates
        self.step()
        self._is_initial = False

    def get_lr(self) -> list[float]:
        """The learning rates for ``last_epoch`` (called by :meth:`step`; use :meth:`get_last_lr` to read)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rates set by the last :meth:`step`, one per parameter group."""
        return self._last_lr

    def _get_closed_form_lr(self) -> list[float]:
        """The learning rates at ``last_epoch`` computed from ``base_lrs``, for ``step(epoch)`` and SequentialLR's
        restarts; a schedule without a closed form falls back to :meth:`get_lr`, as in torch."""
        return self.get_lr()

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule one step and write the new learning rates into the optimizer.

        Args:
            epoch: deprecated (torch warns too): jump to this epoch, using the closed-form learning rates where the
                schedule has them.
        """
        if self._step_count == 1:  # the first step after the initial one: was the optimizer stepped before?
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(STEP_OVERRIDDEN_WARNING, UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(STEP_ORDER_WARNING, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self._lrs_within_step(self.get_lr)
        else:
            self.last_epoch = epoch
            values = self._lrs_within_step(self._get_closed_form_lr)
        self._set_lrs(values)

    def _lrs_within_step(self, compute: Callable[[], list[float]]) -> list[float]:
        """``compute()`` run as part of a step, where the built-in schedules' ``get_lr`` does not warn."""
        self._get_lr_called_within_step = True
        try:
            return compute()
        finally:
            self._get_lr_called_within_step = False

    def _set_lrs(self, values: Sequence[float]) -> None:
        self._write_lrs(values)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _write_lrs(self, values: Sequence[float]) -> None:
        """Write one learning rate per group into the optimizer (``get_last_lr`` is left as it is)."""
        for group, lr in zip(self.optimizer.param_groups, values):
            if isinstance(group["lr"], Tensor):
                group["lr"].fill_(lr)  # in place, as torch: a captured optimizer step reads the tensor
            else:
                group["lr"] = lr

    def _current_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer and functions (lambdas cannot be saved)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer" and not callable(value)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)


class _LRScheduler(LRScheduler):
    """Legacy name of :class:`LRScheduler`, kept (as in torch) for custom schedules that subclass it."""

