"""Adadelta (Zeiler, 2012)."""

from __future__ import annotations

from typing import Any, Iterable

from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor, zeros_like


class Adadelta(Optimizer):
    """Adadelta (as ``torch.optim.Adadelta``).

    ``v = rho * v + (1 - rho) * g * g``, ``delta = sqrt(u + eps) / sqrt(v + eps) * g``,
    ``u = rho * u + (1 - rho) * delta * delta``, then ``p -= lr * delta``.
    """

    validates_hyperparameters = True

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                step: float | None) -> None:
        if "square_avg" not in state:
            state["square_avg"] = zeros_like(p)
            state["acc_delta"] = zeros_like(p)
        rho, eps = group["rho"], group["eps"]
        g = self._effective_grad(p, grad, group, group["weight_decay"])
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        s = self._scratch(p)
        # The products in torch's order ((1 - rho) * g first, as its addcmul_), so that roundings agree.
        square_avg.mul_(rho).add_(s.copy_(g).mul_(1 - rho).mul_(g))  # v = rho v + (1 - rho) g^2
        std = s.copy_(square_avg).add_(eps).sqrt_()
        delta = self._scratch(p, 3).copy_(acc_delta).add_(eps).sqrt_().div_(std).mul_(g)
        acc_delta.mul_(rho).add_(s.copy_(delta).mul_(1 - rho).mul_(delta))  # u = rho u + (1 - rho) delta^2
        self._descend(p, delta, group["lr"])
