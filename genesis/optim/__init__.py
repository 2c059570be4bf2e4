"""Optimizers, learning-rate schedules and weight averaging (``genesis.optim``, as ``torch.optim``)."""

from genesis.optim import lr_scheduler, swa_utils
from genesis.optim.adadelta import Adadelta
from genesis.optim.adafactor import Adafactor
from genesis.optim.adagrad import Adagrad
from genesis.optim.adam import Adam, AdamW
from genesis.optim.adamax import Adamax
from genesis.optim.asgd import ASGD
from genesis.optim.lbfgs import LBFGS
from genesis.optim.muon import Muon
from genesis.optim.nadam import NAdam, RAdam
from genesis.optim.optimizer import Optimizer
from genesis.optim.rmsprop import RMSprop
from genesis.optim.rprop import Rprop
from genesis.optim.sgd import SGD
from genesis.optim.sparse_adam import SparseAdam

__all__ = ["ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon", "NAdam",
           "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam", "lr_scheduler", "swa_utils"]
