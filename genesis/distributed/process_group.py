"""Process groups: rendezvous through a TCP store, the default group, ``new_group``, and the engine per device.

A group holds the job's ranks of its members and, per device type, the engine that moves its tensors: gloo for CPU
tensors (``genesis._impl.distributed_gloo``), NCCL for CUDA tensors (``genesis._impl.cuda.nccl``). Engines are
imported when a group is made (gloo) or first used on a GPU (NCCL, bound to the current device then, as torch).
"""

from __future__ import annotations

import enum
import importlib
import os
import socket
from datetime import timedelta
from typing import Any

from genesis import cuda
from genesis.distributed.store import FileStore, PrefixStore, TCPStore

default_pg_timeout = timedelta(minutes=30)


class ReduceOp(enum.Enum):
    """How a collective combines the ranks' values (torch.distributed.ReduceOp)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"


class Backend:
    """The backend names (torch.distributed.Backend)."""

    GLOO = "gloo"
    NCCL = "nccl"


class ProcessGroupNCCL:
    """torch's NCCL process group class, here the holder of its ``Options`` (``pg_options`` of
    :func:`init_process_group` and :func:`new_group`)."""

    class Options:
        """NCCL options of a process group.

        Args:
            is_high_priority_stream: give the group's communication stream the device's highest priority, so that
                its kernels are scheduled ahead of queued compute kernels (torch's option; off by default).
        """

        def __init__(self, is_high_priority_stream: bool = False) -> None:
            self.is_high_priority_stream = bool(is_high_priority_stream)

        def __repr__(self) -> str:
            return f"ProcessGroupNCCL.Options(is_high_priority_stream={self.is_high_priority_stream})"


def _options(op: str, pg_options: Any) -> ProcessGroupNCCL.Options:
    if pg_options is None:
        return ProcessGroupNCCL.Options()
    if not isinstance(pg_options, ProcessGroupNCCL.Options):
        raise TypeError(f"{op}: pg_options must be a ProcessGroupNCCL.Options, got {type(pg_options).__name__}")
    return pg_options


class ProcessGroup:
    """A set of ranks that run collectives together; ``rank()`` and ``size()`` are within the group."""

    def __init__(self, ranks: list[int], my_rank: int, backend: str, store: Any, gloo: Any, uid: int,
                 options: ProcessGroupNCCL.Options, timeout: float) -> None:
        self.ranks = ranks
        self._rank = my_rank
        self.backend = backend
        self._store = store
        self._gloo = gloo
        self._nccl = None
        self._uid = uid
        self.options = options
        self.timeout = timeout  # seconds
        self._barriers = 0  # monitored barriers passed (every rank counts alike: the keys of the next one)

    def rank(self) -> int:
        """This process's rank within the group."""
        return self._rank

    def size(self) -> int:
        """How many ranks the group has."""
        return len(self.ranks)

    def group_rank(self, op: str, global_rank: int) -> int:
        """The rank within this group of the job's rank ``global_rank``; ValueError naming the op otherwise."""
        if global_rank not in self.ranks:
            raise ValueError(f"{op}: rank {global_rank} is not part of the group (ranks {self.ranks})")
        return self.ranks.index(global_rank)

    def engine(self, op: str, device_type: str) -> Any:
        """The engine that moves tensors of ``device_type`` for this group."""
        if device_type == "cpu":
            if self._gloo is None:
                raise RuntimeError(f"{op}: the process group's backend is '{self.backend}', which does not handle "
                                   "CPU tensors (use backend='gloo', or None for both)")
            return self._gloo
        if self.backend == Backend.GLOO:
            raise RuntimeError(f"{op}: the process group's backend is 'gloo', which does not handle CUDA tensors "
                               "(use backend='nccl', or None for both)")
        if self._nccl is None:
            nccl = importlib.import_module("genesis._impl.cuda.nccl")
            self._nccl = nccl.Engine.connect(self._store, f"nccl/{self._uid}", self.ranks, self._rank,
                                             self.options.is_high_priority_stream)
        return self._nccl

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self.backend!r}, ranks={self.ranks}, rank={self._rank})"


class _World:
    """The state of this process's job (torch keeps it in ``_world``)."""

    def __init__(self) -> None:
        self.group: ProcessGroup | None = None
        self.store: TCPStore | None = None
        self.groups = 0
        self.timeout = default_pg_timeout.total_seconds()


_world = _World()


class _WorldMeta(type):
    @property
    def WORLD(cls) -> ProcessGroup | None:
        return _world.group


class group(metaclass=_WorldMeta):
    """``group.WORLD``: the default group (None before init_process_group), as in torch."""


class GroupMember(metaclass=_WorldMeta):
    """torch's ``GroupMember``: ``WORLD`` (the default group) and ``NON_GROUP_MEMBER``, what :func:`new_group` returns
    to the ranks outside the new group (None in Genesis)."""

    NON_GROUP_MEMBER = None


def _env(name: str) -> str:
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"init_process_group: environment variable {name} expected, but not set (env:// "
                         "rendezvous reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE; the launcher "
                         "`python -m genesis.distributed.run` sets them)")
    return value


