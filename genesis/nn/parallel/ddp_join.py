"""Uneven inputs for DistributedDataParallel: ``with model.join(): ...`` (torch's ``DistributedDataParallel.join``).

Ranks whose data runs out early leave the loop and wait in the context's exit, where they shadow the collectives of
the ranks still training, iteration by iteration, so that nobody waits forever:

- every forward of a rank still training all-reduces a count of the ranks still training (a joined rank adds 0)
  and a flag saying whether this iteration's backward synchronizes gradients;
- a joined rank that sees a non-zero count takes part in the forward's buffer broadcast and, when the flag is set,
  all-reduces zeros (through the communication hook, if one is registered) for every bucket, in the order its own
  last backward reduced them, and answers the search for unused parameters;
- once the count is 0 every rank has joined: the model of the last rank to join is broadcast to all, since the
  joined ranks' optimizers did not step meanwhile.

Gradients are averaged over the initial world size (joined ranks contribute zeros), or over the ranks still
training with ``divide_by_initial_world_size=False``. With ``throw_on_early_termination=True`` every rank raises as
soon as one has run out of inputs.
"""

from __future__ import annotations

from typing import Any

from genesis import dtypes
from genesis.distributed import collectives
from genesis.distributed.process_group import ReduceOp
from genesis.tensor import tensor

_EARLY = "Detected at least one rank that exhausted inputs. Throwing across all ranks."


class DDPJoin:
    """The context ``DistributedDataParallel.join()`` returns (see the module docstring)."""

    def __init__(self, ddp: Any, enable: bool, throw_on_early_termination: bool,
                 divide_by_initial_world_size: bool) -> None:
        self.ddp = ddp
        self.enable = enable
        self.throw = throw_on_early_termination
        self.divide_by_initial_world_size = divide_by_initial_world_size
        self.active = ddp.process_group.size()  # ranks still training in this iteration (read when needed)

    def _sum(self, value: int) -> Any:
        t = tensor([value], dtype=dtypes.int32, device=self.ddp._params[0].device)
        collectives.all_reduce(t, ReduceOp.SUM, self.ddp.process_group)
        return t

    # ------------------------------------------------------------ ranks still training
    def notify(self, will_sync: bool) -> None:
        """At the start of a forward: count the ranks still training, and say whether backward synchronizes."""
        count = self._sum(1)
        if self.throw or not self.divide_by_initial_world_size:
            self.active = int(count.item())
            if self.throw and self.active < self.ddp.process_group.size():
                raise RuntimeError(_EARLY)
        self._sum(1 if will_sync else 0)

    # ------------------------------------------------------------ the context
    def __enter__(self) -> DDPJoin:
        if self.enable:
            self.ddp._join = self
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if not self.enable:
            return
        try:
            if exc_type is not None:
                return
            last = True
            while int(self._sum(0).item()) > 0:
                if self.throw:
                    raise RuntimeError(_EARLY)
                last = False
                will_sync = int(self._sum(0).item()) > 0
                self.ddp._shadow_iteration(will_sync)
            self.ddp._sync_final_model(last)
        finally:
            self.ddp._join = None
