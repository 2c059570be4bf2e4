"""Collectives on tensors and objects (torch.distributed's functions of the same names).

Every function takes ``group`` (the default group when None) and, where torch has it, ``async_op``: False runs the
collective before returning (on a GPU: the caller's stream is ordered after it, the host does not wait); True
returns a work handle whose ``wait()`` does that. Ranks passed as ``src``/``dst`` are the job's ranks, as torch.
Tensors must be contiguous; collectives write into them in place.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from genesis import cuda, dtypes
from genesis.distributed import objects
from genesis.distributed.process_group import ProcessGroup, ReduceOp, resolve
from genesis.futures import Future
from genesis.tensor import Tensor, empty, from_numpy, tensor


def _op_name(op: str, reduce_op: ReduceOp | str) -> str:
    if isinstance(reduce_op, ReduceOp):
        return reduce_op.value
    if isinstance(reduce_op, str) and reduce_op.lower() in {o.value for o in ReduceOp}:
        return reduce_op.lower()
    raise ValueError(f"{op}: unknown reduce op {reduce_op!r} (expected a ReduceOp)")


def _check(op: str, *tensors: Tensor) -> None:
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected a Tensor, got {type(t).__name__}")
        if not t.ndarray.is_contiguous():
            raise ValueError(f"{op}: Tensors must be contiguous (got shape {tuple(t.shape)} with strides "
                             f"{t.stride()})")
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        raise ValueError(f"{op}: all tensors must be on one device, got {sorted(str(d) for d in devices)}")


def _reduce_dtype(op: str, t: Tensor, reduce_op: str) -> None:
    if reduce_op == "avg" and not t.dtype.is_floating_point:
        raise ValueError(f"{op}: ReduceOp.AVG needs a floating-point tensor, got {t.dtype}")


def _engine(op: str, pg: ProcessGroup, t: Tensor) -> Any:
    return pg.engine(op, t.device.type)


def _touched(*tensors: Tensor) -> None:
    for t in tensors:
        t._bump_version()


class Work:
    """A collective in flight (``torch.distributed.Work``), as ``async_op=True`` returns it.

    ``wait()`` orders what comes next after it (on a GPU the caller's stream waits, the host does not; on the CPU the
    host waits); ``get_future()`` gives a :class:`genesis.futures.Future` of the collective's tensors. With no
    engine handle (``work`` None) it stands for work already ordered before it was made: nothing is left to wait for.
    """

    def __init__(self, work: Any, tensors: list[Tensor]) -> None:
        self._work = work
        self._tensors = tensors

    def wait(self, timeout: Any = None) -> bool:
        return True if self._work is None else self._work.wait()

    def is_completed(self) -> bool:
        return self._work is None or self._work.is_completed()

    def get_future(self) -> Future[list[Tensor]]:
        return Future._pending(lambda: self.wait() and self._tensors, self.is_completed)


def _async(work: Any, *tensors: Tensor) -> Work | None:
    """The engine's handle wrapped for the caller (None for a synchronous call, which has none)."""
    return None if work is None else Work(work, list(tensors))


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Any:
    """Reduce ``tensor`` across the group with ``op``; every rank gets the result in place."""
    pg = resolve("all_reduce", group)
    _check("all_reduce", tensor)
    name = _op_name("all_reduce", op)
    _reduce_dtype("all_reduce", tensor, name)
    work = _engine("all_reduce", pg, tensor).all_reduce(tensor.ndarray, name, async_op)
    _touched(tensor)
    return _async(work, tensor)


def broadcast(tensor: Tensor, src: int, group: ProcessGroup | None = None, async_op: bool = False) -> Any:
    """Copy ``tensor`` of rank ``src`` into ``tensor`` on every rank of the group."""
    pg = resolve("broadcast", group)
    _check("broadcast", tensor)
    work = _engine("broadcast", pg, tensor).broadcast(tensor.ndarray, pg.group_rank("broadcast", src), async_op)
    _touched(tensor)
    return _async(work, tensor)


def reduce(tensor: Tensor, dst: int, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
           async_op: bool = False) -> Any:
    """Reduce ``tensor`` across the group into ``tensor`` on rank ``dst`` (other ranks' tensors are unspecified)."""
    pg = resolve("reduce", group)
    _check("reduce", tensor)
    name = _op_name("reduce", op)
    _reduce_dtype("reduce", tensor, name)
    work = _engine("reduce", pg, tensor).reduce(tensor.ndarray, pg.group_rank("reduce", dst), name, async_op)
    _touched(tensor)
    return _async(work, tensor)


