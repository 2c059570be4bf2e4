"""The CPU collective engine: torch.distributed's gloo over the CPU backend's torch tensors.

The CPU backend's NDArrays are views of torch tensors, so gloo reduces straight into Genesis's memory. Gloo gets its
own torch store: rank 0 of the job serves one on a free port and publishes the port through Genesis's rendezvous
store. Ranks given to the engine are ranks within its group.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from genesis._impl.cpu import native
from genesis.ndarray import NDArray

# torch 2.13 names the single-tensor all-gather and reduce-scatter *_single (the *_tensor names are deprecated there);
# older releases have only the *_tensor names.
_ALL_GATHER_SINGLE = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_REDUCE_SCATTER_SINGLE = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
_OPS = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN,
        "product": dist.ReduceOp.PRODUCT, "avg": dist.ReduceOp.SUM}  # avg: a sum, divided once it has arrived


class Work:
    """A collective in flight: ``wait()`` blocks until it is done (and finishes an average)."""

    def __init__(self, work: Any, finish: Any = None) -> None:
        self._work = work
        self._finish = finish

    def wait(self) -> bool:
        if self._work is not None:
            self._work.wait()
            self._work = None
            if self._finish is not None:
                self._finish()
        return True

    def is_completed(self) -> bool:
        return self._work is None or self._work.is_completed()


class Engine:
    """One process group on gloo; ``ranks`` are the job's ranks of its members, in group order."""

    def __init__(self, group: Any, ranks: list[int], rank: int) -> None:
        self.group = group
        self.ranks = ranks
        self.rank = rank

    @classmethod
    def create(cls, store: Any, rank: int, world_size: int, timeout: float, host: str) -> Engine:
        """The job's default group; ``store`` is Genesis's rendezvous store (set/get of bytes)."""
        if rank == 0:
            server = dist.TCPStore(host, 0, world_size, True, timedelta(seconds=timeout), wait_for_workers=False)
            store.set("gloo/port", str(server.port))
            torch_store = server
        else:
            port = int(store.get("gloo/port"))
            torch_store = dist.TCPStore(host, port, world_size, False, timedelta(seconds=timeout))
        dist.init_process_group("gloo", store=torch_store, rank=rank, world_size=world_size,
                                timeout=timedelta(seconds=timeout))
        return cls(dist.group.WORLD, list(range(world_size)), rank)

    def new_group(self, ranks: list[int], timeout: float) -> Engine | None:
        """A group of some of the job's ranks; every rank of the job calls this; None where not a member."""
        group = dist.new_group(ranks, timeout=timedelta(seconds=timeout), use_local_synchronization=False)
        me = dist.get_rank()
        return Engine(group, list(ranks), ranks.index(me)) if me in ranks else None

    def _run(self, work: Any, async_op: bool, finish: Any = None) -> Work | None:
        handle = Work(work, finish)
        if async_op:
            return handle
        handle.wait()
        return None

    @staticmethod
    def _average(t: torch.Tensor, n: int) -> Any:
        return lambda: t.div_(n)

    def all_reduce(self, x: NDArray, op: str, async_op: bool) -> Work | None:
        t = native(x)
        work = dist.all_reduce(t, _OPS[op], group=self.group, async_op=True)
        return self._run(work, async_op, self._average(t, len(self.ranks)) if op == "avg" else None)

    def broadcast(self, x: NDArray, src: int, async_op: bool) -> Work | None:
        work = dist.broadcast(native(x), self.ranks[src], group=self.group, async_op=True)
        return self._run(work, async_op)

    def reduce(self, x: NDArray, dst: int, op: str, async_op: bool) -> Work | None:
        t = native(x)
        work = dist.reduce(t, self.ranks[dst], _OPS[op], group=self.group, async_op=True)
        finish = self._average(t, len(self.ranks)) if op == "avg" and dst == self.rank else None
        return self._run(work, async_op, finish)

    def all_gather(self, outs: list[NDArray], x: NDArray, async_op: bool) -> Work | None:
        work = dist.all_gather([native(o) for o in outs], native(x), group=self.group, async_op=True)
        return self._run(work, async_op)

    def all_gather_into(self, out: NDArray, x: NDArray, async_op: bool) -> Work | None:
        work = _ALL_GATHER_SINGLE(native(out), native(x), group=self.group, async_op=True)
        return self._run(work, async_op)

    def reduce_scatter(self, out: NDArray, x: NDArray, op: str, async_op: bool) -> Work | None:
        t = native(out)
        work = _REDUCE_SCATTER_SINGLE(t, native(x), _OPS[op], group=self.group, async_op=True)
        return self._run(work, async_op, self._average(t, len(self.ranks)) if op == "avg" else None)

    def all_to_all_single(self, out: NDArray, x: NDArray, out_splits: list[int] | None,
                          in_splits: list[int] | None, async_op: bool) -> Work | None:
        work = dist.all_to_all_single(native(out), native(x), out_splits, in_splits, group=self.group,
                                      async_op=True)
        return self._run(work, async_op)

    def send(self, x: NDArray, dst: int, async_op: bool) -> Work | None:
        return self._run(dist.isend(native(x), self.ranks[dst], group=self.group), async_op)

    def recv(self, x: NDArray, src: int, async_op: bool) -> Work | None:
        return self._run(dist.irecv(native(x), self.ranks[src], group=self.group), async_op)

    def send_recv(self, ops: list[tuple[str, NDArray, int]]) -> list[Work]:
        """``batch_isend_irecv``: each ("send" or "recv", array, group rank) started at once, a handle each."""
        return [Work((dist.isend if kind == "send" else dist.irecv)(native(x), self.ranks[peer], group=self.group))
                for kind, x, peer in ops]

    def barrier(self) -> None:
        dist.barrier(group=self.group)

    def destroy(self) -> None:
        if self.group is dist.group.WORLD:
            dist.destroy_process_group()
