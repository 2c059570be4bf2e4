"""ZeroRedundancyOptimizer (torch.distributed.optim): optimizer state sharded across the ranks (ZeRO stage 1).

Each parameter is owned by one rank (parameters are dealt largest first to the rank holding the fewest elements);
each rank keeps the optimizer state of its own parameters only and updates them, then every parameter is broadcast
from its owner. Gradients must already be averaged (DistributedDataParallel does it), so every rank sees the same
parameters after ``step``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from genesis import dtypes
from genesis.autograd.grad_mode import no_grad
from genesis.distributed import collectives
from genesis.distributed.process_group import ProcessGroup, resolve
from genesis.optim.optimizer import Optimizer
from genesis.tensor import Tensor, empty


class ZeroRedundancyOptimizer:
    """Wrap ``optimizer_class`` so that each rank holds the state of a shard of the parameters.

    Args:
        params: tensors, or dicts of ``"params"`` plus hyperparameters, as for any optimizer.
        optimizer_class: the local optimizer (e.g. ``genesis.optim.AdamW``).
        process_group: the ranks to shard over (the default group when None).
        parameters_as_bucket_view, overlap_with_ddp: accepted for torch compatibility (not used).
        **defaults: the optimizer's hyperparameters.
    """

    def __init__(self, params: Iterable[Any], optimizer_class: type[Optimizer],
                 process_group: ProcessGroup | None = None, parameters_as_bucket_view: bool = False,
                 overlap_with_ddp: bool = False, **defaults: Any) -> None:
        self.process_group = resolve("ZeroRedundancyOptimizer", process_group)
        groups = list(params)
        if not groups:
            raise ValueError("ZeroRedundancyOptimizer: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.param_groups = [dict(g, params=list(g["params"])) for g in groups]
        self._all = [p for g in self.param_groups for p in g["params"]]
        self.owner = self._partition(self._all, self.process_group.size())
        me = self.process_group.rank()
        local = [dict(g, params=[p for p in g["params"] if self.owner[id(p)] == me]) for g in self.param_groups]
        # A rank may own no parameter of a group: keep the group (hyperparameters stay aligned) with no tensors.
        self._local_groups = local
        kept = [g for g in local if g["params"]]
        self.optim = optimizer_class(kept, **defaults) if kept else None
        self.defaults = self.optim.defaults if self.optim is not None else dict(defaults)
        for g in self.param_groups:
            for key, value in self.defaults.items():
                g.setdefault(key, value)

    @staticmethod
    def _partition(params: list[Tensor], n: int) -> dict[int, int]:
        """Deal parameters, largest first, to the rank with the fewest elements so far (torch's greedy rule)."""
        sizes = [0] * n
        owner = {}
        for p in sorted(params, key=lambda t: -t.numel()):
            r = sizes.index(min(sizes))
            owner[id(p)] = r
            sizes[r] += p.numel()
        return owner

    def _sync_hyperparameters(self) -> None:
        """Copy hyperparameters changed on ``param_groups`` (by a scheduler, say) into the local optimizer."""
        if self.optim is None:
            return
        local = iter(self.optim.param_groups)
        for group, mine in zip(self.param_groups, self._local_groups):
            if mine["params"]:
                target = next(local)
                target.update({k: v for k, v in group.items() if k != "params"})

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update this rank's parameters, then broadcast every parameter from its owner."""
        self._sync_hyperparameters()
        loss = self.optim.step(closure) if self.optim is not None else (closure() if closure else None)
        ranks = self.process_group.ranks
        with no_grad():
            for p in self._all:
                collectives.broadcast(p, ranks[self.owner[id(p)]], self.process_group)
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients of every parameter (not only this rank's)."""
        for p in self._all:
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather the whole optimizer state on rank ``to`` (every rank must call it); then ``state_dict()`` there."""
        me = self.process_group.ranks[self.process_group.rank()]
        local = self.optim.state if self.optim is not None else {}
        state: dict[int, dict[str, Any]] = {}
        for i, p in enumerate(self._all):
            src = self.process_group.ranks[self.owner[id(p)]]
            mine = local.get(p, {}) if src == me else {}
            # A tensor travels on the parameter's device (NCCL sends device memory) and lands where it was: the
            # step counts stay on the CPU, as the optimizer keeps them.
            meta = [{k: (["tensor", list(v.shape), str(v.dtype).removeprefix("genesis."), v.device.type == "cpu"]
                         if isinstance(v, Tensor) else ["value", v]) for k, v in mine.items()}]
            collectives.broadcast_object_list(meta, src, self.process_group)
            entry = {}
            for key, (kind, *info) in meta[0].items():
                if kind == "value":
                    entry[key] = info[0]
                    continue
                buf = mine[key].to(p.device).contiguous() if src == me else empty(
                    info[0], dtype=dtypes.to_dtype(info[1]), device=p.device)
                collectives.broadcast(buf, src, self.process_group)
                entry[key] = (buf.cpu() if info[2] else buf).clone()
            if me == to and entry:
                state[i] = entry
        self._consolidated = state if me == to else None

    def state_dict(self) -> dict[str, Any]:
        """The whole state in the wrapped optimizer's layout (after ``consolidate_state_dict`` on this rank)."""
        if getattr(self, "_consolidated", None) is None:
            raise RuntimeError("ZeroRedundancyOptimizer: call consolidate_state_dict(to=rank) on every rank before "
                               "state_dict() on that rank")
        index = {id(p): i for i, p in enumerate(self._all)}
        groups = [dict({k: v for k, v in g.items() if k != "params"}, params=[index[id(p)] for p in g["params"]])
                  for g in self.param_groups]
        return {"state": dict(self._consolidated), "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a consolidated state dict on every rank; each keeps the state of the parameters it owns."""
        me = self.process_group.rank()
        if len(state_dict["param_groups"]) != len(self.param_groups):
            raise ValueError(f"ZeroRedundancyOptimizer: the state dict has {len(state_dict['param_groups'])} "
                             f"parameter groups, this optimizer {len(self.param_groups)}")
        for group, saved in zip(self.param_groups, state_dict["param_groups"]):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self._sync_hyperparameters()
        if self.optim is None:
            return
        local_index = {id(p): i for i, p in enumerate(q for g in self.optim.param_groups for q in g["params"])}
        local_state = {local_index[id(p)]: s for i, s in state_dict["state"].items()
                       for p in [self._all[int(i)]] if self.owner[id(p)] == me}
        local = self.optim.state_dict()
        self.optim.load_state_dict({"state": local_state, "param_groups": local["param_groups"]})
