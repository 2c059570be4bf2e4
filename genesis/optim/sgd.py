"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

from typing import Any, Iterable

from genesis.ops.fused import fused_sgd_multi_step_
from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor, empty_like


class SGD(Optimizer):
    """Stochastic gradient descent (as ``torch.optim.SGD``).

    With ``g`` the gradient (negated when ``maximize``) plus ``weight_decay * p``: the momentum buffer
    ``b = momentum * b + (1 - dampening) * g`` (``b = g`` on the first step), the direction ``d = g + momentum * b``
    with Nesterov momentum, else ``d = b``, and ``p -= lr * d``.

    ``fused`` (as torch's): None (default) updates all GPU parameters of a group with one multi-tensor kernel
    launch per dtype combination (arithmetic in float32, rounded once) unless ``foreach=False``; True also on the
    CPU; False never fuses.
    """

    validates_hyperparameters = True

    accepts_sparse_grads = True
    # torch's SGD adds the decay term as grad.add(param), which a sparse gradient refuses.
    sparse_weight_decay_refusal = "add(sparse, dense) is not supported. Use add(dense, sparse) instead."
    sparse_fused_refusal = "`_fused_sgd` does not support sparse gradients"

    counts_steps = False  # torch's SGD keeps no step count

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, fused: bool | None = None, differentiable: bool = False) -> None:
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach, "differentiable": differentiable,
                    "fused": fused}
        super().__init__(params, defaults)

    def _keeps_state(self, group: dict[str, Any]) -> bool:
        return group["momentum"] != 0  # the momentum buffer is SGD's only state

    def _fused_step(self, group: dict[str, Any], params: list[Tensor]) -> list[Tensor]:
        momentum = group["momentum"]
        rest = []
        batches: dict[tuple, list[Tensor]] = {}
        tensor_lr = isinstance(group["lr"], Tensor)
        for p in params:
            nd = p.ndarray
            if tensor_lr and nd.device.type == "cpu":  # the CPU backend takes a host lr
                rest.append(p)
                continue
            buf = self.state.get(p, {}).get("momentum_buffer") if momentum != 0 else None
            key = (nd.device, nd.dtype, p.grad.dtype, None if buf is None else buf.dtype, momentum != 0 and buf is None)
            batches.setdefault(key, []).append(p)
        for (*_, first), ps in batches.items():
            bufs = None
            if momentum != 0:
                bufs = [empty_like(p) if first else self.state[p]["momentum_buffer"] for p in ps]
            if fused_sgd_multi_step_(ps, [p.grad for p in ps], bufs, group["lr"], momentum, group["dampening"],
                                     group["weight_decay"], group["nesterov"], group["maximize"], first):
                if first:
                    for p, buf in zip(ps, bufs):
                        self.state.setdefault(p, {})["momentum_buffer"] = buf
            else:
                rest.extend(ps)
        return rest

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                step: float | None) -> None:
        g = self._effective_grad(p, grad, group, group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = g.clone()
            else:
                buf.mul_(momentum).add_(g, alpha=1 - group["dampening"])
            # Nesterov: d = g + momentum * b
            g = self._scratch(p).copy_(g).add_(buf, alpha=momentum) if group["nesterov"] else buf
        self._descend(p, g, group["lr"])
