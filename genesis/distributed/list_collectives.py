"""torch.distributed's list forms and rooted collectives, built on the engines' collectives.

``gather``, ``scatter``, ``reduce_scatter`` (lists) and ``all_to_all`` (lists) move their tensors through one
``all_gather_into_tensor``, ``broadcast``, ``reduce_scatter_tensor`` or ``all_to_all_single`` of a flat buffer;
``gather_object``, ``scatter_object_list`` and ``send_object_list``/``recv_object_list`` use the restricted object
format of ``objects.py`` (nothing received is unpickled). ``monitored_barrier`` meets through the job's store, so
that the rank that waits can name the ranks that never arrived.

With ``async_op=True`` these return a ``Work`` that is already complete (its future holds the outputs): the
collective itself was queued (on a GPU, the caller's stream is ordered after it) before the function returned, as
for a synchronous call.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from genesis import dtypes
from genesis.autograd.grad_mode import no_grad
from genesis.distributed import collectives as C
from genesis.distributed import objects
from genesis.distributed.process_group import ProcessGroup, ReduceOp, resolve
from genesis.ops.join import cat
from genesis.tensor import Tensor, empty, tensor


def _handle(async_op: bool, *tensors: Tensor) -> C.Work | None:
    """The handle ``async_op=True`` returns: the collective was already ordered, so it has nothing left to wait for."""
    return C.Work(None, list(tensors)) if async_op else None


def _root(op: str, pg: ProcessGroup, rank: int | None, group_rank: int | None, what: str) -> int:
    """The job rank of a collective's root from ``dst``/``src`` or ``group_dst``/``group_src`` (default rank 0 of
    the group), as torch."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"{op}: pass {what} or group_{what}, not both")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"{op}: group_{what} {group_rank} is out of range for a group of {pg.size()} ranks")
        return pg.ranks[group_rank]
    if rank is None:
        return pg.ranks[0]
    pg.group_rank(op, rank)
    return rank


def _me(pg: ProcessGroup) -> int:
    return pg.ranks[pg.rank()]


def _list_on_root(name: str, items: list | None, is_root: bool, role: str) -> None:
    if is_root and not items:
        raise ValueError(f"Argument ``{name}`` must be specified on {role} rank.")
    if not is_root and items:
        raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{role} ranks.")


def _like(op: str, what: str, ref: Tensor, items: list[Tensor], n: int) -> None:
    if len(items) != n:
        raise ValueError(f"{op}: {what} has {len(items)} tensors, expected the group size {n}")
    for t in items:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected Tensors in {what}, got {type(t).__name__}")
        if t.dtype != ref.dtype or t.shape != ref.shape:
            raise ValueError(f"{op}: every tensor of {what} must have shape {tuple(ref.shape)} and dtype "
                             f"{ref.dtype}, got {tuple(t.shape)} {t.dtype}")


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int | None = None,
           group: ProcessGroup | None = None, async_op: bool = False, group_dst: int | None = None) -> Any:
    """Collect ``tensor`` of every rank into ``gather_list`` on rank ``dst`` (rank 0 of the group by default);
    other ranks pass no list."""
    pg = resolve("gather", group)
    C._check("gather", tensor)
    root = _me(pg) == _root("gather", pg, dst, group_dst, "dst")
    _list_on_root("gather_list", gather_list, root, "destination")
    if root:
        _like("gather", "gather_list", tensor, gather_list, pg.size())
    everyone = empty(pg.size() * tensor.numel(), dtype=tensor.dtype, device=tensor.device)
    C.all_gather_into_tensor(everyone, tensor.reshape(-1), pg)
    if root:
        with no_grad():
            for out, part in zip(gather_list, everyone.chunk(pg.size())):
                out.copy_(part.view(out.shape))
    return _handle(async_op, *(gather_list or ()))


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int | None = None,
            group: ProcessGroup | None = None, async_op: bool = False, group_src: int | None = None) -> Any:
    """Give rank ``i`` of the group ``scatter_list[i]`` of rank ``src`` (rank 0 of the group by default), in
    ``tensor``; other ranks pass no list."""
    pg = resolve("scatter", group)
    C._check("scatter", tensor)
    source = _root("scatter", pg, src, group_src, "src")
    root = _me(pg) == source
    _list_on_root("scatter_list", scatter_list, root, "source")
    if root:
        _like("scatter", "scatter_list", tensor, scatter_list, pg.size())
        everyone = cat([t.reshape(-1) for t in scatter_list])
    else:
        everyone = empty(pg.size() * tensor.numel(), dtype=tensor.dtype, device=tensor.device)
    C.broadcast(everyone, source, pg)
    with no_grad():
        tensor.copy_(everyone.chunk(pg.size())[pg.rank()].view(tensor.shape))
    return _handle(async_op, tensor)


