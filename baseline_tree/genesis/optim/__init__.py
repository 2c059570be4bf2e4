"""Optimizers and learning-rate schedules (``genesis.optim``, as ``torch.optim``)."""

from genesis.optim import lr_scheduler
from genesis.optim.adagrad import Adagrad
from genesis.optim.adam import Adam, AdamW
from genesis.optim.optimizer import Optimizer
from genesis.optim.rmsprop import RMSprop
from genesis.optim.sgd import SGD

__all__ = ["Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
