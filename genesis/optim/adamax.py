"""Adamax, Adam under the infinity norm (Kingma & Ba, 2015, section 7)."""

from __future__ import annotations

from typing import Any, Iterable

from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor, zeros_like


class Adamax(Optimizer):
    """Adamax (as ``torch.optim.Adamax``).

    ``m = beta1 * m + (1 - beta1) * g``, ``u = max(beta2 * u, |g| + eps)``, then
    ``p -= lr / (1 - beta1^t) * m / u``.
    """

    validates_hyperparameters = True

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                step: float) -> None:
        if "exp_avg" not in state:
            state["exp_avg"] = zeros_like(p)
            state["exp_inf"] = zeros_like(p)
        (beta1, beta2), eps = group["betas"], group["eps"]
        g = self._effective_grad(p, grad, group, group["weight_decay"])
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        s = self._scratch(p)
        exp_avg.lerp_(g, 1 - beta1)
        exp_inf.mul_(beta2).maximum_(s.copy_(g).abs_().add_(eps))
        clr = group["lr"] / (1 - beta1**step)
        p.add_(s.copy_(exp_avg).mul_(-clr).div_(exp_inf))  # torch's addcdiv_ order: (-clr * m) / u