def reduce_scatter(output: Tensor, input_list: list[Tensor], op: ReduceOp = ReduceOp.SUM,
                   group: ProcessGroup | None = None, async_op: bool = False) -> Any:
    """Reduce ``input_list[i]`` across the group into ``output`` of the group's rank ``i``."""
    pg = resolve("reduce_scatter", group)
    C._check("reduce_scatter", output)
    _like("reduce_scatter", "input_list", output, list(input_list), pg.size())
    C.reduce_scatter_tensor(output.view(-1), cat([t.reshape(-1) for t in input_list]), op, pg)
    return _handle(async_op, output)


def all_to_all(output_tensor_list: list[Tensor], input_tensor_list: list[Tensor],
               group: ProcessGroup | None = None, async_op: bool = False) -> Any:
    """Send ``input_tensor_list[i]`` to the group's rank ``i`` and receive rank ``i``'s tensor for this rank in
    ``output_tensor_list[i]`` (shapes may differ from rank to rank; one dtype)."""
    pg = resolve("all_to_all", group)
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: the tensor lists have {len(output_tensor_list)} and {len(input_tensor_list)} "
                         f"tensors, expected the group size {n}")
    C._check("all_to_all", *output_tensor_list, *input_tensor_list)
    dtype = input_tensor_list[0].dtype
    if any(t.dtype != dtype for t in (*output_tensor_list, *input_tensor_list)):
        raise TypeError(f"all_to_all: every tensor must have one dtype ({dtype})")
    sends = cat([t.reshape(-1) for t in input_tensor_list])
    received = empty(sum(t.numel() for t in output_tensor_list), dtype=dtype, device=sends.device)
    C.all_to_all_single(received, sends, [t.numel() for t in output_tensor_list],
                        [t.numel() for t in input_tensor_list], pg)
    start = 0
    with no_grad():
        for out in output_tensor_list:
            out.copy_(received[start: start + out.numel()].view(out.shape))
            start += out.numel()
    return _handle(async_op, *output_tensor_list)


# ---------------------------------------------------------------- objects

def gather_object(obj: Any, object_gather_list: list | None = None, dst: int | None = None,
                  group: ProcessGroup | None = None, group_dst: int | None = None) -> None:
    """Collect ``obj`` of every rank into ``object_gather_list`` on rank ``dst`` (rank 0 of the group by default;
    other ranks pass None). Objects as ``broadcast_object_list``'s."""
    pg = resolve("gather_object", group)
    root = _me(pg) == _root("gather_object", pg, dst, group_dst, "dst")
    _list_on_root("gather_list", object_gather_list, root, "destination")
    everyone: list = [None] * pg.size()
    C.all_gather_object(everyone, obj, pg)
    if root:
        if len(object_gather_list) != pg.size():
            raise ValueError(f"gather_object: object_gather_list has {len(object_gather_list)} items, expected the "
                             f"group size {pg.size()}")
        object_gather_list[:] = everyone


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: list | None = None,
                        src: int | None = None, group: ProcessGroup | None = None,
                        group_src: int | None = None) -> None:
    """Put ``scatter_object_input_list[i]`` of rank ``src`` (rank 0 of the group by default) into
    ``scatter_object_output_list[0]`` of the group's rank ``i``."""
    pg = resolve("scatter_object_list", group)
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    source = _root("scatter_object_list", pg, src, group_src, "src")
    everyone: list = [None] * pg.size()
    if _me(pg) == source:
        if scatter_object_input_list is None or len(scatter_object_input_list) != pg.size():
            raise ValueError(f"scatter_object_list: the source rank needs scatter_object_input_list with one object "
                             f"per rank ({pg.size()})")
        everyone = list(scatter_object_input_list)
    C.broadcast_object_list(everyone, source, pg)
    scatter_object_output_list[0] = everyone[pg.rank()]


