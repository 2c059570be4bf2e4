"""Adagrad (Duchi, Hazan & Singer, 2011)."""

from __future__ import annotations

from typing import Any, Iterable

from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor, full_like


class Adagrad(Optimizer):
    """Adagrad (as ``torch.optim.Adagrad``).

    ``s += g * g``, then ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)``, with ``s`` starting at
    ``initial_accumulator_value``.
    """

    validates_hyperparameters = True

    accepts_sparse_grads = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                step: float) -> None:
        if "sum" not in state:
            state["sum"] = full_like(p, group["initial_accumulator_value"])
        g = self._effective_grad(p, grad, group, group["weight_decay"])
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        s = self._scratch(p)
        state["sum"].add_(s.copy_(g).mul_(g))
        std = s.copy_(state["sum"]).sqrt_().add_(group["eps"])
        p.add_(self._scratch(p, 2).copy_(g).mul_(-clr).div_(std))  # torch's addcdiv_ order: (-clr * g) / std
