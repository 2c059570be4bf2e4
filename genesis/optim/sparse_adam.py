"""SparseAdam: Adam's moments and update applied only where a sparse gradient has entries."""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

from genesis.autograd import enable_grad, no_grad
from genesis.optim.optimizer import Optimizer, _check_state
from genesis.optim.step_counts import StepCounts
from genesis.tensor import Tensor, zeros_like


class SparseAdam(Optimizer):
    """Adam for sparse gradients (as ``torch.optim.SparseAdam``), such as those of ``nn.Embedding(sparse=True)``.

    Parameters are dense; their gradients must be sparse COO tensors (a dense gradient raises RuntimeError). Each
    step coalesces the gradient and updates the moments and the parameter only at its entries ``i``:
    ``m[i] += (1 - beta1) * (g - m[i])``, ``v[i] += (1 - beta2) * (g^2 - v[i])``, then
    ``p[i] -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m[i] / (sqrt(v[i]) + eps)``, where ``t`` counts the steps
    of the parameter. Rows without an entry keep their moments and values.

    Args:
        params: the parameters (dense), or dicts of parameter groups.
        lr: learning rate (> 0); a 1-element tensor is read as a number at each step.
        betas: the moments' decay rates, each in [0, 1).
        eps: added to the denominator (> 0).
        maximize: ascend the objective instead of descending it.
    """

    validates_hyperparameters = True

    def __init__(self, params: Iterable[Any], lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        # Stricter than the base class's checks, as torch's SparseAdam: lr and eps must be positive.
        if not 0.0 < float(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize})
        sparse_params = []
        complex_params = []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if p.is_sparse:
                    sparse_params.append([index, d_index])
                if p.is_complex():
                    complex_params.append([index, d_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a (sparse) gradient; ``closure`` re-evaluates the loss first (returned).

        Every gradient is checked before anything changes: a dense one raises RuntimeError, as torch's.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        params = [(p, group) for group in self.param_groups for p in group["params"] if p.grad is not None]
        for p, _ in params:
            if not p.grad.is_sparse:
                raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        with no_grad():
            for p, group in params:
                state = self.state.setdefault(p, {})
                _check_state(type(self).__name__, p, state)
                state["step"] = state.get("step", 0) + 1  # a host int, as torch's SparseAdam counts
                self._update(p, p.grad, state, group, state["step"])
        return loss

    def _load_step(self, value: Any, p: Tensor, group: dict[str, Any], steps: StepCounts) -> int:
        return int(value.item()) if isinstance(value, Tensor) else int(value)  # a host int, as torch's SparseAdam

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any], step: int) -> None:
        if "exp_avg" not in state:
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
        grad = grad.coalesce()  # the update is not linear in the gradient: one entry per position
        values = grad._values()
        if values.numel() == 0:
            return
        if group["maximize"]:
            values = -values
        indices = grad._indices()
        where = tuple(indices[d] for d in range(indices.shape[0]))  # one index tensor per sparse dimension
        (beta1, beta2), eps = group["betas"], group["eps"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        # m[i] += (1 - beta1) (g - m[i]), and likewise v with g^2: the old values are kept to form m and v below.
        old_avg = exp_avg[where]
        avg_update = (values - old_avg) * (1 - beta1)
        exp_avg.index_put_(where, avg_update, accumulate=True)
        old_avg_sq = exp_avg_sq[where]
        avg_sq_update = (values * values - old_avg_sq) * (1 - beta2)
        exp_avg_sq.index_put_(where, avg_sq_update, accumulate=True)
        numer = avg_update + old_avg
        denom = (avg_sq_update + old_avg_sq).sqrt() + eps
        step_size = float(group["lr"]) * math.sqrt(1 - beta2**step) / (1 - beta1**step)
        p.index_put_(where, numer / denom * -step_size, accumulate=True)