def _int_env(name: str) -> int:
    value = _env(name)
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"init_process_group: environment variable {name} must be an integer, got {value!r}") \
            from None


def _rendezvous(init_method: str, rank: int, world_size: int) -> tuple[str, int, int, int]:
    """(host, port, rank, world size) from ``init_method`` and the environment."""
    if init_method.startswith("tcp://"):
        host, _, port = init_method[len("tcp://"):].rpartition(":")
        return host, int(port), rank, world_size
    if not init_method.startswith("env://"):
        raise ValueError(f"init_process_group: init_method {init_method!r} is not supported (env://, tcp:// or "
                         "file://)")
    host, port = _env("MASTER_ADDR"), _int_env("MASTER_PORT")
    return host, port, (_int_env("RANK") if rank < 0 else rank), (_int_env("WORLD_SIZE") if world_size < 0
                                                                    else world_size)


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store: TCPStore | None = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None) -> None:
    """Join the job's default process group (torch.distributed.init_process_group).

    Args:
        backend: "gloo" (CPU tensors), "nccl" (CUDA tensors) or None (gloo for CPU tensors, NCCL for CUDA ones).
        init_method: "env://" (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), "tcp://host:port", or
            "file://PATH" (a file every rank sees; it must not exist yet, and the last rank to leave removes it).
        timeout: how long rendezvous and collectives may wait (30 minutes by default).
        world_size: number of processes (-1: from the environment).
        rank: this process's rank (-1: from the environment).
        store: an existing store to rendezvous through instead of ``init_method``.
        group_name, device_id: accepted for torch compatibility.
        pg_options: a ``ProcessGroupNCCL.Options`` for the group's NCCL engine (None: the defaults).
    """
    options = _options("init_process_group", pg_options)
    if _world.group is not None:
        raise RuntimeError("init_process_group: trying to initialize the default process group twice")
    if backend is not None:
        backend = str(backend).lower()
        if backend not in (Backend.GLOO, Backend.NCCL):
            raise ValueError(f"init_process_group: backend {backend!r} is not supported ('gloo', 'nccl' or None)")
    seconds = (timeout or default_pg_timeout).total_seconds()
    in_file = store is None and (init_method or "").startswith("file://")
    if in_file:  # rank and world size as arguments, else from the environment (as torch)
        rank = _int_env("RANK") if rank < 0 else rank
        world_size = _int_env("WORLD_SIZE") if world_size < 0 else world_size
    elif store is None:
        host, port, rank, world_size = _rendezvous(init_method or "env://", rank, world_size)
    elif rank < 0 or world_size < 0:
        raise ValueError("init_process_group: rank and world_size are required with a store")
    if world_size < 1:
        raise ValueError(f"init_process_group: world_size must be positive, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"init_process_group: rank {rank} is out of range for world_size {world_size} "
                         f"(expected 0 <= rank < {world_size})")
    if in_file:
        store = FileStore(init_method[len("file://"):], world_size, timeout=seconds)
    elif store is None:
        store = TCPStore(host, port, world_size, is_master=rank == 0, timeout=seconds)
    _join(store, rank, world_size, seconds)
    host = store.host if isinstance(store, TCPStore) else _published_host(store, rank)
    gloo = None
    if backend != Backend.NCCL:
        engine = importlib.import_module("genesis._impl.distributed_gloo")
        gloo = engine.Engine.create(PrefixStore("default", store), rank, world_size, seconds, host)
    _world.store, _world.timeout, _world.groups = store, seconds, 0
    _world.group = ProcessGroup(list(range(world_size)), rank, backend or "cpu:gloo,cuda:nccl", store, gloo, 0,
                                options, seconds)


def _published_host(store: Any, rank: int) -> str:
    """Rank 0's address, published through a store that has none of its own (a file): the gloo engine's own store
    is served there."""
    if rank == 0:
        try:
            address = socket.gethostbyname(socket.gethostname())
        except OSError:  # a host name that does not resolve: the ranks must share this machine
            address = "127.0.0.1"
        store.set("host", address)
    return store.get("host").decode()


def _join(store: Any, rank: int, world_size: int, seconds: float) -> None:
    """Every rank announces itself and waits for the others: clear errors for a repeated rank or a timeout."""
    if store.add(f"join/{rank}", 1) != 1:
        raise RuntimeError(f"init_process_group: rank {rank} joined twice (two processes were given RANK={rank})")
    try:
        store.wait([f"join/{r}" for r in range(world_size)], seconds)
    except TimeoutError:
        missing = [r for r in range(world_size) if not store.check([f"join/{r}"])]
        raise TimeoutError(f"init_process_group: timed out after {seconds:g} s waiting for rank(s) {missing} of "
                           f"{world_size} to join") from None


def _default(op: str) -> ProcessGroup:
    if _world.group is None:
        raise RuntimeError(f"{op}: Default process group has not been initialized, please make sure to call "
                           "init_process_group.")
    return _world.group


