"""RMSprop (Hinton's lecture 6e), optionally centered (Graves, 2013) and with momentum."""

from __future__ import annotations

from typing import Any, Iterable

from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor, zeros_like


class RMSprop(Optimizer):
    """RMSprop (as ``torch.optim.RMSprop``).

    ``v = alpha * v + (1 - alpha) * g * g``; centered: ``avg = sqrt(v - mean(g)^2)`` with the running gradient mean,
    else ``avg = sqrt(v)``; then ``p -= lr * g / (avg + eps)``, or through a momentum buffer
    ``b = momentum * b + g / (avg + eps)``, ``p -= lr * b``.
    """

    validates_hyperparameters = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False) -> None:
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                step: float | None) -> None:
        if "square_avg" not in state:
            state["square_avg"] = zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = zeros_like(p)
        alpha = group["alpha"]
        g = self._effective_grad(p, grad, group, group["weight_decay"])
        square_avg = state["square_avg"]
        s = self._scratch(p)
        # The products in torch's order ((1 - alpha) * g first, as its addcmul_), so that roundings agree.
        square_avg.mul_(alpha).add_(s.copy_(g).mul_(1 - alpha).mul_(g))  # v = alpha v + (1 - alpha) g^2
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg.lerp_(g, 1 - alpha)
            avg = s.copy_(grad_avg).mul_(grad_avg).neg_().add_(square_avg).sqrt_()  # sqrt(v - mean^2)
        else:
            avg = s.copy_(square_avg).sqrt_()
        avg.add_(group["eps"])
        if group["momentum"] > 0:
            buf = state["momentum_buffer"].mul_(group["momentum"]).add_(self._scratch(p, 2).copy_(g).div_(avg))
            self._descend(p, buf, group["lr"])
        else:
            p.add_(self._scratch(p, 2).copy_(g).mul_(-group["lr"]).div_(avg))  # torch's addcdiv_: (-lr * g) / avg
