"""ASGD, averaged stochastic gradient descent (Polyak & Juditsky, 1992)."""

from __future__ import annotations

from typing import Any, Iterable

from genesis import dtypes
from genesis.optim.optimizer import Optimizer
from genesis.optim.step_counts import float32_scalar, scalar_dtype
from genesis.tensor import Tensor, zeros_like


class ASGD(Optimizer):
    """ASGD (as ``torch.optim.ASGD``).

    ``p = p * (1 - lambd * eta) - eta * g``; the average ``ax`` follows ``p`` with weight ``mu``
    (``ax += mu * (p - ax)``); then ``eta = lr / (1 + lambd * lr * t)^alpha`` and ``mu = 1 / max(1, t - t0)``.
    ``eta`` and ``mu`` are float32 values, as torch keeps them; the step count is on the parameter's device, as
    torch's ASGD places it.
    """

    validates_hyperparameters = True

    host_scalars = ("eta", "mu")

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _step_placement(self, p: Tensor, group: dict[str, Any]) -> tuple[dtypes.dtype, Any]:
        return scalar_dtype(), p.device

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                step: float) -> None:
        if "ax" not in state:
            state["eta"] = float32_scalar(group["lr"])
            state["mu"] = 1.0
            state["ax"] = zeros_like(p)
        lr, lambd = group["lr"], group["lambd"]
        g = self._effective_grad(p, grad, group, group["weight_decay"])
        eta = state["eta"]
        p.mul_(1 - lambd * eta).add_(g, alpha=-eta)  # rounded once, as torch's
        if state["mu"] != 1:
            state["ax"].add_(self._scratch(p).copy_(p).sub_(state["ax"]).mul_(state["mu"]))
        else:
            state["ax"].copy_(p)
        state["eta"] = float32_scalar(lr / ((1 + lambd * lr * step) ** group["alpha"]))
        state["mu"] = float32_scalar(1 / max(1, step - group["t0"]))
