"""Learning-rate schedules (``genesis.optim.lr_scheduler``, as ``torch.optim.lr_scheduler``).

A scheduler rewrites ``group["lr"]`` of its optimizer's parameter groups each time ``step()`` is called (after
``optimizer.step()``). The update rules are torch's chainable ones: most schedules multiply the current learning
rate, so several schedulers can act on one optimizer, and the sequence of ``get_last_lr()`` values equals
torch's step for step. ``step(epoch)`` is torch's deprecated form: it warns, jumps to ``epoch`` and uses the
schedule's closed form where it has one. ``state_dict()`` holds every attribute but the optimizer (and functions,
which cannot be saved; a callable object is saved as its ``__dict__``, as torch does).
"""

from genesis.optim.lr_scheduler.composed import ChainedScheduler, ReduceLROnPlateau, SequentialLR
from genesis.optim.lr_scheduler.cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from genesis.optim.lr_scheduler.scheduler import EPOCH_DEPRECATION_WARNING as EPOCH_DEPRECATION_WARNING
from genesis.optim.lr_scheduler.scheduler import LRScheduler
from genesis.optim.lr_scheduler.scheduler import _LRScheduler as _LRScheduler
from genesis.optim.lr_scheduler.schedules import (
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
    warmup_cosine,
)
from genesis.optim.optimizer import Optimizer as Optimizer  # torch's module exposes it too

__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR",
           "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "MultiplicativeLR", "OneCycleLR",
           "PolynomialLR", "ReduceLROnPlateau", "SequentialLR", "StepLR", "warmup_cosine"]
