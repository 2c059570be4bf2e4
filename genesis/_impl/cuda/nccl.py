"""The CUDA collective engine: NCCL through ``nccl4py`` (``nccl.bindings.nccl``, plain int pointers and handles).

Every group owns one NCCL communicator and one communication stream of Genesis's own. A collective is ordered
after the work already queued on the caller's current stream by an event, runs on the communication stream, and
records a second event; waiting on the work (which a synchronous call does at once) makes the current stream wait
for that event. The host never waits, and the device is never synchronized as a whole. A work handle keeps its
arrays alive until it has been waited on, so no buffer is reused by the caching allocator while NCCL still reads or
writes it.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

from nccl.bindings import nccl

from genesis import dtypes
from genesis._impl.cuda import graphs
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda.creation import data_ptr
from genesis.device import device as Device
from genesis.ndarray import NDArray

# ncclDataType_t and ncclRedOp_t of nccl.h.
_DTYPE = {
    dtypes.int8: 0, dtypes.uint8: 1, dtypes.bool_: 1, dtypes.int32: 2, dtypes.int64: 4, dtypes.float16: 6,
    dtypes.float32: 7, dtypes.float64: 8, dtypes.bfloat16: 9,
}
_OPS = {"sum": 0, "product": 1, "max": 2, "min": 3, "avg": 4}
_HIGHEST_PRIORITY = -1000  # the driver clamps a stream priority to the device's range: this is its greatest


def _dtype(x: NDArray) -> int:
    code = _DTYPE.get(x.dtype)
    if code is None:
        raise TypeError(f"nccl: tensors of dtype {x.dtype} cannot be communicated")
    return code


class Work:
    """A collective in flight on the communication stream: ``wait()`` orders the current stream after it."""

    def __init__(self, done: rt.Event, keep: tuple, finish: Callable[[], None] | None = None) -> None:
        self._done = done
        self._keep = keep  # the arrays NCCL reads or writes, alive until the caller's stream is ordered after it
        self._finish = finish

    def wait(self) -> bool:
        if self._keep is not None:
            rt.current_stream().wait_event(self._done)
            if self._finish is not None:
                self._finish()
            self._keep = None
        return True

    def is_completed(self) -> bool:
        return self._done.query()


class Engine:
    """One process group on NCCL; ranks given to its methods are ranks within the group."""

    def __init__(self, comm: Any, ranks: list[int], rank: int, device: int, high_priority: bool = False) -> None:
        self.comm = comm
        self.ranks = ranks
        self.rank = rank
        self.device = device
        self.stream = rt.Stream(device, _HIGHEST_PRIORITY if high_priority else 0)
        self._graphs: weakref.WeakSet = weakref.WeakSet()  # CUDA graphs that captured collectives of this group

    @classmethod
    def connect(cls, store: Any, key: str, ranks: list[int], rank: int, high_priority: bool = False) -> Engine:
        """The communicator of ``ranks`` (the job's ranks, in group order) on the current device; every member
        calls this; group rank 0 makes the unique id and shares it through ``store`` under ``key``.
        ``high_priority``: the communication stream gets the device's highest priority."""
        device = rt.current_device()
        if rank == 0:
            unique_id = bytes(nccl.get_unique_id())
            store.set(key, unique_id)
        else:
            unique_id = store.get(key)
        comm = nccl.comm_init_rank_scalable(len(ranks), rank, 1, bytearray(unique_id), 0)
        return cls(comm, ranks, rank, device, high_priority)

    # ------------------------------------------------------------ ordering
    def _launch(self, arrays: tuple, launch: Callable[[int], None], async_op: bool,
                finish: Callable[[], None] | None = None) -> Work | None:
        for a in arrays:
            if a.device.index != self.device:
                raise ValueError(f"nccl: a tensor is on {a.device}, but this process group communicates on "
                                 f"cuda:{self.device} (call genesis.cuda.set_device(local_rank) before the first "
                                 "collective)")
        rt.ensure_device(self.device)
        if graphs.capturing:
            self._graphs.add(graphs._active)
        ready = rt.Event()
        ready.record(rt.current_stream())
        self.stream.wait_event(ready)
        launch(self.stream.handle)
        done = rt.Event()
        done.record(self.stream)
        work = Work(done, arrays, finish)
        if async_op:
            return work
        work.wait()
        return None

    # ------------------------------------------------------------ collectives
    def all_reduce(self, x: NDArray, op: str, async_op: bool) -> Work | None:
        p = data_ptr(x)
        return self._launch((x,), lambda s: nccl.all_reduce(p, p, x.size, _dtype(x), _OPS[op], self.comm, s),
                            async_op)

    def broadcast(self, x: NDArray, src: int, async_op: bool) -> Work | None:
        p = data_ptr(x)
        return self._launch((x,), lambda s: nccl.broadcast(p, p, x.size, _dtype(x), src, self.comm, s), async_op)

    def reduce(self, x: NDArray, dst: int, op: str, async_op: bool) -> Work | None:
        p = data_ptr(x)
        return self._launch((x,), lambda s: nccl.reduce(p, p, x.size, _dtype(x), _OPS[op], dst, self.comm, s),
                            async_op)

    def all_gather_into(self, out: NDArray, x: NDArray, async_op: bool) -> Work | None:
        po, px = data_ptr(out), data_ptr(x)
        return self._launch((out, x), lambda s: nccl.all_gather(px, po, x.size, _dtype(x), self.comm, s), async_op)

    def all_gather(self, outs: list[NDArray], x: NDArray, async_op: bool) -> Work | None:
        # One all_gather into a staging array, copied into the caller's tensors on the caller's stream.
        staging = NDArray.empty((len(outs),) + x.shape, x.dtype, x.device)
        ps, px = data_ptr(staging), data_ptr(x)

        def finish() -> None:
            for i, o in enumerate(outs):
                o.copy_(staging.basic_index((i,)))

        return self._launch((staging, x), lambda s: nccl.all_gather(px, ps, x.size, _dtype(x), self.comm, s),
                            async_op, finish)

    def reduce_scatter(self, out: NDArray, x: NDArray, op: str, async_op: bool) -> Work | None:
        po, px = data_ptr(out), data_ptr(x)
        return self._launch(
            (out, x), lambda s: nccl.reduce_scatter(px, po, out.size, _dtype(x), _OPS[op], self.comm, s), async_op)

    def all_to_all_single(self, out: NDArray, x: NDArray, out_splits: list[int] | None,
                          in_splits: list[int] | None, async_op: bool) -> Work | None:
        n = len(self.ranks)
        row_in = x.size // max(x.shape[0], 1)
        row_out = out.size // max(out.shape[0], 1)
        ins = in_splits or [x.shape[0] // n] * n
        outs = out_splits or [out.shape[0] // n] * n
        px, po, dt, size = data_ptr(x), data_ptr(out), _dtype(x), x.dtype.itemsize

        def launch(s: int) -> None:
            nccl.group_start()
            try:
                off_in = off_out = 0
                for peer in range(n):
                    nccl.send(px + off_in * row_in * size, ins[peer] * row_in, dt, peer, self.comm, s)
                    nccl.recv(po + off_out * row_out * size, outs[peer] * row_out, dt, peer, self.comm, s)
                    off_in += ins[peer]
                    off_out += outs[peer]
            finally:
                nccl.group_end()

        return self._launch((out, x), launch, async_op)

    def send(self, x: NDArray, dst: int, async_op: bool) -> Work | None:
        p = data_ptr(x)
        return self._launch((x,), lambda s: nccl.send(p, x.size, _dtype(x), dst, self.comm, s), async_op)

    def recv(self, x: NDArray, src: int, async_op: bool) -> Work | None:
        p = data_ptr(x)
        return self._launch((x,), lambda s: nccl.recv(p, x.size, _dtype(x), src, self.comm, s), async_op)

    def send_recv(self, ops: list[tuple[str, NDArray, int]]) -> list[Work]:
        """``batch_isend_irecv``: the ("send" or "recv", array, group rank) operations as one NCCL group, so that
        ranks sending to each other before they receive do not wait on each other; one handle for all."""
        calls = [(nccl.send if kind == "send" else nccl.recv, data_ptr(x), x.size, _dtype(x), peer)
                 for kind, x, peer in ops]

        def launch(s: int) -> None:
            nccl.group_start()
            try:
                for call, p, n, dt, peer in calls:
                    call(p, n, dt, peer, self.comm, s)
            finally:
                nccl.group_end()

        return [self._launch(tuple(x for _, x, _ in ops), launch, True)]

    def barrier(self) -> None:
        # A one-element all-reduce; the host waits for the communication stream alone.
        flag = NDArray.full((1,), 0, dtypes.float32, Device("cuda", self.device))
        self.all_reduce(flag, "sum", async_op=False)
        self.stream.synchronize()

    def destroy(self) -> None:
        # NCCL waits in ncclCommDestroy until every graph holding its captured collectives is gone; such a graph
        # could not run without the communicator anyway.
        for graph in list(self._graphs):
            graph.reset()
        self.stream.synchronize()
        nccl.comm_destroy(self.comm)
        self.comm = None
