"""Weight averaging of a model (``genesis.optim.swa_utils``, as ``torch.optim.swa_utils``).

:class:`AveragedModel` keeps a copy of a model whose parameters are a running average of the model's: by default
the equal average of Stochastic Weight Averaging (Izmailov et al., 2018, "Averaging Weights Leads to Wider Optima
and Better Generalization"), or an exponential moving average with ``multi_avg_fn=get_ema_multi_avg_fn(decay)``.
:class:`SWALR` anneals the learning rate to the constant rate SWA trains with, and :func:`update_bn` recomputes the
BatchNorm statistics for the averaged weights with one pass over the data.
"""

from __future__ import annotations

import itertools
import math
from copy import deepcopy
from typing import Any, Callable, Iterable, Sequence

from genesis import dtypes
from genesis.autograd import no_grad
from genesis.nn.modules.module import Module
from genesis.nn.modules.normalization import _BatchNorm
from genesis.ops.foreach import _foreach_add_, group_by_device_dtype
from genesis.optim.lr_scheduler.scheduler import LRScheduler, _per_group, _warn_get_lr_called_within_step
from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor, tensor

AvgFn = Callable[[Tensor, Tensor, Tensor | int], Tensor]
MultiAvgFn = Callable[[Sequence[Tensor], Sequence[Tensor], Tensor | int], None]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _lerp_(tensors: Sequence[Tensor], ends: Sequence[Tensor], weight: float | Tensor) -> None:
    """``t += weight * (end - t)`` for each pair (torch's ``_foreach_lerp_``; floating and complex tensors)."""
    for t, end in zip(tensors, ends):
        t.add_((end - t) * weight)


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """The exponential moving average of lists of tensors, updated in place: ``ema = decay * ema + (1 - decay) * p``.

    Args:
        decay: the weight of the running average, in [0, 1].

    Returns:
        ``fn(ema_params, params, num_averaged)``, a ``multi_avg_fn`` for :class:`AveragedModel`.
    """
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_params: Sequence[Tensor], params: Sequence[Tensor], num_averaged: Tensor | int) -> None:
        if ema_params[0].is_floating_point() or ema_params[0].is_complex():
            _lerp_(ema_params, params, 1 - decay)
        else:
            for ema, p in zip(ema_params, params, strict=True):
                ema.copy_(ema * decay + p * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """The equal average of lists of tensors, updated in place: ``avg += (p - avg) / (num_averaged + 1)``.

    Returns:
        ``fn(averaged_params, params, num_averaged)``, a ``multi_avg_fn`` for :class:`AveragedModel`.
    """

    @no_grad()
    def swa_update(averaged: Sequence[Tensor], params: Sequence[Tensor], num_averaged: Tensor | int) -> None:
        if averaged[0].is_floating_point() or averaged[0].is_complex():
            _lerp_(averaged, params, 1 / (num_averaged + 1))
            return
        diffs = [p - a for a, p in zip(averaged, params)]
        if isinstance(num_averaged, Tensor):
            for a, diff in zip(averaged, diffs):
                a.addcdiv_(diff, num_averaged + 1)
        else:
            _foreach_add_(averaged, diffs, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """The exponential moving average of one tensor: ``fn(ema, p, num_averaged) = decay * ema + (1 - decay) * p``.

    Args:
        decay: the weight of the running average, in [0, 1].

    Returns:
        the function, an ``avg_fn`` for :class:`AveragedModel`.
    """
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Tensor | int) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """The equal average of one tensor: ``fn(avg, p, num_averaged) = avg + (p - avg) / (num_averaged + 1)``.

    Returns:
        the function, an ``avg_fn`` for :class:`AveragedModel`.
    """

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Tensor | int) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters are a running average of ``model``'s (SWA by default, or EMA).

    Each :meth:`update_parameters` call folds the model's current values in; the first one copies them.
    ``n_averaged`` (an int64 buffer) counts the calls. Calling the averaged model runs its copy, ``module``.

    Args:
        model: the model to average; ``module`` is a deep copy of it.
        device: where to keep the copy (default: where ``model`` is).
        avg_fn: ``fn(averaged, current, num_averaged)`` returning one parameter's new average.
        multi_avg_fn: ``fn(averaged_list, current_list, num_averaged)`` updating lists of parameters in place
            (called once per device and dtype). With neither function, the equal average of every model seen.
        use_buffers: average the buffers too; otherwise they are copied from ``model`` at every update.
    """

    def __init__(self, model: Module, device: Any = None, avg_fn: AvgFn | None = None,
                 multi_avg_fn: MultiAvgFn | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=dtypes.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the averaged copy of the model."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters (and buffers, with ``use_buffers``) into the running average."""
        if self.use_buffers:
            own = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            own, theirs = self.parameters(), model.parameters()
        averaged, current = [], []
        for p_averaged, p_model in zip(own, theirs):
            averaged.append(p_averaged.detach())
            current.append(p_model.detach().to(p_averaged.device))
        if self.n_averaged == 0:
            for p_averaged, p_model in zip(averaged, current):
                p_averaged.copy_(p_model)
        elif self.avg_fn is None:
            self._average_groups(averaged, current)
        else:
            for p_averaged, p_model in zip(averaged, current):
                p_averaged.copy_(self.avg_fn(p_averaged, p_model, self.n_averaged.to(p_averaged.device)))
        if not self.use_buffers:
            for b_averaged, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_averaged.detach().copy_(b_model.detach().to(b_averaged.device))
        self.n_averaged += 1

    def _average_groups(self, averaged: list[Tensor], current: list[Tensor]) -> None:
        """The list update, per (device, dtype) group: ``multi_avg_fn``, else the equal average."""
        for (device, _), idx in group_by_device_dtype(averaged).items():
            group_averaged, group_current = [averaged[i] for i in idx], [current[i] for i in idx]
            n_averaged = self.n_averaged.to(device)
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(group_averaged, group_current, n_averaged)
            elif device.type == "cuda":  # torch takes its multi-tensor path on GPUs, one tensor at a time elsewhere
                get_swa_multi_avg_fn()(group_averaged, group_current, n_averaged)
            else:
                swa = get_swa_avg_fn()
                for p_averaged, p_model in zip(group_averaged, group_current):
                    p_averaged.copy_(swa(p_averaged, p_model, n_averaged))


