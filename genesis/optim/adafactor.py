"""Adafactor: Adam-like steps from a factored second moment (Shazeer & Stern, 2018), as ``torch.optim.Adafactor``."""

from __future__ import annotations

import math
from typing import Any, Iterable

from genesis import dtypes
from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor, zeros, zeros_like


class Adafactor(Optimizer):
    """Adafactor (as ``torch.optim.Adafactor``, torch's variant of the algorithm).

    A matrix parameter (any parameter of two or more dims, over its last two) keeps only a row and a column mean of
    the squared gradient, each an exponential average with ``1 - beta2_t = t ** beta2_decay``; their outer product
    over the row factors' mean estimates the second moment. A vector keeps the full average. The update
    ``g / sqrt(v)`` is scaled down to RMS ``d`` at most, and the step is relative to the parameter's RMS:
    ``alpha = max(eps2, rms(p)) * min(lr, 1 / sqrt(t))``. Weight decay is decoupled (``p *= 1 - lr * wd``). There is
    no first moment. As torch's, each step reads two norms per parameter on the host.

    Args:
        lr: the upper bound of the relative step size.
        beta2_decay: the exponent of the second-moment decay schedule (<= 0).
        eps: ``(eps1, eps2)``: eps1 bounds the variance estimate from below (None: the dtype's machine epsilon),
            eps2 the parameter RMS the step is relative to.
        d: the clipping threshold of the update's RMS (>= 1).
        weight_decay: decoupled weight decay.
    """

    elementwise_update = False  # row and column statistics: never on concatenated parameters
    factored_state = ("row_var", "col_var")

    def __init__(self, params: Iterable[Any], lr: float | Tensor = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def _update_complex(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                        step: float) -> None:
        raise RuntimeError("Adafactor does not support complex parameters")

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                step: float) -> None:
        matrix = grad.ndim > 1
        if "row_var" not in state and "variance" not in state:
            if matrix:
                state["row_var"] = zeros(*grad.shape[:-1], 1, dtype=grad.dtype, device=grad.device)
                state["col_var"] = zeros(*grad.shape[:-2], 1, grad.shape[-1], dtype=grad.dtype, device=grad.device)
            else:
                state["variance"] = zeros_like(grad)
        lr = float(group["lr"])
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = dtypes.finfo(p.dtype).eps
        g = -grad if group["maximize"] else grad
        one_minus_beta2 = step ** group["beta2_decay"]
        rho = min(lr, 1 / math.sqrt(step))
        alpha = max(eps2, float(p.norm(2).item()) / math.sqrt(p.numel())) * rho
        if group["weight_decay"] != 0:
            p.mul_(1 - lr * group["weight_decay"])
        if matrix:
            row_var, col_var = state["row_var"], state["col_var"]
            row_var.lerp_(g.norm(2, dim=-1, keepdim=True).square().div(g.shape[-1]), one_minus_beta2)
            col_var.lerp_(g.norm(2, dim=-2, keepdim=True).square().div(g.shape[-2]), one_minus_beta2)
            var_estimate = (row_var @ col_var).div_(row_var.mean(dim=-2, keepdim=True).clamp(min=eps1))
        else:
            state["variance"].lerp_(g * g, one_minus_beta2)
            var_estimate = state["variance"].clone()
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(g)
        denom = max(1.0, float(update.norm(2).item()) / (math.sqrt(update.numel()) * group["d"]))
        p.add_(update, alpha=-alpha / denom)
