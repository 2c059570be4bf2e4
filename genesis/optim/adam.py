"""Adam and AdamW (Kingma & Ba, 2015; Loshchilov & Hutter, 2019)."""

from __future__ import annotations

from typing import Any, Iterable

from genesis import dtypes
from genesis.ops.fused import fused_adam_multi_step_, fused_adam_step_
from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor, full, zeros, zeros_like

_HALF = (dtypes.float16, dtypes.bfloat16)


class Adam(Optimizer):
    """Adam (as ``torch.optim.Adam``).

    ``m = beta1 * m + (1 - beta1) * g``, ``v = beta2 * v + (1 - beta2) * g * g`` (with ``amsgrad``, the running
    maximum of ``v`` replaces it), then ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``.
    ``weight_decay`` adds ``weight_decay * p`` to the gradient (L2 penalty); with ``decoupled_weight_decay`` the
    parameter is instead shrunk by ``1 - lr * weight_decay`` before the update, which is AdamW.

    ``fused`` (as torch's): None (default) updates all GPU parameters of a group with one multi-tensor kernel
    launch per dtype combination unless ``foreach=False`` (the CPU keeps its per-parameter step); True also takes
    the multi-tensor step on the CPU; False never fuses across parameters. ``master_weights=True`` (as apex's
    ``FusedAdam``) keeps a float32 copy of every bfloat16/float16 parameter in ``state["master_param"]``, with
    float32 moments: the update runs on the copy and the parameter receives it rounded, so small updates are not
    lost to half-precision rounding.

    ``capturable=True`` (as torch's) makes ``step()`` safe to capture in a CUDA graph: each parameter's step count
    is a float32 0-d tensor on its device (``state["step"]``), incremented in place on the device, and the bias
    corrections are computed from it on the device, so every replay of a captured step advances the count. ``lr``
    may be a 0-d tensor (with ``capturable``, on the parameters' device): the update reads its current value, so
    ``lr.fill_(new_lr)`` between replays changes the learning rate of a captured step. Torch refuses
    ``capturable=True`` for CPU parameters; Genesis accepts it there (the same results as without it).
    """

    validates_hyperparameters = True
    sparse_grads_refusal = "Adam does not support sparse gradients, please consider SparseAdam instead"

    def __init__(self, params: Iterable[Any], lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *, maximize: bool = False,
                 decoupled_weight_decay: bool = False, foreach: bool | None = None, fused: bool | None = None,
                 capturable: bool = False, differentiable: bool = False, master_weights: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused, "decoupled_weight_decay": decoupled_weight_decay,
                    "master_weights": master_weights}
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        if "exp_avg" in state:
            return
        if group.get("master_weights") and p.dtype in _HALF:
            state["master_param"] = p.detach().float()
            state["exp_avg"] = zeros(p.shape, dtype=dtypes.float32, device=p.device)
            state["exp_avg_sq"] = zeros(p.shape, dtype=dtypes.float32, device=p.device)
        else:
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_like(state["exp_avg_sq"])

    def _fused_step(self, group: dict[str, Any], params: list[Tensor]) -> list[Tensor]:
        if group["amsgrad"]:
            return params
        rest = []
        batches: dict[tuple, list[Tensor]] = {}
        capturable = group.get("capturable", False)
        # The CPU backend's fused step takes host scalars: device-side step counts and tensor learning rates take
        # the per-parameter path there, as does maximize unless fused=True asked for the fused kernel.
        host_only = capturable or isinstance(group["lr"], Tensor)
        per_parameter = host_only or (group["maximize"] and not group.get("fused"))
        new_steps: dict[tuple, Tensor] = {}
        all_states = self.state
        for p in params:
            nd = p.ndarray
            if per_parameter and nd.device.type == "cpu":
                rest.append(p)
                continue
            state = all_states.get(p)
            if state is None:
                state = all_states[p] = {}
            if "exp_avg" not in state:
                self._init_state(p, state, group)
            key = (nd.device, nd.dtype, p.grad.dtype, state["exp_avg"].dtype, "master_param" in state)
            if capturable:
                # Parameters updated by one launch share one step tensor (created together, counted together).
                step = state.get("step")
                if not isinstance(step, Tensor) or step.device != p.device:
                    count = self._steps.count(state)
                    shared = new_steps.get(key + (count,))
                    if shared is None:
                        shared = new_steps[key + (count,)] = _step_tensor(count, p)
                    state["step"] = shared
                key += (id(state["step"]),)
            else:
                key += (self._steps.count(state),)  # the host count: one launch per count
            batches.setdefault(key, []).append(p)
        (beta1, beta2), eps = group["betas"], group["eps"]
        for key, ps in batches.items():
            master = key[4]
            states = [self.state[p] for p in ps]
            if capturable:
                step = states[0]["step"]
                step.add_(1)  # on the device: a captured step counts every replay
            else:
                step = self._steps.next_count(states[0], key[-1], ps[0], group)
            done = fused_adam_multi_step_(
                ps, [p.grad for p in ps], [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
                [s["master_param"] for s in states] if master else None, _lr_on(group["lr"], ps[0]), beta1, beta2,
                eps, group["weight_decay"], group["decoupled_weight_decay"], step, group["maximize"])
            if done:
                if not capturable:
                    self._steps.write(states, step, ps[0], group)  # one fill for all their step tensors
            else:
                if capturable:  # the per-parameter path counts each parameter's step itself
                    step.sub_(1)
                    if len(states) > 1:  # once: each parameter gets a step tensor of its own, kept from then on
                        for s in states:
                            s["step"] = step.clone()
                rest.extend(ps)
        return rest

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any],
                step: float | Tensor) -> None:
        self._init_state(p, state, group)
        master = state.get("master_param")
        target = master if master is not None else p  # with master weights the update runs on the float32 copy
        lr, (beta1, beta2), weight_decay = _lr_on(group["lr"], p), group["betas"], group["weight_decay"]
        decoupled = group["decoupled_weight_decay"]
        # With a device-side step count or a tensor learning rate the scalars below are 0-d tensors: the same
        # formulas, computed on the device.
        if (not group["amsgrad"] and not group["maximize"] and not isinstance(step, Tensor)
                and not isinstance(lr, Tensor)
                and fused_adam_step_(target, grad, state["exp_avg"], state["exp_avg_sq"], lr, beta1, beta2,
                                     group["eps"], weight_decay, decoupled, step)):
            if master is not None:
                p.copy_(master)
            return  # one fused kernel
        if isinstance(lr, Tensor):
            lr = lr.double()  # the scalars derived from it in float64, as from a host float
        g = self._effective_grad(target, grad, group, 0.0 if decoupled else weight_decay)
        if decoupled and weight_decay != 0:
            target.mul_(1 - lr * weight_decay)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        s = self._scratch(target)
        exp_avg.add_(s.copy_(g).sub_(exp_avg).mul_(1 - beta1))  # m = lerp(m, g, 1 - beta1)
        exp_avg_sq.mul_(beta2).add_(s.copy_(g).mul_(g).mul_(1 - beta2))  # v = beta2 v + (1 - beta2) g^2
        if group["amsgrad"]:
            exp_avg_sq = state["max_exp_avg_sq"].maximum_(exp_avg_sq)
        if isinstance(step, Tensor):
            step = step.double()  # bias corrections in float64, as from a host count (0-d: no promotion of p)
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        denom = s.copy_(exp_avg_sq).sqrt_().div_(bias_correction2_sqrt).add_(group["eps"])
        target.add_(self._scratch(target, 1).copy_(exp_avg).div_(denom).mul_(-step_size))
        if master is not None:
            p.copy_(master)


def _step_tensor(count: int, p: Tensor) -> Tensor:
    """A capturable step count: a float32 0-d tensor on ``p``'s device (torch's layout)."""
    return full((), float(count), dtype=dtypes.float32, device=p.device)


def _lr_on(lr: float | Tensor, p: Tensor) -> float | Tensor:
    """The learning rate as the update of ``p`` reads it: a tensor on another device (a CPU scalar for GPU
    parameters) is read on the host; a tensor on ``p``'s device is read by the device."""
    if isinstance(lr, Tensor) and lr.device != p.device:
        if lr.device.type != "cpu":
            raise ValueError(f"Adam: the lr tensor is on {lr.device}, the parameters on {p.device}")
        return float(lr.item())
    return lr


class AdamW(Adam):
    """Adam with decoupled weight decay (as ``torch.optim.AdamW``; default ``weight_decay=1e-2``)."""

    def __init__(self, params: Iterable[Any], lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, fused: bool | None = None,
                 capturable: bool = False, differentiable: bool = False, master_weights: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True, foreach=foreach, fused=fused, capturable=capturable,
                         differentiable=differentiable, master_weights=master_weights)
