"""NAdam, Adam with Nesterov momentum (Dozat, 2016), and RAdam, rectified Adam (Liu et al., 2019)."""

from __future__ import annotations

from typing import Any, Iterable

from genesis.optim.optimizer import Optimizer
from genesis.optim.step_counts import float32_scalar
from genesis.tensor import Tensor, zeros_like


class _AdamMoments(Optimizer):
    """The moments NAdam and RAdam share: the weight decay (L2 or decoupled) and both running averages."""

    validates_hyperparameters = True

    def _moments(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> Tensor:
        """Apply the weight decay, update ``exp_avg`` and ``exp_avg_sq``; returns the gradient used."""
        if "exp_avg" not in state:
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
        decoupled, weight_decay = group["decoupled_weight_decay"], group["weight_decay"]
        g = self._effective_grad(p, grad, group, 0.0 if decoupled else weight_decay)
        if decoupled and weight_decay != 0:
            p.mul_(1 - group["lr"] * weight_decay)
        beta1, beta2 = group["betas"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        s = self._scratch(p)
        exp_avg.lerp_(g, 1 - beta1)
        # (1 - beta2) * g first, as torch's addcmul_, so that roundings agree.
        exp_avg_sq.mul_(beta2).add_(s.copy_(g).mul_(1 - beta2).mul_(g))  # v = beta2 v + (1 - beta2) g^2
        return g


class NAdam(_AdamMoments):
    """NAdam (as ``torch.optim.NAdam``).

    Adam's moments, a momentum schedule ``mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))`` and the Nesterov
    step ``p -= lr * (1 - mu_t) / (1 - prod mu) * g / d + lr * mu_{t+1} / (1 - prod mu * mu_{t+1}) * m / d`` with
    ``d = sqrt(v / (1 - beta2^t)) + eps``. ``decoupled_weight_decay=True`` is NAdamW.
    """

    host_scalars = ("mu_product",)

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                step: float) -> None:
        lr, (beta1, beta2) = group["lr"], group["betas"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * group["momentum_decay"]))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * group["momentum_decay"]))
        # torch multiplies its float32 tensor by mu in float32.
        mu_product = state["mu_product"] = float32_scalar(state.get("mu_product", 1.0) * float32_scalar(mu))
        g = self._moments(p, grad, state, group)
        denom = self._scratch(p, 3).copy_(state["exp_avg_sq"]).div_(1 - beta2**step).sqrt_().add_(group["eps"])
        s = self._scratch(p)
        # torch's addcdiv_ order: (value * x) / denom.
        p.add_(s.copy_(g).mul_(-lr * (1.0 - mu) / (1.0 - mu_product)).div_(denom))
        p.add_(s.copy_(state["exp_avg"]).mul_(-lr * mu_next / (1.0 - mu_product * mu_next)).div_(denom))


class RAdam(_AdamMoments):
    """RAdam (as ``torch.optim.RAdam``).

    Adam's moments; while the variance of the adaptive learning rate is intractable (``rho_t <= 5``) the step is
    SGD with momentum, ``p -= lr * m / (1 - beta1^t)``; after it, Adam's step scaled by the rectification
    ``r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``.
    ``decoupled_weight_decay=True`` is RAdamW.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                step: float) -> None:
        lr, (beta1, beta2) = group["lr"], group["betas"]
        self._moments(p, grad, state, group)
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        # torch's order: m / bc1 * lr * (sqrt(bc2) / (sqrt(v) + eps)) * rect, then subtracted.
        update = self._scratch(p).copy_(state["exp_avg"]).div_(bias_correction1).mul_(lr)
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            denom = self._scratch(p, 3).copy_(state["exp_avg_sq"]).sqrt_().add_(group["eps"])
            update.mul_(self._scratch(p, 4).fill_(bias_correction2**0.5).div_(denom)).mul_(rect)
        p.sub_(update)
