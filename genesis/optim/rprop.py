"""Rprop, resilient backpropagation (Riedmiller & Braun, 1993)."""

from __future__ import annotations

from typing import Any, Iterable

from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor, full_like, zeros_like


class Rprop(Optimizer):
    """Rprop (as ``torch.optim.Rprop``).

    Each element keeps its own step size: multiplied by ``etaplus`` while the gradient keeps its sign, by
    ``etaminus`` when it flips (and that element's gradient is then taken as zero), clamped to ``step_sizes``; then
    ``p -= sign(g) * step_size``.
    """

    validates_hyperparameters = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": tuple(etas), "step_sizes": tuple(step_sizes), "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                step: float | None) -> None:
        if "prev" not in state:
            state["prev"] = zeros_like(p)
            state["step_size"] = full_like(p, group["lr"])
        (etaminus, etaplus), (step_min, step_max) = group["etas"], group["step_sizes"]
        g = self._effective_grad(p, grad, group, 0.0)
        prev, step_size = state["prev"], state["step_size"]
        agreement = self._scratch(p).copy_(g).mul_(prev)
        flipped = agreement < 0
        factor = self._scratch(p, 3).fill_(1).masked_fill_(agreement > 0, etaplus).masked_fill_(flipped, etaminus)
        step_size.mul_(factor).clamp_(step_min, step_max)
        prev.copy_(g).masked_fill_(flipped, 0)
        p.sub_(agreement.copy_(prev).sign_().mul_(step_size))