def _same(op: str, what: str, expected: Tensor, got: Tensor) -> None:
    if got.dtype != expected.dtype:
        raise TypeError(f"{op}: {what} has dtype {got.dtype}, expected {expected.dtype}")


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: ProcessGroup | None = None,
               async_op: bool = False) -> Any:
    """Fill ``tensor_list[i]`` with ``tensor`` of the group's rank ``i``."""
    pg = resolve("all_gather", group)
    _check("all_gather", tensor, *tensor_list)
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors, expected the group size "
                         f"{pg.size()}")
    for t in tensor_list:
        _same("all_gather", "an output tensor", tensor, t)
        if t.shape != tensor.shape:
            raise ValueError(f"all_gather: output shape {tuple(t.shape)} differs from the input shape "
                             f"{tuple(tensor.shape)}")
    work = _engine("all_gather", pg, tensor).all_gather([t.ndarray for t in tensor_list], tensor.ndarray, async_op)
    _touched(*tensor_list)
    return _async(work, *tensor_list)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: ProcessGroup | None = None,
                           async_op: bool = False) -> Any:
    """Concatenate every rank's ``input_tensor`` along dim 0 (or stack them) into ``output_tensor``."""
    pg = resolve("all_gather_into_tensor", group)
    _check("all_gather_into_tensor", output_tensor, input_tensor)
    _same("all_gather_into_tensor", "output_tensor", input_tensor, output_tensor)
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise ValueError(f"all_gather_into_tensor: output_tensor has {output_tensor.numel()} elements, expected "
                         f"{input_tensor.numel()} x {pg.size()} ranks = {input_tensor.numel() * pg.size()}")
    work = _engine("all_gather_into_tensor", pg, input_tensor).all_gather_into(
        output_tensor.ndarray, input_tensor.ndarray, async_op)
    _touched(output_tensor)
    return _async(work, output_tensor)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM,
                          group: ProcessGroup | None = None, async_op: bool = False) -> Any:
    """Reduce ``input`` across the group and give rank ``i`` its ``i``-th equal chunk along dim 0 in ``output``."""
    pg = resolve("reduce_scatter_tensor", group)
    _check("reduce_scatter_tensor", output, input)
    _same("reduce_scatter_tensor", "output", input, output)
    name = _op_name("reduce_scatter_tensor", op)
    _reduce_dtype("reduce_scatter_tensor", input, name)
    if input.numel() != output.numel() * pg.size():
        raise ValueError(f"reduce_scatter_tensor: input has {input.numel()} elements, expected "
                         f"{output.numel()} x {pg.size()} ranks = {output.numel() * pg.size()}")
    work = _engine("reduce_scatter_tensor", pg, input).reduce_scatter(output.ndarray, input.ndarray, name, async_op)
    _touched(output)
    return _async(work, output)


def _splits(op: str, what: str, t: Tensor, splits: list[int] | None, n: int) -> list[int] | None:
    rows = t.shape[0] if t.ndim else 1
    if splits is None:
        if rows % n:
            raise ValueError(f"{op}: {what} dim 0 ({rows}) is not divisible by the group size {n}")
        return None
    splits = [int(s) for s in splits]
    if len(splits) != n or sum(splits) != rows or min(splits) < 0:
        raise ValueError(f"{op}: {what} split sizes {splits} must be {n} non-negative sizes summing to dim 0 "
                         f"({rows})")
    return splits


def all_to_all_single(output: Tensor, input: Tensor, output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None, group: ProcessGroup | None = None,
                      async_op: bool = False) -> Any:
    """Split ``input`` along dim 0, send chunk ``i`` to rank ``i``, and concatenate what arrives into ``output``."""
    pg = resolve("all_to_all_single", group)
    _check("all_to_all_single", output, input)
    _same("all_to_all_single", "output", input, output)
    outs = _splits("all_to_all_single", "output", output, output_split_sizes, pg.size())
    ins = _splits("all_to_all_single", "input", input, input_split_sizes, pg.size())
    work = _engine("all_to_all_single", pg, input).all_to_all_single(output.ndarray, input.ndarray, outs, ins,
                                                                     async_op)
    _touched(output)
    return _async(work, output)


def _peer(op: str, pg: ProcessGroup, peer: int | None, what: str, group_peer: int | None = None) -> int:
    """The group rank of a point-to-point peer, given as a job rank (``dst``/``src``) or as a rank within the group
    (``group_dst``/``group_src``), as torch takes exactly one of them."""
    if group_peer is not None:
        if peer is not None:
            raise ValueError(f"{op}: Can't specify both {what} and group_{what}")
        if not 0 <= group_peer < len(pg.ranks):
            raise ValueError(f"{op}: group_{what} {group_peer} is not a rank of the group (size {len(pg.ranks)})")
        peer = pg.ranks[group_peer]
    if peer is None:
        raise ValueError(f"{op}: {what} must be given (receiving from any rank is not supported)")
    if peer == pg.ranks[pg.rank()]:
        raise ValueError(f"{op}: {what} {peer} is this process's own rank")
    return pg.group_rank(op, peer)


def isend(tensor: Tensor, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_dst: int | None = None) -> Any:
    """Send ``tensor`` to rank ``dst`` (or to the group's rank ``group_dst``); returns a work handle."""
    pg = resolve("isend", group)
    _check("isend", tensor)
    peer = _peer("isend", pg, dst, "dst", group_dst)
    return _async(_engine("isend", pg, tensor).send(tensor.ndarray, peer, True), tensor)