@no_grad()
def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running statistics of ``model``'s BatchNorm layers with one pass over ``loader``.

    The statistics are reset, then accumulated as the cumulative average over every batch (``momentum=None``);
    each layer's momentum and the model's training mode are restored afterwards.

    Args:
        loader: batches, each a tensor or a list/tuple whose first element is the model's input.
        model: the model, typically an :class:`AveragedModel`.
        device: where to move each batch before calling ``model``.
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` over ``anneal_epochs`` steps, then hold it (for SWA).

    The annealed fraction follows ``(1 - cos(pi * t)) / 2`` (``anneal_strategy="cos"``) or ``t`` ("linear"), with
    ``t`` the share of ``anneal_epochs`` done; as in torch, each step interpolates from the learning rate the
    current one started from, so other schedules may act on the optimizer before it.

    Args:
        optimizer: the optimizer whose learning rates are scheduled.
        swa_lr: the final learning rate, one for all groups or one per group.
        anneal_epochs: steps in the annealing phase (0: jump to ``swa_lr``).
        anneal_strategy: "cos" or "linear".
        last_epoch: index of the last step taken; -1 starts a new schedule.
    """

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float], anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        for group, lr in zip(optimizer.param_groups, _per_group("swa_lr", optimizer, swa_lr)):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t: float) -> float:
        """The share of the way to ``swa_lr`` after the fraction ``t`` of the annealing phase."""
        if self._anneal_strategy == "cos":
            return (1 - math.cos(math.pi * t)) / 2
        return t

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        lrs = []
        for group in self.optimizer.param_groups:
            swa_lr = group["swa_lr"]
            start = swa_lr if prev_alpha == 1 else (group["lr"] - prev_alpha * swa_lr) / (1 - prev_alpha)
            lrs.append(swa_lr * alpha + start * (1 - alpha))
        return lrs


__all__ = ["AveragedModel", "SWALR", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]
