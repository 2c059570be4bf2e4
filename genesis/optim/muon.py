"""Muon: momentum orthogonalized by a Newton-Schulz iteration (Keller Jordan, 2024), as ``torch.optim.Muon``."""

from __future__ import annotations

import math
from typing import Any, Iterable

from genesis import ops as F
from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor, zeros_like

EPS = 1e-7
DEFAULT_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
DEFAULT_NS_STEPS = 5


def _orthogonalize(update: Tensor, coefficients: tuple[float, float, float], steps: int, eps: float) -> Tensor:
    """The Newton-Schulz iteration ``X <- a X + (b G + c G^2) X`` with ``G = X X^T``, from ``X = M / |M|_F`` in
    bfloat16, as torch's: it pushes the singular values of ``M`` towards 1 (to about 0.5-1.5), so the result is
    close to ``U V^T`` of the SVD ``M = U S V^T``. A tall matrix is iterated transposed, on its smaller Gram matrix."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if update.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    tall = update.shape[0] > update.shape[1]
    x = update.bfloat16()
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.T
        x = F.addmm(x, F.addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if tall else x


def _adjusted_lr(lr: float, adjust_lr_fn: str | None, shape: tuple[int, ...]) -> float:
    """The step size for a (rows, cols) matrix: ``sqrt(max(1, rows / cols))`` times lr ("original", Keller Jordan's),
    or ``0.2 sqrt(max(rows, cols))`` times lr ("match_rms_adamw", Moonshot's: AdamW's update RMS)."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    return lr * 0.2 * math.sqrt(max(rows, cols))


class Muon(Optimizer):
    """Muon (as ``torch.optim.Muon``) for 2-D parameters.

    ``B = lerp(B, g, 1 - momentum)``; the update is ``lerp(g, B, momentum)`` with Nesterov, else ``B``; it is
    orthogonalized by ``ns_steps`` Newton-Schulz iterations in bfloat16, then ``p *= 1 - lr * weight_decay`` and
    ``p -= adjusted_lr * update`` (see ``adjust_lr_fn``). Parameters that are not matrices (biases, norms,
    embeddings in most recipes) belong to another optimizer, as with torch's.
    """

    counts_steps = False
    elementwise_update = False  # the iteration works on whole matrices: never on concatenated parameters

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple[float, float, float] = DEFAULT_NS_COEFFICIENTS,
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS, adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "nesterov": nesterov,
                    "ns_coefficients": ns_coefficients, "eps": eps, "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def _update_complex(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                        step: None) -> None:
        raise RuntimeError("Muon does not support complex parameters")

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any], step: None) -> None:
        if grad.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = zeros_like(grad)
        buf, momentum = state["momentum_buffer"], group["momentum"]
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if group["nesterov"] else buf
        update = _orthogonalize(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
        lr = float(group["lr"])
        p.mul_(1 - lr * group["weight_decay"])
        p.add_(update, alpha=-_adjusted_lr(lr, group["adjust_lr_fn"], tuple(p.shape)))