def _object_peer(pg: ProcessGroup, peer: int | None, what: str) -> None:
    if peer is not None and peer == _me(pg):
        raise ValueError(f"Invalid {what} rank: {what} rank should not be the same as the rank of the current "
                         "process.")


def send_object_list(object_list: list, dst: int, group: ProcessGroup | None = None, device: Any = None) -> None:
    """Send the objects of ``object_list`` to rank ``dst``, which receives them with ``recv_object_list``."""
    pg = resolve("send_object_list", group)
    _object_peer(pg, dst, "destination")
    dev = str(device) if device is not None else C._object_device(pg)
    payload = objects.dumps(list(object_list))
    C.send(tensor([len(payload)], dtype=dtypes.int64, device=dev), dst, pg)
    C.send(C._bytes_tensor(payload, dev), dst, pg)


def recv_object_list(object_list: list, src: int | None = None, group: ProcessGroup | None = None,
                     device: Any = None) -> int:
    """Receive into ``object_list`` (in place, same length) the objects that rank ``src`` sent with
    ``send_object_list``; returns ``src``."""
    pg = resolve("recv_object_list", group)
    _object_peer(pg, src, "source")
    dev = str(device) if device is not None else C._object_device(pg)
    size = tensor([0], dtype=dtypes.int64, device=dev)
    C.recv(size, src, pg)
    buf = empty(int(size.item()), dtype=dtypes.uint8, device=dev)
    C.recv(buf, src, pg)
    received = objects.loads(buf.cpu().numpy().tobytes())
    if len(received) != len(object_list):
        raise ValueError(f"recv_object_list: rank {src} sent {len(received)} objects, this rank's list holds "
                         f"{len(object_list)}")
    object_list[:] = received
    return src


# ---------------------------------------------------------------- monitored barrier

def monitored_barrier(group: ProcessGroup | None = None, timeout: timedelta | None = None,
                      wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not reach it: the group's first rank waits for every other rank
    (through the job's store) for at most ``timeout`` (the group's timeout by default) and raises RuntimeError
    naming the first missing rank, or all of them with ``wait_all_ranks``; the others wait for its release."""
    pg = resolve("monitored_barrier", group)
    pg._barriers += 1
    prefix = f"monitored_barrier/{pg._uid}/{pg._barriers}"
    seconds = pg.timeout if timeout is None else timeout.total_seconds()
    pg._store.set(f"{prefix}/{pg.rank()}", b"1")
    if pg.rank() != 0:
        try:
            pg._store.wait([f"{prefix}/release"], seconds)
        except TimeoutError:
            raise RuntimeError(f"monitored_barrier: rank {pg.ranks[0]} did not release the barrier within "
                               f"{seconds:g} s") from None
        return
    arrivals = [f"{prefix}/{i}" for i in range(1, pg.size())]
    try:
        pg._store.wait(arrivals, seconds)
    except TimeoutError:
        missing = [pg.ranks[i + 1] for i, key in enumerate(arrivals) if not pg._store.check([key])]
        named = missing if wait_all_ranks else missing[:1]
        raise RuntimeError(f"monitored_barrier: rank(s) {named} failed to pass the barrier in {seconds:g} s") from None
    for key in arrivals + [f"{prefix}/0"]:
        pg._store.delete_key(key)
    pg._store.set(f"{prefix}/release", b"1")
