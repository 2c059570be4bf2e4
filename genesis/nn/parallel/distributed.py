"""DistributedDataParallel: one model replica per process, gradients averaged across the group during backward.

Parameters are grouped into buckets of about ``bucket_cap_mb`` in reverse order of registration (roughly the order
in which backward produces their gradients). A post-accumulate-grad hook copies each gradient into its bucket's flat
buffer; when a bucket's last gradient has arrived, its all-reduce (an average) starts at once, asynchronously, so
communication overlaps the rest of the backward pass. A callback queued on the autograd engine waits for every
bucket when backward ends and writes the averages back into ``.grad`` (with ``gradient_as_bucket_view`` the
gradients are views of the buckets and nothing is copied).

A whole training step with DDP can be captured in a CUDA graph (``genesis.cuda.graph``): the all-reduces become
nodes of the graph on the communication stream's branch, so every replay keeps the overlap (docs/distributed.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Iterator

from genesis import dtypes
from genesis.autograd.engine import queue_callback
from genesis.autograd.function import AccumulateGrad
from genesis.autograd.grad_mode import is_grad_enabled, no_grad
from genesis.distributed import collectives
from genesis.distributed.grad_bucket import GradBucket
from genesis.distributed.process_group import ProcessGroup, ReduceOp, resolve
from genesis.futures import Future
from genesis.nn.modules.module import Module
from genesis.nn.parallel.ddp_join import DDPJoin
from genesis.nn.parameter import Parameter
from genesis.tensor import Tensor, tensor, zeros


class _Bucket:
    """A flat buffer holding the gradients of some parameters of one dtype and device."""

    def __init__(self, params: list[Parameter], index: int) -> None:
        self.params = params
        self.index = index  # position among the model's buckets
        self.offsets = []
        n = 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.buffer = zeros(n, dtype=params[0].dtype, device=params[0].device)
        self.pending = len(params)
        self.work: Any = None
        self.position = {id(p): i for i, p in enumerate(params)}
        # One view per parameter, made once: with gradient_as_bucket_view they are the parameters' .grad.
        self.views = [self.buffer[o: o + p.numel()].view(p.shape) for o, p in zip(self.offsets, params)]

    def view(self, i: int) -> Tensor:
        return self.views[i]


def _tensors(obj: Any) -> Iterator[Tensor]:
    """The tensors inside a forward's output: tensors, lists, tuples, dicts and dataclasses, nested."""
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v)
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from _tensors(getattr(obj, f.name))


def _reached_leaves(outputs: Any) -> set[int]:
    """Ids of the leaf tensors that the graph of ``outputs`` reaches (the parameters this forward used)."""
    seen, leaves = set(), set()
    stack = [t.grad_fn for t in _tensors(outputs) if t.grad_fn is not None]
    stack += [t._accumulator() for t in _tensors(outputs) if t.grad_fn is None and t.requires_grad]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            leaves.add(id(node.variable))
            continue
        stack.extend(n for n, _ in node._edges)
    return leaves