def resolve(op: str, group: ProcessGroup | None) -> ProcessGroup:
    """``group`` or the default group, RuntimeError naming ``op`` when none was initialized."""
    default = _default(op)
    return default if group is None else group


def is_initialized() -> bool:
    """Whether ``init_process_group`` has run in this process (and ``destroy_process_group`` has not)."""
    return _world.group is not None


def is_available() -> bool:
    """Whether genesis.distributed can be used (always)."""
    return True


def is_nccl_available() -> bool:
    """Whether CUDA tensors can be communicated (a GPU is present)."""
    return cuda.is_available()


def is_gloo_available() -> bool:
    """Whether CPU tensors can be communicated (always)."""
    return True


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (the default group when None)."""
    return resolve("get_rank", group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """How many ranks ``group`` (the default group when None) has."""
    return resolve("get_world_size", group).size()


def get_local_rank() -> int:
    """This process's rank on its node (LOCAL_RANK, 0 when unset): the GPU it should use."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its node from LOCAL_RANK (torch's name); ``fallback_rank`` when it is unset, else
    RuntimeError."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context and "
                       "want the code to run locally instead.")


def is_torchelastic_launched() -> bool:
    """Whether a torchrun-style launcher started this process (it sets TORCHELASTIC_RUN_ID; Genesis's does)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    """The job ranks of ``group``'s members, in group order (the default group when None)."""
    return list(resolve("get_process_group_ranks", group).ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    """The job rank of ``group``'s rank ``group_rank`` (on the default group, ``group_rank`` itself, as torch)."""
    pg = resolve("get_global_rank", group)
    if pg is _world.group:
        return group_rank
    if not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
    return pg.ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    """The rank within ``group`` of the job's rank ``global_rank`` (on the default group, itself, as torch)."""
    pg = resolve("get_group_rank", group)
    if pg is _world.group:
        return global_rank
    if global_rank not in pg.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return pg.ranks.index(global_rank)


def get_pg_count() -> int:
    """How many process groups this process made (the default group included; 0 before init_process_group)."""
    return 0 if _world.group is None else _world.groups + 1


def is_backend_available(backend: str) -> bool:
    """Whether ``backend`` ("gloo", "nccl", ...) can be used here."""
    name = str(backend).lower()
    return name == Backend.GLOO or (name == Backend.NCCL and is_nccl_available())


def is_mpi_available() -> bool:
    """False: Genesis has no MPI backend."""
    return False


def is_ucc_available() -> bool:
    """False: Genesis has no UCC backend."""
    return False


def get_default_backend_for_device(device: Any) -> str:
    """The backend that moves tensors of ``device`` ("cpu": gloo, "cuda": nccl)."""
    kind = str(getattr(device, "type", device)).split(":")[0]
    backends = {"cpu": Backend.GLOO, "cuda": Backend.NCCL}
    if kind not in backends:
        raise ValueError(f"Default backend not registered for device : {kind}")
    return backends[kind]


def get_backend(group: ProcessGroup | None = None) -> str:
    """The backend name of ``group``."""
    return resolve("get_backend", group).backend


def new_group(ranks: list[int] | None = None, timeout: timedelta | None = None, backend: str | None = None,
              pg_options: Any = None, **kwargs: Any) -> ProcessGroup | None:
    """A group of some of the job's ranks (all ranks when None); every rank must call it, in the same order.

    ``pg_options``: a ``ProcessGroupNCCL.Options`` for the group's NCCL engine. Returns the group where this rank
    is a member, None elsewhere (``GroupMember.NON_GROUP_MEMBER``; torch's sentinel is another object).
    """
    world = _default("new_group")
    options = _options("new_group", pg_options)
    ranks = sorted(range(world.size()) if ranks is None else ranks)
    if len(set(ranks)) != len(ranks) or any(not 0 <= r < world.size() for r in ranks):
        raise ValueError(f"new_group: ranks {ranks} must be distinct ranks in [0, {world.size()})")
    seconds = _world.timeout if timeout is None else timeout.total_seconds()
    _world.groups += 1
    gloo = world._gloo.new_group(ranks, seconds) if world._gloo is not None else None
    if world.rank() not in ranks:
        return None
    return ProcessGroup(ranks, ranks.index(world.rank()), world.backend, _world.store, gloo, _world.groups, options,
                        seconds)


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Leave the job: release the engines and, for the default group, the rendezvous store."""
    pg = _default("destroy_process_group") if group is None else group
    for engine in (pg._nccl, pg._gloo):
        if engine is not None:
            engine.destroy()
    pg._nccl = pg._gloo = None
    if pg is _world.group:
        _world.group = None
        store, _world.store = _world.store, None
        # The serving rank keeps the store up until every rank has left it.
        store.set(f"leave/{pg.rank()}", b"1")
        if pg.rank() == 0:
            try:
                store.wait([f"leave/{r}" for r in range(pg.size())], min(_world.timeout, 60.0))
            except TimeoutError:
                pass  # a rank that died never leaves: stop serving anyway
        store.close()