def irecv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_src: int | None = None) -> Any:
    """Receive into ``tensor`` from rank ``src`` (or from the group's rank ``group_src``); returns a work handle."""
    pg = resolve("irecv", group)
    _check("irecv", tensor)
    work = _engine("irecv", pg, tensor).recv(tensor.ndarray, _peer("irecv", pg, src, "src", group_src), True)
    _touched(tensor)
    return _async(work, tensor)


class P2POp:
    """One send or receive for :func:`batch_isend_irecv` (``torch.distributed.P2POp``): ``op`` is :func:`isend` or
    :func:`irecv`, ``peer`` a job rank or ``group_peer`` a rank within ``group``."""

    def __init__(self, op: Any, tensor: Tensor, peer: int | None = None, group: ProcessGroup | None = None,
                 tag: int = 0, group_peer: int | None = None) -> None:
        if op is not isend and op is not irecv:
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        self.op = op
        self.tensor = tensor
        self.group = resolve("P2POp", group)
        self.group_peer = _peer("P2POp", self.group, peer, "peer", group_peer)
        self.peer = self.group.ranks[self.group_peer]
        self.tag = tag


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Start the sends and receives of ``p2p_op_list`` together and return their work handles, as torch's: on
    cuda they are one NCCL group (one handle for all), so that ranks sending to each other before receiving do not
    wait on each other; on the CPU each is a gloo send or receive of its own, which never block one another."""
    if not isinstance(p2p_op_list, list) or not p2p_op_list or not all(isinstance(o, P2POp) for o in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type ``torch.distributed.P2POp``.")
    pg = p2p_op_list[0].group
    if not all(o.group is pg for o in p2p_op_list):
        raise ValueError("All ops need to use the same group.")
    tensors = [o.tensor for o in p2p_op_list]
    _check("batch_isend_irecv", *tensors)
    ops = [("send" if o.op is isend else "recv", o.tensor.ndarray, o.group_peer) for o in p2p_op_list]
    works = _engine("batch_isend_irecv", pg, tensors[0]).send_recv(ops)
    _touched(*[o.tensor for o in p2p_op_list if o.op is irecv])
    return [Work(w, tensors) for w in works]


def send(tensor: Tensor, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` (or the group's rank ``group_dst``; returns once it may be reused)."""
    isend(tensor, dst, group, tag, group_dst).wait()


def recv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into ``tensor`` from rank ``src`` (or the group's rank ``group_src``); returns the sender's job
    rank."""
    irecv(tensor, src, group, tag, group_src).wait()
    return src if src is not None else resolve("recv", group).ranks[group_src]


def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids: list[int] | None = None) -> None:
    """Block until every rank of the group has reached the barrier."""
    pg = resolve("barrier", group)
    engine = pg._gloo if pg._gloo is not None else pg.engine("barrier", "cuda")
    engine.barrier()


# ---------------------------------------------------------------- objects (restricted format, see objects.py)

def _object_device(pg: ProcessGroup) -> str:
    return "cpu" if pg._gloo is not None else f"cuda:{cuda.current_device()}"


def _bytes_tensor(data: bytes, device: str) -> Tensor:
    return from_numpy(np.frombuffer(data, dtype=np.uint8).copy()).to(device)


def broadcast_object_list(object_list: list[Any], src: int = 0, group: ProcessGroup | None = None,
                          device: Any = None) -> None:
    """Replace ``object_list``'s items on every rank by those of rank ``src`` (see ``objects`` for the types)."""
    pg = resolve("broadcast_object_list", group)
    dev = str(device) if device is not None else _object_device(pg)
    mine = pg.ranks[pg.rank()] == src
    payload = objects.dumps(list(object_list)) if mine else b""
    size = tensor([len(payload)], dtype=dtypes.int64, device=dev)
    broadcast(size, src, pg)
    n = int(size.item())
    buf = _bytes_tensor(payload, dev) if mine else empty(n, dtype=dtypes.uint8, device=dev)
    broadcast(buf, src, pg)
    if not mine:
        received = objects.loads(buf.cpu().numpy().tobytes())
        if len(received) != len(object_list):
            raise ValueError(f"broadcast_object_list: rank {src} sent {len(received)} objects, this rank's list "
                             f"holds {len(object_list)}")
        object_list[:] = received


def all_gather_object(object_list: list[Any], obj: Any, group: ProcessGroup | None = None) -> None:
    """Fill ``object_list[i]`` with ``obj`` of the group's rank ``i`` (see ``objects`` for the types)."""
    pg = resolve("all_gather_object", group)
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} items, expected the group size "
                         f"{pg.size()}")
    dev = _object_device(pg)
    payload = objects.dumps(obj)
    sizes = empty(pg.size(), dtype=dtypes.int64, device=dev)
    all_gather_into_tensor(sizes, tensor([len(payload)], dtype=dtypes.int64, device=dev), pg)
    lengths = [int(n) for n in sizes.tolist()]
    width = max(lengths)
    padded = _bytes_tensor(payload + bytes(width - len(payload)), dev)
    gathered = empty(pg.size() * width, dtype=dtypes.uint8, device=dev)
    all_gather_into_tensor(gathered, padded, pg)
    data = gathered.cpu().numpy().tobytes()
    object_list[:] = [objects.loads(data[i * width: i * width + n]) for i, n in enumerate(lengths)]