class DistributedDataParallel(Module):
    """Data parallelism across processes (torch.nn.parallel.DistributedDataParallel).

    Args:
        module: the model replica of this process (on its device).
        device_ids, output_device, dim: accepted for torch compatibility (one device per process).
        broadcast_buffers: broadcast rank 0's buffers at every forward.
        process_group: the group to average over (the default group when None).
        bucket_cap_mb: size of a gradient bucket in MiB.
        find_unused_parameters: find, after each forward, the parameters it did not use, so that backward does not
            wait for their gradients.
        gradient_as_bucket_view: make ``.grad`` views of the buckets (saves a copy and memory).
        static_graph: the set of used parameters never changes; it is found once, at the first forward.
    """

    def __init__(self, module: Module, device_ids: list[Any] | None = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool = True, process_group: ProcessGroup | None = None,
                 bucket_cap_mb: float = 25.0, find_unused_parameters: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, init_sync: bool = True) -> None:
        super().__init__()
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient")
        self.module = module
        self.process_group = resolve("DistributedDataParallel", process_group)
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.bucket_cap_mb = bucket_cap_mb
        self.require_backward_grad_sync = True
        self._params = [p for p in module.parameters() if p.requires_grad]
        self._names = {id(p): n for n, p in module.named_parameters() if p.requires_grad}
        if init_sync:
            self._check_same_model()
            self._broadcast([*self._params, *module.buffers()])
        self._buckets = self._make_buckets(int(bucket_cap_mb * 1024 * 1024))
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._unused: set[int] = set()
        self._static_unused: set[int] | None = None
        self._queued = False
        self._armed = False
        self._comm_hook: tuple[Any, Any] | None = None
        self._join: DDPJoin | None = None
        self._order: list[_Bucket] = []  # buckets in the order this backward launched them
        self._last_order: list[_Bucket] = []  # and in the last synchronized backward (a joined rank replays it)
        for p in self._params:
            p.register_post_accumulate_grad_hook(self._grad_ready)

    # ------------------------------------------------------------ set-up
    def _check_same_model(self) -> None:
        """Every rank must wrap the same parameters (else the broadcasts and buckets would not match up)."""
        mine = [[self._names[id(p)], list(p.shape), str(p.dtype)] for p in self._params]
        everyone: list = [None] * self.process_group.size()
        collectives.all_gather_object(everyone, mine, self.process_group)
        for rank, theirs in enumerate(everyone):
            if theirs != mine:
                diff = next((f"{a} vs {b}" for a, b in zip(mine, theirs) if a != b),
                            f"{len(mine)} vs {len(theirs)} parameters")
                raise RuntimeError(f"DistributedDataParallel: rank {self.process_group.ranks[rank]} wraps other "
                                   f"parameters than rank {self.process_group.ranks[self.process_group.rank()]} "
                                   f"({diff})")

    def _broadcast(self, tensors: list[Tensor], src: int | None = None) -> None:
        src = self.process_group.ranks[0] if src is None else src
        with no_grad():
            for t in tensors:
                collectives.broadcast(t, src, self.process_group)

    def _make_buckets(self, cap: int) -> list[_Bucket]:
        groups: dict[tuple, list[list[Parameter]]] = {}
        for p in reversed(self._params):
            key = (p.dtype, p.device)
            lists = groups.setdefault(key, [[]])
            size = sum(q.numel() for q in lists[-1]) * p.dtype.itemsize
            if lists[-1] and size + p.numel() * p.dtype.itemsize > cap:
                lists.append([])
            lists[-1].append(p)
        buckets = []
        for lists in groups.values():
            for params in lists:
                buckets.append(_Bucket(params, len(buckets)))
        if self.gradient_as_bucket_view:
            with no_grad():
                for b in buckets:
                    for i, p in enumerate(b.params):
                        if p.grad is not None:
                            b.view(i).copy_(p.grad)
                        p.grad = b.view(i)
        return buckets

    # ------------------------------------------------------------ forward
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Run the wrapped module; when gradients will be synchronized, get the buckets ready for backward."""
        if self._join is not None:
            self._join.notify(is_grad_enabled() and self.require_backward_grad_sync)
        self._sync_buffers()
        output = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare_for_backward(output)
        else:
            self._armed = False
        return output

    def _sync_buffers(self) -> None:
        if self.broadcast_buffers:
            buffers = list(self.module.buffers())
            if buffers and self.process_group.size() > 1:
                self._broadcast(buffers)

    def _prepare_for_backward(self, output: Any) -> None:
        self._order = []
        for b in self._buckets:
            b.pending = len(b.params)
            b.work = None
        self._queued = False
        self._armed = True
        self._unused = set()
        if not (self.find_unused_parameters or self.static_graph):
            return
        if self._static_unused is not None:
            self._unused = self._static_unused
        else:
            used = _reached_leaves(output)
            self._unused = {id(p) for p in self._params if id(p) not in used}
            if self.static_graph:
                self._static_unused = self._unused
        with no_grad():
            for p in self._params:
                if id(p) in self._unused:
                    b = self._bucket_of[id(p)]
                    b.view(b.position[id(p)]).zero_()
                    self._mark_ready(b)

    # ------------------------------------------------------------ backward
    def _grad_ready(self, p: Parameter) -> None:
        # Whether this backward synchronizes was decided by the forward (as torch): outside no_sync it was armed.
        if not self._armed:
            return
        if not self._queued:
            self._queued = True
            queue_callback(self._finish)
        b = self._bucket_of[id(p)]
        i = b.position[id(p)]
        view = b.view(i)
        with no_grad():
            if p.grad is not view:
                view.copy_(p.grad)
                if self.gradient_as_bucket_view:
                    p.grad = view
        self._mark_ready(b)

    def _mark_ready(self, b: _Bucket) -> None:
        b.pending -= 1
        if b.pending == 0:
            self._launch(b)

    def _launch(self, b: _Bucket) -> None:
        """Start the reduction of a full bucket (the communication hook's, or the average)."""
        self._order.append(b)
        if self._comm_hook is not None:
            state, hook = self._comm_hook
            b.work = hook(state, GradBucket(b.index, b.buffer, b.params, b.views, b.index == len(self._buckets) - 1))
            if not isinstance(b.work, Future):
                raise RuntimeError(f"DistributedDataParallel: the communication hook must return a "
                                   f"genesis.futures.Future, got {type(b.work).__name__}")
            return
        op = ReduceOp.AVG if b.buffer.dtype.is_floating_point else ReduceOp.SUM
        b.work = collectives.all_reduce(b.buffer, op, self.process_group, async_op=True)

    def _wait(self, b: _Bucket) -> None:
        """Order what follows after the bucket's reduction; a communication hook's result goes into the bucket."""
        result = b.work.wait()
        b.work = None
        if self._comm_hook is not None:
            self._adopt(b, result)

    def _adopt(self, b: _Bucket, value: Any) -> None:
        """Put a communication hook's result (a tensor, or a list holding one) into the bucket."""
        if isinstance(value, (list, tuple)) and len(value) == 1:
            value = value[0]
        if not isinstance(value, Tensor) or value.numel() != b.buffer.numel():
            raise RuntimeError(f"DistributedDataParallel: the communication hook's future must hold one tensor of "
                               f"{b.buffer.numel()} elements (the bucket), got {value!r:.80}")
        if value is not b.buffer:
            b.buffer.copy_(value.reshape(b.buffer.shape))

    def register_comm_hook(self, state: Any, hook: Any) -> None:
        """Reduce each bucket with ``hook(state, bucket)`` instead of the built-in average (torch's API).

        ``bucket`` is a :class:`genesis.distributed.GradBucket` holding this rank's gradients; the hook returns a
        :class:`genesis.futures.Future` whose value is the reduced flat tensor (for instance
        ``dist.all_reduce(t, async_op=True).get_future().then(...)``), which DDP writes back into ``.grad``. Ready-made
        hooks: ``genesis.distributed.algorithms.ddp_comm_hooks.default_hooks`` (``allreduce_hook``,
        ``fp16_compress_hook``, ``bf16_compress_hook``). Register once, before the first backward.
        """
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable, got {type(hook).__name__}")
        self._comm_hook = (state, hook)

    def _finish(self) -> None:
        """End of backward: every bucket reduced, the averages in ``.grad``."""
        self._armed = False
        waiting = [p for b in self._buckets if b.work is None for p in b.params
                   if id(p) not in self._unused and p.grad is None]
        missing = [b for b in self._buckets if b.work is None]
        if missing:
            names = [self._names[id(p)] for p in waiting] or [self._names[id(b.params[0])] for b in missing]
            raise RuntimeError(
                "DistributedDataParallel: parameters received no gradient in this backward pass, so their buckets "
                f"could not be reduced: {names}. Pass find_unused_parameters=True when the forward pass does not "
                "use every parameter, and make sure all forward outputs take part in computing the loss.")
        # Every rank takes part in this all-reduce whenever unused parameters are searched for: a rank that used all
        # of them must still answer the ranks that did not.
        searched = self.find_unused_parameters or self.static_graph
        globally_used = self._globally_used() if searched else None
        self._last_order, self._order = self._order, []
        join = self._join
        rescale = join is not None and not join.divide_by_initial_world_size and join.active < self.process_group.size()
        with no_grad():
            for b in self._buckets:
                self._wait(b)
                if rescale and b.buffer.dtype.is_floating_point:  # averaged over the ranks still training
                    b.buffer.mul_(self.process_group.size() / join.active)
                for i, p in enumerate(b.params):
                    if globally_used is not None and id(p) in self._unused:
                        if not globally_used[id(p)]:
                            continue  # no rank used it: .grad stays as it was, as torch
                    view = b.view(i)
                    if p.grad is None:
                        p.grad = view if self.gradient_as_bucket_view else view.clone()
                    elif p.grad is not view:
                        p.grad.copy_(view)

    def _globally_used(self, joined: bool = False) -> dict[int, bool]:
        """For each parameter (by id), whether some rank used it in this iteration (a joined rank used none)."""
        dev = self._params[0].device
        used = tensor([0 if joined or id(p) in self._unused else 1 for p in self._params], dtype=dtypes.int32,
                      device=dev)
        collectives.all_reduce(used, ReduceOp.MAX, self.process_group)
        return {id(p): bool(v) for p, v in zip(self._params, used.tolist())}

    # ------------------------------------------------------------ uneven inputs (ddp_join.py)
    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> DDPJoin:
        """A context for training loops whose ranks have different numbers of batches (torch's ``join``): ranks that
        run out early shadow the others' collectives until all are done (see ``ddp_join.py``)."""
        return DDPJoin(self, enable, throw_on_early_termination, divide_by_initial_world_size)

    def _shadow_iteration(self, will_sync: bool) -> None:
        """A joined rank's part in one iteration of the others: the buffer broadcast and, when they synchronize
        gradients, zeros for every bucket in the order of this rank's last backward, and the unused search."""
        self._sync_buffers()
        if not will_sync:
            return
        order = self._last_order or self._buckets
        with no_grad():
            for b in order:
                b.buffer.zero_()
                self._launch(b)
            self._order = []
            for b in order:
                self._wait(b)
        if self.find_unused_parameters or self.static_graph:
            self._globally_used(joined=True)

    def _sync_final_model(self, is_last_joiner: bool) -> None:
        """Every rank takes the parameters and buffers of the last rank to join (the highest such rank)."""
        me = self.process_group.ranks[self.process_group.rank()]
        src = tensor([me if is_last_joiner else -1], dtype=dtypes.int32, device=self._params[0].device)
        collectives.all_reduce(src, ReduceOp.MAX, self.process_group)
        self._broadcast([*self.module.parameters(), *self.module.buffers()], int(src.item()))

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Accumulate gradients locally (no communication) inside the block; the next synchronized backward
        averages the accumulated sum."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def extra_repr(self) -> str:
        return (f"world_size={self.process_group.size()}, bucket_cap_mb={self.bucket_cap_mb}, "
                f"buckets={len(self._buckets)}")
