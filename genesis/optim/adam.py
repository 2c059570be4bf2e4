"""Adam and AdamW (Kingma & Ba, 2015; Loshchilov & Hutter, 2019)."""

from __future__ import annotations

from typing import Any, Iterable

from genesis.functional.fused import fused_adam_step_
from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor, zeros_like


class Adam(Optimizer):
    """Adam (as ``torch.optim.Adam``).

    ``m = beta1 * m + (1 - beta1) * g``, ``v = beta2 * v + (1 - beta2) * g * g`` (with ``amsgrad``, the running
    maximum of ``v`` replaces it), then ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``.
    ``weight_decay`` adds ``weight_decay * p`` to the gradient (L2 penalty); with ``decoupled_weight_decay`` the
    parameter is instead shrunk by ``1 - lr * weight_decay`` before the update, which is AdamW.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False,
                 decoupled_weight_decay: bool = False, foreach: bool | None = None) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "decoupled_weight_decay": decoupled_weight_decay,
                    "foreach": foreach}
        super().__init__(params, defaults)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        if "exp_avg" not in state:
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_like(p)
        step = state["step"]
        lr, (beta1, beta2), weight_decay = group["lr"], group["betas"], group["weight_decay"]
        decoupled = group["decoupled_weight_decay"]
        if (not group["amsgrad"] and not group["maximize"]
                and fused_adam_step_(p, grad, state["exp_avg"], state["exp_avg_sq"], lr, beta1, beta2, group["eps"],
                                     weight_decay, decoupled, step)):
            return  # one fused kernel
        g = self._effective_grad(p, grad, group, 0.0 if decoupled else weight_decay)
        if decoupled and weight_decay != 0:
            p.mul_(1 - lr * weight_decay)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        s = self._scratch(p)
        exp_avg.add_(s.copy_(g).sub_(exp_avg).mul_(1 - beta1))  # m = lerp(m, g, 1 - beta1)
        exp_avg_sq.mul_(beta2).add_(s.copy_(g).mul_(g).mul_(1 - beta2))  # v = beta2 v + (1 - beta2) g^2
        if group["amsgrad"]:
            exp_avg_sq = state["max_exp_avg_sq"].maximum_(exp_avg_sq)
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        denom = s.copy_(exp_avg_sq).sqrt_().div_(bias_correction2_sqrt).add_(group["eps"])
        p.add_(self._scratch(p, 1).copy_(exp_avg).div_(denom).mul_(-step_size))


class AdamW(Adam):
    """Adam with decoupled weight decay (as ``torch.optim.AdamW``; default ``weight_decay=1e-2``)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True, foreach=foreach)
